r"""Compiled (numba) twins of :mod:`ppclust.families.cholesky`, in the two factor layouts the kernels use.

The compiled sweeps cannot call JAX, so the rank-one Cholesky algebra is restated here, once, for one slot at
a time; each twin is named after the JAX function it mirrors and is checked against it to 1e-12 in float64
(``tests/families/test_twins.py`` walks :data:`ppclust.families._twins.TWINS`). Two layouts:

* **packed column-major** (the Gibbs and sub-cluster sweeps): slot k's factor is the row ``sc[k]`` with
  :math:`L_{jm}` at ``sc[k, m * d + j]`` (the inner loops run down a column): :func:`chol_rank_one`,
  :func:`solve_lower_sq`;
* **slot-major** (the Hartigan engine): ``L[r, c, k]``, the innermost index the slot:
  :func:`rank_one_slot`, :func:`logdet_slot`, :func:`pivots_slot`, and on one (d, d) factor
  :func:`chol_update`, :func:`chol_downdate`, :func:`chol_logdet`, :func:`chol_singular`.

The two rank-one recurrences round differently (the packed one multiplies by reciprocals): each is kept as
its callers have always computed it, so that their decisions and draws do not change.
"""

from __future__ import annotations

import math

import numpy as np

from ppclust.families._numba import compile_kernel, inline_kernel

__all__ = [
    "chol_rank_one",
    "solve_lower_sq",
    "rank_one_slot",
    "logdet_slot",
    "pivots_slot",
    "chol_update",
    "chol_downdate",
    "chol_logdet",
    "chol_singular",
]


def _ir_inline(fn):
    # IR-inlined: a real call passes array structs and reference-counts them per slot and point
    return compile_kernel(fn, inline="always")


@inline_kernel
def chol_rank_one(sc, k, v, sign):
    r"""Slot k's packed factor :math:`L \leftarrow \mathrm{chol}(LL^\top + \mathrm{sign}\,vv^\top)` in place.

    Parameters
    ----------
    sc : float64 array (K, d * d)
        Packed factors, :math:`L_{jm}` of slot k at ``sc[k, m * d + j]``; updated in place.
    k : int
        Slot.
    v : float64 array (d,)
        The rank-one vector; overwritten.
    sign : float
        +1.0 (update) or -1.0 (downdate).

    Returns
    -------
    None

    Notes
    -----
    The column recurrence of :func:`ppclust.families.chol_rank_one`, with one division per column for
    :math:`1/L_{mm}`.

    Examples
    --------
    >>> import numpy as np
    >>> sc = np.eye(2).reshape(1, 4).copy()
    >>> chol_rank_one(sc, 0, np.array([1.0, 0.0]), 1.0)
    >>> round(float(sc[0, 0]), 4)
    1.4142
    """
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
def solve_lower_sq(k, sc, b1, w):
    r"""Squared norm :math:`\|L_k^{-1}u\|^2` by forward substitution in place, for one packed slot.

    Parameters
    ----------
    k : int
        Slot.
    sc : float64 array (K, d * d)
        Packed column-major factors (as :func:`chol_rank_one`).
    b1 : float64 array (K, d)
        Reciprocal diagonals :math:`1/L_{k,jj}`.
    w : float64 array (d,)
        u on entry, :math:`L_k^{-1}u` on exit.

    Returns
    -------
    float
        :math:`\|L_k^{-1}u\|^2`, as :func:`ppclust.families.solve_lower_sq`.

    Examples
    --------
    >>> import numpy as np
    >>> sc = np.array([[2.0, 1.0, 0.0, 1.0]])  # L = [[2, 0], [1, 1]], column-major
    >>> solve_lower_sq(0, sc, np.array([[0.5, 1.0]]), np.array([2.0, 2.0]))
    2.0
    """
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


@_ir_inline
def rank_one_slot(L, k, v, sign):
    r"""Slot k's slot-major factor :math:`L_k \leftarrow \mathrm{chol}(L_kL_k^\top + \mathrm{sign}\,vv^\top)`.

    Parameters
    ----------
    L : float64 array (d, d, K)
        Slot-major lower factors ``L[r, c, k]``; updated in place.
    k : int
        Slot.
    v : float64 array (d,)
        The rank-one vector; overwritten.
    sign : float
        +1.0 (update) or -1.0 (downdate; NaN entries when the result is not positive definite).

    Returns
    -------
    None

    Notes
    -----
    The column recurrence of :func:`ppclust.families.chol_rank_one`, operation for operation
    (:math:`c = r/L_{cc}`, :math:`s = v_c/L_{cc}`, :math:`L'_{ic} = (L_{ic} + \mathrm{sign}\,s\,v_i)/c`).

    Examples
    --------
    >>> import numpy as np
    >>> L = np.eye(2).reshape(2, 2, 1).copy()
    >>> rank_one_slot(L, 0, np.array([1.0, 0.0]), 1.0)
    >>> round(float(L[0, 0, 0]), 4)
    1.4142
    """
    d = v.shape[0]
    for c in range(d):
        lcc = L[c, c, k]
        vc = v[c]
        r = np.sqrt(lcc * lcc + sign * vc * vc)
        cc = r / lcc
        s = vc / lcc
        for i in range(c + 1, d):
            new = (L[i, c, k] + sign * s * v[i]) / cc
            L[i, c, k] = new
            v[i] = cc * v[i] - s * new
        L[c, c, k] = r


@compile_kernel
def chol_update(L, v):
    r"""Lower factor of :math:`LL^\top + vv^\top` (a new array), twin of :func:`ppclust.families.chol_update`.

    Parameters
    ----------
    L : float64 array (d, d)
        Lower factor.
    v : float64 array (d,)
        The vector (not modified).

    Returns
    -------
    float64 array (d, d)

    Examples
    --------
    >>> import numpy as np
    >>> round(float(chol_update(np.eye(2), np.array([1.0, 0.0]))[0, 0]), 4)
    1.4142
    """
    d = L.shape[0]
    L3 = np.ascontiguousarray(L).copy().reshape(d, d, 1)
    rank_one_slot(L3, 0, v.copy(), 1.0)
    return L3.reshape(d, d)


@compile_kernel
def chol_downdate(L, v):
    r"""Lower factor of :math:`LL^\top - vv^\top` (new array), twin of :func:`ppclust.families.chol_downdate`.

    Parameters
    ----------
    L : float64 array (d, d)
        Lower factor.
    v : float64 array (d,)
        The vector (not modified).

    Returns
    -------
    float64 array (d, d)
        NaN entries when the result is not positive definite.

    Examples
    --------
    >>> import numpy as np
    >>> round(float(chol_downdate(np.sqrt(2.0) * np.eye(2), np.array([1.0, 0.0]))[0, 0]), 4)
    1.0
    """
    d = L.shape[0]
    L3 = np.ascontiguousarray(L).copy().reshape(d, d, 1)
    rank_one_slot(L3, 0, v.copy(), -1.0)
    return L3.reshape(d, d)


@_ir_inline
def logdet_slot(L, k):
    r""":math:`2\sum_c \ln L_{cc}` of slot k of slot-major factors ``L[r, c, k]``.

    Parameters
    ----------
    L : float64 array (d, d, K)
        Slot-major lower factors.
    k : int
        Slot.

    Returns
    -------
    float
        The log-determinant; ``-inf`` for a zero pivot, NaN for a negative or NaN one.

    Examples
    --------
    >>> import numpy as np
    >>> logdet_slot(np.eye(2).reshape(2, 2, 1), 0)
    0.0
    """
    d = L.shape[0]
    acc = 0.0
    for c in range(d):
        acc += (
            math.log(L[c, c, k])
            if L[c, c, k] > 0.0
            else (np.nan if L[c, c, k] < 0.0 or L[c, c, k] != L[c, c, k] else -np.inf)
        )
    return 2.0 * acc


@compile_kernel
def chol_logdet(L):
    r""":math:`\ln\det LL^\top` of one (d, d) factor, twin of :func:`ppclust.families.chol_logdet`.

    Parameters
    ----------
    L : float64 array (d, d)
        Lower factor.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> chol_logdet(np.diag([2.0, 0.5]))
    0.0
    """
    d = L.shape[0]
    return logdet_slot(np.ascontiguousarray(L).reshape(d, d, 1), 0)


@_ir_inline
def pivots_slot(L, k):
    r"""The inputs of the singularity test of slot k: :math:`(\min_j L_{jj}^2, \max_j S_{jj}, \text{finite})`.

    Parameters
    ----------
    L : float64 array (d, d, K)
        Slot-major lower factors.
    k : int
        Slot.

    Returns
    -------
    tuple (float, float, bool)
        Smallest squared pivot, largest diagonal entry of :math:`S = L_kL_k^\top`, whether every entry of
        the lower triangle is finite.

    Examples
    --------
    >>> import numpy as np
    >>> pivots_slot(np.diag([1.0, 2.0]).reshape(2, 2, 1), 0)
    (1.0, 4.0, True)
    """
    d = L.shape[0]
    mn = np.inf
    mx = 0.0
    fin = True
    for r in range(d):
        row = 0.0
        for c in range(r + 1):
            v = L[r, c, k]
            if not np.isfinite(v):
                fin = False
            row += v * v
        if row > mx:
            mx = row
        p = L[r, r, k] * L[r, r, k]
        if p < mn:
            mn = p
    return mn, mx, fin


@compile_kernel
def chol_singular(L, sing_tol):
    r"""Numerical singularity of :math:`LL^\top`, twin of :func:`ppclust.families.chol_singular`.

    Parameters
    ----------
    L : float64 array (d, d)
        Lower factor.
    sing_tol : float
        Relative threshold (:data:`ppclust.families.SING_TOL`).

    Returns
    -------
    bool
        True when the factor is not finite or :math:`\min_j L_{jj}^2 \le \mathrm{tol}\,\max_j S_{jj}`.

    Examples
    --------
    >>> import numpy as np
    >>> chol_singular(np.eye(2), 1e-12), chol_singular(np.diag([1.0, 1e-7]), 1e-12)
    (False, True)
    """
    d = L.shape[0]
    mn, mx, fin = pivots_slot(np.ascontiguousarray(L).reshape(d, d, 1), 0)
    return (not fin) or (mn <= sing_tol * mx)
