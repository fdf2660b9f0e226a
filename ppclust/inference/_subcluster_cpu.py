r"""The compiled O(n) passes of the sub-cluster sampler's moves (:mod:`ppclust.inference.subcluster`), CPU.

XLA:CPU runs a split/merge move as about ten full passes over the points (both branches under ``where``,
n uniforms, log-sigmoids of every point) and the end-of-sweep statistics as an O(n d^2) segment sum; here
each is one multi-threaded loop (numba ``parallel=True``, ``prange`` over row chunks with per-chunk
accumulators) that touches only what the move needs: the points of the chosen cluster(s)
(:mod:`ppclust.inference._cluster_index`), the branch actually taken. The sweep stays one jitted program:
the loops are called through :func:`jax.pure_callback` (:mod:`ppclust.inference._callback`; the data are
held on the host, never an operand), and everything O(K) (pair choice, the sub-cluster fit on its
fixed-size subsample, log joints, the Hastings ratio, parameter draws) stays in JAX. The label step's draw
is :mod:`ppclust.inference._subcluster_draw_cpu`, the split/merge proposal's pass
:mod:`ppclust.inference._subcluster_move_cpu`.

Each kernel twins one JAX function and consumes the same random numbers
(:mod:`ppclust.inference._counter_rng`), so ``backend="numba"`` and ``backend="xla"`` run the same chain up
to float rounding (``tests/inference/test_subcluster_cpu.py``: twin by twin in float64, and whole chains
label for label):

=====================================  =====================================================================
compiled twin                          JAX definition (:mod:`ppclust.inference.subcluster`)
=====================================  =====================================================================
:func:`stats_sums`                     the sums of ``GaussianNIW.stats`` (finished by ``_stats_from``)
:func:`pick_subsamples`                the four subsamples of ``_subcluster_fit`` (``_uniform_points``)
:func:`peel_points`                    the points of ``_peel_move`` (``_pick_point``, ``argmax``)
=====================================  =====================================================================

The Gaussian log density is :func:`~ppclust.families._densities_cpu.gaussian_loglik` (the twin of
:func:`ppclust.families.gaussian_loglik`; :func:`rows_logliks` is its loop over the slots and a block of
points, the same terms in the same order). Families: :class:`~ppclust.families.GaussianNIW` (full, diag,
spherical) in float64; others (and float32) use the XLA path.
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ppclust.families import GaussianNIW, _numba
from ppclust.families._densities_cpu import UPPER
from ppclust.families._niw_cpu import DIAG, FULL, family_code
from ppclust.families._numba import available
from ppclust.inference import _counter_rng
from ppclust.inference._callback import call, labels_operand, wired
from ppclust.inference._cluster_index import candidates, counting_sort, index_args

try:
    from numba import prange
except ImportError:  # pragma: no cover
    prange = range

__all__ = [
    "supports",
    "chunks",
    "rows_logliks",
    "param_arrays",
    "family_stats",
    "subsamples",
    "peel_points_of",
    "add_outer",
]

#: numba's disk cache keys a kernel on its own source file: the kernels here inline the families' compiled
#: twins (folded in by :func:`ppclust.families._numba.compile_kernel`) and the counter uniforms, so that
#: file's stamp is folded in too (an edit there recompiles them)
compile_kernel = partial(_numba.compile_kernel, depends=(_counter_rng.__file__,))


def supports(family, dtype=jnp.float64) -> bool:
    """Whether the compiled passes implement this family (GaussianNIW, float64).

    Parameters
    ----------
    family : object
        A family of :mod:`ppclust.families`.
    dtype : dtype, default=jnp.float64
        The data's floating dtype.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> supports(GaussianNIW.default(jnp.eye(3)), jnp.float32)
    False
    """
    return (
        available()
        and isinstance(family, GaussianNIW)
        and family_code(family) is not None
        and np.dtype(dtype) == np.float64
    )


def parallel_kernel(fn):
    return compile_kernel(fn, parallel=True)


def contracted_kernel(fn):
    """:func:`parallel_kernel` whose multiply-adds may fuse (fastmath ``contract``: one rounding instead of
    two; about 10% off the outer-product and density loops). No reassociation: every sum keeps its order."""
    return compile_kernel(fn, parallel=True, fastmath={"contract"})


# -- kernels of the moves ------------------------------------------------------------------------
@compile_kernel
def chunks(n):
    """Row ranges for prange: about 8 per thread (load balance), at least 4096 rows each.

    Parameters
    ----------
    n : int
        Rows.

    Examples
    --------
    >>> int(chunks(10000))
    3
    """
    return max(1, min(-(-n // 4096), 64))


@partial(compile_kernel, inline="always")
def add_outer(out, v):
    """``out += v v^T`` (d, d), every entry (row by row, the inner loop contiguous: it vectorises, unlike
    the upper triangle alone); entry (m, j) is the same product as (j, m), so the result is
    symmetric and equal to the mirrored upper triangle bit for bit.

    Parameters
    ----------
    out : float64 array (d, d)
        Updated in place.
    v : float64 array (d,)
        The vector.

    Returns
    -------
    None

    Examples
    --------
    >>> import numpy as np
    >>> out = np.zeros((2, 2))
    >>> add_outer(out, np.array([1.0, 2.0]))
    >>> out.tolist()
    [[1.0, 2.0], [2.0, 4.0]]
    """
    d = v.shape[0]
    for j in range(d):
        a = v[j]
        row = out[j]
        for m in range(d):
            row[m] += a * v[m]


#: points per register block of :func:`stats_sums`' outer products
_OUTER_ROWS = 4


@contracted_kernel
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
    nc = chunks(n)
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
                add_outer(co[c, k], xc)
            continue
        off = np.empty(K + 1, np.int32)  # int32 as the cluster index's: one compiled counting_sort
        order = np.empty(max(hi - lo, 1), np.int32)  # the chunk's points by slot, offsets from lo
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
    """The points of the peel/absorb step (``subcluster_moves.peel_absorb_move``): ``out[0]`` the (j+1)-th
    point labelled ``c`` (``_pick_point``'s draw j), ``out[1]`` the first point labelled ``s`` (the
    singleton's); 0 when there is none, as ``argmax`` of an all-False mask. ``cand_c`` / ``cand_s``:
    increasing point indices holding every point labelled ``c`` / ``s`` (:func:`candidates`), the only
    points visited."""
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
    clipped: ``subcluster_moves._uniform_points``). ``counts = [|C|, n_ca, n_cb]``. ``cand``: increasing point
    indices holding every point of C (:func:`candidates`), the only points visited."""
    n = labels.shape[0]
    nc = np.int64(0)  # not the literal 0: numba would compile _targets for that constant too
    na = np.int64(0)
    nb = np.int64(0)
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


@partial(compile_kernel, inline="always")
def rows_logliks(xt, m, M, Af, H, code, c0, q, w, ut, lk):
    """``lk[k, b] = c0 + half_k - q_kb / 2 + log pi_k`` for the slots k and the ``m`` rows b of ``xt``
    (d, rows: a block of points transposed), the terms of
    :func:`~ppclust.families._densities_cpu.gaussian_loglik` in its order of operations (``M`` (d, K)
    means, ``Af`` (m, K) the flattened precision factors transposed,
    ``H`` (2, K) half log determinants and log weights), with the rows innermost: every loop over b
    vectorises (no reduction across lanes). ``q``, ``w`` (rows,) and ``ut`` (d, rows): scratch (``ut`` the
    centred rows of one slot, so the d^2 loop is one multiply-add per term; ``code`` UPPER skips the
    factor's zeros below the diagonal).

    Parameters
    ----------
    xt : array (d, rows)
        A block of points, transposed.
    m : int
        Rows used.
    M : array (d, K)
        Means.
    Af : array (m, K)
        Flattened precision factors, transposed.
    H : array (2, K)
        Half log determinants and log weights.
    code : int
        Layout code (FULL, UPPER, DIAG, SPHERICAL).
    c0 : float
        The constant ``-d/2 ln(2 pi)``.
    q, w : arrays (rows,)
        Scratch.
    ut : array (d, rows)
        Scratch.
    lk : array (K, rows)
        Output.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.families._niw_cpu import DIAG
    >>> xt, M, Af, H = np.array([[0.0, 1.0]]), np.zeros((1, 1)), np.ones((1, 1)), np.zeros((2, 1))
    >>> q, w, ut, lk = np.empty(2), np.empty(2), np.empty((1, 2)), np.empty((1, 2))
    >>> rows_logliks(xt, 2, M, Af, H, DIAG, 0.0, q, w, ut, lk)
    >>> lk.tolist()
    [[0.0, -0.5]]
    """
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


def param_arrays(theta, code):
    r"""``(mean (K, d), A (K, m), half (K,), code)`` of :class:`~ppclust.families.GaussianParams`, A
    flattened in the layout of :func:`~ppclust.families._densities_cpu.gaussian_loglik` (full: column-major),
    and the layout's code. Full covariance above d = 2 takes the triangle R of a QR decomposition of each
    factor
    (:math:`R^\top R = A^\top Q^\top Q A = A^\top A`, the same precision: the same densities up to
    rounding) and the code UPPER, so every density skips R's zeros: d(d+1)/2 products in place of d^2
    (d = 2 keeps its unrolled full product).

    Parameters
    ----------
    theta : GaussianParams
        The slots' parameters.
    code : int
        The family's layout code (:func:`ppclust.families._niw_cpu.family_code`).

    Examples
    --------
    >>> import jax, jax.numpy as jnp, numpy as np
    >>> from ppclust._jax import x64
    >>> from ppclust.families import GaussianNIW
    >>> xs = np.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> with x64():
    ...     fam = GaussianNIW.default(jnp.asarray(xs))
    ...     st = fam.stats(jnp.asarray(xs), jnp.array([0, 0, 1, 1]), 2)
    ...     theta = fam.sample_posterior(jax.random.key(0), st)
    ...     mean, A, half, code = param_arrays(theta, 0)
    >>> mean.shape, A.shape
    ((2, 2), (2, 4))
    """
    K = theta.mean.shape[0]
    A = theta.prec_factor
    if A.ndim == 3:
        if A.shape[-1] > 2:
            A, code = jnp.linalg.qr(A, mode="r"), UPPER
        A = jnp.swapaxes(A, 1, 2)
    return theta.mean, A.reshape(K, -1), theta.half_logdet_prec, code


def family_stats(x, labels, k_max, family, xw=None, n_valid=None):
    """``family.stats(x, labels, k_max)`` with its O(n d^2) sums from :func:`stats_sums` (``xw``:
    :func:`wired` ``x``, else made here); the rows from ``n_valid`` on (bucket padding, labels outside the
    slots) are not visited.

    Parameters
    ----------
    x : array (n, d)
        The points.
    labels : int array (n,)
        Slots.
    k_max : int
        Slots.
    family : GaussianNIW
        The family.
    xw : wired x or None, default=None
        :func:`wired` ``x``, else made here.
    n_valid : int scalar or None, default=None
        The points among the rows (the rest is bucket padding); None: every row.

    Examples
    --------
    >>> import jax, jax.numpy as jnp, numpy as np
    >>> from ppclust._jax import x64
    >>> from ppclust.families import GaussianNIW
    >>> xs = np.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> with x64():
    ...     x = jnp.asarray(xs)
    ...     st = family_stats(x, jnp.array([0, 0, 1, 1]), 2, GaussianNIW.default(x))
    >>> st.n.tolist()
    [2.0, 2.0]
    """
    n, d = x.shape
    xw = wired(x) if xw is None else xw  # centre: the shift of families._centered_scatter (its x.mean(0))

    def host(x, centre, labels, nv):
        n_out, s_out, o_out = np.zeros(k_max), np.zeros((k_max, d)), np.zeros((k_max, d, d))
        stats_sums(x[: int(nv)], centre, labels[: int(nv)], n_out, s_out, o_out)
        return n_out, s_out, o_out

    outs = (
        jax.ShapeDtypeStruct((k_max,), x.dtype),
        jax.ShapeDtypeStruct((k_max, d), x.dtype),
        jax.ShapeDtypeStruct((k_max, d, d), x.dtype),
    )
    nv = jnp.asarray(n if n_valid is None else n_valid, jnp.int32)
    cnt, s, outer = call(host, outs, (xw, xw.centre, labels_operand(labels), nv))
    # x enters _stats_from through its column means only (the shift): the one row xw.centre has them
    return family._stats_from(xw.centre[None], None, cnt, s, lambda xc: outer)


def peel_points_of(labels, c, j, s, index=None):
    """:func:`peel_points` from JAX: ``(i_peel, i_absorb)`` (``index``: a :class:`ClusterIndex` valid for
    ``labels``, or None: every point visited).

    Parameters
    ----------
    labels : int array (n,)
        Slots.
    c : int scalar
        The cluster a point is peeled from.
    j : int scalar
        The sub-cluster (side) it is taken from.
    s : int scalar
        The cluster that absorbs.
    index : ClusterIndex or None, default=None
        Valid for ``labels``; None: every point visited.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> [int(v) for v in peel_points_of(jnp.array([0, 1, 1, 2]), 1, 1, 2)]
    [2, 3]
    """
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
    ix = () if index is None else index_args(index, index.cover[c], index.cover[s])
    (out,) = call(
        host, (jax.ShapeDtypeStruct((2,), jnp.int32),), (labels_operand(labels), i32(c), i32(j), i32(s)) + ix
    )
    return out[0], out[1]


def subsamples(labels, ca, cb, is_split, u, u_lab, index=None):
    """:func:`pick_subsamples` from JAX: ``((idx, |C|), (li, |C|), (ia, n_ca), (ib, n_cb))`` (``index``: a
    :class:`ClusterIndex` valid for ``labels``, or None: every point visited).

    Parameters
    ----------
    labels : int array (n,)
        Slots.
    ca, cb : int scalars
        The proposal's clusters (``cb`` for a merge).
    is_split : bool scalar
        Split or merge.
    u : array (m,)
        Uniforms of the sub-cluster fit's subsample.
    u_lab : array (ml,)
        Uniforms of its labelled subsamples.
    index : ClusterIndex or None, default=None
        Valid for ``labels``; None: every point visited.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> (idx, n_c), _, _, _ = subsamples(jnp.array([0, 0, 1, 1]), 1, 0, True, jnp.array([0.1, 0.9]),
    ...                                  jnp.array([0.5]))
    >>> int(n_c), sorted(set(idx.tolist())) <= [2, 3]
    (2, True)
    """
    m, ml = u.shape[0], u_lab.shape[0]
    n = labels.shape[0]

    def host(labels, ca, cb, is_split, u, u_lab, *ix):
        idx, li, ia, ib = (np.empty(k, np.int32) for k in (m, ml, ml, ml))
        counts = np.zeros(3, np.int32)
        pick_subsamples(
            labels, candidates(n, *ix), int(ca), int(cb), bool(is_split), u, u_lab, idx, li, ia, ib, counts
        )
        return idx, li, ia, ib, counts

    outs = (
        (jax.ShapeDtypeStruct((m,), jnp.int32),)
        + (jax.ShapeDtypeStruct((ml,), jnp.int32),) * 3
        + (jax.ShapeDtypeStruct((3,), jnp.int32),)
    )
    i32 = lambda v: jnp.asarray(v, jnp.int32)  # noqa: E731
    ix = () if index is None else index_args(index, index.cover[ca] | (index.cover[cb] & ~is_split))
    idx, li, ia, ib, c = call(
        host, outs, (labels_operand(labels), i32(ca), i32(cb), jnp.asarray(is_split), u, u_lab) + ix
    )
    return (idx, c[0]), (li, c[0]), (ia, c[1]), (ib, c[2])
