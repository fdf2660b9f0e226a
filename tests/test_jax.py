"""The persistent compilation cache users get by default: where it lives, how to move or disable it, and
that a cache directory the user configured is left alone. Fresh processes, because JAX's config is
process-wide (the test session itself runs with the repository's .jax_cache, conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ppclust._jax import cache_dir

ROOT = Path(__file__).resolve().parent.parent
PROBE = (
    "import json, os, jax, ppclust._jax as j;"
    "print(json.dumps([jax.config.jax_compilation_cache_dir, os.environ.get('NUMBA_CACHE_DIR'),"
    " jax.config.jax_persistent_cache_min_compile_time_secs]))"
)


def _probe(env_extra, drop=()):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"PPCLUST_CACHE_DIR", "JAX_COMPILATION_CACHE_DIR", "NUMBA_CACHE_DIR", *drop}
        and not k.startswith("JAX_PERSISTENT_CACHE_")  # the test suite's own cache settings
    }
    env.update(env_extra, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
    res = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_cache_dir_follows_the_platform_convention_and_the_override(monkeypatch, tmp_path):
    monkeypatch.delenv("PPCLUST_CACHE_DIR", raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "ppclust"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir() == Path.home() / ".cache" / "ppclust"
    monkeypatch.setattr(sys, "platform", "darwin")
    assert cache_dir() == Path.home() / "Library" / "Caches" / "ppclust"
    monkeypatch.setenv("PPCLUST_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine"
    for off in ("off", "0", "OFF", "false"):
        monkeypatch.setenv("PPCLUST_CACHE_DIR", off)
        assert cache_dir() is None


def test_import_enables_the_cache_in_the_user_folder(tmp_path):
    jax_dir, numba_dir, min_secs = _probe({"PPCLUST_CACHE_DIR": str(tmp_path / "c")})
    assert jax_dir == str(tmp_path / "c" / "jax") and Path(jax_dir).is_dir()
    assert numba_dir == str(tmp_path / "c" / "numba")
    assert min_secs == pytest.approx(0.1)


def test_disabled_and_user_settings_are_respected(tmp_path):
    assert _probe({"PPCLUST_CACHE_DIR": "off"})[:2] == [None, None]
    mine = str(tmp_path / "user-jax")
    jax_dir, numba_dir, min_secs = _probe(
        {
            "PPCLUST_CACHE_DIR": str(tmp_path / "c"),
            "JAX_COMPILATION_CACHE_DIR": mine,
            "NUMBA_CACHE_DIR": str(tmp_path / "user-numba"),
        }
    )
    assert jax_dir == mine and numba_dir == str(tmp_path / "user-numba")
    assert min_secs == pytest.approx(1.0)  # JAX's default: the user's cache, the user's settings


AFTER_WARMUP = r"""
import json
import numpy as np
import ppclust
from ppclust import partition
from ppclust.inference import _gibbs_cpu
rng = np.random.default_rng(3)
X = rng.normal(size=(83, 4)) + 5.0 * (np.arange(83) % 2)[:, None]  # other n and d than the warm-up's
y = np.where(np.arange(83) % 4 == 0, np.arange(83) % 2, -1)
ppclust.TVClust(n_draws=3, n_warmup=3, n_chains=1, covariance_type="diag", random_state=1,
                progress_bar=False).fit(X, must_link=[[0, 2]], cannot_link=[[0, 1]])
ppclust.CECIB(n_clusters=2, n_init=2, random_state=1, progress_bar=False).fit(X, y)  # label-seeded start
ppclust.CECIB(n_clusters=2, n_init=2, random_state=1, progress_bar=False).fit(X)  # k-means++ start
from ppclust.inference import _hartigan_cpu, _init_cpu
# (the pointwise log-likelihood's kernel is compiled by compute_log_likelihood, on request, not by a fit)
kernels = {"sweep": _gibbs_cpu._sweep_chains, "salso": partition._search,
           "hartigan": _hartigan_cpu.run_restarts, "kmeans++": _init_cpu.initial_labels,
           "seeded": _init_cpu.kmeanspp_from_uniforms, "init_states": _init_cpu.init_states}
print(json.dumps({k: [sum(f.stats.cache_hits.values()), sum(f.stats.cache_misses.values())]
                  for k, f in kernels.items()}))
"""


@pytest.mark.slow  # compiles every numba kernel into an empty cache folder (minutes on 2 loaded cores)
def test_warmup_compiles_what_a_later_fit_of_other_data_loads(tmp_path):
    """`ppclust warmup` in a fresh cache folder, then a new process fitting data of another size,
    dimension and covariance type: TVClust's numba kernels and CECIB's (the Hartigan loop and its compiled
    set-up) are loaded from the cache, none compiled. The warm-up's parallel jobs compile into private
    copies merged into the folder, so this also checks the merge. (Two ways to fail: a kernel module
    imported before ``ppclust._jax`` sets ``NUMBA_CACHE_DIR`` caches next to its source, and x arriving
    read-only from JAX or writable from NumPy makes two numba signatures.)"""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"PPCLUST_CACHE_DIR", "JAX_COMPILATION_CACHE_DIR", "NUMBA_CACHE_DIR"}
        and not k.startswith("JAX_PERSISTENT_CACHE_")
    }
    env.update(PPCLUST_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
    res = subprocess.run(
        [sys.executable, "-m", "ppclust", "warmup"], env=env, capture_output=True, text=True, timeout=1800
    )
    assert res.returncode == 0, res.stderr
    for name in ("TVClust", "CECIB", "C3L"):
        assert f"{name} kernels ready" in res.stdout
    assert any((tmp_path / "cache" / "numba").rglob("*.nbi"))
    res = subprocess.run(
        [sys.executable, "-c", AFTER_WARMUP], env=env, capture_output=True, text=True, timeout=900
    )
    assert res.returncode == 0, res.stderr
    stats = json.loads(res.stdout.strip().splitlines()[-1])
    for name, (hits, misses) in stats.items():
        assert (hits, misses) == (1, 0), (name, stats)


def _in_a_fresh_cache(script: str, tmp_path, timeout: int):
    """Run ``script`` in a new process with an empty ppclust (numba, JAX) cache folder; the JSON of its
    last output line."""
    env = {k: v for k, v in os.environ.items() if k not in {"PPCLUST_CACHE_DIR", "NUMBA_CACHE_DIR"}}
    env.update(PPCLUST_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
    res = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=timeout
    )
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


SHAPE_ERROR_PATH = r"""
import json
import numba.core.event as ev
import numpy as np

compiled = []


class Listener(ev.Listener):
    def on_start(self, event):
        compiled.append(event.data["dispatcher"].py_func.__qualname__)

    def on_end(self, event):
        pass


ev.register("numba:compile", Listener())
from ppclust import partition
from ppclust.inference import _init_cpu

draws = np.random.default_rng(0).integers(0, 30, (10, 40))  # near-singletons: SALSO's tables grow
partition.salso(draws)
x = np.random.default_rng(1).normal(size=(40, 3))
_init_cpu.initial_labels(np.array([0, 5]), np.random.default_rng(2).uniform(size=(2, 3)), x, 3)
print(json.dumps(compiled))
"""


def test_salso_and_kmeanspp_kernels_compile_no_array_shape_error_path(tmp_path):
    """An array assigned to a slice (``a[:m] = b``, ``out[r] = row``) makes numba compile the formatting
    of its shape-mismatch error (``ol_raise_with_shape_context_cpu``, string conversions and joins):
    seconds of a fresh process's first fit, once per kernel. The kernels of every sampler's point
    estimate (SALSO) and of the k-means++ start copy element by element instead."""
    compiled = _in_a_fresh_cache(SHAPE_ERROR_PATH, tmp_path, timeout=600)
    assert "_search_py" in compiled and "initial_labels" in compiled and "_free_slot" in compiled
    assert not [name for name in compiled if "shape_context" in name], compiled


ONE_SIGNATURE = r"""
import json, sys
import numba
import numpy as np
import ppclust

rng = np.random.default_rng(0)
y = np.repeat(np.arange(3), 30)
X = rng.normal(size=(90, 3)) + 5.0 * np.eye(3)[y]
lab = np.where(np.arange(90) % 5 == 0, y, -1)
ml, cl = np.array([[0, 1], [30, 31]]), np.array([[0, 30], [30, 60]])
quiet = dict(random_state=0, progress_bar=False)
ppclust.TVClust(n_draws=5, n_warmup=5, **quiet).fit(X, must_link=ml, cannot_link=cl).compute_log_likelihood()
ppclust.TVClust(algorithm="subcluster", backend="numba", n_draws=3, n_warmup=3, **quiet).fit(
    X, must_link=ml, cannot_link=cl
)
ppclust.BayesianSemiSupervisedGMM(3, n_draws=5, n_warmup=5, **quiet).fit(X, lab).compute_log_likelihood()
ppclust.CECIB(3, n_init=2, **quiet).fit(X, lab)
ppclust.C3L(3, n_init=2, **quiet).fit(X, np.minimum(lab, 1))
out, seen = {}, set()
for module in list(sys.modules.values()):
    if getattr(module, "__name__", "").startswith("ppclust"):
        for name, f in vars(module).items():
            if isinstance(f, numba.core.dispatcher.Dispatcher) and id(f) not in seen:
                seen.add(id(f))
                out[f"{module.__name__}.{name}"] = [str(s) for s in f.signatures]
print(json.dumps(out))
"""


@pytest.mark.slow  # compiles every numba kernel into an empty cache folder
def test_every_numba_kernel_compiles_one_signature(tmp_path):
    """Fits of every compiled path (with the pointwise log-likelihood) in a fresh process and cache: each
    kernel is compiled for one argument-type signature. A second one (an int32 index here and an int64
    there, a read-only array from a program and a writable one from NumPy, a literal constant argument) is
    a second compilation in a user's first fit."""
    sigs = _in_a_fresh_cache(ONE_SIGNATURE, tmp_path, timeout=1800)
    assert sum(1 for s in sigs.values() if s) > 20  # the kernels were compiled here, not loaded
    assert {k: s for k, s in sigs.items() if len(s) > 1 or any("Literal" in x for x in s)} == {}
