r"""Rank-one Cholesky algebra: up/down-dates, triangular solves, log-determinants, the singularity rule.

One point joining or leaving a cluster changes its scatter (or :math:`\Psi_n`) by a rank-one term, so every
family that stores a Cholesky factor moves in :math:`O(d^2)` per point, never :math:`O(d^3)`. All functions
are pure JAX and jittable. Compiled twins: :mod:`ppclust.families._cholesky_cpu`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.scipy.linalg import solve_triangular

__all__ = [
    "SING_TOL",
    "chol_rank_one",
    "chol_update",
    "chol_downdate",
    "chol_logdet",
    "chol_singular",
    "solve_lower",
    "solve_lower_sq",
]

Array = jax.Array

#: A Gaussian cluster is numerically singular when its scatter's lambda_min <= SING_TOL * lambda_max
#: (the CEC-IB reference README's rule; 1e-12 is ~1e4 float64 epsilons, well above rounding noise).
SING_TOL = 1e-12

# XLA on CPU runs a loop body as a sequence of small kernels; a fori_loop over d columns per rank-one update
# or a LAPACK triangular solve over K slots per point is dozens of them inside a Gibbs sweep. For small d the
# same recurrences are unrolled in Python so that XLA fuses them.
_UNROLL_CHOL_D = 4
_UNROLL_SOLVE_D = 16


def chol_rank_one(L: Array, v: Array, sign: float, unroll: bool = False) -> Array:
    r"""Lower Cholesky factor of :math:`LL^\top + \mathrm{sign}\,vv^\top` in :math:`O(d^2)`.

    Parameters
    ----------
    L : array (d, d)
        Lower Cholesky factor.
    v : array (d,)
        The rank-one vector.
    sign : float
        ``+1.0`` for an update, ``-1.0`` for a downdate.
    unroll : bool, default False
        Unroll the column loop in Python when d <= 4 (the same recurrence, the same values; XLA fuses the
        unrolled form into one kernel).

    Returns
    -------
    array (d, d)
        The new lower factor. A downdate that leaves the matrix indefinite gives NaN entries, which callers
        read as "the cluster became singular".

    Notes
    -----
    The column-by-column Givens-type recurrence: for column k, with :math:`r = \sqrt{L_{kk}^2 +
    \mathrm{sign}\,v_k^2}`, :math:`c = r/L_{kk}`, :math:`s = v_k/L_{kk}`, the entries below the diagonal
    become :math:`(L_{ik} + \mathrm{sign}\,s\,v_i)/c` and :math:`v_i \leftarrow c\,v_i - s\,L'_{ik}`.
    Compiled twins: :func:`ppclust.families._cholesky_cpu.chol_rank_one` (packed column-major slots) and
    :func:`ppclust.families._cholesky_cpu.rank_one_slot` (slot-major factors).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> L = jnp.linalg.cholesky(jnp.array([[4.0, 1.0], [1.0, 3.0]]))
    >>> v = jnp.array([1.0, 0.5])
    >>> L2 = chol_rank_one(L, v, 1.0)
    >>> bool(jnp.allclose(L2 @ L2.T, L @ L.T + jnp.outer(v, v)))
    True
    """
    d = L.shape[-1]
    if unroll and d <= _UNROLL_CHOL_D:
        return _chol_rank_one_unrolled(L, v, sign)
    idx = jnp.arange(d)

    def body(k, carry):
        L, v = carry
        lkk, vk = L[k, k], v[k]
        r = jnp.sqrt(lkk * lkk + sign * vk * vk)
        c = r / lkk
        s = vk / lkk
        below = idx > k
        col = jnp.where(below, (L[:, k] + sign * s * v) / c, L[:, k]).at[k].set(r)
        v = jnp.where(below, c * v - s * col, v)
        return L.at[:, k].set(col), v

    return lax.fori_loop(0, d, body, (L, v))[0]


def _chol_rank_one_unrolled(L: Array, v: Array, sign: float) -> Array:
    """:func:`chol_rank_one` with the column loop unrolled in Python (small static d)."""
    d = L.shape[-1]
    idx = np.arange(d)
    for k in range(d):
        lkk, vk = L[k, k], v[k]
        r = jnp.sqrt(lkk * lkk + sign * vk * vk)
        c = r / lkk
        s = vk / lkk
        below = idx > k
        col = jnp.where(below, (L[:, k] + sign * s * v) / c, jnp.where(idx == k, r, L[:, k]))
        v = jnp.where(below, c * v - s * col, v)
        L = L.at[:, k].set(col)
    return L


def solve_lower_sq(L: Array, u: Array) -> Array:
    r"""Squared norms :math:`\|L_k^{-1}u_k\|^2` for a batch of lower factors and vectors.

    Parameters
    ----------
    L : array (K, d, d)
        Lower Cholesky factors.
    u : array (K, d)
        Right-hand sides.

    Returns
    -------
    array (K,)
        :math:`u_k^\top (L_kL_k^\top)^{-1} u_k`.

    Notes
    -----
    Forward substitution :math:`w_j = (u_j - \sum_{m<j} L_{jm}w_m)/L_{jj}`, unrolled over the d columns and
    vectorised over the K slots when d <= 16; a triangular solve otherwise.
    Compiled twin: :func:`ppclust.families._cholesky_cpu.solve_lower_sq` (one slot).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> L = jnp.array([[[2.0, 0.0], [1.0, 1.0]]])
    >>> float(solve_lower_sq(L, jnp.array([[2.0, 2.0]]))[0])
    2.0
    """
    d = u.shape[-1]
    if d > _UNROLL_SOLVE_D:
        w = solve_lower(L, u)
        return jnp.sum(w * w, -1)
    w, q = [], 0.0
    for j in range(d):
        acc = u[:, j]
        for m in range(j):
            acc = acc - L[:, j, m] * w[m]
        w.append(acc / L[:, j, j])
        q = q + w[j] * w[j]
    return q


def chol_update(L: Array, v: Array) -> Array:
    r"""Lower Cholesky factor of :math:`LL^\top + vv^\top` in :math:`O(d^2)`.

    Parameters
    ----------
    L : array (d, d)
        Lower Cholesky factor.
    v : array (d,)
        The vector added as :math:`vv^\top`.

    Returns
    -------
    array (d, d)
        The updated lower factor.

    Notes
    -----
    :func:`chol_rank_one` with sign +1. Compiled twin: :func:`ppclust.families._cholesky_cpu.chol_update`.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> L = chol_update(jnp.eye(2), jnp.array([1.0, 0.0]))
    >>> [round(float(a), 4) for a in jnp.diagonal(L)]
    [1.4142, 1.0]
    """
    return chol_rank_one(L, v, 1.0)


def chol_downdate(L: Array, v: Array) -> Array:
    r"""Lower Cholesky factor of :math:`LL^\top - vv^\top` in :math:`O(d^2)`.

    Parameters
    ----------
    L : array (d, d)
        Lower Cholesky factor.
    v : array (d,)
        The vector removed as :math:`vv^\top`.

    Returns
    -------
    array (d, d)
        The downdated lower factor; NaN entries when :math:`LL^\top - vv^\top` is not positive definite.

    Notes
    -----
    :func:`chol_rank_one` with sign -1. Compiled twin: :func:`ppclust.families._cholesky_cpu.chol_downdate`.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> L = chol_downdate(jnp.sqrt(2.0) * jnp.eye(2), jnp.array([1.0, 0.0]))
    >>> [round(float(a), 4) for a in jnp.diagonal(L)]
    [1.0, 1.4142]
    >>> bool(jnp.isnan(chol_downdate(jnp.eye(2), jnp.array([2.0, 0.0]))).any())
    True
    """
    return chol_rank_one(L, v, -1.0)


def chol_logdet(L: Array) -> Array:
    r"""Log-determinant :math:`\ln\det LL^\top = 2\sum_j \ln L_{jj}` of a (batch of) lower factor(s).

    Parameters
    ----------
    L : array (..., d, d)
        Lower Cholesky factor(s).

    Returns
    -------
    array (...)
        The log-determinants.

    Notes
    -----
    Compiled twin: :func:`ppclust.families._cholesky_cpu.chol_logdet`.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> round(float(chol_logdet(jnp.diag(jnp.array([2.0, 0.5, 1.0])))), 6)
    0.0
    """
    return 2.0 * jnp.sum(jnp.log(jnp.diagonal(L, axis1=-2, axis2=-1)), axis=-1)


def solve_lower(L: Array, b: Array) -> Array:
    r"""Forward substitution :math:`L_k^{-1}b_k` for a batch of lower factors.

    Parameters
    ----------
    L : array (K, d, d)
        Lower triangular factors.
    b : array (K, d)
        Right-hand sides.

    Returns
    -------
    array (K, d)
        The solutions.

    Notes
    -----
    One LAPACK triangular solve per slot (``jax.scipy.linalg.solve_triangular`` under ``vmap``).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> L = jnp.array([[[2.0, 0.0], [1.0, 1.0]]])
    >>> [float(a) for a in solve_lower(L, jnp.array([[2.0, 2.0]]))[0]]
    [1.0, 1.0]
    """
    return jax.vmap(lambda l_, b_: solve_triangular(l_, b_, lower=True))(L, b)


def chol_singular(L: Array, tol: float = SING_TOL) -> Array:
    r"""Numerical singularity of :math:`S = LL^\top` from its lower factor, :math:`O(d^2)` per factor.

    Parameters
    ----------
    L : array (..., d, d)
        Lower Cholesky factor(s) of scatter matrices.
    tol : float, default :data:`SING_TOL`
        Relative threshold; the default is the CEC-IB reference implementation's rule.

    Returns
    -------
    bool array (...)
        True when some pivot :math:`L_{jj}^2` is at most ``tol`` times the largest diagonal entry of S, or
        the factor is not finite (a failed downdate).

    Notes
    -----
    A pivot :math:`L_{jj}^2` is a Schur complement of S, so :math:`\min_j L_{jj}^2 \ge \lambda_{\min}(S)`,
    and :math:`\max_j S_{jj} \le \lambda_{\max}(S)`: the test
    :math:`\min_j L_{jj}^2 \le \mathrm{tol}\,\max_j S_{jj}` is a cheap stand-in for
    :math:`\lambda_{\min} \le \mathrm{tol}\,\lambda_{\max}`. Compiled twin:
    :func:`ppclust.families._cholesky_cpu.chol_singular`.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> bool(chol_singular(jnp.eye(2))), bool(chol_singular(jnp.diag(jnp.array([1.0, 1e-7]))))
    (False, True)
    """
    piv = jnp.diagonal(L, axis1=-2, axis2=-1) ** 2
    diag_s = jnp.sum(L * L, -1)
    return ~jnp.all(jnp.isfinite(L), axis=(-2, -1)) | (jnp.min(piv, -1) <= tol * jnp.max(diag_s, -1))
