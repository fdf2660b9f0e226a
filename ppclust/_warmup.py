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
"""

from __future__ import annotations

import logging
import time

import numpy as np

__all__ = ["warmup"]

log = logging.getLogger("ppclust")


def warmup(*, verbose: bool = False) -> dict:
    """Compile (and cache on disk) ppclust's numba kernels by fitting each compiled path once on small data.

    Fits TVClust (collapsed and sub-cluster sweeps, which also compiles SALSO), CECIB and C3L (the Hartigan
    engine) once on a synthetic data set of 60 points in 2 features with links and labels. A kernel already
    cached is only loaded. Safe to run at any time and in parallel with other processes (numba's cache
    writes are atomic).

    Parameters
    ----------
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
    from ppclust import C3L, CECIB, TVClust
    from ppclust.families._numba import available

    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 20)
    X = rng.normal(size=(60, 2)) + 4.0 * np.stack([np.cos(2.1 * y), np.sin(2.1 * y)], 1)
    must = np.array([[0, 1], [20, 21], [40, 41]])
    cannot = np.array([[0, 20], [20, 40]])
    labels = np.where(np.arange(60) % 5 == 0, y, -1)
    fits = {
        "TVClust": lambda: TVClust(n_draws=4, n_warmup=4, n_chains=2, random_state=0, progress_bar=False).fit(
            X, must_link=must, cannot_link=cannot
        ),
        "TVClust subcluster": lambda: TVClust(
            algorithm="subcluster",
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
    if not available():  # no numba: nothing to compile ahead (the XLA paths compile per shape)
        log.info("ppclust warmup: numba is not installed; nothing to compile")
        return {}
    seconds = {}
    for name, fit in fits.items():
        t = time.perf_counter()
        fit()
        seconds[name] = time.perf_counter() - t
        (print if verbose else log.info)(f"ppclust warmup: {name} kernels ready ({seconds[name]:.1f} s)")
    return seconds
