r"""Compiled (numba) twins of the Gaussian conjugate families' per-point primitives (one slot at a time).

The compiled Gibbs sweep (:mod:`ppclust.inference._gibbs_cpu`) runs as one scalar loop; it cannot call JAX,
so the family algebra it needs is restated here, once. Each function mirrors a method of
:class:`~ppclust.families.GaussianNIW` (covariance full, diag, spherical) and
:class:`~ppclust.families.SphericalGaussian` (known variance), branching on an integer family ``code``
(:func:`family_code`); ``tests/families/test_twins.py`` checks each pair to 1e-12 in float64 for every family:

==================================  ==============================================================
compiled twin                       JAX definition
==================================  ==============================================================
:func:`rank_one`                    ``add`` / ``remove`` of both families (``sign`` +1 / -1)
:func:`predictive_log_norm`         ``predictive_log_norm`` of both families
:func:`predictive_cache_slot`       ``predictive_cache`` of both families (one slot)
:func:`log_predictive_cached`       ``log_predictive_cached`` of both families
:func:`log_predictive_loo`          ``GaussianNIW.log_predictive_loo``
==================================  ==============================================================

The family is passed as ``code`` plus ``mu0`` and a hyper-parameter vector ``hyp = [kappa0, nu0, sigma2,
tau2]`` (:func:`family_arrays`). Full-covariance Cholesky factors are stored packed column-major per slot
(``L[j, m]`` at ``sc[k, m * d + j]``; :mod:`ppclust.families._cholesky_cpu`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from ppclust.families._cholesky_cpu import chol_rank_one, solve_lower_sq
from ppclust.families._numba import inline_kernel
from ppclust.families.niw import GaussianNIW
from ppclust.families.spherical import SphericalGaussian

__all__ = [
    "FULL",
    "DIAG",
    "SPHERICAL",
    "KNOWN_VAR",
    "family_code",
    "family_arrays",
    "SlotCache",
    "empty_cache",
    "rank_one",
    "predictive_log_norm",
    "predictive_cache_slot",
    "log_predictive_cached",
    "log_predictive_loo",
]

#: Family codes of the compiled kernels: GaussianNIW full / diag / spherical, SphericalGaussian.
FULL, DIAG, SPHERICAL, KNOWN_VAR = 0, 1, 2, 3


def family_code(family) -> int | None:
    """The integer code of a family the compiled kernels implement.

    Parameters
    ----------
    family : object
        A family of :mod:`ppclust.families`.

    Returns
    -------
    int or None
        :data:`FULL`, :data:`DIAG`, :data:`SPHERICAL` (GaussianNIW), :data:`KNOWN_VAR` (SphericalGaussian),
        None for any other family (the XLA sweeps run it).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> family_code(GaussianNIW.default(jnp.eye(3), "diag")) == DIAG
    True
    """
    if isinstance(family, GaussianNIW):
        return {"full": FULL, "diag": DIAG, "spherical": SPHERICAL}[family.covariance]
    if isinstance(family, SphericalGaussian):
        return KNOWN_VAR
    return None


def family_arrays(family, dtype):
    """The hyper-parameters of a family as the compiled kernels take them.

    Parameters
    ----------
    family : GaussianNIW or SphericalGaussian
        The family.
    dtype : dtype
        Floating dtype of the arrays.

    Returns
    -------
    mu0 : array (d,)
        Prior mean.
    hyp : array (4,)
        ``[kappa0, nu0, sigma2, tau2]`` (unused entries 1).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> fam = SphericalGaussian(jnp.asarray(0.5), jnp.zeros(2), jnp.asarray(4.0))
    >>> [float(a) for a in family_arrays(fam, jnp.float32)[1]]
    [1.0, 1.0, 0.5, 4.0]
    """
    if isinstance(family, GaussianNIW):
        hyp = jnp.stack([family.kappa0, family.nu0, 1.0, 1.0])
    else:
        hyp = jnp.stack([jnp.asarray(1.0, dtype), 1.0, family.sigma2, family.tau2])
    return jnp.asarray(family.mu0, dtype), hyp.astype(dtype)


class SlotCache(NamedTuple):
    r"""The per-slot cached predictive the compiled kernels read and refresh (one row per slot).

    The compiled form of :class:`~ppclust.families.PredictiveCache`: :func:`predictive_cache_slot` writes
    slot k's row, :func:`log_predictive_cached` and :func:`log_predictive_loo` read it. numba passes it
    into nopython code as one argument; all fields are arrays of the sweep's one float dtype, so that one
    specialisation serves every family.

    Parameters
    ----------
    loc : float64 array (K, d)
        Predictive location.
    lw0 : float64 array (K,)
        The caller's size terms plus the log-normaliser.
    a1 : float64 array (K,)
        Factor of the quadratic form.
    hexp : float64 array (K,)
        Exponent of :math:`1 + a_1 q`.
    b1 : float64 array (K, d)
        Reciprocal Cholesky diagonal (full) or per-coordinate factors (diag).
    hl : float64 array (K,)
        :math:`\sum_j\ln L_{k,jj}` (full).

    Examples
    --------
    >>> cache = empty_cache(3, 2)
    >>> cache.loc.shape, cache.hl.shape
    ((3, 2), (3,))
    """

    loc: np.ndarray
    lw0: np.ndarray
    a1: np.ndarray
    hexp: np.ndarray
    b1: np.ndarray
    hl: np.ndarray


def empty_cache(K: int, d: int) -> SlotCache:
    """A zeroed float64 :class:`SlotCache` for ``K`` slots in ``d`` dimensions.

    Parameters
    ----------
    K : int
        Number of slots.
    d : int
        Dimension.

    Returns
    -------
    SlotCache

    Examples
    --------
    >>> float(empty_cache(2, 1).lw0.sum())
    0.0
    """
    z1 = lambda: np.zeros(K)  # noqa: E731
    return SlotCache(np.zeros((K, d)), z1(), z1(), z1(), np.zeros((K, d)), z1())


@inline_kernel
def rank_one(k, xi, sign, code, n, s, sc, mu0, hyp, v):
    r"""Add (``sign`` = 1) or remove (-1) ``xi`` from slot k in place (the family's ``add`` / ``remove``).

    Parameters
    ----------
    k : int
        Slot.
    xi : float64 array (d,)
        The point.
    sign : float
        +1.0 or -1.0.
    code : int
        Family code (:func:`family_code`).
    n, s, sc : float64 arrays (K,), (K, d), (K, m)
        Counts, sums and scales (full: packed column-major factors of :math:`\Psi_n`, m = d * d; diag: the
        diagonals, m = d; spherical: the traces, m = 1; known variance: sums of squared norms, m = 1);
        updated in place.
    mu0, hyp : float64 arrays (d,), (4,)
        From :func:`family_arrays`.
    v : float64 array (d,)
        Scratch.

    Returns
    -------
    None

    Notes
    -----
    With :math:`\kappa = \kappa_0 + n_{-x}`, :math:`u = x - (\kappa_0\mu_0 + s_{-x})/\kappa` and
    :math:`c = \kappa/(\kappa+1)` (the slot without x): :math:`\Psi \leftarrow \Psi \pm c\,uu^\top` (full: a
    rank-one Cholesky up/down-date; diag: its diagonal; spherical: its trace).

    Examples
    --------
    >>> import numpy as np
    >>> n, s, sc = np.zeros(1), np.zeros((1, 2)), np.zeros((1, 1))
    >>> rank_one(0, np.array([1.0, 2.0]), 1.0, KNOWN_VAR, n, s, sc, np.zeros(2), np.ones(4), np.zeros(2))
    >>> float(n[0]), s[0].tolist(), float(sc[0, 0])
    (1.0, [1.0, 2.0], 5.0)
    """
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
    r"""The size-only part of the predictive's log-normaliser, twin of ``predictive_log_norm``.

    Parameters
    ----------
    nk : float
        Slot size.
    code : int
        Family code.
    d : int
        Dimension.
    nu0 : float
        Prior degrees of freedom (``hyp[1]``).

    Returns
    -------
    float
        full: :math:`\ln\Gamma(\tfrac{\mathrm{df}+d}2)-\ln\Gamma(\tfrac{\mathrm{df}}2)`,
        :math:`\mathrm{df}=\nu_0+n-d+1`; diag and spherical as
        :meth:`ppclust.families.GaussianNIW.predictive_log_norm`; 0 for a known variance.

    Examples
    --------
    >>> predictive_log_norm(3.0, KNOWN_VAR, 2, 4.0)
    0.0
    >>> round(predictive_log_norm(0.0, FULL, 1, 1.0), 6)  # df = 1: lgamma(1) - lgamma(1/2)
    -0.572365
    """
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
def predictive_cache_slot(k, size, code, n, s, sc, mu0, hyp, cache):
    r"""Slot k's entries of the family's ``predictive_cache`` (one slot), in place.

    Parameters
    ----------
    k : int
        Slot.
    size : float
        The caller's size-only terms (the sweep: CRP weight + :func:`predictive_log_norm`).
    code : int
        Family code.
    n, s, sc : float64 arrays
        The slots' statistics (as :func:`rank_one`).
    mu0, hyp : float64 arrays (d,), (4,)
        From :func:`family_arrays`.
    cache : SlotCache
        Written at slot k (the :class:`~ppclust.families.PredictiveCache` fields; ``lw0[k]`` = ``size +
        log_norm - predictive_log_norm(n_k)``; ``hl[k]`` = :math:`\sum_j\ln L_{k,jj}` for full).

    Returns
    -------
    None

    Examples
    --------
    >>> import numpy as np
    >>> K, d = 1, 2
    >>> cache = empty_cache(K, d)
    >>> predictive_cache_slot(0, 0.0, KNOWN_VAR, np.zeros(K), np.zeros((K, d)), np.zeros((K, 1)),
    ...                       np.zeros(d), np.array([1.0, 1.0, 1.0, 1.0]), cache)
    >>> float(cache.a1[0])  # a1 = 1 / (2 (sigma2 + tau2))
    0.25
    """
    loc, lw0, a1, hexp, b1, hl = cache
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
def log_predictive_cached(code, xi, cand, na, skip, sc, cache, w, out):
    r"""The family's ``log_predictive_cached`` at the candidate slots, into ``out``.

    Parameters
    ----------
    code : int
        Family code.
    xi : float64 array (d,)
        The point.
    cand : int array (na,)
        Candidate slots.
    na : int
        Number of candidates.
    skip : int
        A slot left to the caller (-1: none).
    sc : float64 array (K, m)
        Scales (full: packed factors).
    cache : SlotCache
        The cache of :func:`predictive_cache_slot`.
    w : float64 array (d,)
        Scratch.
    out : float64 array (>= na,)
        ``out[a]`` = log predictive of ``xi`` at ``cand[a]`` plus the size terms in ``lw0``.

    Returns
    -------
    None

    Notes
    -----
    Evaluates :math:`c_k - h_k\ln(1 + a_k q)` as ``log(1 + t)``, not ``log1p``: cheaper, and the difference
    (< 1e-16 absolute for t < 1e-8) is far below what changes a draw. One loop per family: no family branch
    in the slot loop.

    Examples
    --------
    >>> import numpy as np
    >>> out, cache = np.zeros(1), empty_cache(1, 1)
    >>> cache.a1[0] = 0.5
    >>> log_predictive_cached(KNOWN_VAR, np.array([1.0]), np.array([0]), 1, -1, np.zeros((1, 1)), cache,
    ...                       np.zeros(1), out)
    >>> float(out[0])
    -0.5
    """
    loc, lw0, a1, hexp, b1 = cache.loc, cache.lw0, cache.a1, cache.hexp, cache.b1
    d = xi.shape[0]
    if code == FULL:
        for a in range(na):
            k = cand[a]
            if k == skip:
                continue
            for j in range(d):
                w[j] = xi[j] - loc[k, j]
            q = solve_lower_sq(k, sc, b1, w)
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
def log_predictive_loo(k, xi, size, n, s, sc, mu0, hyp, cache, w):
    r"""``GaussianNIW.log_predictive_loo`` (full covariance) plus ``size``, from slot k's factor and cache.

    Parameters
    ----------
    k : int
        Slot (holding ``xi`` and at least one other point).
    xi : float64 array (d,)
        The point, left out.
    size : float
        The caller's size-only terms at :math:`n_k - 1` (:func:`predictive_log_norm` included).
    n, s, sc : float64 arrays
        The slots' statistics (full: packed factors).
    mu0, hyp : float64 arrays (d,), (4,)
        From :func:`family_arrays`.
    cache : SlotCache
        Slot k's cache (its reciprocal factor diagonal ``b1`` and :math:`\sum_j\ln L_{jj}` ``hl`` are
        read).
    w : float64 array (d,)
        Scratch.

    Returns
    -------
    float
        The log predictive, or NaN (the caller then downdates explicitly) when :math:`r = 1 - c\,a` is too
        small to trust (:meth:`~ppclust.families.GaussianNIW.log_predictive_loo` gives the formula).

    Examples
    --------
    >>> import numpy as np
    >>> sc = np.eye(2).reshape(1, 4) * 3.0
    >>> cache = empty_cache(1, 2)
    >>> cache.b1[:], cache.hl[:] = 1 / 3.0, 2 * np.log(3.0)
    >>> lp = log_predictive_loo(0, np.array([0.5, 0.0]), 0.0, np.array([3.0]), np.array([[1.0, 0.0]]), sc,
    ...                         np.zeros(2), np.array([1.0, 4.0, 1.0, 1.0]), cache, np.zeros(2))
    >>> bool(np.isfinite(lp))
    True
    """
    b1, hl = cache.b1, cache.hl
    d = xi.shape[0]
    kappa0 = hyp[0]
    nu0 = hyp[1]
    n1 = n[k] - 1.0
    kn1 = kappa0 + n1
    ikn = 1.0 / kn1
    c = kn1 / (kn1 + 1.0)
    for j in range(d):
        w[j] = xi[j] - (kappa0 * mu0[j] + (s[k, j] - xi[j])) * ikn
    r = 1.0 - c * solve_lower_sq(k, sc, b1, w)
    if not r > 1e-8:
        return np.nan
    df1 = nu0 + n1 - d + 1.0
    return (
        size - hl[k] - 0.5 * d * math.log(math.pi * (kn1 + 1.0) * ikn) + 0.5 * (df1 + d - 1.0) * math.log(r)
    )
