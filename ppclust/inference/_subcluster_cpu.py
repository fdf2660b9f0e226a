r"""The O(n) passes of the sub-cluster sampler (:mod:`ppclust.inference.subcluster`) compiled for the CPU.

Why: XLA:CPU runs a split/merge move as about ten full passes over the points (both branches under ``where``,
n uniforms, log-sigmoids of every point) and the end-of-sweep statistics as an O(n d^2) segment sum; here
each is one multi-threaded loop (numba ``parallel=True``, ``prange`` over row chunks with per-chunk
accumulators) that touches only what the move needs: the points of the chosen cluster(s), the branch actually
taken. The sweep stays one jitted program: the loops are called through :func:`jax.pure_callback` (chains in
one call per kernel), and everything O(K) (pair choice, the sub-cluster fit on its fixed-size subsample, log
joints, the Hastings ratio, parameter draws) stays in JAX. The label step's unlinked block is
:func:`dense_draw` up to d = 4: session 8's scalar loop (one libm exp per point and cluster) was 2.3x slower
than XLA's fused draw (``benchmarks/results/subcluster.md``, profile ``s8-tput``); session 10's kept the slots
innermost and computed exps within a cut of the largest weight only, but its per-point maxima, branches and
libm calls still dominated; this one takes blocks of points with the points innermost in every loop (vector
loops, no reduction across lanes) and a branch-free exp (:func:`fexp`, within 3 ulp of libm's). Above d = 4
it is :func:`block_draw`: per point, an O(d) bound of each slot's density skips the O(d^2) densities (and
exps) that lie ``cut`` nats below the largest, with an exact redraw when the left-out mass could matter.

What crosses the callbacks (``pure_callback`` copies every operand on every call, in time proportional to
its size: for the data, several ms per call at n = 10^6, d = 2):

* the data never: ``subcluster.sample`` holds a host copy for the duration of its compiled call
  (:func:`hold`) and passes its token (:func:`wired`); the callbacks read the held copy. Without a token
  (``subcluster.step`` called directly) the data cross as one operand converted once per chain;
* the labels (int32) in, a move's proposal out;
* a *cluster index* (:class:`ClusterIndex`), built once per sweep before the moves (:func:`cluster_index`,
  a counting sort): each slot's points in increasing order, with covers updated by accepted moves. The
  moves' kernels (:func:`pick_subsamples`, :func:`move_sides`, :func:`peel_points`) visit only the points
  of the chosen clusters' covers (:func:`candidates`), filtered by the current labels, which gives exactly
  what a visit of all n points gives (each twin's parity test runs both ways). A move then costs
  O(points of its clusters) in the kernels instead of O(n).

Each kernel twins one JAX function and consumes the same random numbers, so ``backend="numba"`` and
``backend="xla"`` run the same chain up to float rounding (``tests/inference/test_subcluster_cpu.py``: twin
by twin in float64, and whole chains label for label):

=====================================  =====================================================================
compiled twin                          JAX definition (:mod:`ppclust.inference.subcluster`)
=====================================  =====================================================================
:func:`counter_uniform`                ``counter_uniform`` (the per-point uniforms of both paths)
:func:`stats_sums`                     the sums of ``GaussianNIW.stats`` (finished by ``_stats_from``)
:func:`pick_subsamples`                the four subsamples of ``_subcluster_fit`` (``_uniform_points``)
:func:`peel_points`                    the points of ``_peel_move`` (``_pick_point``, ``argmax``)
:func:`dense_draw`                     the unlinked block of ``_label_step`` (``_block_draw``: data term,
                                       inverse-CDF draw, slot counts)
:func:`block_draw`                     the same for d > 4 (each density bounded in O(d) first)
:func:`accept_sub_blocks`              ``accept_sub_blocks`` (the unlinked block's acceptance by sub-blocks)
:func:`move_sides`                     the final responsibilities of ``subcluster_responsibilities``, the
                                       Bernoulli sides and ``_log_q_pair`` of ``propose``, and the split
                                       side's ``GaussianNIW.weighted_stats`` sums
=====================================  =====================================================================

The Gaussian log density is :func:`ppclust._families_cpu.gaussian_loglik` (the twin of
:func:`ppclust.families.gaussian_loglik`; :func:`_rows_logliks` is its loop over the slots and a block of
points, the same terms in the same order). Families: :class:`~ppclust.families.GaussianNIW` (full, diag,
spherical) in float64; others (and float32) use the XLA path.
"""

from __future__ import annotations

import itertools
import math
import threading
from contextlib import contextmanager
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ppclust.families import LOG_2PI, GaussianNIW
from ppclust.families._densities_cpu import UPPER, gaussian_loglik
from ppclust.families._niw_cpu import DIAG, FULL, family_code
from ppclust.families._numba import available, compile_kernel
from ppclust.inference._gibbs_cpu import _from_wire, _to_wire, _unwire, _wire, _wire_shape

try:
    from numba import prange
except ImportError:  # pragma: no cover
    prange = range
try:
    from llvmlite import ir as _ir
    from numba import types as _types
    from numba.extending import intrinsic as _intrinsic
except ImportError:  # pragma: no cover - without numba the kernels run as Python
    _intrinsic = None

__all__ = ["available", "supports", "hold", "ClusterIndex", "cluster_index", "held_index", "counting_sort",
           "merge_segments", "merge_two", "fexp", "counter_uniform", "stats_sums", "pick_subsamples",
           "peel_points", "move_sides", "dense_draw", "block_draw", "accept_sub_blocks"]

_M32 = np.uint64(0xFFFFFFFF)
_H1, _H2, _H3 = np.uint64(0x7FEB352D), np.uint64(0x846CA68B), np.uint64(0x5BD1E995)
_S15, _S16 = np.uint64(15), np.uint64(16)
_S5, _S6 = np.uint64(5), np.uint64(6)


def supports(family, dtype=jnp.float64) -> bool:
    """Whether the compiled passes implement this family (GaussianNIW, float64)."""
    return available() and isinstance(family, GaussianNIW) and family_code(family) is not None \
        and np.dtype(dtype) == np.float64


def _parallel_kernel(fn):
    return compile_kernel(fn, parallel=True)


def _contracted_kernel(fn):
    """:func:`_parallel_kernel` whose multiply-adds may fuse (fastmath ``contract``: one rounding instead of
    two; about 10% off the outer-product and density loops). No reassociation: every sum keeps its order."""
    return compile_kernel(fn, parallel=True, fastmath={"contract"})


# -- counter-based uniforms ------------------------------------------------------------------------------
@compile_kernel
def _mix32(h):
    """lowbias32 (C. Wellons' 32-bit integer hash), on uint64 holding 32 bits: a bijection of 32-bit words."""
    h = h & _M32
    h ^= h >> _S16
    h = (h * _H1) & _M32
    h ^= h >> _S15
    h = (h * _H2) & _M32
    h ^= h >> _S16
    return h


@compile_kernel
def counter_uniform(s0, s1, i):
    """The twin of ``subcluster.counter_uniform`` for one index ``i``: uniform on (0, 1) with 53 bits."""
    a = _mix32(_mix32(np.uint64(i) ^ s0) ^ s1)
    b = _mix32(_mix32(np.uint64(i) ^ s1 ^ _H3) + s0)
    return ((a >> _S5) * 67108864.0 + (b >> _S6) + 0.5) * (1.0 / 9007199254740992.0)


# -- exp that vectorises ---------------------------------------------------------------------------------
if _intrinsic is not None:
    @_intrinsic
    def _bits_f64(typingctx, v):
        """The float64 whose bits are the int64 ``v`` (an LLVM bit cast: vectorises)."""
        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], _ir.DoubleType())
        return _types.float64(_types.int64), codegen

    @_intrinsic
    def _f64_bits(typingctx, v):
        """The int64 holding the bits of the float64 ``v``."""
        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], _ir.IntType(64))
        return _types.int64(_types.float64), codegen
else:  # pragma: no cover
    def _bits_f64(v):
        return float(np.array(v, np.int64).view(np.float64))

    def _f64_bits(v):
        return int(np.array(v, np.float64).view(np.int64))


_LOG2E = 1.4426950408889634
_LN2_HI, _LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10  # Cody & Waite's split of ln 2
_ROUND = 6755399441055744.0  # 1.5 * 2^52: adding it rounds to an integer held in the low mantissa bits
_ROUND_BITS = int(np.array(_ROUND).view(np.int64))
_E0, _E1, _E2, _E3, _E4, _E5, _E6, _E7, _E8, _E9, _E10, _E11, _E12 = (1.0 / math.factorial(i)
                                                                     for i in range(13))


@partial(compile_kernel, fastmath={"contract"})
def fexp(t):
    """``exp(t)`` for ``t <= 0`` within 3 ulp of libm's (``t < -708`` gives ``exp(-708)`` ~ 3e-308 instead
    of a subnormal or 0: below rounding of any sum holding a 1), branch free so that a loop of it
    vectorises (libm's ``exp`` is a call per element): ``t = n ln 2 + r`` with ``|r| <= ln 2 / 2`` (n by the
    1.5 2^52 rounding trick, r by Cody & Waite's two-part ln 2), ``e^r`` by its Taylor polynomial of degree
    12 (remainder below 2e-16 relative) in Estrin's scheme (a short dependency chain), ``2^n`` written into
    the exponent bits."""
    t = max(t, -708.0)
    nm = t * _LOG2E + _ROUND
    n = nm - _ROUND
    r = (t - n * _LN2_HI) - n * _LN2_LO
    r2 = r * r
    r4 = r2 * r2
    b0 = (_E0 + _E1 * r) + (_E2 + _E3 * r) * r2
    b1 = (_E4 + _E5 * r) + (_E6 + _E7 * r) * r2
    b2 = (_E8 + _E9 * r) + (_E10 + _E11 * r) * r2
    p = (b0 + b1 * r4) + (b2 + _E12 * r4) * (r4 * r4)
    return p * _bits_f64((_f64_bits(nm) - _ROUND_BITS + 1023) << 52)


# -- kernels ---------------------------------------------------------------------------------------------
@compile_kernel
def _chunks(n):
    """Row ranges for prange: about 8 per thread (load balance), at least 4096 rows each."""
    return max(1, min(-(-n // 4096), 64))


@partial(compile_kernel, inline="always")
def _add_outer(out, v):
    """``out += v v^T`` (d, d), every entry (row by row, the inner loop contiguous: it vectorises, 2.3x
    the upper triangle alone at d = 30); entry (m, j) is the same product as (j, m), so the result is
    symmetric and equal to the mirrored upper triangle bit for bit."""
    d = v.shape[0]
    for j in range(d):
        a = v[j]
        row = out[j]
        for m in range(d):
            row[m] += a * v[m]


#: points per register block of :func:`stats_sums`' outer products
_OUTER_ROWS = 4


@_contracted_kernel
def stats_sums(x, centre, labels, n_out, s_out, outer_out):
    """The per-slot sums of ``GaussianNIW.stats``: counts, sums of the points and sums of the outer
    products of the centred points ``x - centre``; labels outside [0, K) count nowhere. Up to d =
    ``_OUTER_ROWS`` one point at a time; above, each chunk of points is sorted by slot (a counting sort),
    then a slot's points enter its outer-product sum ``_OUTER_ROWS`` at a time: one pass over the d x d
    sum adds the four products of each entry (every row a vector loop, a quarter of the loads and stores
    of one point at a time; entry (j, m) and (m, j) add the same products in the same order, so the sum is
    symmetric bit for bit)."""
    n, d = x.shape
    K = n_out.shape[0]
    nc = _chunks(n)
    per = -(-n // nc)
    cn = np.zeros((nc, K))
    cs = np.zeros((nc, K, d))
    co = np.zeros((nc, K, d, d))
    R = _OUTER_ROWS
    for c in prange(nc):
        lo, hi = c * per, min(n, (c + 1) * per)
        if d <= _OUTER_ROWS:  # a d x d sum this small stays in registers: one point at a time, unsorted
            xc = np.empty(d)
            for i in range(lo, hi):
                k = labels[i]
                if k < 0 or k >= K:
                    continue
                cn[c, k] += 1.0
                for j in range(d):
                    cs[c, k, j] += x[i, j]
                    xc[j] = x[i, j] - centre[j]
                _add_outer(co[c, k], xc)
            continue
        off = np.empty(K + 1, np.int64)
        order = np.empty(max(hi - lo, 1), np.int64)  # the chunk's points by slot, offsets from lo
        counting_sort(labels[lo:hi], order, off)
        blk = np.zeros((R, d))
        for k in range(K):
            t, end = off[k], off[k + 1]
            cn[c, k] += end - t
            out = co[c, k]
            sk = cs[c, k]
            while t < end:
                g = min(R, end - t)
                for r in range(R):
                    if r < g:
                        i = lo + order[t + r]
                        for j in range(d):
                            sk[j] += x[i, j]
                            blk[r, j] = x[i, j] - centre[j]
                    else:
                        for j in range(d):
                            blk[r, j] = 0.0
                b0, b1, b2, b3 = blk[0], blk[1], blk[2], blk[3]
                for j in range(d):
                    a0, a1, a2, a3 = b0[j], b1[j], b2[j], b3[j]
                    row = out[j]
                    for m in range(d):
                        row[m] += (a0 * b0[m] + a1 * b1[m]) + (a2 * b2[m] + a3 * b3[m])
                t += g
    for c in range(nc):
        for k in range(K):
            n_out[k] += cn[c, k]
            for j in range(d):
                s_out[k, j] += cs[c, k, j]
                for m in range(d):
                    outer_out[k, j, m] += co[c, k, j, m]
    for k in range(K):  # symmetric whatever the vector and remainder loops fused
        for j in range(d):
            for m in range(j + 1, d):
                outer_out[k, m, j] = outer_out[k, j, m]


@compile_kernel
def peel_points(labels, cand_c, cand_s, c, j, s, out):
    """The points of the peel/absorb step (``subcluster._peel_move``): ``out[0]`` the (j+1)-th point labelled
    ``c`` (``_pick_point``'s draw j), ``out[1]`` the first point labelled ``s`` (the singleton's); 0 when
    there is none, as ``argmax`` of an all-False mask. ``cand_c`` / ``cand_s``: increasing point indices
    holding every point labelled ``c`` / ``s`` (:func:`candidates`), the only points visited."""
    out[0] = 0
    out[1] = 0
    seen = 0
    for t in range(cand_c.shape[0]):
        i = cand_c[t]
        if labels[i] == c:
            if seen == j:
                out[0] = i
                break
            seen += 1
    for t in range(cand_s.shape[0]):
        i = cand_s[t]
        if labels[i] == s:
            out[1] = i
            break


@compile_kernel
def counting_sort(labels, order, off):
    """The cluster index of ``labels`` (:class:`ClusterIndex`): ``order`` the
    points sorted by label, stably (each slot's points in increasing index order), slot k's points
    ``order[off[k]:off[k + 1]]``; labels outside [0, K) (K = ``off.size - 1``) are left out."""
    n = labels.shape[0]
    K = off.shape[0] - 1
    cnt = np.zeros(K + 1, np.int64)
    for i in range(n):
        k = labels[i]
        if k >= 0 and k < K:
            cnt[k + 1] += 1
    off[0] = 0
    for k in range(K):
        off[k + 1] = off[k] + cnt[k + 1]
    pos = np.empty(K, np.int64)
    for k in range(K):
        pos[k] = off[k]
    for i in range(n):
        k = labels[i]
        if k >= 0 and k < K:
            order[pos[k]] = i
            pos[k] += 1


@compile_kernel
def merge_segments(order, off, js, out):
    """The union of the index segments of slots ``js`` (each increasing) in increasing order into ``out``
    (a k-way merge, O(len(out) len(js))); returns the count."""
    m = js.shape[0]
    pos = np.empty(m, np.int64)
    end = np.empty(m, np.int64)
    for r in range(m):
        pos[r] = off[js[r]]
        end[r] = off[js[r] + 1]
    t = 0
    while True:
        best = -1
        bv = 0
        for r in range(m):
            if pos[r] < end[r]:
                v = order[pos[r]]
                if best < 0 or v < bv:
                    best = r
                    bv = v
        if best < 0:
            break
        out[t] = bv
        t += 1
        pos[best] += 1
    return t


@compile_kernel
def merge_two(a, b, out):
    """The union of two increasing, disjoint index arrays in increasing order into ``out``
    (:func:`merge_segments` for two segments, without branches in the loop: a merge's two slots)."""
    na, nb = a.shape[0], b.shape[0]
    i = 0
    j = 0
    for t in range(na + nb):
        take_a = j >= nb or (i < na and a[min(i, na - 1)] < b[min(j, nb - 1)])
        out[t] = a[min(i, na - 1)] if take_a else b[min(j, nb - 1)]
        i += take_a
        j += not take_a


@compile_kernel
def _targets(u, cnt):
    """The ranks 1 + floor(u_j cnt) of :func:`pick_subsamples` and their order."""
    m = u.shape[0]
    tgt = np.empty(m, np.int64)
    for j in range(m):
        tgt[j] = 1 + np.int64(math.floor(u[j] * cnt))
    return tgt, np.argsort(tgt, kind="mergesort")


@compile_kernel
def pick_subsamples(labels, cand, ca, cb, is_split, u, u_lab, idx, li, ia, ib, counts):
    """The four subsamples of a sub-cluster fit in one visit of the labels (after one counting pass): ``idx``
    from ``u`` and ``li`` from ``u_lab`` among the points of C (``ca``, and ``cb`` for a merge), ``ia`` and
    ``ib`` from ``u_lab`` among the points of the pieces A = ``ca`` and B = ``cb`` (a split's B is empty, as
    the JAX fit's ``mask & ~in_a``: the pieces matter to merges only). The t-th point of a set for each
    uniform v, t = 1 + floor(v |set|) (``n - 1`` past the end, as ``searchsorted`` of the cumulative count
    clipped: ``subcluster._uniform_points``). ``counts = [|C|, n_ca, n_cb]``. ``cand``: increasing point
    indices holding every point of C (:func:`candidates`), the only points visited."""
    n = labels.shape[0]
    nc = 0
    na = 0
    nb = 0
    for t in range(cand.shape[0]):
        lab = labels[cand[t]]
        if lab == ca:
            na += 1
        if lab == cb and lab != ca and not is_split:
            nb += 1
        if lab == ca or (not is_split and lab == cb):
            nc += 1
    counts[0] = nc
    counts[1] = na
    counts[2] = nb
    t0, o0 = _targets(u, nc)
    t1, o1 = _targets(u_lab, nc)
    t2, o2 = _targets(u_lab, na)
    t3, o3 = _targets(u_lab, nb)
    m, ml = u.shape[0], u_lab.shape[0]
    r0 = r1 = r2 = r3 = 0
    sc = sa = sb = 0
    for t in range(cand.shape[0]):
        if r0 >= m and r1 >= ml and r2 >= ml and r3 >= ml:
            break
        i = cand[t]
        lab = labels[i]
        if lab == ca or (not is_split and lab == cb):
            sc += 1
            while r0 < m and t0[o0[r0]] == sc:
                idx[o0[r0]] = i
                r0 += 1
            while r1 < ml and t1[o1[r1]] == sc:
                li[o1[r1]] = i
                r1 += 1
        if lab == ca:
            sa += 1
            while r2 < ml and t2[o2[r2]] == sa:
                ia[o2[r2]] = i
                r2 += 1
        if lab == cb and lab != ca and not is_split:
            sb += 1
            while r3 < ml and t3[o3[r3]] == sb:
                ib[o3[r3]] = i
                r3 += 1
    for r in range(r0, m):
        idx[o0[r]] = n - 1
    for r in range(r1, ml):
        li[o1[r]] = n - 1
    for r in range(r2, ml):
        ia[o2[r]] = n - 1
    for r in range(r3, ml):
        ib[o3[r]] = n - 1


#: candidates per block of :func:`move_sides` (gathered first, then their two densities as vector loops)
_MOVE_ROWS = 128


@_contracted_kernel
def move_sides(x, centre, labels, cand, ca, cb, new, is_split, mean, A, half, lw, code, clip, s0, s1, prop,
               res, s_b, outer_b):
    """The O(n) part of one split/merge proposal for the points of C only (``ca``, plus ``cb`` for a
    merge): ``r_i = sigmoid(clip(l_iA - l_iB))`` of the sub-cluster fit (``mean, A, half`` of its two
    components, log weights ``lw``); for a split, side A iff ``log u_i < log r_i`` with ``u_i =
    counter_uniform(seed, i)``, for a merge side A = the points of ``ca``; the proposal ``prop`` (side B to
    ``new`` for a split, to ``ca`` for a merge); ``res = [log q, |C|, |A|, |B|]`` with ``log q`` the
    probability of the unordered bipartition (``_log_q_pair``); for a split, side B's count, sum and
    centred outer products (``s_b``, ``outer_b``, as ``GaussianNIW.weighted_stats``). ``cand``: increasing
    point indices holding every point of C (:func:`candidates`), the only points visited; ``prop`` comes in
    as a copy of ``labels`` and only points of C are written."""
    d = x.shape[1]
    nm = cand.shape[0]
    nc = _chunks(nm)
    per = -(-nm // nc)
    acc = np.zeros((nc, 5))  # o1, o2, |C|, |A|, |B|
    cs = np.zeros((nc, d))
    co = np.zeros((nc, d, d))
    target = new if is_split else ca
    M = np.ascontiguousarray(mean[:2].T)  # the two components in the layout of _rows_logliks
    Af = np.ascontiguousarray(A[:2].T)
    H = np.empty((2, 2))
    for k in range(2):
        H[0, k] = half[k]
        H[1, k] = lw[k]
    c0 = -0.5 * d * LOG_2PI
    for c in prange(nc):
        xc = np.empty(d)
        xt = np.empty((d, _MOVE_ROWS))  # a block of candidates gathered (independent loads), then visited
        ut = np.empty((d, _MOVE_ROWS))
        lab = np.empty(_MOVE_ROWS, np.int32)
        lk = np.empty((2, _MOVE_ROWS))
        q = np.empty(_MOVE_ROWS)
        w = np.empty(_MOVE_ROWS)
        end = min(nm, (c + 1) * per)
        for t0 in range(c * per, end, _MOVE_ROWS):
            m = min(_MOVE_ROWS, end - t0)
            for b in range(m):
                i = cand[t0 + b]
                lab[b] = labels[i]
                for j in range(d):
                    xt[j, b] = x[i, j]
            _rows_logliks(xt, m, M, Af, H, code, c0, q, w, ut, lk)  # gaussian_loglik + lw, the same terms
            for b in range(m):
                li = lab[b]
                if not (li == ca or (not is_split and li == cb)):
                    continue
                i = cand[t0 + b]
                lg = lk[0, b] - lk[1, b]
                lg = min(max(lg, -clip), clip)
                l1p = math.log1p(math.exp(-abs(lg)))  # jax.nn.log_sigmoid(+-lg) = -(max(-+lg, 0) + l1p)
                lr = -(max(-lg, 0.0) + l1p)
                l1r = -(max(lg, 0.0) + l1p)
                if is_split:
                    side_a = math.log(counter_uniform(s0, s1, i)) < lr
                else:
                    side_a = li == ca
                acc[c, 2] += 1.0
                if side_a:
                    acc[c, 0] += lr
                    acc[c, 1] += l1r
                    acc[c, 3] += 1.0
                else:
                    acc[c, 0] += l1r
                    acc[c, 1] += lr
                    acc[c, 4] += 1.0
                    prop[i] = target
                    if is_split:
                        for j in range(d):
                            cs[c, j] += xt[j, b]
                            xc[j] = xt[j, b] - centre[j]
                        _add_outer(co[c], xc)
    tot = np.zeros(5)
    for c in range(nc):
        for t in range(5):
            tot[t] += acc[c, t]
        for j in range(d):
            s_b[j] += cs[c, j]
            for m in range(d):
                outer_b[j, m] += co[c, j, m]
    o1, o2 = tot[0], tot[1]
    hi = max(o1, o2)
    res[0] = hi + math.log1p(math.exp(min(o1, o2) - hi)) if hi > -np.inf else -np.inf
    res[1] = tot[2]
    res[2] = tot[3]
    res[3] = tot[4]


@compile_kernel
def _inverse_cdf(e, K, target):
    """``(j, gap)``: the inverse-CDF index ``#{k: c_k <= target}`` (K when none exceeds) of the cumulative
    sums ``c`` of ``e[:K]``, as ``subcluster._draw_rows`` counts it, and ``min_k |c_k - target|``."""
    c = 0.0
    j = 0
    gap = np.inf
    for k in range(K):
        c += e[k]
        if c <= target:
            j += 1
        g = abs(c - target)
        if g < gap:
            gap = g
    return j, gap


@partial(compile_kernel, inline="always")
def _rows_logliks(xt, m, M, Af, H, code, c0, q, w, ut, lk):
    """``lk[k, b] = c0 + half_k - q_kb / 2 + log pi_k`` for the slots k and the ``m`` rows b of ``xt``
    (d, rows: a block of points transposed), the terms of :func:`ppclust._families_cpu.gaussian_loglik` in
    its order of operations (``M`` (d, K) means, ``Af`` (m, K) the flattened precision factors transposed,
    ``H`` (2, K) half log determinants and log weights), with the rows innermost: every loop over b
    vectorises (no reduction across lanes). ``q``, ``w`` (rows,) and ``ut`` (d, rows): scratch (``ut`` the
    centred rows of one slot, so the d^2 loop is one multiply-add per term; ``code`` UPPER skips the
    factor's zeros below the diagonal)."""
    d = xt.shape[0]
    K = H.shape[1]
    for k in range(K):
        lrow = lk[k]
        h0, h1 = H[0, k], H[1, k]
        if code == FULL and d == 2:  # the loops over r and j unrolled, the same terms
            m0, m1 = M[0, k], M[1, k]
            a0, a1, a2, a3 = Af[0, k], Af[1, k], Af[2, k], Af[3, k]
            for b in range(m):
                u0 = xt[0, b] - m0
                u1 = xt[1, b] - m1
                w0 = 0.0 + a0 * u0
                w0 += a2 * u1
                w1 = 0.0 + a1 * u0
                w1 += a3 * u1
                lrow[b] = (c0 + h0 - 0.5 * (0.0 + w0 * w0 + w1 * w1)) + h1
            continue
        for b in range(m):
            q[b] = 0.0
        if code == FULL or code == UPPER:
            for j in range(d):
                mu = M[j, k]
                xr = xt[j]
                ur = ut[j]
                for b in range(m):
                    ur[b] = xr[b] - mu
            for r in range(d):
                for b in range(m):
                    w[b] = 0.0
                for j in range(r if code == UPPER else 0, d):
                    a = Af[j * d + r, k]
                    ur = ut[j]
                    for b in range(m):
                        w[b] += a * ur[b]
                for b in range(m):
                    q[b] += w[b] * w[b]
        else:
            for j in range(d):
                a = Af[j, k] if code == DIAG else Af[0, k]
                mu = M[j, k]
                xr = xt[j]
                for b in range(m):
                    t = a * (xr[b] - mu)
                    q[b] += t * t
        for b in range(m):
            lrow[b] = (c0 + h0 - 0.5 * q[b]) + h1


@partial(compile_kernel, inline="always")
def _put_kept(labels, i, K, z, cc):
    """A kept point of the label draw keeps its label, counted in ``cc`` when in [0, K)."""
    k = labels[i]
    z[i] = k
    if k >= 0 and k < K:
        cc[k] += 1


@partial(compile_kernel, inline="always")
def _put_drawn(act, j, i, K, z, cc):
    """Point i of the label draw takes the j-th drawable slot ``act[j]`` (K - 1 for a count past the last,
    as ``subcluster._draw_rows`` clips it), counted in ``cc``."""
    k = act[j] if j < act.shape[0] else K - 1
    z[i] = k
    cc[k] += 1


#: rows per block of :func:`dense_draw` (its (K, rows) log densities stay in the L1/L2 cache)
_ROWS = 256


@_contracted_kernel
def dense_draw(x, keep, labels, M, Af, H, act, K, code, s0, s1, z, cnt):
    r"""The unlinked block's draw of ``subcluster._fused_draw`` (label step (d)) with every weight: for each
    point without ``keep``, :math:`z_i` = the count of cumulative sums :math:`c_k \le u_i T` of the
    weights :math:`e_k = \exp(\ell_k - \max_j\ell_j)`, :math:`\ell_k = \log\pi_k + \log p(x_i\mid
    \theta_k)`, :math:`T` their sum and :math:`u_i` = ``counter_uniform(s0, s1, i)`` (``_draw_rows``'s
    inverse CDF, summed in slot order); kept points keep ``labels``; ``cnt`` (K,) the new slot counts
    (labels outside [0, K) count nowhere). The parameters are those of the slots ``act`` only (the slots
    with :math:`\log\pi_k > -\infty`, in increasing order; the others are never drawn, their weight is
    0), in the slots-by-rows layout of :func:`_rows_logliks` (:func:`draw_block` builds it); an index j
    among them is slot ``act[j]``, as the count over all K slots gives (0 weights add nothing), and a count
    past the last (rounding at u T = T) is K - 1, as in ``_draw_rows``.

    Points go in blocks of ``_ROWS``, the rows innermost in every loop (log densities, maxima, :func:`fexp`,
    sums, counts), so each loop is a vector loop over points: at d = 2 it takes about half the CPU time of
    the per-point loop of session 10 (slots innermost, exps only within a cut of the largest, libm's ``exp``:
    its scalar maxima, branches and calls cost more than the densities). The exps differ from libm's (and
    XLA's) by rounding only, so the draws are the XLA draws up to rounding (the parity test compares them
    label for label)."""
    n, d = x.shape
    ka = H.shape[1]
    nb = -(-n // _ROWS)
    nc = _chunks(n)
    per = -(-nb // nc)
    cc = np.zeros((nc, K), np.int64)
    c0 = -0.5 * d * LOG_2PI
    for c in prange(nc):
        lk = np.empty((ka, _ROWS))
        xt = np.empty((d, _ROWS))
        ut = np.empty((d, _ROWS))
        q = np.empty(_ROWS)
        w = np.empty(_ROWS)
        mx = np.empty(_ROWS)
        tot = np.empty(_ROWS)
        cs = np.empty(_ROWS)
        tg = np.empty(_ROWS)
        jj = np.empty(_ROWS, np.int64)
        for blk in range(c * per, min(nb, (c + 1) * per)):
            i0 = blk * _ROWS
            m = min(_ROWS, n - i0)
            for j in range(d):
                for b in range(m):
                    xt[j, b] = x[i0 + b, j]
            _rows_logliks(xt, m, M, Af, H, code, c0, q, w, ut, lk)
            for b in range(m):
                mx[b] = lk[0, b]
            for k in range(1, ka):
                lrow = lk[k]
                for b in range(m):
                    mx[b] = max(mx[b], lrow[b])
            for b in range(m):
                tot[b] = 0.0
            for k in range(ka):
                lrow = lk[k]
                for b in range(m):
                    e = fexp(lrow[b] - mx[b])
                    lrow[b] = e
                    tot[b] += e
            for b in range(m):
                tg[b] = counter_uniform(s0, s1, i0 + b) * tot[b]
                cs[b] = 0.0
                jj[b] = 0
            for k in range(ka):
                lrow = lk[k]
                for b in range(m):
                    cs[b] += lrow[b]
                    jj[b] += cs[b] <= tg[b]
            for b in range(m):
                if keep[i0 + b]:
                    _put_kept(labels, i0 + b, K, z, cc[c])
                else:
                    _put_drawn(act, jj[b], i0 + b, K, z, cc[c])
    for c in range(nc):
        for k in range(K):
            cnt[k] += cc[c, k]


@partial(compile_kernel, inline="always")
def _bounded_logliks(x, i, mean, A, H, lam, V, code, c0, cut, start, sc, lk, skip):
    r"""The log densities plus log weights of the slots (``mean`` (K, d), ``A`` (K, m) as
    :func:`ppclust._families_cpu.gaussian_loglik` takes them, ``H`` (2, K) as :func:`_rows_logliks`) one
    slot at a time, slot ``start`` first, skipping the slots whose upper bound
    :math:`c_0 + h_k - \tfrac12 b_k + \log\pi_k` is at least ``cut`` below the largest density so far
    (``skip[k]``, ``lk[k]`` then holds the bound). :math:`b_k \le u^\top P_k u` (:math:`u = x_i - \mu_k`)
    is :func:`_precision_bound`'s: ``lam[k] = (c, c - \lambda_1, c - \lambda_2)`` and ``V[k]`` (2, d) the
    eigenvectors of the precision's two smallest eigenvalues, :math:`b_k = c\|u\|^2 - \sum_t (c -
    \lambda_t)(v_t^\top u)^2`: one O(d) pass (three sums) where the density is O(d^2). Returns the index
    of the largest."""
    d = x.shape[1]
    K = H.shape[1]
    lk[start] = gaussian_loglik(x, i, mean, A, H[0], start, code, sc) + H[1, start]
    skip[start] = False
    am = start
    for k in range(K):
        if k == start:
            continue
        dist = 0.0
        p0 = 0.0
        p1 = 0.0
        if lam[k, 2] > 0.0:  # two directions
            for j in range(d):
                t = x[i, j] - mean[k, j]
                dist += t * t
                p0 += V[k, 0, j] * t
                p1 += V[k, 1, j] * t
        elif lam[k, 1] > 0.0:  # one
            for j in range(d):
                t = x[i, j] - mean[k, j]
                dist += t * t
                p0 += V[k, 0, j] * t
        else:  # a round cluster: the smallest eigenvalue
            for j in range(d):
                t = x[i, j] - mean[k, j]
                dist += t * t
        bq = lam[k, 0] * dist - lam[k, 1] * (p0 * p0) - lam[k, 2] * (p1 * p1)
        ub = (c0 + H[0, k] - 0.5 * bq) + H[1, k]
        if ub - lk[am] <= -cut:
            skip[k] = True
            lk[k] = ub
        else:
            skip[k] = False
            lk[k] = gaussian_loglik(x, i, mean, A, H[0], k, code, sc) + H[1, k]
            if lk[k] > lk[am]:
                am = k
    return am


@partial(compile_kernel, parallel=True, fastmath={"reassoc", "contract"})
def block_draw(x, keep, labels, H, act, K, code, s0, s1, cut, z, cnt, mean, A, lam, V, pos):
    r"""The unlinked block's draw of :func:`dense_draw` (the same draws up to rounding) for d >
    ``_BOUND_MIN_D``, one point at a time, skipping densities: a slot whose O(d) upper bound
    (:func:`_bounded_logliks`, from :func:`_precision_bound`'s ``lam``, ``V``) is ``cut`` below the
    largest density so far is not computed in O(d^2). Parameters of the slots ``act``
    only, ``mean`` (K, d), ``A`` (K, m), ``H`` (2, K) (:func:`draw_block` builds them), ``pos[k]`` slot k's
    index among them (the point's current slot is computed first).

    The weights :math:`e_k = \exp(\ell_k - \max_j\ell_j)` are computed only where :math:`\ell_k - \max > -`
    ``cut`` (for separated clusters most points need none: the largest weight is 1). The draw is the count
    of cumulative sums :math:`c_k \le u\,T`; leaving out :math:`m` terms each below :math:`e^{-\text{cut}}`
    moves every :math:`c_k` and :math:`T` by at most :math:`D = m e^{-\text{cut}}` (and :math:`uT` by at
    most :math:`uD < D`), so no comparison can change when every :math:`|c_k - uT| > D`: then the index is
    the one of the full sum (in exact arithmetic). Otherwise (probability about :math:`2KD` per point) the
    point is redrawn with every density and exp. So the draw is the full inverse-CDF draw, not an
    approximation (``cut`` trades exps and densities for redraws only); the two backends still differ by
    float rounding only (the chain test compares them label for label)."""
    n, d = x.shape
    ka = H.shape[1]
    nc = _chunks(n)
    per = -(-n // nc)
    cc = np.zeros((nc, K), np.int64)
    tiny = math.exp(-cut)
    c0 = -0.5 * d * LOG_2PI
    for c in prange(nc):
        lk = np.empty(ka)
        e = np.empty(ka)
        skip = np.zeros(ka, np.bool_)
        sc = np.empty(d)
        for i in range(c * per, min(n, (c + 1) * per)):
            if keep[i]:
                _put_kept(labels, i, K, z, cc[c])
                continue
            k0 = labels[i]
            start = pos[k0] if k0 >= 0 and k0 < K else -1
            am = _bounded_logliks(x, i, mean, A, H, lam, V, code, c0, cut, max(start, 0), sc, lk, skip)
            mx = lk[am]
            tot = 0.0
            dropped = 0
            kept = 0
            for k in range(ka):
                t = lk[k] - mx
                if k == am:
                    e[k] = 1.0
                    tot += 1.0
                elif t > -cut and not skip[k]:
                    e[k] = math.exp(t)
                    tot += e[k]
                    kept += 1
                else:
                    e[k] = 0.0
                    if lk[k] > -np.inf:
                        dropped += 1
            target = counter_uniform(s0, s1, i) * tot
            if kept == 0:  # e = [0.., 1 at am, 0..]: the sums are 0 before am and 1 from it, and u < 1
                j = am  # (what _inverse_cdf returns for these e, without its loop)
                gap = 1.0 - target if am == 0 else min(target, 1.0 - target)
            else:
                j, gap = _inverse_cdf(e, ka, target)
            if dropped > 0 and gap <= dropped * tiny:  # a left-out term could matter: every exp
                tot = 0.0
                for k in range(ka):
                    if skip[k]:  # the density itself, not its bound
                        lk[k] = gaussian_loglik(x, i, mean, A, H[0], k, code, sc) + H[1, k]
                    e[k] = math.exp(lk[k] - mx)
                    tot += e[k]
                j, gap = _inverse_cdf(e, ka, counter_uniform(s0, s1, i) * tot)
            _put_drawn(act, j, i, K, z, cc[c])
    for c in range(nc):
        for k in range(K):
            cnt[k] += cc[c, k]


# -- JAX side: operands, callbacks -----------------------------------------------------------------------
def param_arrays(theta, code):
    r"""``(mean (K, d), A (K, m), half (K,), code)`` of :class:`~ppclust.families.GaussianParams`, A
    flattened in the layout of :func:`ppclust._families_cpu.gaussian_loglik` (full: column-major), and the
    layout's code. Full covariance above d = 2 takes the triangle R of a QR decomposition of each factor
    (:math:`R^\top R = A^\top Q^\top Q A = A^\top A`, the same precision: the same densities up to
    rounding) and the code UPPER, so every density skips R's zeros: d(d+1)/2 products in place of d^2
    (d = 2 keeps its unrolled full product)."""
    K = theta.mean.shape[0]
    A = theta.prec_factor
    if A.ndim == 3:
        if A.shape[-1] > 2:
            A, code = jnp.linalg.qr(A, mode="r"), UPPER
        A = jnp.swapaxes(A, 1, 2)
    return theta.mean, A.reshape(K, -1), theta.half_logdet_prec, code


#: host copies of the data by token (:func:`hold`): a callback given a held :class:`Wired` reads ``x`` here
#: instead of receiving it as an operand, which ``pure_callback`` copies on every call
_HELD: dict[int, np.ndarray] = {}
_TOKENS = itertools.count(1)


@contextmanager
def hold(x):
    """Hold a host copy of the data ``x`` for the duration of a ``with`` block; yields its token (an int) for
    :func:`wired`. The sampler holds its data around one compiled call (``subcluster.sample``): the token is
    an operand of the program (no recompilation per data set) and the callbacks look the data up by it."""
    token = next(_TOKENS)
    _HELD[token] = np.array(x, copy=True)  # owned, writable, C-contiguous
    try:
        yield token
    finally:
        _HELD.pop(token, None)


@jax.tree_util.register_pytree_node_class
class Wired:
    """The data already in its callback form (:func:`wired`): ``bits`` (uint32 pairs for 64-bit types; None
    when held), ``dtype`` the array's own type (static), ``centre`` its column means (the shift of the
    centred sums, as ``families._centered_scatter`` takes it), ``token`` (a () int32 array, or None) the
    :func:`hold` token of the data: the callbacks then read the held host copy (``x`` never crosses them).
    """

    def __init__(self, bits, dtype, centre, token=None):
        self.bits, self.dtype, self.centre, self.token = bits, np.dtype(dtype), centre, token

    def tree_flatten(self):
        return (self.bits, self.centre, self.token), self.dtype

    @classmethod
    def tree_unflatten(cls, dtype, leaves):
        return cls(leaves[0], dtype, leaves[1], leaves[2])


def wired(x, token=None):
    """The data ``x`` (n, d) in the form the callbacks take it, with its column means: a :class:`Wired`.
    Without ``token``, 64-bit types as uint32 pairs (:mod:`._gibbs_cpu`): the conversion is a copy of ``x``
    (about as long as the callback's own operand copy) and the means a pass over it, so the sampler makes
    both once per chain, not once per call. With the ``token`` of :func:`hold` (the sampler's path), only
    the token crosses the callbacks."""
    if token is not None:
        return Wired(None, x.dtype, x.mean(0), jnp.asarray(token, jnp.int32))
    return Wired(_wire(x), np.dtype(x.dtype), x.mean(0))


#: operands and results of at most this many 32-bit words cross a callback packed into one uint32 vector
#: each way (:func:`_call`): every array crossing costs a fixed ~45 us (a device put or a host view), about
#: a millisecond per move with its dozen scalars and small parameter arrays
_PACK_MAX = 1 << 12


def _as_words(a):
    """A wired array (:func:`_wire`: no 64-bit types) as uint32 words, in JAX (bool and uint8: one word per
    element)."""
    if a.dtype in (jnp.bool_, jnp.uint8):
        return a.astype(jnp.uint32)
    return a if a.dtype == jnp.uint32 else jax.lax.bitcast_convert_type(a, jnp.uint32)


def _from_words(w, dtype):
    """Inverse of :func:`_as_words`, in JAX."""
    if dtype == jnp.bool_:
        return w != 0
    if dtype == jnp.uint8:
        return w.astype(jnp.uint8)
    return w if dtype == jnp.uint32 else jax.lax.bitcast_convert_type(w, dtype)


def _np_from_words(w, dtype):
    """Inverse of :func:`_as_words`, on the host."""
    if dtype == np.bool_:
        return w != 0
    return w.astype(np.uint8) if dtype == np.uint8 else np.ascontiguousarray(w).view(dtype)


def _np_as_words(a):
    """:func:`_as_words` on the host."""
    a = np.ascontiguousarray(a)
    return a.astype(np.uint32) if a.dtype in (np.bool_, np.uint8) else a.view(np.uint32)


def _call(host, outs, args):
    """``pure_callback`` with 64-bit operands as uint32 pairs (see :mod:`._gibbs_cpu`; an operand given as
    :class:`Wired` is passed as it is, or as its :func:`hold` token, the callback reading the held data).
    Operands of at most ``_PACK_MAX`` words cross packed into one uint32 vector, results likewise (the
    sizes are static: JAX slices and bitcasts them back, the host views them). Under ``vmap`` the chains
    come in one call (``expand_dims``: leading batch axes, size 1 where an operand is shared) and ``host``
    runs once per chain (each kernel is multi-threaded over the points)."""
    dtypes = [a.dtype if isinstance(a, Wired) else np.dtype(a.dtype) for a in args]
    held = [isinstance(a, Wired) and a.token is not None for a in args]
    wired_args = [a.token if h else a.bits if isinstance(a, Wired) else _wire(a)
                  for a, h in zip(args, held, strict=True)]
    core = [a.ndim for a in wired_args]
    shapes = [tuple(a.shape) for a in wired_args]
    wdt = [np.dtype(a.dtype) for a in wired_args]
    packed = [i for i, a in enumerate(wired_args) if a.size <= _PACK_MAX]
    big = [i for i in range(len(wired_args)) if i not in packed]
    sizes = [int(np.prod(shapes[i], dtype=np.int64)) for i in packed]
    wire_outs = [_wire_shape(o) for o in outs]
    out_small = [r for r, o in enumerate(wire_outs) if int(np.prod(o.shape, dtype=np.int64)) <= _PACK_MAX]
    out_big = [r for r in range(len(outs)) if r not in out_small]
    out_sizes = [int(np.prod(wire_outs[r].shape, dtype=np.int64)) for r in out_small]

    def unwire(a, t, h):
        return _HELD[int(a)] if h else _unwire(a, t)

    def unpack(words, rest):
        """The operands (batch axes in front) from the packed words and the big operands."""
        nb = words.ndim - 1
        ops = [None] * len(wired_args)
        o = 0
        for i, m in zip(packed, sizes, strict=True):
            ops[i] = _np_from_words(words[..., o:o + m], wdt[i]).reshape(words.shape[:nb] + shapes[i])
            o += m
        for i, a in zip(big, rest, strict=True):
            ops[i] = a
        return ops

    def run_all(*wired):
        nb = wired[0].ndim - core[0]
        batch = np.broadcast_shapes(*(a.shape[:nb] for a in wired))
        if not batch:
            res = host(*[unwire(a, t, h) for a, t, h in zip(wired, dtypes, held, strict=True)])
            return [_to_wire(np.asarray(r)) for r in res], ()
        per = []
        for ix in np.ndindex(*batch):
            one = [a[tuple(j if a.shape[m] > 1 else 0 for m, j in enumerate(ix))] for a in wired]
            res = host(*[unwire(a, t, h) for a, t, h in zip(one, dtypes, held, strict=True)])
            per.append([np.asarray(r) for r in res])
        return [_to_wire(np.stack([p[r] for p in per]).reshape(batch + per[0][r].shape))
                for r in range(len(outs))], batch

    def run(words, *rest):  # (the operands arrive as jax Arrays: slicing them would dispatch XLA ops)
        res, batch = run_all(*unpack(np.asarray(words), [np.asarray(a) for a in rest]))
        flat = [_np_as_words(res[r]).reshape(batch + (-1,)) for r in out_small]
        small = np.concatenate(flat, -1) if flat else np.zeros(batch + (0,), np.uint32)
        return (small,) + tuple(res[r] for r in out_big)

    words = (jnp.concatenate([_as_words(wired_args[i]).reshape(-1) for i in packed]) if packed
             else jnp.zeros((0,), jnp.uint32))
    res = jax.pure_callback(run, (jax.ShapeDtypeStruct((sum(out_sizes),), jnp.uint32),)
                            + tuple(wire_outs[r] for r in out_big), words, *[wired_args[i] for i in big],
                            vmap_method="expand_dims")
    got = [None] * len(outs)
    o = 0
    for r, m in zip(out_small, out_sizes, strict=True):
        got[r] = _from_words(res[0][o:o + m], wire_outs[r].dtype).reshape(wire_outs[r].shape)
        o += m
    for r, a in zip(out_big, res[1:], strict=True):
        got[r] = a
    return tuple(_from_wire(r, o.dtype) for r, o in zip(got, outs, strict=True))


def _seed(seed):
    return np.uint64(int(seed[0])), np.uint64(int(seed[1]))


def family_stats(x, labels, k_max, family, xw=None):
    """``family.stats(x, labels, k_max)`` with its O(n d^2) sums from :func:`stats_sums` (``xw``:
    :func:`wired` ``x``, else made here)."""
    n, d = x.shape
    xw = wired(x) if xw is None else xw  # centre: the shift of families._centered_scatter (its x.mean(0))

    def host(x, centre, labels):
        n_out, s_out, o_out = np.zeros(k_max), np.zeros((k_max, d)), np.zeros((k_max, d, d))
        stats_sums(x, centre, labels, n_out, s_out, o_out)
        return n_out, s_out, o_out

    outs = (jax.ShapeDtypeStruct((k_max,), x.dtype), jax.ShapeDtypeStruct((k_max, d), x.dtype),
            jax.ShapeDtypeStruct((k_max, d, d), x.dtype))
    cnt, s, outer = _call(host, outs, (xw, xw.centre, labels_operand(labels)))
    # x enters _stats_from through its column means only (the shift): the one row xw.centre has them
    return family._stats_from(xw.centre[None], None, cnt, s, lambda xc: outer)


class ClusterIndex(NamedTuple):
    """The points of each slot, built once per sweep before the moves (:func:`cluster_index`), so that a move
    visits the points of its clusters only. ``token`` () int32 names the host-held ``(order, off)``
    (:func:`held_index`): ``order`` (n,) the points sorted by their label at that time (stable), ``off``
    (K + 1,) the segment offsets of the slots (held on the host: they never cross the callbacks, whose
    operands are copied on every call). ``cover`` (K, K) bool: slot k's points now lie in the union of the
    segments j with ``cover[k, j]`` (the identity when built; a move accepted since updates it: a split's or
    peel's new slot covers what the split slot covered, a merge's or absorb's kept slot covers both). A cover
    is a superset, never a miss, so the kernels filter by the current labels and give exactly what a visit
    of all n points gives; so does a token no longer held (the kernels then visit all n points)."""

    token: jax.Array
    cover: jax.Array

    def moved(self, acc, is_split, a, b):
        """The index after a move of slots ``a`` (kept) and ``b`` (a split's or peel's new slot, or the
        slot merged / absorbed into ``a``), accepted iff ``acc``."""
        cov = self.cover
        new = jnp.where(is_split, cov.at[b].set(cov[a]), cov.at[a].set(cov[a] | cov[b]))
        return self._replace(cover=jnp.where(acc, new, cov))


#: the host-held ``(order, off)`` of the latest cluster indices by token (oldest dropped first, at most
#: ``_INDEX_KEEP`` of them and ``_INDEX_POINTS`` points in all; a dropped one only costs full visits)
_INDEX: dict[int, tuple[np.ndarray, np.ndarray]] = {}
_INDEX_IDS = itertools.count(1)
_INDEX_KEEP = 64
_INDEX_POINTS = 1 << 26
_INDEX_LOCK = threading.Lock()


def held_index(token):
    """``(order, off)`` of a :class:`ClusterIndex` token, or None when no longer held."""
    return _INDEX.get(int(token))


def labels_operand(labels):
    """``labels`` as a callback operand: uint8 labels as they are (within a sweep of :func:`ppclust.inference.
    subcluster.step`: a quarter of the bytes of int32, and the fixed cost of a crossing grows with them;
    ``benchmarks/results/subcluster.md``, "The fixed cost of a callback crossing"), else int32. The
    kernels compile for either."""
    return labels if labels.dtype == jnp.uint8 else labels.astype(jnp.int32)


def cluster_index(labels, k_max):
    """The :class:`ClusterIndex` of ``labels`` (:func:`counting_sort` in one callback; its arrays held on the
    host under a fresh token)."""
    n = labels.shape[0]

    def host(labels):
        order, off = np.empty(n, np.int32), np.empty(k_max + 1, np.int32)
        counting_sort(labels, order, off)
        with _INDEX_LOCK:  # callbacks of one program, or of two devices, may run on two threads at once
            token = next(_INDEX_IDS) & 0x7FFFFFFF
            _INDEX[token] = (order, off)
            while len(_INDEX) > _INDEX_KEEP or (len(_INDEX) > 1 and len(_INDEX) * n > _INDEX_POINTS):
                _INDEX.pop(next(iter(_INDEX)))
        return (np.asarray(token, np.int32),)

    (token,) = _call(host, (jax.ShapeDtypeStruct((), jnp.int32),), (labels_operand(labels),))
    return ClusterIndex(token, jnp.eye(k_max, dtype=bool))


def candidates(n, token=None, rows=None):
    """Host side: increasing point indices holding every point of the slots whose covers are the rows of
    ``rows`` (the union of their index segments, :func:`merge_segments`); all n points without an index
    (``token`` None, or no longer held)."""
    held = None if token is None else held_index(token)
    if held is None:
        return np.arange(n, dtype=np.int32)
    order, off = held
    js = np.flatnonzero(np.any(rows, 0)).astype(np.int64)
    if len(js) == 1:
        return order[off[js[0]]:off[js[0] + 1]]
    key = (int(token), js.tobytes())
    last = _LAST_UNION[0]  # one read of the (key, points) pair: another thread may replace it meanwhile
    if last is not None and last[0] == key:  # a move's fit and its sides visit the same union: merged once
        return last[1]
    out = np.empty(int(sum(off[j + 1] - off[j] for j in js)), np.int32)
    if len(js) == 2:
        a, b = order[off[js[0]]:off[js[0] + 1]], order[off[js[1]]:off[js[1] + 1]]
        merge_two(a, b, out)
    else:
        merge_segments(order, off, js, out)
    _LAST_UNION[0] = (key, out)  # one store of the pair
    return out


#: the latest union of index segments (:func:`candidates`): ``[((token, slots), points)]`` (read-only), a
#: pair stored and read as one object (host callbacks may run on several threads)
_LAST_UNION: list = [None]


def _index_args(index, *rows):
    """The operands of a kernel's candidates: ``(token, cover rows)``, none without an index."""
    if index is None:
        return ()
    return index.token, jnp.stack(rows)


def peel_points_of(labels, c, j, s, index=None):
    """:func:`peel_points` from JAX: ``(i_peel, i_absorb)`` (``index``: a :class:`ClusterIndex` valid for
    ``labels``, or None: every point visited)."""
    n = labels.shape[0]

    def host(labels, c, j, s, *ix):
        out = np.zeros(2, np.int32)
        if ix:
            cand_c, cand_s = candidates(n, ix[0], ix[1][:1]), candidates(n, ix[0], ix[1][1:])
        else:
            cand_c = cand_s = candidates(n)
        peel_points(labels, cand_c, cand_s, int(c), int(j), int(s), out)
        return (out,)

    i32 = lambda v: jnp.asarray(v, jnp.int32)  # noqa: E731
    ix = () if index is None else _index_args(index, index.cover[c], index.cover[s])
    (out,) = _call(host, (jax.ShapeDtypeStruct((2,), jnp.int32),), (labels_operand(labels), i32(c), i32(j),
                                                                   i32(s)) + ix)
    return out[0], out[1]


def subsamples(labels, ca, cb, is_split, u, u_lab, index=None):
    """:func:`pick_subsamples` from JAX: ``((idx, |C|), (li, |C|), (ia, n_ca), (ib, n_cb))`` (``index``: a
    :class:`ClusterIndex` valid for ``labels``, or None: every point visited)."""
    m, ml = u.shape[0], u_lab.shape[0]
    n = labels.shape[0]

    def host(labels, ca, cb, is_split, u, u_lab, *ix):
        idx, li, ia, ib = (np.empty(k, np.int32) for k in (m, ml, ml, ml))
        counts = np.zeros(3, np.int32)
        pick_subsamples(labels, candidates(n, *ix), int(ca), int(cb), bool(is_split), u, u_lab, idx, li, ia,
                        ib, counts)
        return idx, li, ia, ib, counts

    outs = (jax.ShapeDtypeStruct((m,), jnp.int32),) + (jax.ShapeDtypeStruct((ml,), jnp.int32),) * 3 \
        + (jax.ShapeDtypeStruct((3,), jnp.int32),)
    i32 = lambda v: jnp.asarray(v, jnp.int32)  # noqa: E731
    ix = () if index is None else _index_args(index, index.cover[ca] | (index.cover[cb] & ~is_split))
    idx, li, ia, ib, c = _call(host, outs, (labels_operand(labels), i32(ca), i32(cb), jnp.asarray(is_split),
                                           u, u_lab) + ix)
    return (idx, c[0]), (li, c[0]), (ia, c[1]), (ib, c[2])


def move(x, labels, ca, cb, new, is_split, theta, lw, seed, family, clip, xw=None, index=None):
    """:func:`move_sides` from JAX: ``(proposal (n,), log q, |C|, |A|, side B's weighted_stats)`` (``xw``:
    :func:`wired` ``x``, else made here; ``index``: a :class:`ClusterIndex` valid for ``labels``, or None:
    every point visited)."""
    mean, A, half, code = param_arrays(theta, family_code(family))
    n, d = x.shape
    xw = wired(x) if xw is None else xw

    def host(x, centre, labels, ca, cb, new, is_split, mean, A, half, lw, seed, *ix):
        prop = np.array(labels)  # a copy (int32 or uint8, as given): move_sides writes the points of C only
        res = np.zeros(4)
        s_b, o_b = np.zeros(d), np.zeros((d, d))
        s0, s1 = _seed(seed)
        move_sides(x, centre, labels, candidates(n, *ix), int(ca), int(cb), int(new), bool(is_split), mean, A,
                   half, lw, code, float(clip), s0, s1, prop, res, s_b, o_b)
        return prop, res, s_b, o_b

    i32 = lambda v: jnp.asarray(v, jnp.int32)  # noqa: E731
    lab = labels_operand(labels)
    outs = (jax.ShapeDtypeStruct((n,), lab.dtype), jax.ShapeDtypeStruct((4,), x.dtype),
            jax.ShapeDtypeStruct((d,), x.dtype), jax.ShapeDtypeStruct((d, d), x.dtype))
    ix = () if index is None else _index_args(index, index.cover[ca] | (index.cover[cb] & ~is_split))
    prop, res, s_b, o_b = _call(host, outs, (xw, xw.centre, lab, i32(ca), i32(cb), i32(new),
                                             jnp.asarray(is_split), mean, A, half, lw, seed) + ix)
    # x enters _stats_from through its column means only (the shift): the one row xw.centre has them
    side_b = family._stats_from(xw.centre[None], None, res[3][None], s_b[None], lambda xc: o_b[None])
    return prop.astype(labels.dtype), res[0], res[1], res[2], side_b


#: above this dimension :func:`draw_block` runs :func:`block_draw` (each slot's density bounded in O(d)
#: before it is computed in O(d^2), :func:`_bounded_logliks`); up to it :func:`dense_draw` (every density
#: and weight, vector loops over points)
_BOUND_MIN_D = 4


#: a slot's precision bound uses fewer than two eigen-directions when its smallest eigenvalues are at
#: least this fraction of the third (:func:`_precision_bound`)
_BOUND_ROUND = 0.5


def _precision_bound(A, code, d):
    r"""``(lam (K, 3), V (K, 2, d))``: the terms of a lower bound on each quadratic form
    :math:`u^\top P_k u`, :math:`P_k = A_k^\top A_k` (``A`` (K, m) as :func:`param_arrays` lays it
    out), of :func:`_bounded_logliks`: with the eigenvalues :math:`\lambda_1 \le \lambda_2 \le
    \lambda_3 \le \dots` of :math:`P_k` and the eigenvectors :math:`v_1, v_2` of the two smallest,
    and any :math:`c \le \lambda_3`,

    .. math:: P_k - cI = \sum_t (\lambda_t - c) v_t v_t^\top \succeq \sum_{t \le 2} (\lambda_t - c)
              v_t v_t^\top,

    since every dropped term has :math:`\lambda_t \ge \lambda_3 \ge c`. So :math:`u^\top P_k u \ge
    c\|u\|^2 - \sum_{t\le2} (c - \lambda_t)(v_t^\top u)^2`, exact on the span of :math:`v_1, v_2`:
    tight for a cluster stretched along one or two directions (say two blobs the chain holds merged),
    where the smallest eigenvalue alone (:math:`c = \lambda_1`, the bound before session 14) bounds every
    direction by the stretched one. ``lam[k] = (c, c - \lambda_1, c - \lambda_2)`` with :math:`c =
    \lambda_3 - 10^{-9}\lambda_{max}` (against the rounding of the decomposition and of the O(d) sums;
    below 0 it is 0, :math:`P_k \succeq 0`).

    A slot whose smallest eigenvalues are not far below the third needs fewer directions: with
    :math:`m` the fewest such that :math:`\lambda_{m+1} \ge` ``_BOUND_ROUND`` :math:`\lambda_3`
    (m = 0 for a round cluster), :math:`c = \lambda_{m+1}` and only directions t <= m enter (the same
    inequality with :math:`c \le \lambda_{m+1}`); the zero entries of ``lam[k, 1:]`` tell
    :func:`_bounded_logliks` which of its sums to skip. The bound then gives up at most that factor of
    its third-eigenvalue term for one O(d) sum instead of three."""
    K = A.shape[0]
    if code == FULL or code == UPPER:
        F = A.reshape(K, d, d)  # the factor transposed (column-major layout): F F^T = A^T A
        P = F @ np.swapaxes(F, 1, 2)
    else:
        diag = np.abs(A) if code == DIAG else np.repeat(np.abs(A[:, :1]), d, 1)
        P = np.zeros((K, d, d))
        P[:, np.arange(d), np.arange(d)] = diag * diag
    ev, vec = np.linalg.eigh(P)
    m = np.where(ev[:, 0] >= _BOUND_ROUND * ev[:, 2], 0, np.where(ev[:, 1] >= _BOUND_ROUND * ev[:, 2], 1, 2))
    c = np.maximum(ev[np.arange(K), m] - 1e-9 * np.abs(ev).max(1), 0.0)
    lam = np.stack([c, np.where(m >= 1, c - ev[:, 0], 0.0), np.where(m >= 2, c - ev[:, 1], 0.0)], 1)
    lam[:, 1:] = np.maximum(lam[:, 1:], 0.0)  # c - lambda_t >= 0 (rounding)
    return np.ascontiguousarray(lam), np.ascontiguousarray(np.swapaxes(vec[:, :, :2], 1, 2))


def draw_block(x, keep, labels, log_pi, theta, seed, family, cut, xw=None):
    """:func:`dense_draw` (d <= ``_BOUND_MIN_D``) or :func:`block_draw` from JAX: ``(labels (n,), counts
    (K,))``, the twin of ``subcluster._block_draw`` on one device with uniforms
    ``counter_uniform(seed, arange(n))`` (``xw``: :func:`wired` ``x``, else made here)."""
    mean, A, half, code = param_arrays(theta, family_code(family))
    n, d = x.shape
    K = log_pi.shape[0]

    def host(x, keep, labels, M, Af, H, seed):
        act = np.flatnonzero(H[1] > -np.inf).astype(np.int32)  # the slots that can be drawn
        z = np.empty(n, labels.dtype)
        cnt = np.zeros(K, np.int64)
        s0, s1 = _seed(seed)
        Ha = np.ascontiguousarray(H[:, act])
        if d <= _BOUND_MIN_D:
            dense_draw(x, keep, labels, np.ascontiguousarray(M[:, act]), np.ascontiguousarray(Af[:, act]), Ha,
                       act, K, code, s0, s1, z, cnt)
            return z, cnt.astype(np.int32)
        mean, A = np.ascontiguousarray(M[:, act].T), np.ascontiguousarray(Af[:, act].T)
        pos = np.full(K, -1, np.int32)
        pos[act] = np.arange(len(act))
        block_draw(x, keep, labels, Ha, act, K, code, s0, s1, float(cut), z, cnt, mean, A,
                   *_precision_bound(A, code, d), pos)
        return z, cnt.astype(np.int32)

    lab = labels_operand(labels)
    outs = (jax.ShapeDtypeStruct((n,), lab.dtype), jax.ShapeDtypeStruct((K,), jnp.int32))
    return _call(host, outs, (x if xw is None else xw, keep, lab, mean.T, A.T, jnp.stack([half, log_pi]),
                              seed))


# -- the unlinked block's acceptance by sub-blocks (twin of ``subcluster.accept_sub_blocks``) -------------
@_parallel_kernel
def sub_block_deltas(labels, z, B, delta):
    """``delta[b, k]``: the change of slot k's size if sub-block b (the points ``i mod B == b``) took its
    draws ``z`` (rows with ``z == labels`` count nowhere). Labels outside the K slots are skipped: under
    ``vmap`` with a batched width index (a vmapped ``subcluster.step`` without ``chain_axis``) the label
    step's ``lax.switch`` runs every width, and a branch narrower than the occupied slots (its result
    discarded) must not write out of bounds."""
    n, K = labels.shape[0], delta.shape[1]
    for b in prange(B):
        for i in range(b, n, B):
            a, c = labels[i], z[i]
            if a != c and 0 <= a < K and 0 <= c < K:
                delta[b, a] -= 1
                delta[b, c] += 1


@compile_kernel
def scan_sub_blocks(sizes, delta, acc):
    """In the order 0, 1, ...: sub-block b is accepted (``acc[b]``, ``sizes`` updated in place) iff no slot
    occupied at the start empties."""
    K = sizes.shape[0]
    act = sizes > 0
    for b in range(delta.shape[0]):
        ok = True
        for k in range(K):
            if act[k] and sizes[k] + delta[b, k] == 0:
                ok = False
                break
        acc[b] = ok
        if ok:
            for k in range(K):
                sizes[k] += delta[b, k]


@_parallel_kernel
def apply_sub_blocks(labels, z, acc, out):
    B = acc.shape[0]
    for i in prange(labels.shape[0]):  # (writes out[i] only)
        out[i] = z[i] if acc[i % B] else labels[i]


def accept_sub_blocks(labels, draw, sizes, n_blocks):
    """``subcluster.accept_sub_blocks`` on the compiled kernels: ``(labels (n,), sizes (K,))``, ``sizes``
    in its own dtype (whole numbers)."""
    n, K = labels.shape[0], sizes.shape[0]

    def host(labels, z, sizes):
        delta = np.zeros((n_blocks, K), np.int64)
        sub_block_deltas(labels, z, n_blocks, delta)
        now = sizes.astype(np.int64)
        acc = np.zeros(n_blocks, np.bool_)
        scan_sub_blocks(now, delta, acc)
        out = np.empty(n, labels.dtype)
        apply_sub_blocks(labels, z, acc, out)
        return out, now.astype(np.int32)

    lab = labels_operand(labels)
    outs = (jax.ShapeDtypeStruct((n,), lab.dtype), jax.ShapeDtypeStruct((K,), jnp.int32))
    z, now = _call(host, outs, (lab, draw.astype(lab.dtype), jnp.round(sizes).astype(jnp.int32)))
    return z.astype(labels.dtype), now.astype(sizes.dtype)
