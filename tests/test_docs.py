"""The documentation site builds with warnings as errors, and its API reference names every public name.

Two builds of ``docs/`` with ``sphinx-build -W --keep-going`` (what ``make docs`` runs), each from a clean
state into a temporary folder:

* the API reference alone (``PPCLUST_DOCS_API_ONLY=1``, see ``docs/conf.py``: ``api/`` and the generated
  solver pages): part of ``make test``. Every docstring of the package goes through numpydoc and reST
  here, so a docstring that breaks the build fails the suite. The built pages are then read: every public
  estimator, function and class has an entry, and the API index links the estimators, the point estimates
  and the plots.
* the whole site (user guide, gallery of the notebooks, generated pages): ``slow``, as it renders every
  notebook's stored outputs; ``make docs`` builds the same.

Skipped, saying so, when the ``docs`` extra (Sphinx, pydata-sphinx-theme, numpydoc, myst-nb) is not
installed.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS_PACKAGES = ("sphinx", "pydata_sphinx_theme", "numpydoc", "myst_nb")
MISSING = [name for name in DOCS_PACKAGES if importlib.util.find_spec(name) is None]

pytestmark = pytest.mark.skipif(
    bool(MISSING),
    reason=f"the docs extra is not installed (missing: {', '.join(MISSING)}); pip install -e '.[docs]'",
)

# modules whose every ``__all__`` name must have an entry in the API reference
API_MODULES = [
    "ppclust.sideinfo",
    "ppclust.partition",
    "ppclust.posterior",
    "ppclust.predictive",
    "ppclust.stability",
    "ppclust.active",
    "ppclust.distributed",
    "ppclust.plot",
    "ppclust.metrics",
    "ppclust.datasets",
    "ppclust.families",
    "ppclust.errors",
]
SOLVER_PACKAGES = ["ppclust.inference", "ppclust.models"]


def sphinx_build(source: Path, out: Path, doctrees: Path, **env: str) -> subprocess.CompletedProcess:
    """``sphinx-build -W --keep-going -E`` of ``source`` into ``out`` (warnings are errors), the checkout's
    ``ppclust`` first on the path."""
    environ = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "PPCLUST_PROGRESS": "0",
        "MPLBACKEND": "Agg",
        **env,
    }
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", "html"]
    cmd += ["-d", str(doctrees), str(source), str(out)]
    return subprocess.run(cmd, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=1800)


def _build(tmp_path_factory, name: str, **env: str) -> Path:
    out = tmp_path_factory.mktemp(f"{name}-html")
    proc = sphinx_build(ROOT / "docs", out, tmp_path_factory.mktemp(f"{name}-doctrees"), **env)
    assert proc.returncode == 0, f"sphinx-build failed (warnings are errors):\n{proc.stderr[-8000:]}"
    return out


@pytest.fixture(scope="module")
def api_site(tmp_path_factory) -> Path:
    """The API reference alone, built with warnings as errors."""
    return _build(tmp_path_factory, "api", PPCLUST_DOCS_API_ONLY="1")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The whole site, built with warnings as errors (what ``make docs`` builds)."""
    return _build(tmp_path_factory, "site")


def _ids(site: Path) -> set[str]:
    ids: set[str] = set()
    for page in site.rglob("*.html"):
        ids |= set(re.findall(r'id="(ppclust[\w.]*)"', page.read_text(encoding="utf-8")))
    return ids


def _index_names() -> list[str]:
    """What the API index must link: every estimator, the point estimates and every plot."""
    import ppclust.plot
    from ppclust._registry import ESTIMATORS

    wanted = [f"ppclust.{name}" for name in ESTIMATORS]
    wanted += ["ppclust.partition.salso", "ppclust.partition.credible_ball"]
    wanted += [
        f"ppclust.plot.{name}" for name in ppclust.plot.__all__ if callable(getattr(ppclust.plot, name))
    ]
    return wanted


def _check_index(site: Path, index: Path) -> None:
    text = index.read_text(encoding="utf-8")
    wanted = _index_names()
    missing = [name for name in wanted if f"#{name}" not in text]
    assert not missing, f"docs/api/index.rst does not link {missing}"
    ids = _ids(site)
    undocumented = [name for name in wanted if name not in ids]
    assert not undocumented, f"no API entry for {undocumented}"


def _documented(mod, name: str, modules: list[str], ids: set[str]) -> bool:
    """An entry for ``mod.name``, or, for a name re-exported from another ppclust module, an entry
    where it is defined (docs/_generate.py documents a re-exported object once, at its home)."""
    obj = getattr(mod, name)
    home = f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', name)}"
    names = {name, getattr(obj, "__name__", name)}  # an alias may carry another name than its own
    return home in ids or any(f"{m}.{n}" in ids for m in [mod.__name__, *modules] for n in names)


def _undocumented(site: Path) -> dict[str, list[str]]:
    """Public classes and functions without an entry, by module (constants get one only with a ``#:``
    doc comment, so they are not required)."""
    modules = list(API_MODULES)
    for package in SOLVER_PACKAGES:
        pkg = importlib.import_module(package)
        modules += [
            f"{package}.{m.name}" for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_")
        ]
    ids = _ids(site)
    missing = {}
    for module in modules:
        mod = importlib.import_module(module)
        names = [name for name in getattr(mod, "__all__", []) if callable(getattr(mod, name))]
        gone = [name for name in names if not _documented(mod, name, modules, ids)]
        if gone:
            missing[module] = gone
    return missing


def test_api_index_names_every_estimator_point_estimate_and_plot(api_site):
    _check_index(api_site, api_site / "api" / "index.html")


def test_api_reference_documents_every_public_name(api_site):
    missing = _undocumented(api_site)
    assert not missing, f"public names without an API entry: {missing}"


def test_api_reference_escapes_plain_text_markup(api_site):
    """Attribute names and absolute values written as plain text in docstrings (``n_iter_``, ``|x|``)
    print as written (``docs/conf.py`` escapes them), not as links or substitutions."""
    page = (api_site / "api" / "estimators.html").read_text(encoding="utf-8")
    assert "(n_iter_,)" in page


def test_a_warning_fails_the_build(tmp_path):
    """The builds above fail on any warning: a page with an undefined substitution does not build."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text('project = "probe"\n')
    (src / "index.rst").write_text("Probe\n=====\n\nThe norm |x| of x.\n")
    proc = sphinx_build(src, tmp_path / "html", tmp_path / "doctrees")
    assert proc.returncode != 0 and "Undefined substitution" in proc.stderr
    (src / "index.rst").write_text("Probe\n=====\n\nThe norm \\|x\\| of x.\n")
    assert sphinx_build(src, tmp_path / "html", tmp_path / "doctrees").returncode == 0


def test_the_escape_leaves_markup_literals_math_and_doctests_alone():
    source = (ROOT / "docs" / "conf.py").read_text(encoding="utf-8")
    start, end = source.index("_INLINE ="), source.index("def _escape_docstring")
    ns = {"re": re}
    exec(source[start:end], ns)  # the helpers alone: importing conf.py runs the page generator
    escape = ns["escape_plain_markup"]
    lines = [
        "ndarray of shape (n_iter_,); KL(x / |x| || m)",
        "``n_iter_`` :attr:`n_iter_` **n_iter_** x_i",
        ".. math::",
        "",
        "    |x|_2",
        "back to |y|",
        ">>> a_ = abs(x)",
        "b_",
        "",
        "c_",
    ]
    assert escape(lines) == [
        "ndarray of shape (n_iter\\_,); KL(x / \\|x\\| || m)",
        "``n_iter_`` :attr:`n_iter_` **n_iter_** x_i",
        ".. math::",
        "",
        "    |x|_2",
        "back to \\|y\\|",
        ">>> a_ = abs(x)",
        "b_",
        "",
        "c\\_",
    ]


@pytest.mark.slow
def test_whole_site_builds_and_names_every_public_name(site):
    _check_index(site, site / "api" / "index.html")
    missing = _undocumented(site)
    assert not missing, f"public names without an API entry: {missing}"


@pytest.mark.slow
def test_generated_pages(site):
    gallery = sorted(p.stem for p in (site / "gallery").glob("*.html") if p.stem != "index")
    assert gallery == sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert (site / "generated" / "claims.html").exists()
    bench = (site / "generated" / "benchmarks.html").read_text(encoding="utf-8")
    assert "scaling.png" in bench
