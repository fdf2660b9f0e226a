"""Shared pytest setup: JAX persistent compilation cache, the ../shared reference folder, and the canonical
data sets of the tests (``blobs``, ``make_linked_blobs``, ``wine``)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import NamedTuple

import jax
import numpy as np
import pytest

_CACHE = Path(__file__).resolve().parent.parent / ".jax_cache"
jax.config.update("jax_compilation_cache_dir", str(_CACHE))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
# the CLI subprocesses, notebook kernels and demo the tests start read and write the same cache (JAX reads
# these variables at import), so a program any of them compiled loads in the others, and no test writes
# into the user's own cache folder
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(_CACHE))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")


_SUITE_NUMBA = _CACHE.parent / ".pytest_cache" / "numba"
_WARM_ENV = "PPCLUST_SUITE_WARM_CACHE"  # the controller's warm-up folder, for its workers


def _private_numba_cache() -> None:
    """Give each pytest-xdist worker its own numba disk cache.

    numba's cache index is not safe against two processes saving into it at once (numba/numba#4807:
    each picks the next data-file number from its own view of the index, so two workers compiling two
    signatures of one kernel can leave an index entry pointing at the other signature's machine code,
    which the next process loads without checking). Each worker therefore writes only its own folder,
    which receives the kernels of the suite's warm-up (:func:`pytest_collection_finish`) or, in a run
    without one, starts with those of the shared per-user cache (which may be older than the sources); the
    test subprocesses and notebook kernels a worker starts inherit its folder.
    """
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker or os.environ.get("NUMBA_CACHE_DIR"):
        return  # a single process, or a folder the user chose
    from ppclust import _jax  # noqa: F401  (sets NUMBA_CACHE_DIR to the shared per-user folder)
    from ppclust._warmup import merge_numba_cache

    shared = os.environ.pop("NUMBA_CACHE_DIR", None)
    private = _SUITE_NUMBA / worker
    try:
        private.mkdir(parents=True, exist_ok=True)
        if shared and Path(shared).is_dir() and not os.environ.get(_WARM_ENV):
            merge_numba_cache(Path(shared), private)
    except OSError:  # not writable: numba's own default (next to the sources)
        return
    os.environ["NUMBA_CACHE_DIR"] = str(private)
    numba_config = sys.modules.get("numba.core.config")
    if numba_config is not None:  # imported already (not by ppclust._jax): tell it too
        numba_config.CACHE_DIR = str(private)


_private_numba_cache()


def pytest_addoption(parser):
    parser.addoption(
        "--record-durations",
        action="store_true",
        help="record every test's seconds into tests/durations.json (the core tier's budget reads them)",
    )


#: The warm-up fits of the suite's controller: the kernels most test files use (TVClust's collapsed sweeps
#: and SALSO; the Hartigan engine), which every worker would compile again. The sub-cluster sampler's
#: kernels are used by a few files and compiled by the worker that runs them.
SUITE_WARMUP = (("CECIB", "C3L"), ("TVClust",))


def pytest_configure(config):
    """In the controller of a run on several workers: compile the numba kernels once, one group per core
    (:func:`ppclust._warmup.warmup`, :data:`SUITE_WARMUP`), into the suite's warm cache, while the workers
    start and collect; each worker merges it into its own folder before its first test. Without it each
    worker compiles every kernel its tests use, the same kernels on every core. ``PPCLUST_TEST_WARMUP=0``
    skips it."""
    workers = getattr(config.option, "numprocesses", None) or 0
    controller = not hasattr(config, "workerinput")
    if (
        controller
        and isinstance(workers, int)
        and workers >= 2
        and os.environ.get("PPCLUST_TEST_WARMUP", "1") != "0"
        and not os.environ.get("NUMBA_CACHE_DIR")
    ):
        warm = _SUITE_NUMBA / "warm"
        warm.mkdir(parents=True, exist_ok=True)
        (warm / ".done").unlink(missing_ok=True)
        os.environ[_WARM_ENV] = str(warm)  # before the workers start: they inherit it
        config._ppclust_warmup = _start_warmup(warm, workers)
    if config.getoption("--record-durations") and controller:
        config.pluginmanager.register(_DurationRecorder(), "ppclust-durations")


def _start_warmup(warm: Path, jobs: int):
    """Run the warm-up in a thread of the controller; ``warm/.done`` receives its outcome (JSON)."""
    import json
    import threading

    def run():
        from ppclust._warmup import warmup

        start, out = time.perf_counter(), {}
        try:
            out["seconds"] = warmup(jobs=jobs, groups=SUITE_WARMUP, cache_dir=warm)
        except Exception as e:  # the workers then compile for themselves
            out["error"] = f"{type(e).__name__}: {e}"
        out["wall"] = time.perf_counter() - start
        (warm / ".done.tmp").write_text(json.dumps(out))
        os.replace(warm / ".done.tmp", warm / ".done")

    thread = threading.Thread(target=run, name="ppclust-numba-warmup", daemon=True)
    thread.start()
    return thread


def pytest_collection_finish(session):
    """In a worker: wait for the controller's warm-up, then merge its kernels into this worker's cache."""
    warm = os.environ.get(_WARM_ENV)
    private = os.environ.get("NUMBA_CACHE_DIR")
    if not warm or not os.environ.get("PYTEST_XDIST_WORKER") or not private:
        return
    from ppclust._warmup import merge_numba_cache

    done = Path(warm) / ".done"
    deadline = time.monotonic() + 1800
    while not done.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    if done.exists():
        merge_numba_cache(Path(warm), Path(private))


def pytest_terminal_summary(terminalreporter, config):
    thread = getattr(config, "_ppclust_warmup", None)
    if thread is None:
        return
    import json

    thread.join()
    try:
        out = json.loads((_SUITE_NUMBA / "warm" / ".done").read_text())
    except (OSError, ValueError):
        return
    fits = ", ".join(f"{name} {s:.0f} s" for name, s in out.get("seconds", {}).items())
    error = f"; failed: {out['error']}" if "error" in out else ""
    terminalreporter.write_line(f"numba kernels compiled in {out['wall']:.0f} s ({fits}){error}")


class _DurationRecorder:
    """Sums each test's set-up, call and tear-down seconds (the controller receives every worker's reports)
    and merges them into tests/durations.json at the end of the run."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.setups: dict[str, float] = {}

    def pytest_runtest_logreport(self, report):
        self.seconds[report.nodeid] = self.seconds.get(report.nodeid, 0.0) + report.duration
        if report.when == "setup":
            self.setups[report.nodeid] = report.duration

    def pytest_sessionfinish(self, session):
        from tests._tiers import write_durations

        write_durations(self.seconds, self.setups)


def pytest_collection_modifyitems(config, items):
    """Mark ``extended`` the tests recorded over the core tier's budget (tests/_tiers.py)."""
    from tests._tiers import mark_extended, recorded_durations

    mark_extended(items, recorded_durations())


def _memory_maps() -> int | None:
    try:
        with open("/proc/self/maps", "rb") as f:
            return f.read().count(b"\n")
    except OSError:
        return None


def _map_limit() -> int | None:
    try:
        return int(Path("/proc/sys/vm/max_map_count").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


_MAP_LIMIT = _map_limit()


@pytest.fixture(autouse=True, scope="module")
def _keep_the_worker_under_the_mapping_limit():
    """After each test file, drop JAX's compiled programs if this worker holds over half of the kernel's
    limit on memory mappings (``vm.max_map_count``).

    The library never clears a user's caches (its solvers pad data to bucketed sizes, so a session of many
    data sizes compiles a bounded set of programs). The test suite is not such a session: a worker runs
    hundreds of test files whose own jitted helpers, doctests and parametrised shapes compile thousands of
    programs, and XLA:CPU holds each in mappings of its own; past the limit a worker dies in XLA's loader.
    Programs dropped here load again from the persistent cache when a later file needs them."""
    yield
    count = _memory_maps()
    if _MAP_LIMIT and count and count > _MAP_LIMIT // 2:
        jax.clear_caches()


SHARED = Path(os.environ.get("PPCLUST_SHARED", Path(__file__).resolve().parent.parent.parent / "shared"))


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """Path to ../shared (golden reference outputs); skips with a reason when it is absent."""
    if not (SHARED / "reference").is_dir():
        pytest.skip(f"golden reference folder {SHARED / 'reference'} not found (only CI has ../shared)")
    return SHARED


# --- canonical data sets ----------------------------------------------------------------------------------


class Blobs(NamedTuple):
    """Three well separated 2-D Gaussian blobs with side information of every kind."""

    X: np.ndarray  # (n, 2) float64
    labels: np.ndarray  # (n,) int: the true partition
    partial_labels: np.ndarray  # (n,) int: every third point labelled, -1 elsewhere
    must_link: np.ndarray  # (m, 2) row pairs, 15% of all links flipped
    cannot_link: np.ndarray  # (m', 2) row pairs


def linked_blobs(seed: int = 0, n_per: int = 12) -> Blobs:
    """``3 * n_per`` points around (0, 0), (8, 0), (0, 8) (unit noise) and 40 random pairs as links, 15% of
    them of the wrong kind."""
    rng = np.random.default_rng(seed)
    truth = np.repeat([0, 1, 2], n_per)
    X = np.array([[0, 0], [8, 0], [0, 8]])[truth] + rng.normal(size=(3 * n_per, 2))
    pairs = np.array([rng.choice(3 * n_per, 2, replace=False) for _ in range(40)])
    same = truth[pairs[:, 0]] == truth[pairs[:, 1]]
    flip = rng.random(40) < 0.15
    partial = np.where(np.arange(3 * n_per) % 3 == 0, truth, -1)
    return Blobs(X, truth, partial, pairs[same ^ flip], pairs[~same ^ flip])


@pytest.fixture(scope="session")
def blobs() -> Blobs:
    """The small 2-D data set of the tests: :func:`linked_blobs` with seed 0 (36 points, 3 clusters)."""
    return linked_blobs()


@pytest.fixture(scope="session")
def make_linked_blobs():
    """:func:`linked_blobs` itself, for tests that need another seed or size."""
    return linked_blobs


class Wine(NamedTuple):
    X: np.ndarray  # (178, 13), each column standardised (mean 0, sd 1)
    labels: np.ndarray  # (178,) int in {0, 1, 2}


@pytest.fixture(scope="session")
def wine() -> Wine:
    """scikit-learn's wine data (bundled with scikit-learn, no download), columns standardised."""
    from ppclust.datasets import load

    X, y = load("wine")
    X = np.asarray(X, dtype=float)
    return Wine((X - X.mean(0)) / X.std(0), np.asarray(y, dtype=int))
