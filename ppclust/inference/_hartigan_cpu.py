r"""The Hartigan engine of :mod:`ppclust.inference.hartigan` compiled as one CPU loop (numba).

Kept whole although over 700 lines: it is one compiled program, the visit loop (:func:`run_restarts`) and
the kernels it inlines (solves, rank-one updates, the per-cluster cost), whose element-for-element
arithmetic must stay in step for the decisions to be those of the XLA engine.

Why a second implementation: a Hartigan pass is a sequential loop over points whose body is a few dozen
tiny operations (K triangular solves, K logs, an argmin, sometimes two rank-one updates); XLA:CPU runs
such a body as a chain of small kernels, while here every restart is one compiled loop (as the compiled
Gibbs sweep, :mod:`ppclust.inference._gibbs_cpu`).

What one visit of point i costs (K slots, d the dimension of the Gaussian part):

* the forward substitutions :math:`w_k = L_k^{-1}(x_i-\bar x_k)` of all K slots: :math:`K d^2` FLOPs, the
  per-visit FLOP bound. They are solved *ahead*, for blocks of :data:`BLOCK` points at once
  (:func:`_solve_block`: the points innermost, four rows of a packed per-slot factor at a time, so each
  factor entry serves the whole block), under the assumption that no point of the block moves; a move
  changes two slots, whose solves are redone for the rest of the block, and a block after one that moved
  more than a quarter of its points is solved one point at a time for all slots (:func:`_solve_all`,
  slot-major factors ``L[r, c, k]``, the innermost loop over slots). Both kernels do the same arithmetic
  element for element (no reassociation, no contraction), so the decisions do not depend on the path;
* the candidate log-determinants by the matrix determinant lemma
  (:meth:`ppclust.families.GaussianML.logdet_after_add`), and the point's own slot *without* a
  Cholesky downdate: :math:`\ln\det S_a^{-x} = \ln\det S_a + \ln(1 - \tfrac{n_a}{n_a-1} w_a^\top w_a)`.
  A downdate shrinks every Schur complement by at most the factor :math:`f = 1-\tfrac{n_a}{n_a-1}
  w_a^\top w_a` (:math:`S' \succeq f S`), so when :math:`f\,\min_j L_{jj}^2 > \text{SING\_TOL}\,\max_j
  S_{jj}` the downdated factor cannot fail the singularity test of
  :func:`ppclust.families.chol_singular`; only otherwise is the downdate computed to decide it;
* label / leakage terms in O(K) from cached per-slot statistics and tables of ``c log c`` for integer
  counts.

Cholesky factors change only when a point moves (two rank-one updates). The kernels take their arrays
grouped in NamedTuples (:class:`Data`, :class:`Config`, :class:`Slots`, :class:`Trace`).

The decisions are those of the XLA engine (same candidate set, same tie-breaking, same deletion and
degeneracy rules, lazy or immediate reassignment); costs agree to rounding. Numba twins carry the
name of the JAX function they mirror and are checked one by one in ``tests/inference/test_hartigan_cpu.py``;
the engine as a whole replays the authors' program (``tests/inference/test_cecib.py``) and is compared
label for label with the XLA engine.

The cost is :class:`ppclust.inference.cec.CECCost`:

.. math::  E(Y_k) = \frac{n_k}{n}\Big(\ln n - \ln n_k + H_{ML}(n_k, \ln\det S_k)
           + \sum_{j<J} E_1(\mu_{kj}, s^2_{kj}; \alpha_j) + \beta\,H(Z\mid Y_k\cap X_l)\Big)

(CEC-IB eq. 11: ``J = 0``; C3L eq. 8: ``J`` decision coordinates, no label term).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ppclust import _jax  # noqa: F401  (sets NUMBA_CACHE_DIR before the cache=True kernels below are made)
from ppclust.families import LOG_2PI, LOG_2PIE
from ppclust.families._cholesky_cpu import logdet_slot, pivots_slot, rank_one_slot
from ppclust.families._numba import compile_kernel

try:  # numba is a run-time dependency; without it the XLA engine runs
    import numba
    from numba import uint64 as U
except ImportError:  # pragma: no cover - exercised only where numba is missing
    numba = None
    U = int

__all__ = [
    "available",
    "ml_entropy",
    "constrained_cost_1d",
    "logdet_after_add",
    "cluster_cost",
    "slot_logdet",
    "degenerate",
    "pack_factors",
    "Data",
    "Config",
    "Slots",
    "Trace",
    "run_restarts",
    "njit",
    "TILE",
    "BLOCK",
]

_LOG_2PIE = float(LOG_2PIE)  # plain Python floats: numba freezes them as compile-time constants
_LOG_2PI = float(LOG_2PI)
_BIG = float(np.finfo(np.float64).max)  # the jar's stand-in for an infinite candidate cost

#: the engine's slot count is padded to a multiple of this (whole SIMD vectors in :func:`_solve_all`)
TILE = 4
#: points whose forward substitutions :func:`_solve_block` computes together (speculatively, see
#: :func:`run_restarts`; docs/decisions/ for the choice)
BLOCK = 64


def available() -> bool:
    """True when numba imports (the compiled CPU engine can run).

    Examples
    --------
    >>> from ppclust.inference._hartigan_cpu import available
    >>> isinstance(available(), bool)
    True
    """
    return numba is not None


def _compile(fn, **options):
    # the families' compile_kernel: the disk cache's stamp folds in the Cholesky twins inlined here
    return compile_kernel(fn, **options)


def njit(fn):
    """``numba.njit`` with the engine's options: compiled code cached on disk, no GIL, NumPy's error model.

    The decorator of every kernel here and in :mod:`._init_cpu`.

    Parameters
    ----------
    fn : callable
        The Python function to compile.

    Examples
    --------
    >>> from ppclust.inference._hartigan_cpu import njit
    >>> int(njit(lambda a: a + 1)(1))
    2
    """
    return _compile(fn)


_njit = njit


def _inline(fn):
    # IR-inlined: a real call passes array structs and reference-counts them per slot and point
    return _compile(fn, inline="always")


@_inline
def _ml_entropy(n, logdet_scatter, d):
    return 0.5 * d * _LOG_2PIE + 0.5 * (logdet_scatter - d * math.log(n))


@_njit
def ml_entropy(n, logdet_scatter, d):
    """Twin of :func:`ppclust.families.ml_entropy` (scalar).

    Parameters
    ----------
    n : float
        Points.
    logdet_scatter : float
        ln det of their scatter.
    d : int
        Dimension.

    Examples
    --------
    >>> from ppclust.inference._hartigan_cpu import ml_entropy
    >>> round(float(ml_entropy(1.0, 0.0, 1)), 6)  # entropy of N(0, 1)
    1.418939
    """
    return _ml_entropy(n, logdet_scatter, d)


@_inline
def _e1(mu, s2, p):
    """Theorem 1 of C3L (``c3l.constrained_fit_1d``'s E1, Vieta form), scalar."""
    s = math.sqrt(s2)
    amu = abs(mu)
    if p > 0.0 and amu < p * s:
        sgn = -1.0 if mu < 0.0 else 1.0
        disc = (p * p + 4.0) * mu * mu + 4.0 * s2
        m = sgn * 2.0 * p * (s2 + mu * mu) / (p * amu + math.sqrt(disc))
        return 0.5 * (1.0 + p * p - p * p * mu / m + _LOG_2PI + 2.0 * math.log(abs(m)) - 2.0 * math.log(p))
    return 0.5 * (1.0 + _LOG_2PI + math.log(s2))


@_njit
def constrained_cost_1d(mu, s2, p):
    """Twin of :func:`ppclust.inference.cec.constrained_cost_1d` (scalar).

    Parameters
    ----------
    mu, s2 : float
        Sample mean and MLE variance.
    p : float
        Quantile of the leakage bound.

    Examples
    --------
    >>> from ppclust.inference._hartigan_cpu import constrained_cost_1d
    >>> round(float(constrained_cost_1d(3.0, 1.0, 1.0)), 6)  # constraint inactive: the MLE's entropy
    1.418939
    """
    return _e1(mu, s2, p)


@_njit
def logdet_after_add(n, s, L, x):
    """Twin of :meth:`ppclust.families.GaussianML.logdet_after_add`: n (K,), s (K, d), L (K, d, d).

    Parameters
    ----------
    n : array (K,)
        Counts.
    s : array (K, d)
        Sums.
    L : array (K, d, d)
        Cholesky factors of the scatters.
    x : array (d,)
        The point added.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference._hartigan_cpu import logdet_after_add
    >>> ld = logdet_after_add(np.array([1.0]), np.zeros((1, 1)), np.ones((1, 1, 1)), np.array([2.0]))
    >>> round(float(ld[0]), 6)  # scatter 1 + (1/2) * 2^2 = 3
    1.098612
    """
    K, d = s.shape
    Kp = (K + TILE - 1) // TILE * TILE
    Ls = np.zeros((d, d, Kp))
    mT = np.zeros((d, Kp))
    for k in range(Kp):
        for r in range(d):
            Ls[r, r, k] = 1.0
    for k in range(K):
        for r in range(d):
            mT[r, k] = s[k, r] / max(n[k], 1e-300)
            for c in range(d):
                Ls[r, c, k] = L[k, r, c]
    w = np.empty((d, Kp))
    quad = np.zeros(Kp)
    ld = np.empty(K)
    _solve_all(Ls.reshape(d * d * Kp), mT.reshape(d * Kp), x, w.reshape(d * Kp), quad, np.empty(Kp), d, Kp)
    for k in range(K):
        ld[k] = logdet_slot(Ls, k) + math.log1p(n[k] / (n[k] + 1.0) * quad[k])
    return ld


@_inline
def _solve_all(Lf, mTf, xr, wf, quad, acc, d, K):
    """w[:, k] = L_k^{-1}(x - mean_k) for every slot at once; quad[k] = |w_k|^2.

    Flat views of the slot-major factors ``L (d, d, K)`` and means/solutions ``(d, K)``: the forward
    substitution runs row by row for all K slots together, the innermost loop over slots (contiguous,
    vectorised by LLVM), four columns per step to cut the accumulator traffic. Unsigned indices spare
    numba's negative-index wraparound, which otherwise blocks vectorisation.
    """
    uK = U(K)
    for k in range(K):
        quad[k] = 0.0
    for r in range(d):
        xv = xr[r]
        ro = U(r * K)
        for k in range(K):
            uk = U(k)
            acc[uk] = xv - mTf[ro + uk]
        base = U(r * d * K)
        c = 0
        while c + 3 < r:
            o = base + U(c * K)
            oc = U(c * K)
            for k in range(K):
                uk = U(k)
                acc[uk] -= (Lf[o + uk] * wf[oc + uk] + Lf[o + uK + uk] * wf[oc + uK + uk]) + (
                    Lf[o + 2 * uK + uk] * wf[oc + 2 * uK + uk] + Lf[o + 3 * uK + uk] * wf[oc + 3 * uK + uk]
                )
            c += 4
        while c < r:
            o = base + U(c * K)
            oc = U(c * K)
            for k in range(K):
                uk = U(k)
                acc[uk] -= Lf[o + uk] * wf[oc + uk]
            c += 1
        o = base + U(r * K)
        for k in range(K):
            uk = U(k)
            v = acc[uk] / Lf[o + uk]
            wf[ro + uk] = v
            quad[uk] += v * v


@_inline
def _solve_block(Lk, mT, k, XB, W, A, Q, d, B, nb):
    """Q[p] = |L_k^{-1}(x_p - mean_k)|^2 for the first nb points of a block (row stride B), one slot k.

    The same arithmetic as :func:`_solve_all`, element for element (so the same bits), in another loop
    order: the innermost loop runs over the block's points (``XB``/``W`` are (d, B) row-major, the points
    contiguous), and rows are taken four at a time (rows 4q .. 4q+3 share their groups of four columns
    c < 4q), so each loaded column of the solution serves four rows and each factor entry B points.
    ``Lk``: slot k's factor packed by rows (``Lk[r (r + 1) / 2 + c]``, c <= r); ``A`` (4 B) scratch. The
    rest of a block from point j on: pass ``XB[j:]``, ``W[j:]``, ``A[j:]``, ``Q[j:]`` and ``nb = B - j``
    (loops that start at 0 vectorise far better than loops from a variable start).
    """
    uB = U(B)
    for p in range(nb):
        Q[p] = 0.0
    for r0 in range(0, d, 4):
        nr = min(4, d - r0)
        for j in range(nr):
            m = mT[r0 + j, k]
            oa = U(j) * uB
            ox = U(r0 + j) * uB
            for p in range(nb):
                up = U(p)
                A[oa + up] = XB[ox + up] - m
        if nr == 4:
            o0 = U(r0 * (r0 + 1) // 2)
            o1 = U((r0 + 1) * (r0 + 2) // 2)
            o2 = U((r0 + 2) * (r0 + 3) // 2)
            o3 = U((r0 + 3) * (r0 + 4) // 2)
            for c in range(0, r0, 4):
                uc = U(c)
                a0, a1, a2, a3 = Lk[o0 + uc], Lk[o0 + uc + 1], Lk[o0 + uc + 2], Lk[o0 + uc + 3]
                b0, b1, b2, b3 = Lk[o1 + uc], Lk[o1 + uc + 1], Lk[o1 + uc + 2], Lk[o1 + uc + 3]
                c0, c1, c2, c3 = Lk[o2 + uc], Lk[o2 + uc + 1], Lk[o2 + uc + 2], Lk[o2 + uc + 3]
                e0, e1, e2, e3 = Lk[o3 + uc], Lk[o3 + uc + 1], Lk[o3 + uc + 2], Lk[o3 + uc + 3]
                oc = uc * uB
                for p in range(nb):
                    up = U(p)
                    w0 = W[oc + up]
                    w1 = W[oc + uB + up]
                    w2 = W[oc + 2 * uB + up]
                    w3 = W[oc + 3 * uB + up]
                    A[up] -= (a0 * w0 + a1 * w1) + (a2 * w2 + a3 * w3)
                    A[uB + up] -= (b0 * w0 + b1 * w1) + (b2 * w2 + b3 * w3)
                    A[2 * uB + up] -= (c0 * w0 + c1 * w1) + (c2 * w2 + c3 * w3)
                    A[3 * uB + up] -= (e0 * w0 + e1 * w1) + (e2 * w2 + e3 * w3)
        else:  # the last rows when d is not a multiple of 4
            for j in range(nr):
                r = r0 + j
                ro = U(r * (r + 1) // 2)
                oa = U(j) * uB
                for c in range(0, r0, 4):
                    uc = U(c)
                    a0, a1, a2, a3 = Lk[ro + uc], Lk[ro + uc + 1], Lk[ro + uc + 2], Lk[ro + uc + 3]
                    oc = uc * uB
                    for p in range(nb):
                        up = U(p)
                        A[oa + up] -= (a0 * W[oc + up] + a1 * W[oc + uB + up]) + (
                            a2 * W[oc + 2 * uB + up] + a3 * W[oc + 3 * uB + up]
                        )
        for j in range(nr):  # the triangle: single columns c = 4q .. r - 1, then the pivot
            r = r0 + j
            ro = U(r * (r + 1) // 2)
            oa = U(j) * uB
            for c in range(r0, r):
                lc = Lk[ro + U(c)]
                oc = U(c) * uB
                for p in range(nb):
                    up = U(p)
                    A[oa + up] -= lc * W[oc + up]
            lrr = Lk[ro + U(r)]
            orow = U(r) * uB
            for p in range(nb):
                up = U(p)
                v = A[oa + up] / lrr
                W[orow + up] = v
                Q[up] += v * v


# ---------------------------------------------------------------------------------------------------
# the arguments of the compiled engine
# ---------------------------------------------------------------------------------------------------


class Data(NamedTuple):
    """The inputs of a run that the engine reads (and the ``c ln c`` table :func:`run_restarts` fills).

    Parameters
    ----------
    x : array (n, J + d)
        float64 points, the J decision coordinates first.
    side : int32 array (n,)
        Label category of every point, -1 = none.
    order : int64 array (n,)
        Visiting order of the points in every pass.
    p : array (J,)
        Leakage quantiles (:func:`ppclust.inference.cec.quantile`).
    floor : array (J,)
        Floors on the 1-D variances.
    xlx : array (n + 2,)
        Table of c ln c for integer counts c (filled by :func:`run_restarts`).

    Examples
    --------
    >>> from ppclust.inference._hartigan_cpu import Data
    >>> Data._fields
    ('x', 'side', 'order', 'p', 'floor', 'xlx')
    """

    x: np.ndarray  #: (n, J + d) float64, the J decision coordinates first
    side: np.ndarray  #: (n,) int32 label category of every point, -1 = none
    order: np.ndarray  #: (n,) int64 visiting order of the points in every pass
    p: np.ndarray  #: (J,) leakage quantiles (:func:`ppclust.inference.cec.quantile`)
    floor: np.ndarray  #: (J,) floors on the 1-D variances
    xlx: np.ndarray  #: (n + 2,) table of c ln c for integer counts c (filled by run_restarts)


class Config(NamedTuple):
    """The scalar parameters of a run.

    Parameters
    ----------
    n_total : float
        n in the weights n_k / n.
    beta : float
        Weight of the label term (0 without one).
    min_size : float
        A cluster with fewer points is deleted.
    tol : float
        A move needs a cost change below -tol.
    min_count : float
        A slot with fewer points is degenerate.
    sing_tol : float
        lambda_min <= sing_tol * lambda_max is singular.
    block : int
        Points per block of the visit loop's solves (0: one point at a time, :func:`_solve_all`).
    max_passes : int
        Safety cap on passes.
    immediate : bool
        Reassign the points of a deleted cluster at once (else lazily).

    Examples
    --------
    >>> from ppclust.inference._hartigan_cpu import Config
    >>> Config(100.0, 1.0, 5.0, 0.0, 3.0, 1e-12, 64, 100, False).block
    64
    """

    n_total: float  #: n in the weights n_k / n
    beta: float  #: weight of the label term (0 without one)
    min_size: float  #: a cluster with fewer points is deleted
    tol: float  #: a move needs a cost change below -tol
    min_count: float  #: a slot with fewer points is degenerate
    sing_tol: float  #: lambda_min <= sing_tol * lambda_max is singular
    block: int  #: points per block of the visit loop's solves (0: one point at a time, :func:`_solve_all`)
    max_passes: int  #: safety cap on passes
    immediate: bool  #: reassign the points of a deleted cluster at once (else lazily)


class Slots(NamedTuple):
    """The state of a run (of every restart, with a leading restart axis R in :func:`run_restarts`).

    Parameters
    ----------
    labels : int32 array (n,)
        Slots of the points.
    active : bool array (K,)
        Live slots.
    n : array (K,)
        Counts.
    sT : array (d, K)
        Sums.
    L : array (d, d, K)
        Slot-major lower Cholesky factors of the scatters.
    tmean, tm2 : arrays (K, J)
        Means and centred sums of squares of the decision coordinates.
    counts : array (K, m)
        Label counts.
    nlab : array (K,)
        Labelled points.
    clogc : array (K,)
        sum_j c ln c of the label counts.
    costs : array (K,)
        Per-cluster costs.

    Examples
    --------
    >>> from ppclust.inference._hartigan_cpu import Slots
    >>> len(Slots._fields)
    11
    """

    labels: np.ndarray
    active: np.ndarray
    n: np.ndarray
    sT: np.ndarray
    L: np.ndarray
    tmean: np.ndarray
    tm2: np.ndarray
    counts: np.ndarray
    nlab: np.ndarray
    clogc: np.ndarray
    costs: np.ndarray


class Trace(NamedTuple):
    """Outputs per restart.

    Parameters
    ----------
    trace : array (R, max_passes + 1)
        Total cost after the start and after each pass.
    ktrace : int32 array (R, max_passes + 1)
        Live clusters at the same moments.
    n_passes : int32 array (R,)
        Passes.
    converged : bool array (R,)
        No move in the last pass.

    Examples
    --------
    >>> from ppclust.inference._hartigan_cpu import Trace
    >>> Trace._fields
    ('trace', 'ktrace', 'n_passes', 'converged')
    """

    trace: np.ndarray
    ktrace: np.ndarray
    n_passes: np.ndarray
    converged: np.ndarray


class _Cache(NamedTuple):
    """Per-slot values derived from a slot's factor (:func:`_slot_summary`)."""

    mT: np.ndarray  # (d, K) means
    logdet: np.ndarray  # (K,)
    minpiv: np.ndarray  # (K,) min_j L_jj^2
    maxdiag: np.ndarray  # (K,) max_j S_jj
    finite: np.ndarray  # (K,) bool
    Lp: np.ndarray  # (K, d (d + 1) / 2) factors packed by rows


class _Work(NamedTuple):
    """Scratch buffers of a run."""

    w: np.ndarray  # (d, K) solutions
    quad: np.ndarray  # (K,) squared norms of the solutions
    addc: np.ndarray  # (K,) insertion costs
    v: np.ndarray  # (d,) rank-one vector
    tbuf: np.ndarray  # (2, J) decision statistics after a move
    scratch: np.ndarray  # (d, d, 1) a downdated factor


# ---------------------------------------------------------------------------------------------------
# the per-cluster cost
# ---------------------------------------------------------------------------------------------------


@_inline
def _cluster_cost(nk, logdet, tmean, tm2, nlab, clogc, n_total, log_n, beta, p, floor, d):
    """Twin of ``CECCost.slot_cost``: (n_k/n)(ln n - ln n_k + H_ML + sum_j E1 + beta H_lab), J =
    len(tmean)."""
    if nk <= 0.0:
        return 0.0
    safe = max(nk, 1.0)
    ls = math.log(safe)
    val = log_n - ls
    if d > 0:
        er = _ml_entropy(safe, logdet, d)
        if er != er or er == -np.inf:
            er = np.inf
        val += er
    for j in range(tmean.shape[0]):
        s2 = max(tm2[j] / safe, floor[j])
        val += _e1(tmean[j], s2, p[j])
    if nlab > 0.0:
        sl = max(nlab, 1.0)
        val += beta * (math.log(sl) - clogc / sl)
    return safe / n_total * val


@_njit
def cluster_cost(nk, logdet, tmean, tm2, nlab, clogc, n_total, beta, p, floor, d):
    """Twin of :meth:`ppclust.inference.cec.CECCost.slot_cost` (one slot; ``tmean``/``tm2`` (J,)).

    Parameters
    ----------
    nk : float
        Slot size.
    logdet : float
        ln det of its scatter.
    tmean, tm2 : arrays (J,)
        Mean and centred sum of squares of the decision coordinates.
    nlab : float
        Labelled points.
    clogc : float
        :math:`\\sum_j c_j \\ln c_j` of its label counts.
    n_total : float
        All points.
    beta : float
        Weight of the label term.
    p, floor : arrays (J,)
        Leakage quantiles and variance floors.
    d : int
        Dimension of the Gaussian part.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference._hartigan_cpu import cluster_cost
    >>> float(cluster_cost(10.0, 0.0, np.zeros(0), np.zeros(0), 0.0, 0.0, 10.0, 0.0, np.zeros(0),
    ...                    np.zeros(0), 0))
    0.0
    """
    return _cluster_cost(nk, logdet, tmean, tm2, nlab, clogc, n_total, math.log(n_total), beta, p, floor, d)


@_njit
def slot_logdet(L, k):
    """ln det of slot k's scatter from the slot-major factors ``L (d, d, K)`` (-inf/NaN when singular).

    Parameters
    ----------
    L : array (d, d, K)
        Slot-major factors.
    k : int
        Slot.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference._hartigan_cpu import slot_logdet
    >>> round(float(slot_logdet(2.0 * np.eye(2)[:, :, None], 0)), 6)  # det(4 I) = 16
    2.772589
    """
    return logdet_slot(L, k)


# ---------------------------------------------------------------------------------------------------
# the engine (twin of hartigan.run for a batch of restarts)
# ---------------------------------------------------------------------------------------------------


@_inline
def _pack_slot(L, k, Lp):
    """Row k of ``Lp``: slot k of the slot-major factors ``L (d, d, K)``, lower triangle packed by rows."""
    o = 0
    for r in range(L.shape[0]):
        for c in range(r + 1):
            Lp[k, o] = L[r, c, k]
            o += 1


@_njit
def pack_factors(L):
    """Slot-major factors ``(d, d, K)`` in :func:`_solve_block`'s layout ``(K, d (d + 1) / 2)``.

    Parameters
    ----------
    L : array (d, d, K)
        Slot-major factors.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference._hartigan_cpu import pack_factors
    >>> pack_factors(np.arange(4.0).reshape(2, 2, 1)).tolist()
    [[0.0, 2.0, 3.0]]
    """
    d, _, K = L.shape
    Lp = np.zeros((K, d * (d + 1) // 2))
    for k in range(K):
        _pack_slot(L, k, Lp)
    return Lp


@_inline
def _slot_summary(s, c, k):
    """Refresh slot k's cached mean, log-determinant, pivot summary and packed copy of the factor (rows
    of the lower triangle, for :func:`_solve_block`) after its factor changed."""
    L = s.L
    for r in range(c.mT.shape[0]):
        c.mT[r, k] = s.sT[r, k] / max(s.n[k], 1e-300)
    _pack_slot(L, k, c.Lp)
    mn, mx, fin = pivots_slot(L, k)
    c.minpiv[k] = mn
    c.maxdiag[k] = mx
    c.finite[k] = fin
    c.logdet[k] = logdet_slot(L, k)


@_njit
def _slot_summary_kernel(s, c, k):
    """:func:`_slot_summary` as a called kernel, for the set-up loop and the insertion of orphans: rare
    calls, where an inlined copy would only add compile time."""
    _slot_summary(s, c, k)


@_inline
def _xlogx(c, tab):
    ic = int(c)
    if 0 <= ic < tab.shape[0] and ic == c:
        return tab[ic]
    return c * math.log(c) if c > 0 else 0.0


@_inline
def _add_costs(xr, ti, cat, s, c, wk, data, cfg, d, J):
    """addc[k] = E(Y_k with the point) for every slot (``cost.cost_add``)."""
    K = s.n.shape[0]
    if d > 0:
        _solve_all(
            s.L.reshape(d * d * K), c.mT.reshape(d * K), xr, wk.w.reshape(d * K), wk.quad, wk.addc, d, K
        )
    _add_costs_q(ti, cat, s, c, wk, data, cfg, d, J)


@_inline
def _add_costs_q(ti, cat, s, c, wk, data, cfg, d, J):
    """:func:`_add_costs` given the point's squared solutions ``wk.quad[k]`` of every slot."""
    n = s.n
    tmean = s.tmean
    tm2 = s.tm2
    quad = wk.quad
    addc = wk.addc
    xlx = data.xlx
    p = data.p
    floor = data.floor
    logdet = c.logdet
    K = n.shape[0]
    n_total = cfg.n_total
    log_n = math.log(n_total)
    beta = cfg.beta
    tm_new = wk.tbuf[0]
    t2_new = wk.tbuf[1]
    for k in range(K):
        nk = n[k]
        n1 = nk + 1.0
        ld = logdet[k] + math.log1p(nk / n1 * quad[k]) if d > 0 else 0.0
        for j in range(J):
            delta = ti[j] - tmean[k, j]
            tm_new[j] = tmean[k, j] + delta / n1
            t2_new[j] = tm2[k, j] + nk / n1 * delta * delta
        nl = s.nlab[k]
        cl = s.clogc[k]
        if cat >= 0:
            cnt = s.counts[k, cat]
            nl = nl + 1.0
            cl = cl + _xlogx(cnt + 1.0, xlx) - _xlogx(cnt, xlx)
        addc[k] = _cluster_cost(n1, ld, tm_new, t2_new, nl, cl, n_total, log_n, beta, p, floor, d)


@_inline
def _apply(sign, k, xr, ti, cat, s, v, xlx, d, J):
    """Rank-one add (sign = +1) / remove (sign = -1) of the point to slot k (``cost.add``/``remove``)."""
    n = s.n
    sT = s.sT
    tmean = s.tmean
    tm2 = s.tm2
    nk = n[k]
    n1 = nk + sign
    if d > 0:
        f = math.sqrt(nk / n1) if sign > 0 else math.sqrt(nk / (nk - 1.0))
        for r in range(d):
            v[r] = f * (xr[r] - sT[r, k] / max(nk, 1e-300))
        rank_one_slot(s.L, k, v, sign)
        for r in range(d):
            sT[r, k] += sign * xr[r]
    for j in range(J):
        delta = ti[j] - tmean[k, j]
        if sign > 0:
            tmean[k, j] = tmean[k, j] + delta / n1
            tm2[k, j] = tm2[k, j] + nk / n1 * delta * delta
        else:
            tmean[k, j] = tmean[k, j] - delta / max(n1, 1.0) if n1 > 0 else 0.0
            tm2[k, j] = max(tm2[k, j] - nk / max(n1, 1.0) * delta * delta, 0.0)
    if cat >= 0:
        c = s.counts[k, cat]
        cn = c + sign
        s.counts[k, cat] = cn
        s.nlab[k] += sign
        s.clogc[k] += _xlogx(cn, xlx) - _xlogx(c, xlx)
    n[k] = n1


@_njit
def _downdated_logdet(a, xr, s, wk, nk, n1, sing_tol, d):
    """log det of slot a's scatter without the point, from the downdated factor (-inf when singular): the
    rare near-singular case of :func:`_remove_cost`, called rather than inlined."""
    scratch = wk.scratch
    v = wk.v
    for r in range(d):
        for q in range(d):
            scratch[r, q, 0] = s.L[r, q, a]
    f = math.sqrt(nk / n1)
    for r in range(d):
        v[r] = f * (xr[r] - s.sT[r, a] / nk)
    rank_one_slot(scratch, 0, v, -1.0)
    mn, mx, fin = pivots_slot(scratch, 0)
    if (not fin) or mn <= sing_tol * mx:
        return -np.inf
    return logdet_slot(scratch, 0)


@_inline
def _remove_cost(a, xr, ti, cat, s, c, wk, data, cfg, d, J):
    """E(Y_a without the point) (``cost.cost_slot(cost.remove(...))``) without touching slot a."""
    n = s.n
    quad = wk.quad
    nk = n[a]
    n1 = nk - 1.0
    if n1 <= 0.0:
        return 0.0
    ld = 0.0
    if d > 0:
        fac = 1.0 - nk / n1 * quad[a]
        sing_tol = cfg.sing_tol
        if fac > 0.0 and fac * c.minpiv[a] > sing_tol * c.maxdiag[a] and np.isfinite(c.logdet[a]):
            ld = c.logdet[a] + math.log1p(-nk / n1 * quad[a])
        else:  # near-singular: decide on the downdated factor itself, as the JAX cost does
            ld = _downdated_logdet(a, xr, s, wk, nk, n1, sing_tol, d)
    tm_new = wk.tbuf[0]
    t2_new = wk.tbuf[1]
    for j in range(J):
        delta = ti[j] - s.tmean[a, j]
        tm_new[j] = s.tmean[a, j] - delta / max(n1, 1.0)
        t2_new[j] = max(s.tm2[a, j] - nk / max(n1, 1.0) * delta * delta, 0.0)
    nl = s.nlab[a]
    cl = s.clogc[a]
    if cat >= 0:
        cnt = s.counts[a, cat]
        nl = nl - 1.0
        cl = cl + _xlogx(cnt - 1.0, data.xlx) - _xlogx(cnt, data.xlx)
    return _cluster_cost(
        n1, ld, tm_new, t2_new, nl, cl, cfg.n_total, math.log(cfg.n_total), cfg.beta, data.p, data.floor, d
    )


@_njit
def _well_conditioned(L, k, d, tol):
    """True when S = L_k L_k^T is provably far from the eigenvalue test of :func:`degenerate`, so that test
    (an O(d^3) eigendecomposition per slot and pass) would say "not degenerate" too: lambda_max <= tr S and
    lambda_min >= 1 / ||L^{-1}||_F^2, with a margin of 4 x (tol + 8 d eps) for the rounding of both sides
    (the eigenvalues come out of LAPACK within ~d eps ||S|| of the exact ones). False decides nothing."""
    tr = 0.0
    for r in range(d):
        for c in range(r + 1):
            tr += L[r, c, k] * L[r, c, k]
    if not (tr > 0.0 and tr < 1e300):
        return False
    y = np.empty(d)
    inv_f = 0.0
    for j in range(d):  # column j of L^{-1} by forward substitution
        for i in range(j, d):
            acc = 1.0 if i == j else 0.0
            for c in range(j, i):
                acc -= L[i, c, k] * y[c]
            y[i] = acc / L[i, i, k]
            inv_f += y[i] * y[i]
    if not np.isfinite(inv_f) or inv_f <= 0.0:
        return False
    return 1.0 / inv_f > 4.0 * (tol + 8.0 * d * 2.220446049250313e-16) * tr


@_njit
def degenerate(k, n, L, min_count, sing_tol):
    """``CECCost.degenerate`` for slot k: too few points, non-finite factor, or lambda_min <= tol lambda_max.

    ``n`` (K,) counts and ``L`` (d, d, K) slot-major factors.

    Parameters
    ----------
    k : int
        Slot.
    n : array (K,)
        Counts.
    L : array (d, d, K)
        Slot-major factors.
    min_count : float
        Fewest points of a live slot.
    sing_tol : float
        Singularity threshold on lambda_min / lambda_max.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference._hartigan_cpu import degenerate
    >>> L = np.eye(2)[:, :, None]
    >>> bool(degenerate(0, np.array([5.0]), L, 3.0, 1e-12))
    False
    >>> bool(degenerate(0, np.array([2.0]), L, 3.0, 1e-12))  # fewer than 3 points
    True
    """
    if n[k] < min_count:
        return True
    d = L.shape[0]
    if d == 0:
        return False
    if _well_conditioned(L, k, d, sing_tol):
        return False
    S = np.zeros((d, d))
    for r in range(d):
        for c in range(d):
            acc = 0.0
            for m in range(min(r, c) + 1):
                acc += L[r, m, k] * L[c, m, k]
            S[r, c] = acc
    if not np.all(np.isfinite(S)):
        return True
    ev = np.linalg.eigvalsh(S)
    return ev[0] <= sing_tol * ev[d - 1]


@_njit
def _insert(i, s, c, wk, data, cfg, d, J):
    """Insert point i (in no live slot) where the insertion cost is smallest (``hartigan._insert``)."""
    K = s.n.shape[0]
    xr = data.x[i, J:]
    ti = data.x[i, :J]
    cat = data.side[i]
    _add_costs(xr, ti, cat, s, c, wk, data, cfg, d, J)
    b = np.int64(-1)  # not the literal -1: numba would compile the slot-summary kernel for that constant too
    best = np.inf
    for k in range(K):
        if s.active[k]:
            dl = wk.addc[k] - s.costs[k]
            if not np.isfinite(dl):
                dl = _BIG
            if b < 0 or dl < best:
                best = dl
                b = k
    _apply(1.0, b, xr, ti, cat, s, wk.v, data.xlx, d, J)
    if d > 0:
        _slot_summary_kernel(s, c, b)
    s.costs[b] = wk.addc[b]
    s.labels[i] = b


@_njit
def run_restarts(data, cfg, state, out):
    """Twin of :func:`ppclust.inference.hartigan.run` for R restarts (``state`` and ``out`` updated in place).

    Parameters
    ----------
    data : Data
        The points (decision coordinates first), their label categories, the visiting order, the leakage
        parameters; ``data.xlx`` (n + 2,) is filled here.
    cfg : Config
        The scalar parameters.
    state : Slots
        Every field with a leading restart axis R. The slot axis K must be a multiple of :data:`TILE` (pad
        with inactive slots holding an identity factor and count 1).
    out : Trace
        Filled per restart.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference._hartigan_cpu import run_restarts
    >>> callable(run_restarts)
    True
    """
    R = state.labels.shape[0]
    npts = data.x.shape[0]
    K = state.n.shape[1]
    J = data.p.shape[0]
    d = data.x.shape[1] - J
    xlx = data.xlx
    xlx[0] = 0.0
    for c in range(1, npts + 2):
        xlx[c] = c * math.log(c)
    for r in range(R):
        s = Slots(
            state.labels[r],
            state.active[r],
            state.n[r],
            state.sT[r],
            state.L[r],
            state.tmean[r],
            state.tm2[r],
            state.counts[r],
            state.nlab[r],
            state.clogc[r],
            state.costs[r],
        )
        _run_one(s, data, cfg, out, r, K, J, d)


@_njit
def _energy(active, costs):
    e = 0.0
    for k in range(costs.shape[0]):
        if active[k]:
            e += costs[k]
    return e


@_njit
def _n_active(active):
    c = 0
    for k in range(active.shape[0]):
        if active[k]:
            c += 1
    return c


@_njit
def _reassign_all(s, c, wk, data, cfg, d, J):
    """Reinsert every orphan in index order (``hartigan._reassign_all``); returns whether any moved."""
    moved = False
    if _n_active(s.active) == 0:
        return moved
    for i in range(data.x.shape[0]):
        if not s.active[s.labels[i]]:
            _insert(i, s, c, wk, data, cfg, d, J)
            moved = True
    return moved


@_njit
def _run_one(s, data, cfg, out, r, K, J, d):
    x = data.x
    order = data.order
    side = data.side
    labels = s.labels
    active = s.active
    n = s.n
    L = s.L
    costs = s.costs
    trace = out.trace[r]
    ktrace = out.ktrace[r]
    npts = x.shape[0]
    c = _Cache(
        np.zeros((max(d, 1), K)),
        np.zeros(K),
        np.zeros(K),
        np.zeros(K),
        np.ones(K, np.bool_),
        np.zeros((K, max(d * (d + 1) // 2, 1))),
    )
    for k in range(K):
        if not active[k] and d > 0:  # dead from the start: a harmless factor (never read for decisions)
            for a in range(d):
                for b in range(d):
                    L[a, b, k] = 1.0 if a == b else 0.0
        if d > 0:
            _slot_summary_kernel(s, c, k)
    wk = _Work(
        np.zeros((max(d, 1), K)),
        np.zeros(K),
        np.empty(K),
        np.empty(max(d, 1)),
        np.empty((2, J)),
        np.empty((max(d, 1), max(d, 1), 1)),
    )
    quad = wk.quad
    min_size = cfg.min_size
    tol = cfg.tol
    immediate = cfg.immediate
    # blocked solves: XB/W (d, B) the block's points and solutions, Qb[k, p] their squared norms for slot k,
    # computed ahead for the block's points while slot k is unchanged (stale[k] once it moves)
    B = cfg.block
    blocked = B > 0 and d > 0
    B = max(B, 1)
    XB = np.zeros(max(d, 1) * B)
    W = np.zeros(max(d, 1) * B)
    A = np.zeros(4 * B)
    Qb = np.zeros((K, B))
    stale = np.ones(K, np.bool_)
    if immediate:
        _reassign_all(s, c, wk, data, cfg, d, J)
    trace[0] = _energy(active, costs)
    ktrace[0] = _n_active(active)
    npass = 0
    moved = False
    while npass == 0 or (moved and npass < cfg.max_passes):
        moved = False
        t0 = -B
        n_moves = 0  # moves in the current block
        ahead = blocked
        for t in range(npts):
            i = order[t]
            xr = x[i, J:]
            ti = x[i, :J]
            cat = side[i]
            a = labels[i]
            orphan = not active[a]
            if blocked and t - t0 >= B:  # a new block: the next B points (the last one repeated past the end)
                # solve ahead unless the last block moved more than one point in 4: each move re-solves its
                # two slots for the rest of the block, and one point at a time is then cheaper
                ahead = 4 * n_moves <= B
                n_moves = 0
                t0 = t
                if ahead:
                    for q in range(B):
                        iq = order[min(t + q, npts - 1)]
                        for rr in range(d):
                            XB[rr * B + q] = x[iq, J + rr]
                    stale[:] = True
            if ahead:
                j = t - t0
                for k in range(K):
                    if active[k]:
                        if stale[k]:  # slot k changed (or a new block): its solves from this point on
                            _solve_block(c.Lp[k], c.mT, k, XB[j:], W[j:], A[j:], Qb[k, j:], d, B, B - j)
                            stale[k] = False
                        quad[k] = Qb[k, j]
            elif d > 0:  # _add_costs in two parts, so that the inlined cost code appears once
                _solve_all(
                    s.L.reshape(d * d * K), c.mT.reshape(d * K), xr, wk.w.reshape(d * K), quad, wk.addc, d, K
                )
            _add_costs_q(ti, cat, s, c, wk, data, cfg, d, J)
            addc = wk.addc
            rem_c = 0.0
            base = 0.0
            if not orphan:
                rem_c = _remove_cost(a, xr, ti, cat, s, c, wk, data, cfg, d, J)
                base = rem_c - costs[a]
            b = -1
            best = np.inf
            for k in range(K):
                if active[k] and k != a:
                    dl = (addc[k] - costs[k]) if orphan else base + (addc[k] - costs[k])
                    if not np.isfinite(dl):
                        dl = _BIG
                    if dl < best:
                        best = dl
                        b = k
            if b >= 0 and (orphan or best < -tol):
                # out of slot a (unless orphaned), then into slot b: one inlined copy of the update
                for step in range(1 if orphan else 0, 2):
                    k = a if step == 0 else b
                    _apply(2.0 * step - 1.0, k, xr, ti, cat, s, wk.v, data.xlx, d, J)
                    if d > 0:
                        _slot_summary(s, c, k)
                    costs[k] = rem_c if step == 0 else addc[b]
                labels[i] = b
                moved = True
                stale[a] = True
                stale[b] = True
                n_moves += 1
            if (not orphan) and active[a] and n[a] < min_size and _n_active(active) > 1:
                active[a] = False
                if immediate:
                    for j in range(npts):
                        if labels[j] == a:
                            moved = True
                            _insert(j, s, c, wk, data, cfg, d, J)
                    stale[:] = True  # reinsertions changed other slots
        npass += 1
        trace[npass] = _energy(active, costs)
        ktrace[npass] = _n_active(active)
        n_deg = 0
        degen = np.zeros(K, np.bool_)
        for k in range(K):
            if active[k] and (degenerate(k, n, L, cfg.min_count, cfg.sing_tol) or not np.isfinite(costs[k])):
                degen[k] = True
                n_deg += 1
        if _n_active(active) > n_deg and n_deg > 0:
            for k in range(K):
                if degen[k]:
                    active[k] = False
            moved = True
        if immediate:
            if _reassign_all(s, c, wk, data, cfg, d, J):
                moved = True
    out.n_passes[r] = npass
    out.converged[r] = not moved
    # orphans left when max_passes stopped the run right after a deletion: every point gets a cluster
    _reassign_all(s, c, wk, data, cfg, d, J)
