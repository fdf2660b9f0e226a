r"""Compiled (numba) twins of the Gaussian family primitives of :mod:`ppclust.families`.

The compiled CPU Gibbs sweep (:mod:`ppclust.inference._gibbs_cpu`) runs as one scalar loop; it cannot call
JAX, so the family algebra it needs is restated here, once, for one slot at a time. Each function is named
after the JAX function it mirrors and ``tests/test_families_cpu.py`` checks each pair to 1e-12 in float64
for every family and covariance type:

==================================  ==============================================================
compiled twin                       JAX definition
==================================  ==============================================================
:func:`chol_rank_one`               ``families._chol_rank_one`` (column recurrence)
:func:`solve_sq`                    :func:`ppclust.families.solve_lower_sq`
:func:`rank_one`                    ``GaussianNIW.add`` / ``remove``, ``SphericalGaussian.add`` / ``remove``
:func:`predictive_log_norm`         ``GaussianNIW.predictive_log_norm`` (``SphericalGaussian``: 0)
:func:`predictive_cache_slot`       ``predictive_cache`` of both families (one slot)
:func:`log_predictive_cached`       ``log_predictive_cached`` of both families
:func:`log_predictive_loo`          ``GaussianNIW.log_predictive_loo``
:func:`gaussian_loglik`             :func:`ppclust.families.gaussian_loglik` (one point, one slot)
==================================  ==============================================================

The family is passed as an integer ``code`` (:func:`family_code`) plus ``mu0`` and a hyper-parameter vector
``hyp = [kappa0, nu0, sigma2, tau2]`` (:func:`family_arrays`). Full-covariance Cholesky factors are stored
column-major per slot (``L[j, m]`` at ``sc[k, m * d + j]``: the inner loops run down a column).
"""

from __future__ import annotations

import math
import os
from functools import partial

import jax.numpy as jnp
import numpy as np

from ppclust import _jax  # noqa: F401  (sets NUMBA_CACHE_DIR before the cache=True kernels below are made)
from ppclust.families import LOG_2PI, GaussianNIW, SphericalGaussian

try:  # numba is a run-time dependency; without it (e.g. a Python it has no wheel for) XLA sweeps run
    import numba
except ImportError:  # pragma: no cover - exercised only where numba is missing
    numba = None

__all__ = [
    "FULL", "DIAG", "SPHERICAL", "KNOWN_VAR", "available", "family_code", "family_arrays", "compile_kernel",
    "inline_kernel", "chol_rank_one", "solve_sq", "rank_one", "predictive_log_norm", "predictive_cache_slot",
    "log_predictive_cached", "log_predictive_loo", "gaussian_loglik", "UPPER",
]

FULL, DIAG, SPHERICAL, KNOWN_VAR = 0, 1, 2, 3
#: full covariance whose precision factor is upper triangular (``A[k, j * d + r] = 0`` for r > j): the
#: kernels skip the zeros (the compiled twins' layout of explicit parameters, never a family's code)
UPPER = 4


def available() -> bool:
    """True when numba imports (the compiled kernels can run)."""
    return numba is not None


def family_code(family) -> int | None:
    """The integer code of a family the compiled kernels implement, or None."""
    if isinstance(family, GaussianNIW):
        return {"full": FULL, "diag": DIAG, "spherical": SPHERICAL}[family.covariance]
    if isinstance(family, SphericalGaussian):
        return KNOWN_VAR
    return None


def family_arrays(family, dtype):
    """``(mu0 (d,), hyp (4,))`` with ``hyp = [kappa0, nu0, sigma2, tau2]`` (unused entries 1)."""
    if isinstance(family, GaussianNIW):
        hyp = jnp.stack([family.kappa0, family.nu0, 1.0, 1.0])
    else:
        hyp = jnp.stack([jnp.asarray(1.0, dtype), 1.0, family.sigma2, family.tau2])
    return jnp.asarray(family.mu0, dtype), hyp.astype(dtype)


def compile_kernel(fn, *, depends=(), **options):
    """``numba.njit`` with the disk cache where a cache location is writable (identity without numba).

    numba keys a cached function on its own source file only; ``depends`` lists the other source files
    whose (inlined) functions it compiles in, folded into the cache's source stamp so that editing them
    recompiles it too (through numba's cache object; should that private attribute move, the cache falls
    back to numba's own rule).
    """
    if numba is None:
        return fn
    try:  # compiled code cached on disk (next to the module, else numba's user cache directory)
        dispatcher = numba.njit(cache=True, nogil=True, error_model="numpy", **options)(fn)
    except RuntimeError:  # no writable cache location (read-only install and home): compile per process
        return numba.njit(nogil=True, error_model="numpy", **options)(fn)
    if depends:
        try:
            cache_file = dispatcher._cache._cache_file
            extra = tuple((os.stat(f).st_mtime, os.stat(f).st_size) for f in depends)
            cache_file._source_stamp = (cache_file._source_stamp, extra)
        except (AttributeError, OSError):  # pragma: no cover - numba internals changed
            pass
    return dispatcher


def inline_kernel(fn):
    """A kernel called from the sweep, left to LLVM to inline. numba's IR inlining (``inline="always"``)
    re-ran type inference of every inlined body at every call site: ~45 s of a fresh install's first
    TVClust fit, and the interleaved A/B (``results/tvclust_refactor.md``, section noinline) measured the
    sweep no slower without it."""
    return compile_kernel(fn)


@inline_kernel
def chol_rank_one(sc, k, v, sign):
    """Slot k's column-major factor L <- chol(L L^T + sign v v^T) in place (``v`` is overwritten).

    The column recurrence of ``families._chol_rank_one``; one division per column for ``1 / c``."""
    d = v.shape[0]
    for m in range(d):
        lmm = sc[k, m * d + m]
        vm = v[m]
        r = math.sqrt(lmm * lmm + sign * vm * vm)
        inv = 1.0 / lmm
        cc = r * inv
        sn = vm * inv
        icc = lmm / r
        sc[k, m * d + m] = r
        for j in range(m + 1, d):  # column m of L is contiguous (column-major)
            col = (sc[k, m * d + j] + sign * sn * v[j]) * icc
            sc[k, m * d + j] = col
            v[j] = cc * v[j] - sn * col


@inline_kernel
def solve_sq(k, sc, b1, w):
    """|L_k^{-1} u|^2 by forward substitution in place (``w`` holds u on entry, L_k^{-1} u on exit;
    ``b1[k]`` the reciprocal diagonal of L_k), as :func:`ppclust.families.solve_lower_sq`."""
    d = w.shape[0]
    q = 0.0
    for j in range(d):
        acc = w[j]
        for m in range(j):
            acc -= sc[k, m * d + j] * w[m]
        wj = acc * b1[k, j]
        w[j] = wj
        q += wj * wj
    return q


@inline_kernel
def rank_one(k, xi, sign, code, n, s, sc, mu0, hyp, v):
    """Add (sign = 1) or remove (sign = -1) x_i from slot k in place, as the family's ``add``/``remove``
    (``v``: scratch of length d)."""
    d = xi.shape[0]
    if code == KNOWN_VAR:
        ss = 0.0
        for j in range(d):
            ss += xi[j] * xi[j]
            s[k, j] += sign * xi[j]
        n[k] += sign
        sc[k, 0] += sign * ss
        return
    kappa0 = hyp[0]
    rem = 1.0 if sign < 0 else 0.0
    kn = kappa0 + (n[k] - rem)
    c = kn / (kn + 1.0)
    ikn = 1.0 / kn
    for j in range(d):
        v[j] = xi[j] - (kappa0 * mu0[j] + (s[k, j] - rem * xi[j])) * ikn
    if code == FULL:
        root = math.sqrt(c)
        for j in range(d):
            v[j] = root * v[j]
        chol_rank_one(sc, k, v, sign)
    elif code == DIAG:
        for j in range(d):
            sc[k, j] += sign * c * v[j] * v[j]
    else:
        dot = 0.0
        for j in range(d):
            dot += v[j] * v[j]
        sc[k, 0] += sign * c * dot
    n[k] += sign
    for j in range(d):
        s[k, j] += sign * xi[j]


@inline_kernel
def predictive_log_norm(nk, code, d, nu0):
    """The size-only part of the predictive's log-normaliser (``GaussianNIW.predictive_log_norm``; 0 for
    a known variance)."""
    if code == FULL:
        df = nu0 + nk - d + 1.0
        return math.lgamma((df + d) / 2.0) - math.lgamma(df / 2.0)
    if code == DIAG:
        df = nu0 + nk
        return d * (math.lgamma((df + 1.0) / 2.0) - math.lgamma(df / 2.0) - 0.5 * math.log(df * math.pi))
    if code == SPHERICAL:
        df = (nu0 + nk) * d
        return math.lgamma((df + d) / 2.0) - math.lgamma(df / 2.0) - 0.5 * d * math.log(df * math.pi)
    return 0.0


@inline_kernel
def predictive_cache_slot(k, size, code, n, s, sc, mu0, hyp, loc, lw0, a1, hexp, b1, hl):
    """Slot k's entries of the family's ``predictive_cache`` (``loc, log_norm, a1, hexp, b1``), with
    ``lw0[k] = size + log_norm - predictive_log_norm(n_k)``: the caller passes ``size`` = its own size-only
    terms (the sweep: CRP weight + :func:`predictive_log_norm`). ``hl[k]``: log prod L_jj (full)."""
    d = mu0.shape[0]
    nk = n[k]
    if code == KNOWN_VAR:
        sigma2, tau2 = hyp[2], hyp[3]
        v = 1.0 / (1.0 / tau2 + nk / sigma2)
        for j in range(d):
            loc[k, j] = v * (mu0[j] / tau2 + s[k, j] / sigma2)
        pv = sigma2 + v
        lw0[k] = size - 0.5 * d * math.log(2.0 * math.pi * pv)
        a1[k] = 0.5 / pv
        hexp[k] = 1.0
        return
    kappa0, nu0 = hyp[0], hyp[1]
    kn = kappa0 + nk
    nun = nu0 + nk
    ikn = 1.0 / kn
    for j in range(d):
        loc[k, j] = (kappa0 * mu0[j] + s[k, j]) * ikn
    if code == FULL:
        df = nun - d + 1.0
        prod = 1.0
        for j in range(d):
            ljj = sc[k, j * d + j]
            b1[k, j] = 1.0 / ljj
            prod *= ljj
        if prod > 0.0 and prod < np.inf:
            hl[k] = math.log(prod)
        else:  # extreme scales: one log per coordinate
            hl[k] = 0.0
            for j in range(d):
                hl[k] += math.log(sc[k, j * d + j])
        lw0[k] = size - hl[k] - 0.5 * d * math.log(math.pi * (kn + 1.0) * ikn)
        a1[k] = kn / (kn + 1.0)
        hexp[k] = 0.5 * (df + d)
    elif code == DIAG:
        a = nun / 2.0
        df = 2.0 * a
        prod = 1.0
        for j in range(d):
            var = (sc[k, j] / 2.0) * (kn + 1.0) / (a * kn)
            b1[k, j] = 1.0 / (var * df)
            prod *= var
        if prod > 0.0 and prod < np.inf:
            logvar = math.log(prod)
        else:
            logvar = 0.0
            for j in range(d):
                logvar += math.log((sc[k, j] / 2.0) * (kn + 1.0) / (a * kn))
        lw0[k] = size - 0.5 * logvar
        a1[k] = 1.0
        hexp[k] = 0.5 * (df + 1.0)
    else:  # spherical NIW
        a = nun * d / 2.0
        df = 2.0 * a
        var = (sc[k, 0] / 2.0) * (kn + 1.0) / (a * kn)
        lw0[k] = size - 0.5 * d * math.log(var)
        a1[k] = 1.0 / (var * df)
        hexp[k] = 0.5 * (df + d)


@inline_kernel
def log_predictive_cached(code, xi, cand, na, skip, sc, loc, lw0, a1, hexp, b1, w, out):
    """``out[a]`` = the family's ``log_predictive_cached`` (plus the size terms in ``lw0``) at slot
    ``cand[a]`` for ``a < na``; slot ``skip`` (-1: none) is left to the caller; ``w``: scratch (d,).

    ``log(1 + t)``, not ``log1p``: libm's log1p costs 3x here and the difference (< 1e-16 absolute for
    t < 1e-8) is far below what changes a draw. One loop per family: no family branch in the slot loop."""
    d = xi.shape[0]
    if code == FULL:
        for a in range(na):
            k = cand[a]
            if k == skip:
                continue
            for j in range(d):
                w[j] = xi[j] - loc[k, j]
            q = solve_sq(k, sc, b1, w)
            out[a] = lw0[k] - hexp[k] * math.log(1.0 + a1[k] * q)
    elif code == DIAG:
        for a in range(na):
            k = cand[a]
            prod = 1.0
            for j in range(d):
                t = xi[j] - loc[k, j]
                prod *= 1.0 + t * t * b1[k, j]
            out[a] = lw0[k] - hexp[k] * math.log(prod)
    else:
        for a in range(na):
            k = cand[a]
            q = 0.0
            for j in range(d):
                t = xi[j] - loc[k, j]
                q += t * t
            if code == SPHERICAL:
                out[a] = lw0[k] - hexp[k] * math.log(1.0 + a1[k] * q)
            else:
                out[a] = lw0[k] - a1[k] * q


@inline_kernel
def log_predictive_loo(k, xi, size, n, s, sc, mu0, hyp, b1, hl, w):
    """``GaussianNIW.log_predictive_loo`` (full covariance) plus ``size`` (the caller's size-only terms at
    n_k - 1, :func:`predictive_log_norm` included), from slot k's current factor and cache (``b1``, ``hl``).

    NaN (the caller downdates explicitly) when r = 1 - c a is too small to trust."""
    d = xi.shape[0]
    kappa0 = hyp[0]
    nu0 = hyp[1]
    n1 = n[k] - 1.0
    kn1 = kappa0 + n1
    ikn = 1.0 / kn1
    c = kn1 / (kn1 + 1.0)
    for j in range(d):
        w[j] = xi[j] - (kappa0 * mu0[j] + (s[k, j] - xi[j])) * ikn
    r = 1.0 - c * solve_sq(k, sc, b1, w)
    if not r > 1e-8:
        return np.nan
    df1 = nu0 + n1 - d + 1.0
    return (size - hl[k] - 0.5 * d * math.log(math.pi * (kn1 + 1.0) * ikn)
            + 0.5 * (df1 + d - 1.0) * math.log(r))


@partial(compile_kernel, inline="always")  # IR inlining: 4x faster in its callers' per-point loops
def gaussian_loglik(x, i, mean, A, half, k, code, w):
    r""":func:`ppclust.families.gaussian_loglik` of point ``x[i]`` in slot k of explicit parameters
    (:class:`~ppclust.families.GaussianParams`): :math:`-\tfrac d2\ln 2\pi + h_k - \tfrac12\|A_k(x-\mu_k)\|^2`
    with ``A`` (K, m) the precision factor flattened: m = d * d column-major (``code`` FULL: ``A[k, j * d +
    r]`` = :math:`(A_k)_{rj}`; UPPER the same layout of an upper-triangular factor, whose zeros are
    skipped: half the products), d (DIAG) or 1 (SPHERICAL). ``w``: scratch of length d. Full covariance
    accumulates :math:`A_k u` column by column (each row's sum in the order j = 0..d-1, as a row-wise dot
    product, while the loop over rows vectorises)."""
    d = x.shape[1]
    q = 0.0
    if code == FULL or code == UPPER:
        for r in range(d):
            w[r] = 0.0
        for j in range(d):
            u = x[i, j] - mean[k, j]
            top = j + 1 if code == UPPER else d
            for r in range(top):
                w[r] += A[k, j * d + r] * u
        for r in range(d):
            q += w[r] * w[r]
    elif code == DIAG:
        for j in range(d):
            t = A[k, j] * (x[i, j] - mean[k, j])
            q += t * t
    else:
        for j in range(d):
            t = A[k, 0] * (x[i, j] - mean[k, j])
            q += t * t
    return -0.5 * d * LOG_2PI + half[k] - 0.5 * q
