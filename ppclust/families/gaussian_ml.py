r"""The maximum-likelihood Gaussian of cross-entropy clustering: scatter factors, entropy, degeneracy.

CEC, CEC-IB and C3L score a cluster by the differential entropy of its ML Gaussian
(:func:`ml_entropy`); the Hartigan engine moves one point at a time with the rank-one Cholesky algebra of
:mod:`ppclust.families.cholesky`.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax.scipy.linalg import solve_triangular

from ppclust.families.bregman import sq_euclidean
from ppclust.families.cholesky import (
    SING_TOL,
    chol_downdate,
    chol_logdet,
    chol_singular,
    chol_update,
    solve_lower,
)
from ppclust.families.densities import LOG_2PIE
from ppclust.families.slots import Stats, centered_scatter, one_hot_stats

__all__ = ["ML_SING_TOL", "ml_entropy", "GaussianML", "ml_logdet", "ml_degenerate"]

Array = jax.Array

#: A scatter S is numerically singular when lambda_min <= ML_SING_TOL * lambda_max (CEC-IB reference
#: README: the authors' jar treats det S <= 0 as +inf; round-off makes exactly singular subsets of
#: real data come out with a tiny positive det, so a relative eigenvalue test is used instead).
ML_SING_TOL = SING_TOL


def ml_entropy(n: Array, logdet_scatter: Array, d: int, *, xp=jnp) -> Array:
    r"""Differential entropy (nats) of the ML Gaussian of a cluster.

    Parameters
    ----------
    n : array
        Cluster sizes (> 0).
    logdet_scatter : array
        :math:`\ln\det S` of the scatter.
    d : int
        Dimension.
    xp : module, default ``jax.numpy``
        The array namespace (``numpy`` for host-side references).

    Returns
    -------
    array
        :math:`\tfrac d2\ln(2\pi e) + \tfrac12\ln\det(S/n)` (CEC-IB spec 1.1, 1.6). With ``n = 1`` and
        ``logdet_scatter`` = :math:`\ln\det\Sigma` it is the entropy of :math:`N(m, \Sigma)`.

    Notes
    -----
    Compiled twin: ``ppclust.inference._hartigan_cpu.ml_entropy`` (scalar).

    Examples
    --------
    >>> import numpy as np
    >>> round(float(ml_entropy(1.0, 0.0, 1, xp=np)), 6)  # N(0, 1)
    1.418939
    """
    return 0.5 * d * LOG_2PIE + 0.5 * (logdet_scatter - d * xp.log(n))


@dataclass(frozen=True)
class GaussianML:
    r"""Maximum-likelihood Gaussian statistics: ``Stats.scale`` = lower Cholesky factor of the scatter
    :math:`S_k=\sum_{i\in k}(x_i-\bar x_k)(x_i-\bar x_k)^\top` (K, d, d).

    Adding x to a cluster of n points adds :math:`\tfrac{n}{n+1}(x-\bar x)(x-\bar x)^\top`; removing
    it subtracts :math:`\tfrac{n}{n-1}(x-\bar x)(x-\bar x)^\top` (mean taken with x). The matrix
    determinant lemma gives the log-determinant after a move in O(d^2) per slot. A slot needs at
    least d + 1 points for a nonsingular scatter; singular or empty slots hold NaN/garbage that
    callers mask out (the CEC engine deletes clusters below d + 2 points).

    Notes
    -----
    No hyper-parameters (an empty pytree). :meth:`logdet_after_add`:
    :math:`\ln\det S_k + \ln(1 + \tfrac{n_k}{n_k+1}u^\top S_k^{-1}u)`, :math:`u = x - \bar x_k`;
    :meth:`logdet_after_remove`: :math:`\ln\det S_k + \ln(1 - \tfrac{n_k}{n_k-1}u^\top S_k^{-1}u)`.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> with jax.enable_x64(True):
    ...     x = jnp.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.5]])
    ...     st = GaussianML().stats(x, jnp.zeros(4, jnp.int32), 1)
    ...     st2 = GaussianML().add(st, 0, jnp.array([2.0, 2.0]))
    ...     direct = GaussianML().logdet_after_add(st, jnp.array([2.0, 2.0]))[0]
    ...     bool(jnp.allclose(direct, GaussianML().logdet_scatter(st2)[0]))
    True
    """

    def empty(self, K: int, d: int, dtype=jnp.float64) -> Stats:
        """Statistics of ``K`` empty slots in dimension ``d`` (zero factors).

        Parameters
        ----------
        K : int
            Number of slots.
        d : int
            Dimension.
        dtype : dtype, default float64
            Floating dtype.

        Returns
        -------
        Stats
        """
        return Stats(jnp.zeros(K, dtype), jnp.zeros((K, d), dtype), jnp.zeros((K, d, d), dtype))

    def stats(self, x: Array, z: Array, K: int, w: Array | None = None, reduce=None) -> Stats:
        """Statistics of labelling ``z`` over ``K`` slots: counts, sums, Cholesky factors of the scatters.

        Parameters
        ----------
        x : array (n, d)
            Points.
        z : int array (n,)
            Labels (outside [0, K): counted nowhere).
        K : int
            Number of slots.
        w : array (n,) or None, default None
            Point weights.
        reduce : callable or None, default None
            Cross-device sum applied to every per-slot sum (``lambda t: jax.lax.psum(t, "data")``).

        Returns
        -------
        Stats
        """
        r, n, s = one_hot_stats(x, z, K, w, reduce)
        return Stats(n, s, jnp.linalg.cholesky(centered_scatter(x, r, n, s, reduce=reduce)))

    def mean(self, stats: Stats) -> Array:
        """Cluster means (K, d) (0 for empty slots).

        Parameters
        ----------
        stats : Stats
            Statistics of the K slots.

        Returns
        -------
        array (K, d)
        """
        return stats.s / jnp.maximum(stats.n, 1e-300)[:, None]

    posterior_mean = mean

    def add(self, stats: Stats, k, x: Array) -> Stats:
        """Statistics with x added to slot k (a rank-one Cholesky update).

        Parameters
        ----------
        stats : Stats
            Statistics of the K slots.
        k : int
            Slot.
        x : array (d,)
            A point.

        Returns
        -------
        Stats
        """
        n = stats.n[k]
        u = x - stats.s[k] / jnp.maximum(n, 1e-300)
        L = chol_update(stats.scale[k], jnp.sqrt(n / (n + 1.0)) * u)
        return Stats(stats.n.at[k].add(1.0), stats.s.at[k].add(x), stats.scale.at[k].set(L))

    def remove(self, stats: Stats, k, x: Array) -> Stats:
        """Statistics with x removed from slot k (a rank-one Cholesky downdate; NaN when singular).

        Parameters
        ----------
        stats : Stats
            Statistics of the K slots.
        k : int
            Slot.
        x : array (d,)
            A point.

        Returns
        -------
        Stats
        """
        n = stats.n[k]
        u = x - stats.s[k] / n
        L = chol_downdate(stats.scale[k], jnp.sqrt(n / (n - 1.0)) * u)
        return Stats(stats.n.at[k].add(-1.0), stats.s.at[k].add(-x), stats.scale.at[k].set(L))

    def logdet_scatter(self, stats: Stats) -> Array:
        """log det S_k per slot (K,).

        Parameters
        ----------
        stats : Stats
            Statistics of the K slots.

        Returns
        -------
        array (K,)
            One value per slot.
        """
        return chol_logdet(stats.scale)

    def logdet_after_add(self, stats: Stats, x: Array) -> Array:
        """log det of every slot's scatter if x joined it: logdet S + log(1 + n/(n+1) u^T S^{-1} u).

        Parameters
        ----------
        stats : Stats
            Statistics of the K slots.
        x : array (d,)
            A point.

        Returns
        -------
        array (K,)
            One value per slot.
        """
        n = stats.n
        u = x - self.mean(stats)
        w = solve_lower(stats.scale, u)
        return self.logdet_scatter(stats) + jnp.log1p(n / (n + 1.0) * jnp.sum(w * w, -1))

    def logdet_after_remove(self, stats: Stats, k, x: Array) -> Array:
        """log det of slot k's scatter after removing x (NaN or -inf when it becomes singular).

        Parameters
        ----------
        stats : Stats
            Statistics of the K slots.
        k : int
            Slot.
        x : array (d,)
            A point.

        Returns
        -------
        array ()
        """
        n = stats.n[k]
        u = x - stats.s[k] / n
        w = solve_triangular(stats.scale[k], u, lower=True)
        return chol_logdet(stats.scale[k]) + jnp.log1p(-n / (n - 1.0) * jnp.dot(w, w))

    def bregman(self, x: Array, means: Array) -> Array:
        """Squared Euclidean distance (:func:`ppclust.families.sq_euclidean`).

        Parameters
        ----------
        x : array (..., d)
            Points.
        means : array (K, d)
            Centres.

        Returns
        -------
        array (..., K)
        """
        return sq_euclidean(x, means)


jax.tree_util.register_dataclass(GaussianML, data_fields=[], meta_fields=[])


def ml_logdet(L: Array, tol: float = ML_SING_TOL) -> Array:
    r"""Log-determinant of a (batch of) scatter factor(s), :math:`-\infty` when numerically singular.

    Parameters
    ----------
    L : array (..., d, d)
        Lower Cholesky factor(s) of scatters.
    tol : float, default :data:`ML_SING_TOL`
        Relative singularity threshold of :func:`ppclust.families.chol_singular`.

    Returns
    -------
    array (...)
        :math:`2\sum_j\ln|L_{jj}|`, or ``-inf`` where :func:`ppclust.families.chol_singular` holds.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> float(ml_logdet(jnp.eye(2))), float(ml_logdet(jnp.diag(jnp.array([1.0, 0.0]))))
    (0.0, -inf)
    """
    return jnp.where(
        chol_singular(L, tol),
        -jnp.inf,
        2.0 * jnp.sum(jnp.log(jnp.abs(jnp.diagonal(L, axis1=-2, axis2=-1))), -1),
    )


def ml_degenerate(L: Array, n: Array, min_count, tol: float = ML_SING_TOL) -> Array:
    r"""Slots whose ML Gaussian is unusable.

    Parameters
    ----------
    L : array (K, d, d)
        Lower Cholesky factors of the scatters.
    n : array (K,)
        Cluster sizes.
    min_count : float
        Smallest usable size.
    tol : float, default :data:`ML_SING_TOL`
        Relative eigenvalue threshold.

    Returns
    -------
    bool array (K,)
        True for fewer than ``min_count`` points, a non-finite factor, or
        :math:`\lambda_{\min}(S) \le \mathrm{tol}\,\lambda_{\max}(S)` (eigenvalues of :math:`S = LL^\top`,
        :math:`O(d^3)`).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> L = jnp.stack([jnp.eye(2), jnp.diag(jnp.array([1.0, 0.0]))])
    >>> ml_degenerate(L, jnp.array([5.0, 5.0]), 3).tolist()
    [False, True]
    """
    S = L @ jnp.swapaxes(L, -1, -2)
    finite = jnp.all(jnp.isfinite(L), axis=(-2, -1))
    ev = jnp.linalg.eigvalsh(jnp.where(finite[..., None, None], S, jnp.eye(L.shape[-1], dtype=L.dtype)))
    return ~finite | (ev[..., 0] <= tol * ev[..., -1]) | (n < min_count)
