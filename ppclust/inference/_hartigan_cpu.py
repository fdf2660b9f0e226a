r"""The Hartigan engine of :mod:`ppclust.inference.hartigan` compiled as one CPU loop (numba).

Why a second implementation: a Hartigan pass is a sequential loop over points whose body is a few
dozen tiny operations (K triangular solves, K logs, an argmin, sometimes two rank-one updates).
XLA:CPU runs such a body as a chain of small kernels (~0.1-0.3 us each), about 100 us per visit at
d = 36 where the arithmetic needs ~1 us. Here every restart is one compiled loop. This is the same
approach as the compiled Gibbs sweep (:mod:`ppclust.inference._gibbs_cpu`).

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
* label / leakage terms in O(K) from cached per-slot statistics and tables of ``log c`` and
  ``c log c`` for integer counts.

Cholesky factors change only when a point moves (two rank-one updates,
:func:`ppclust.families.chol_update` / :func:`~ppclust.families.chol_downdate`).

The decisions are those of the XLA engine (same candidate set, same tie-breaking, same deletion and
degeneracy rules, lazy or immediate reassignment); costs agree to rounding. Numba twins carry the
name of the JAX function they mirror and are checked one by one to 1e-12 in
``tests/inference/test_hartigan_cpu.py``; the engine as a whole replays the authors' jar
(``tests/inference/test_cecib.py``)
and is compared label for label with the XLA engine.

The cost is the shared form of CEC-IB and C3L (:class:`ppclust.inference.hartigan.HartiganCost`):

.. math::  E(Y_k) = \frac{n_k}{n}\Big(\ln n - \ln n_k + H_{ML}(n_k, \ln\det S_k)
           + \sum_{j<J} E_1(\mu_{kj}, s^2_{kj}; \alpha_j) + \beta\,H(Z\mid Y_k\cap X_l)\Big)

(CEC-IB eq. 11: ``J = 0``; C3L eq. 8: ``J`` decision coordinates, no label term).
"""

from __future__ import annotations

import math

import numpy as np

from ppclust import _jax  # noqa: F401  (sets NUMBA_CACHE_DIR before the cache=True kernels below are made)
from ppclust.families import LOG_2PI, LOG_2PIE

try:  # numba is a run-time dependency; without it the XLA engine runs
    import numba
    from numba import uint64 as U
except ImportError:  # pragma: no cover - exercised only where numba is missing
    numba = None
    U = int

__all__ = ["available", "chol_update", "chol_downdate", "chol_logdet", "chol_singular", "ml_entropy",
           "constrained_cost_1d", "logdet_after_add", "cluster_cost", "pack_factors", "run_batch"]

_LOG_2PIE = float(LOG_2PIE)  # plain Python floats: numba freezes them as compile-time constants
_LOG_2PI = float(LOG_2PI)
_BIG = float(np.finfo(np.float64).max)  # the jar's stand-in for an infinite candidate cost

# indices into the float parameter vector of run_batch
P_NTOTAL, P_BETA, P_MINSIZE, P_TOL, P_MINCOUNT, P_SINGTOL = range(6)
#: optional 7th entry of the parameter vector: points per block of the visit loop's solves (0 = one point
#: at a time with :func:`_solve_all`); absent, :data:`BLOCK`
P_BLOCK = 6
#: the engine's slot count is padded to a multiple of this (whole SIMD vectors in :func:`_solve_all`)
TILE = 4
#: points whose forward substitutions :func:`_solve_block` computes together (speculatively, see
#: :func:`run_batch`); 64 measured best (against 32, 48, 128) at d = 36 (one pass without moves), as fast as
#: 32 in whole runs
BLOCK = 64


def available() -> bool:
    """True when numba imports (the compiled CPU engine can run)."""
    return numba is not None


def _compile(fn, **options):
    if numba is None:
        return fn
    try:  # compiled code cached on disk (next to the module, else numba's user cache directory)
        return numba.njit(cache=True, nogil=True, error_model="numpy", **options)(fn)
    except RuntimeError:  # no writable cache location: compile per process
        return numba.njit(nogil=True, error_model="numpy", **options)(fn)


def _njit(fn):
    return _compile(fn)


def _inline(fn):
    # IR-inlined: a real call passes array structs and reference-counts them per slot and point
    return _compile(fn, inline="always")


# ---------------------------------------------------------------------------------------------------
# twins of ppclust.families primitives (slot-major factors: L[r, c, k])
# ---------------------------------------------------------------------------------------------------


@_inline
def _rank_one_slot(L, k, v, sign):
    """chol(L_k L_k^T + sign v v^T) in place for slot k (``families._chol_rank_one``; v is overwritten)."""
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


@_njit
def chol_update(L, v):
    """Twin of :func:`ppclust.families.chol_update`: lower factor of ``L L^T + v v^T`` (a new array)."""
    d = L.shape[0]
    L3 = np.ascontiguousarray(L).copy().reshape(d, d, 1)
    _rank_one_slot(L3, 0, v.copy(), 1.0)
    return L3.reshape(d, d)


@_njit
def chol_downdate(L, v):
    """Twin of :func:`ppclust.families.chol_downdate` (NaN when the result is not positive definite)."""
    d = L.shape[0]
    L3 = np.ascontiguousarray(L).copy().reshape(d, d, 1)
    _rank_one_slot(L3, 0, v.copy(), -1.0)
    return L3.reshape(d, d)


@_inline
def _logdet_slot(L, k):
    d = L.shape[0]
    acc = 0.0
    for c in range(d):
        acc += math.log(L[c, c, k]) if L[c, c, k] > 0.0 else (np.nan if L[c, c, k] < 0.0
                                                               or L[c, c, k] != L[c, c, k] else -np.inf)
    return 2.0 * acc


@_njit
def chol_logdet(L):
    """Twin of :func:`ppclust.families.chol_logdet` for one (d, d) factor."""
    d = L.shape[0]
    return _logdet_slot(np.ascontiguousarray(L).reshape(d, d, 1), 0)


@_inline
def _pivots_slot(L, k):
    """(min_j L_jj^2, max_j S_jj, all finite) of slot k: the inputs of the singularity test."""
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


@_njit
def chol_singular(L, sing_tol):
    """Twin of :func:`ppclust.families.chol_singular`."""
    d = L.shape[0]
    mn, mx, fin = _pivots_slot(np.ascontiguousarray(L).reshape(d, d, 1), 0)
    return (not fin) or (mn <= sing_tol * mx)


@_inline
def _ml_entropy(n, logdet_scatter, d):
    return 0.5 * d * _LOG_2PIE + 0.5 * (logdet_scatter - d * math.log(n))


@_njit
def ml_entropy(n, logdet_scatter, d):
    """Twin of :func:`ppclust.families.ml_entropy` (scalar)."""
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
    """Twin of :func:`ppclust.inference.c3l.constrained_cost_1d` (scalar)."""
    return _e1(mu, s2, p)


@_njit
def logdet_after_add(n, s, L, x):
    """Twin of :meth:`ppclust.families.GaussianML.logdet_after_add`: n (K,), s (K, d), L (K, d, d)."""
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
        ld[k] = _logdet_slot(Ls, k) + math.log1p(n[k] / (n[k] + 1.0) * quad[k])
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
                acc[uk] -= ((Lf[o + uk] * wf[oc + uk] + Lf[o + uK + uk] * wf[oc + uK + uk])
                            + (Lf[o + 2 * uK + uk] * wf[oc + 2 * uK + uk]
                               + Lf[o + 3 * uK + uk] * wf[oc + 3 * uK + uk]))
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
                    A[up] -= ((a0 * w0 + a1 * w1) + (a2 * w2 + a3 * w3))
                    A[uB + up] -= ((b0 * w0 + b1 * w1) + (b2 * w2 + b3 * w3))
                    A[2 * uB + up] -= ((c0 * w0 + c1 * w1) + (c2 * w2 + c3 * w3))
                    A[3 * uB + up] -= ((e0 * w0 + e1 * w1) + (e2 * w2 + e3 * w3))
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
                        A[oa + up] -= ((a0 * W[oc + up] + a1 * W[oc + uB + up])
                                       + (a2 * W[oc + 2 * uB + up] + a3 * W[oc + 3 * uB + up]))
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


@_inline
def _cluster_cost(nk, logdet, tmean, tm2, nlab, clogc, n_total, log_n, beta, p, floor, d, J):
    """Twin of ``hartigan.cluster_cost``: (n_k/n)(ln n - ln n_k + H_ML + sum E1 + beta H_lab)."""
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
    for j in range(J):
        s2 = max(tm2[j] / safe, floor[j])
        val += _e1(tmean[j], s2, p[j])
    if nlab > 0.0:
        sl = max(nlab, 1.0)
        val += beta * (math.log(sl) - clogc / sl)
    return safe / n_total * val


@_njit
def cluster_cost(nk, logdet, tmean, tm2, nlab, clogc, n_total, beta, p, floor, d):
    """Twin of :func:`ppclust.inference.hartigan.cluster_cost` (one slot; ``tmean``/``tm2`` (J,))."""
    return _cluster_cost(nk, logdet, tmean, tm2, nlab, clogc, n_total, math.log(n_total), beta, p, floor, d,
                         tmean.shape[0])


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
    """Slot-major factors ``(d, d, K)`` in :func:`_solve_block`'s layout ``(K, d (d + 1) / 2)``."""
    d, _, K = L.shape
    Lp = np.zeros((K, d * (d + 1) // 2))
    for k in range(K):
        _pack_slot(L, k, Lp)
    return Lp


@_njit
def _slot_summary(L, k, logdet, minpiv, maxdiag, finite, mT, sT, n, Lp):
    """Refresh slot k's cached mean, log-determinant, pivot summary and packed copy of the factor (rows
    of the lower triangle, for :func:`_solve_block`) after its factor changed."""
    for r in range(mT.shape[0]):
        mT[r, k] = sT[r, k] / max(n[k], 1e-300)
    _pack_slot(L, k, Lp)
    mn, mx, fin = _pivots_slot(L, k)
    minpiv[k] = mn
    maxdiag[k] = mx
    finite[k] = fin
    logdet[k] = _logdet_slot(L, k)


@_inline
def _xlogx(c, tab):
    ic = int(c)
    if 0 <= ic < tab.shape[0] and ic == c:
        return tab[ic]
    return c * math.log(c) if c > 0 else 0.0


@_inline
def _add_costs(xr, ti, cat, n, mT, L, logdet, tmean, tm2, counts, nlab, clogc, w, quad, addc, prm, p, floor,
               xlx, d, J, tbuf):
    """addc[k] = E(Y_k with the point) for every slot (``cost.cost_add``)."""
    K = n.shape[0]
    if d > 0:
        _solve_all(L.reshape(d * d * K), mT.reshape(d * K), xr, w.reshape(d * K), quad, addc, d, K)
    _add_costs_q(ti, cat, n, logdet, tmean, tm2, counts, nlab, clogc, quad, addc, prm, p, floor, xlx, d, J,
                 tbuf)


@_inline
def _add_costs_q(ti, cat, n, logdet, tmean, tm2, counts, nlab, clogc, quad, addc, prm, p, floor, xlx, d, J,
                 tbuf):
    """:func:`_add_costs` given the point's squared solutions ``quad[k]`` of every slot."""
    K = n.shape[0]
    n_total = prm[P_NTOTAL]
    log_n = math.log(n_total)
    beta = prm[P_BETA]
    tm_new = tbuf[0]
    t2_new = tbuf[1]
    for k in range(K):
        nk = n[k]
        n1 = nk + 1.0
        ld = logdet[k] + math.log1p(nk / n1 * quad[k]) if d > 0 else 0.0
        for j in range(J):
            delta = ti[j] - tmean[k, j]
            tm_new[j] = tmean[k, j] + delta / n1
            t2_new[j] = tm2[k, j] + nk / n1 * delta * delta
        nl = nlab[k]
        cl = clogc[k]
        if cat >= 0:
            c = counts[k, cat]
            nl = nl + 1.0
            cl = cl + _xlogx(c + 1.0, xlx) - _xlogx(c, xlx)
        addc[k] = _cluster_cost(n1, ld, tm_new, t2_new, nl, cl, n_total, log_n, beta, p, floor, d, J)


@_njit
def _apply(sign, k, xr, ti, cat, n, sT, L, tmean, tm2, counts, nlab, clogc, v, xlx, d, J):
    """Rank-one add (sign = +1) / remove (sign = -1) of the point to slot k (``cost.add``/``remove``)."""
    nk = n[k]
    n1 = nk + sign
    if d > 0:
        f = math.sqrt(nk / n1) if sign > 0 else math.sqrt(nk / (nk - 1.0))
        for r in range(d):
            v[r] = f * (xr[r] - sT[r, k] / max(nk, 1e-300))
        _rank_one_slot(L, k, v, sign)
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
        c = counts[k, cat]
        cn = c + sign
        counts[k, cat] = cn
        nlab[k] += sign
        clogc[k] += _xlogx(cn, xlx) - _xlogx(c, xlx)
    n[k] = n1


@_inline
def _remove_cost(a, xr, ti, cat, n, sT, L, logdet, minpiv, maxdiag, tmean, tm2, counts, nlab, clogc, quad,
                 scratch, v, prm, p, floor, xlx, d, J, tbuf):
    """E(Y_a without the point) (``cost.cost_slot(cost.remove(...))``) without touching slot a."""
    nk = n[a]
    n1 = nk - 1.0
    if n1 <= 0.0:
        return 0.0
    ld = 0.0
    if d > 0:
        fac = 1.0 - nk / n1 * quad[a]
        sing_tol = prm[P_SINGTOL]
        if fac > 0.0 and fac * minpiv[a] > sing_tol * maxdiag[a] and np.isfinite(logdet[a]):
            ld = logdet[a] + math.log1p(-nk / n1 * quad[a])
        else:  # near-singular: decide on the downdated factor itself, as the JAX cost does
            for r in range(d):
                for c in range(d):
                    scratch[r, c, 0] = L[r, c, a]
            f = math.sqrt(nk / n1)
            for r in range(d):
                v[r] = f * (xr[r] - sT[r, a] / nk)
            _rank_one_slot(scratch, 0, v, -1.0)
            mn, mx, fin = _pivots_slot(scratch, 0)
            if (not fin) or mn <= sing_tol * mx:
                ld = -np.inf
            else:
                ld = _logdet_slot(scratch, 0)
    tm_new = tbuf[0]
    t2_new = tbuf[1]
    for j in range(J):
        delta = ti[j] - tmean[a, j]
        tm_new[j] = tmean[a, j] - delta / max(n1, 1.0)
        t2_new[j] = max(tm2[a, j] - nk / max(n1, 1.0) * delta * delta, 0.0)
    nl = nlab[a]
    cl = clogc[a]
    if cat >= 0:
        c = counts[a, cat]
        nl = nl - 1.0
        cl = cl + _xlogx(c - 1.0, xlx) - _xlogx(c, xlx)
    return _cluster_cost(n1, ld, tm_new, t2_new, nl, cl, prm[P_NTOTAL], math.log(prm[P_NTOTAL]), prm[P_BETA],
                         p, floor, d, J)


@_njit
def _well_conditioned(L, k, d, tol):
    """True when S = L_k L_k^T is provably far from the eigenvalue test of :func:`_degenerate`, so that test
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
def _degenerate(k, n, L, d, prm):
    """``cost.degenerate`` for slot k: too few points, non-finite factor, or lambda_min <= tol lambda_max."""
    if n[k] < prm[P_MINCOUNT]:
        return True
    if d == 0:
        return False
    if _well_conditioned(L, k, d, prm[P_SINGTOL]):
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
    return ev[0] <= prm[P_SINGTOL] * ev[d - 1]


@_njit
def _insert(i, x, side, labels, active, n, sT, mT, L, logdet, minpiv, maxdiag, finite, Lp, tmean, tm2,
            counts, nlab, clogc, costs, w, quad, addc, v, prm, p, floor, xlx, d, J, tbuf):
    """Insert point i (in no live slot) where the insertion cost is smallest (``hartigan._insert``)."""
    K = n.shape[0]
    xr = x[i, J:]
    ti = x[i, :J]
    cat = side[i]
    _add_costs(xr, ti, cat, n, mT, L, logdet, tmean, tm2, counts, nlab, clogc, w, quad, addc, prm, p, floor,
               xlx, d, J, tbuf)
    b = -1
    best = np.inf
    for k in range(K):
        if active[k]:
            dl = addc[k] - costs[k]
            if not np.isfinite(dl):
                dl = _BIG
            if b < 0 or dl < best:
                best = dl
                b = k
    _apply(1.0, b, xr, ti, cat, n, sT, L, tmean, tm2, counts, nlab, clogc, v, xlx, d, J)
    if d > 0:
        _slot_summary(L, b, logdet, minpiv, maxdiag, finite, mT, sT, n, Lp)
    costs[b] = addc[b]
    labels[i] = b


@_njit
def run_batch(x, side, order, labels, active, n, sT, L, tmean, tm2, counts, nlab, clogc, costs, prm, p, floor,
              max_passes, immediate, trace, ktrace, n_passes, converged):
    """Twin of :func:`ppclust.inference.hartigan.run` for R restarts (state arrays updated in place).

    The slot axis K must be a multiple of :data:`TILE` (pad with inactive slots holding an identity
    factor and count 1).

    x (n, J + d) float64 (decision coordinates first); side (n,) int32 category (-1 none); order (n,);
    per restart r: labels (R, n), active (R, K), n (R, K), sT (R, d, K) sums, L (R, d, d, K) slot-major
    factors, tmean/tm2 (R, K, J), counts (R, K, m), nlab/clogc/costs (R, K); prm: float parameters
    (``P_*``); p, floor (J,); outputs trace/ktrace (R, max_passes + 1), n_passes/converged (R,).
    """
    R = labels.shape[0]
    npts = x.shape[0]
    K = n.shape[1]
    J = p.shape[0]
    d = x.shape[1] - J
    xlx = np.zeros(npts + 2)
    for c in range(1, npts + 2):
        xlx[c] = c * math.log(c)
    for r in range(R):
        _run_one(x, side, order, labels[r], active[r], n[r], sT[r], L[r], tmean[r], tm2[r], counts[r],
                 nlab[r], clogc[r], costs[r], prm, p, floor, max_passes, immediate, trace[r], ktrace[r],
                 n_passes, converged, r, xlx, K, J, d)


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
def _reassign_all(x, side, labels, active, n, sT, mT, L, logdet, minpiv, maxdiag, finite, Lp, tmean, tm2,
                  counts, nlab, clogc, costs, w, quad, addc, v, prm, p, floor, xlx, d, J, tbuf):
    """Reinsert every orphan in index order (``hartigan._reassign_all``); returns whether any moved."""
    moved = False
    if _n_active(active) == 0:
        return moved
    for i in range(x.shape[0]):
        if not active[labels[i]]:
            _insert(i, x, side, labels, active, n, sT, mT, L, logdet, minpiv, maxdiag, finite, Lp, tmean,
                    tm2, counts, nlab, clogc, costs, w, quad, addc, v, prm, p, floor, xlx, d, J, tbuf)
            moved = True
    return moved


@_njit
def _run_one(x, side, order, labels, active, n, sT, L, tmean, tm2, counts, nlab, clogc, costs, prm, p, floor,
             max_passes, immediate, trace, ktrace, n_passes, converged, r, xlx, K, J, d):
    npts = x.shape[0]
    logdet = np.zeros(K)
    mT = np.zeros((max(d, 1), K))
    minpiv = np.zeros(K)
    maxdiag = np.zeros(K)
    finite = np.ones(K, np.bool_)
    Lp = np.zeros((K, max(d * (d + 1) // 2, 1)))
    for k in range(K):
        if not active[k] and d > 0:  # dead from the start: a harmless factor (never read for decisions)
            for a in range(d):
                for b in range(d):
                    L[a, b, k] = 1.0 if a == b else 0.0
        if d > 0:
            _slot_summary(L, k, logdet, minpiv, maxdiag, finite, mT, sT, n, Lp)
    w = np.zeros((max(d, 1), K))
    quad = np.zeros(K)
    tbuf = np.empty((2, J))
    addc = np.empty(K)
    v = np.empty(max(d, 1))
    scratch = np.empty((max(d, 1), max(d, 1), 1))
    min_size = prm[P_MINSIZE]
    tol = prm[P_TOL]
    # blocked solves: XB/W (d, B) the block's points and solutions, Qb[k, p] their squared norms for slot k,
    # computed ahead for the block's points while slot k is unchanged (stale[k] once it moves)
    B = int(prm[P_BLOCK]) if prm.shape[0] > P_BLOCK else BLOCK
    blocked = B > 0 and d > 0
    B = max(B, 1)
    XB = np.zeros(max(d, 1) * B)
    W = np.zeros(max(d, 1) * B)
    A = np.zeros(4 * B)
    Qb = np.zeros((K, B))
    stale = np.ones(K, np.bool_)
    if immediate:
        _reassign_all(x, side, labels, active, n, sT, mT, L, logdet, minpiv, maxdiag, finite, Lp, tmean,
                      tm2, counts, nlab, clogc, costs, w, quad, addc, v, prm, p, floor, xlx, d, J, tbuf)
    trace[0] = _energy(active, costs)
    ktrace[0] = _n_active(active)
    npass = 0
    moved = False
    while npass == 0 or (moved and npass < max_passes):
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
                            _solve_block(Lp[k], mT, k, XB[j:], W[j:], A[j:], Qb[k, j:], d, B, B - j)
                            stale[k] = False
                        quad[k] = Qb[k, j]
                _add_costs_q(ti, cat, n, logdet, tmean, tm2, counts, nlab, clogc, quad, addc, prm, p, floor,
                             xlx, d, J, tbuf)
            else:
                _add_costs(xr, ti, cat, n, mT, L, logdet, tmean, tm2, counts, nlab, clogc, w, quad, addc, prm,
                           p, floor, xlx, d, J, tbuf)
            rem_c = 0.0
            base = 0.0
            if not orphan:
                rem_c = _remove_cost(a, xr, ti, cat, n, sT, L, logdet, minpiv, maxdiag, tmean, tm2, counts,
                                     nlab, clogc, quad, scratch, v, prm, p, floor, xlx, d, J, tbuf)
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
                if not orphan:
                    _apply(-1.0, a, xr, ti, cat, n, sT, L, tmean, tm2, counts, nlab, clogc, v, xlx, d, J)
                    if d > 0:
                        _slot_summary(L, a, logdet, minpiv, maxdiag, finite, mT, sT, n, Lp)
                    costs[a] = rem_c
                _apply(1.0, b, xr, ti, cat, n, sT, L, tmean, tm2, counts, nlab, clogc, v, xlx, d, J)
                if d > 0:
                    _slot_summary(L, b, logdet, minpiv, maxdiag, finite, mT, sT, n, Lp)
                costs[b] = addc[b]
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
                            _insert(j, x, side, labels, active, n, sT, mT, L, logdet, minpiv, maxdiag,
                                    finite, Lp, tmean, tm2, counts, nlab, clogc, costs, w, quad, addc, v, prm,
                                    p, floor, xlx, d, J, tbuf)
                    stale[:] = True  # reinsertions changed other slots
        npass += 1
        trace[npass] = _energy(active, costs)
        ktrace[npass] = _n_active(active)
        n_deg = 0
        degen = np.zeros(K, np.bool_)
        for k in range(K):
            if active[k] and (_degenerate(k, n, L, d, prm) or not np.isfinite(costs[k])):
                degen[k] = True
                n_deg += 1
        if _n_active(active) > n_deg and n_deg > 0:
            for k in range(K):
                if degen[k]:
                    active[k] = False
            moved = True
        if immediate:
            if _reassign_all(x, side, labels, active, n, sT, mT, L, logdet, minpiv, maxdiag, finite, Lp,
                             tmean, tm2, counts, nlab, clogc, costs, w, quad, addc, v, prm, p, floor, xlx, d,
                             J, tbuf):
                moved = True
    n_passes[r] = npass
    converged[r] = not moved
    # orphans left when max_passes stopped the run right after a deletion: every point gets a cluster
    _reassign_all(x, side, labels, active, n, sT, mT, L, logdet, minpiv, maxdiag, finite, Lp, tmean, tm2,
                  counts, nlab, clogc, costs, w, quad, addc, v, prm, p, floor, xlx, d, J, tbuf)
