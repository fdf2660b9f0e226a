# ppclust — the README's two set-up commands are `make demo` and `make test`.
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
STAMP := $(VENV)/.installed
WARM  := $(VENV)/.warmed
JOBS  ?= 2

# Find Python >= 3.12: explicit PYTHON, then python3.13/python3.12 on PATH (pyenv shims honour
# .python-version), then pyenv's own install directory.
PYTHON ?= $(shell for p in python3.13 python3.12 $$HOME/.pyenv/versions/3.13*/bin/python3 $$HOME/.pyenv/versions/3.12*/bin/python3; do \
            if command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then command -v $$p; break; fi; done)

.PHONY: docs demo test test-all durations lint reproduce bench notebooks clean venv

$(STAMP): pyproject.toml
	@if [ -z "$(PYTHON)" ]; then echo "error: ppclust needs Python >= 3.12 (jax >= 0.11, arviz 1.x). Install python3.12 or set PYTHON=/path/to/python3.12" >&2; exit 2; fi
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@# uv resolves and installs the same packages as pip, several times faster; pip if uv cannot be had.
	@# Bytecode compiled at install, as pip does (uv leaves it out by default): every later process then
	@# imports jax, numba and scikit-learn from .pyc files instead of compiling their sources again.
	@if $(PY) -m pip install -q uv && $(PY) -m uv --version >/dev/null 2>&1; then \
	    echo "$(PY) -m uv pip install --compile-bytecode -e .[dev,datasets,docs]"; \
	    $(PY) -m uv pip install -q --compile-bytecode --python $(PY) -e ".[dev,datasets,docs]"; \
	else \
	    echo "$(PY) -m pip install -e .[dev,datasets,docs]"; \
	    $(PY) -m pip install -q -e ".[dev,datasets,docs]"; \
	fi
	@$(PY) -m compileall -q ppclust >/dev/null  # the editable package's own bytecode, as a wheel install has
	@touch $(STAMP)

# numba kernels into the per-user cache, so that a user's first fit loads them. `make test` does not wait for
# it: its workers keep numba caches of their own (tests/conftest.py) and compile what their tests use, on
# both cores, and its XLA programs go to the checkout's .jax_cache, where the warm-up's never land.
$(WARM): $(STAMP)
	-$(VENV)/bin/ppclust warmup
	@touch $(WARM)

venv: $(WARM)

demo: $(WARM)
	$(VENV)/bin/ppclust demo

# the core tier (tests/_tiers.py): every test within the budget that tests/durations.json records, and the
# mission's checks (marked `core`) whatever they cost
PYTEST := $(PY) -m pytest -n $(JOBS) --dist loadscope --no-loadscope-reorder -q --durations=20 tests ppclust --doctest-modules

test: $(STAMP)
	$(VENV)/bin/ruff check ppclust tests benchmarks reproduce docs
	$(VENV)/bin/ruff format --check ppclust tests benchmarks reproduce docs
	$(PYTEST) -m "not slow and not extended"

# the core and extended tiers: every test not marked `slow`
test-all: $(STAMP)
	$(PYTEST) -m "not slow"

# `make test-all`, recording every test's seconds into tests/durations.json (the core tier's budget)
durations: $(STAMP)
	$(PYTEST) -m "not slow" --record-durations

lint: $(STAMP)
	$(VENV)/bin/ruff check ppclust tests benchmarks reproduce docs
	$(VENV)/bin/ruff format --check ppclust tests benchmarks reproduce docs

# slow tests and notebooks (JUnit report for the claim ledger), then the cheap paper-reproduction scripts and
# the fast claim tests, then reproduce/results/CLAIMS.md (reproduce/claims.py lists each script's cost;
# reproduce/smic.py's full sweep takes ~1.5 h and runs only with `python -m reproduce.claims --run-scripts all`)
reproduce: $(STAMP)
	PPCLUST_NOTEBOOK_FULL=1 $(PY) -m pytest -m "slow or notebook" -q --junitxml=reproduce/results/junit_slow.xml; \
	rc=$$?; PYTHONPATH=. $(PY) -m reproduce.claims --run-scripts cheap --run-tests; exit $$rc

# the documentation site (Sphinx, warnings as errors) into docs/_build/html
docs: $(STAMP)
	rm -rf docs/_build
	$(PY) -m sphinx -W --keep-going -q -b html docs docs/_build/html

# re-execute every notebook through a Jupyter kernel with full settings and write outputs and figures
notebooks: $(STAMP)
	$(PY) notebooks/_run.py --full --write

# speed benchmarks (benchmarks/bench_*.py), each writing benchmarks/results/<name>.md
bench: $(STAMP)
	$(PY) -m benchmarks.run_all

clean:
	rm -rf $(VENV) .jax_cache .pytest_cache
