"""Ahead-of-time compilation of ppclust's compiled (numba) kernels into the per-user cache folder.

A fresh install has nothing in the cache (:func:`ppclust._jax.cache_dir`): the first fit of TVClust then
spends most of its time compiling the numba Gibbs sweep and the SALSO search, and the first CEC-IB / C3L
fit the Hartigan loop (``benchmarks/results/first_fit.md``). numba specialises a kernel on the argument
*types* only (dtypes, ranks, layouts), never on shapes, sizes or the family / covariance type (passed as
integers), so one small fit of each kind compiles exactly what every later fit loads from the cache, for
any data. The jitted JAX programs are specialised on shapes and are compiled (and cached) by the user's
own first fit; what this leaves to that fit is in ``first_fit.md``.

Run once after installing (``make venv`` does): ``ppclust warmup`` or ``python -c "import ppclust;
ppclust.warmup()"``. With ``PPCLUST_CACHE_DIR=off`` nothing is kept for later processes.

numba compiles on one thread. With ``jobs > 1`` the fits run in that many child processes, each compiling
into a private copy of the cache folder; the kernels each child added are then moved into the folder one
kernel at a time (numba's index of a kernel is not safe against two processes writing it at once, so no two
processes ever write one folder).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

__all__ = ["merge_numba_cache", "warmup"]

log = logging.getLogger("ppclust")

#: The warm-up fits by name.
FIT_NAMES = ("TVClust", "TVClust subcluster", "CECIB", "C3L")

#: The warm-up fits in groups, longest first; a group's fits share kernels (CEC-IB and C3L the Hartigan
#: engine) and run in one child process. The two TVClust samplers each compile the posterior summary's
#: SALSO search in parallel jobs, which costs less time than running one after the other.
GROUPS = (("TVClust subcluster",), ("CECIB", "C3L"), ("TVClust",))


def _fits() -> dict:
    """The warm-up fits by name: small synthetic data (60 points, 2 features, links and labels)."""
    from ppclust import C3L, CECIB, TVClust

    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 20)
    X = rng.normal(size=(60, 2)) + 4.0 * np.stack([np.cos(2.1 * y), np.sin(2.1 * y)], 1)
    must = np.array([[0, 1], [20, 21], [40, 41]])
    cannot = np.array([[0, 20], [20, 40]])
    labels = np.where(np.arange(60) % 5 == 0, y, -1)
    return {
        "TVClust": lambda: TVClust(n_draws=4, n_warmup=4, n_chains=2, random_state=0, progress_bar=False).fit(
            X, must_link=must, cannot_link=cannot
        ),
        "TVClust subcluster": lambda: TVClust(
            algorithm="subcluster",
            backend="numba",  # its compiled twins (on small data "auto" keeps the XLA program)
            init="one",
            n_draws=2,
            n_warmup=2,
            n_chains=1,
            random_state=0,
            progress_bar=False,
        ).fit(X, must_link=must, cannot_link=cannot),
        "CECIB": lambda: CECIB(n_clusters=3, n_init=2, random_state=0, progress_bar=False).fit(X, labels),
        "C3L": lambda: C3L(n_clusters=3, n_init=2, random_state=0, progress_bar=False).fit(
            X, np.where(labels >= 0, np.minimum(labels, 1), -1)
        ),  # two categories: one hyperplane
    }


def warmup(*, jobs: int | None = None, groups=None, cache_dir=None, verbose: bool = False) -> dict:
    """Compile (and cache on disk) ppclust's numba kernels by fitting each compiled path once on small data.

    Fits TVClust (collapsed and sub-cluster sweeps, which also compiles SALSO), CECIB and C3L (the Hartigan
    engine) once on a synthetic data set of 60 points in 2 features with links and labels. A kernel already
    cached is only loaded. Safe to run at any time and in parallel with other processes (numba's cache
    writes are atomic, and parallel jobs write private copies that are merged kernel by kernel).

    Parameters
    ----------
    jobs : int, optional
        Child processes compiling at once, each taking the next group of ``groups`` (longest first) as the
        last one ends. ``1`` compiles in this process; default: ``min(len(groups), os.cpu_count())``.
    groups : sequence of sequences of str, optional
        The fits to run (names: ``"TVClust"``, ``"TVClust subcluster"``, ``"CECIB"``, ``"C3L"``), grouped
        by the kernels they share; default :data:`GROUPS` (every fit).
    cache_dir : str or Path, optional
        The numba cache folder to fill, with ``jobs > 1``; default the one this process uses
        (``NUMBA_CACHE_DIR``, which importing ppclust sets to the per-user folder).
    verbose : bool, default False
        Print one line per estimator (else log it to the ``ppclust`` logger).

    Returns
    -------
    seconds : dict of str to float
        Wall time of each warm-up fit, by estimator name; empty when numba is not installed.

    Examples
    --------
    >>> import ppclust
    >>> seconds = ppclust.warmup()  # doctest: +SKIP
    >>> sorted(seconds)  # doctest: +SKIP
    ['C3L', 'CECIB', 'TVClust', 'TVClust subcluster']
    """
    from concurrent.futures import ThreadPoolExecutor
    from threading import Lock

    from ppclust.families._numba import available

    if not available():  # no numba: nothing to compile ahead (the XLA paths compile per shape)
        log.info("ppclust warmup: numba is not installed; nothing to compile")
        return {}
    groups = [list(g) for g in (GROUPS if groups is None else groups)]
    unknown = sorted({name for g in groups for name in g} - set(FIT_NAMES))
    if unknown:
        raise ValueError(f"unknown warm-up fits {unknown}; choose among {list(FIT_NAMES)}")
    jobs = min(len(groups), os.cpu_count() or 1) if jobs is None else int(jobs)
    if jobs < 1:
        raise ValueError(f"jobs must be a positive integer, got {jobs}")
    target = _numba_cache_folder() if cache_dir is None else Path(cache_dir)
    if jobs == 1 or target is None:
        return _run([name for group in groups for name in group], verbose)
    target.mkdir(parents=True, exist_ok=True)
    seconds: dict = {}
    merging = Lock()

    def one(i_names):
        i, names = i_names
        private = Path(tmp) / str(i)
        with merging:  # a consistent copy: no merge into ``target`` meanwhile
            shutil.copytree(target, private)  # what is cached already is loaded, not compiled again
        env = {**os.environ, "NUMBA_CACHE_DIR": str(private)}
        cmd = [sys.executable, "-m", "ppclust._warmup", *names]
        child = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True, check=False)
        lines = child.stdout.splitlines()
        if child.returncode != 0 or not lines:
            raise RuntimeError(f"ppclust warmup: the child fitting {names} failed (exit {child.returncode})")
        with merging:
            for line in lines[:-1]:
                (print if verbose else log.info)(line)
            seconds.update(json.loads(lines[-1]))
            merge_numba_cache(private, target)

    with tempfile.TemporaryDirectory(prefix="ppclust-warmup-", dir=target.parent) as tmp:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(one, enumerate(groups)))
    return seconds


def _run(names, verbose: bool) -> dict:
    fits = _fits()
    seconds = {}
    for name in names:
        t = time.perf_counter()
        fits[name]()
        seconds[name] = time.perf_counter() - t
        (print if verbose else log.info)(f"ppclust warmup: {name} kernels ready ({seconds[name]:.1f} s)")
    return seconds


def _numba_cache_folder() -> Path | None:
    """The folder numba caches into (``NUMBA_CACHE_DIR``, which importing ppclust sets), or ``None``."""
    from ppclust import _jax  # noqa: F401  (sets NUMBA_CACHE_DIR to the per-user folder unless set)

    folder = os.environ.get("NUMBA_CACHE_DIR")
    return Path(folder) if folder else None


def merge_numba_cache(source: Path, target: Path) -> int:
    """Move the kernels cached in ``source`` and absent from ``target`` into ``target``.

    numba keeps one index file (``*.nbi``) per kernel, naming its data files (``*.<i>.nbc``, one per
    signature). A kernel is moved whole, data files first and the index last (each by an atomic rename), so
    a process reading ``target`` meanwhile sees either no entry or a complete one; a kernel ``target``
    already indexes keeps its own entry.

    Parameters
    ----------
    source, target : Path
        numba cache folders (``NUMBA_CACHE_DIR``).

    Returns
    -------
    int
        The number of kernels moved.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> src, dst = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp())
    >>> _ = (src / "m.f-1.py312.nbi").write_bytes(b"index"), (src / "m.f-1.py312.1.nbc").write_bytes(b"code")
    >>> merge_numba_cache(src, dst), sorted(p.name for p in dst.iterdir())
    (1, ['m.f-1.py312.1.nbc', 'm.f-1.py312.nbi'])
    """
    moved = 0
    for index in sorted(Path(source).rglob("*.nbi")):
        dest = Path(target) / index.relative_to(source)
        if dest.exists():
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        for data in sorted(index.parent.glob(index.name[: -len(".nbi")] + ".*.nbc")) + [index]:
            staged = dest.parent / f".{data.name}.{os.getpid()}.tmp"
            shutil.copyfile(data, staged)
            os.replace(staged, dest.parent / data.name)
        moved += 1
    return moved


if __name__ == "__main__":  # one job of ``warmup(jobs=...)``: fit the named estimators, seconds as JSON last
    import warnings

    warnings.simplefilter("ignore")  # the tiny fits' convergence warnings say nothing about the kernels
    print(json.dumps(_run(sys.argv[1:], verbose=True)), flush=True)
