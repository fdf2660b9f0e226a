r"""The compiled O(n) pass of the sub-cluster sampler's split/merge proposal (:func:`move`), CPU.

The twin of the final responsibilities of ``subcluster_responsibilities``, the Bernoulli sides and
``_log_q_pair`` of :func:`ppclust.inference.subcluster_moves.propose`, and the split side's
``GaussianNIW.weighted_stats`` sums (:func:`move_sides`), for the points of the chosen cluster(s) only
(:mod:`ppclust.inference._cluster_index`). It consumes the same counter uniforms
(:mod:`ppclust.inference._counter_rng`) as the XLA branch, so both take the same proposals up to float
rounding (``tests/inference/test_subcluster_cpu.py``). The row densities and the chunking are those of
:mod:`ppclust.inference._subcluster_cpu`.
"""

from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ppclust.families import LOG_2PI, _numba
from ppclust.families._niw_cpu import family_code
from ppclust.inference import _counter_rng, _subcluster_cpu
from ppclust.inference._callback import call, labels_operand, wired
from ppclust.inference._cluster_index import candidates, index_args
from ppclust.inference._counter_rng import counter_uniform, host_seed
from ppclust.inference._subcluster_cpu import add_outer, chunks, param_arrays, rows_logliks

try:
    from numba import prange
except ImportError:  # pragma: no cover
    prange = range

__all__ = ["MoveSlots", "move"]

#: the kernel inlines the counter uniforms and the row densities of _subcluster_cpu: those files' stamps
#: are folded into numba's disk-cache key (an edit recompiles it)
compile_kernel = partial(_numba.compile_kernel, depends=(_counter_rng.__file__, _subcluster_cpu.__file__))


def _contracted_kernel(fn):
    """Parallel, multiply-adds may fuse (fastmath ``contract``); no reassociation: every sum keeps its
    order (as :func:`ppclust.inference._subcluster_cpu.contracted_kernel`)."""
    return compile_kernel(fn, parallel=True, fastmath={"contract"})


#: candidates per block of :func:`move_sides` (gathered first, then their two densities as vector loops)
_MOVE_ROWS = 128


@_contracted_kernel
def move_sides(x, centre, labels, cand, slots, fit, code, clip, seed, out):
    """The O(n) part of one split/merge proposal for the points of C only (``slots`` a :class:`MoveSlots`:
    ``ca``, plus ``cb`` for a merge): ``r_i = sigmoid(clip(l_iA - l_iB))`` of the sub-cluster fit (``fit``
    = ``(mean, A, half, lw)``: the parameters of its two components and their log weights); for a split,
    side A iff ``log u_i < log r_i`` with ``u_i = counter_uniform(s0, s1, i)`` (``seed`` = ``(s0, s1)``),
    for a merge side A = the points of ``ca``. ``out`` = ``(prop, res, s_b, outer_b)``, written: the
    proposal ``prop`` (side B to ``new`` for a split, to ``ca`` for a merge); ``res = [log q, |C|, |A|,
    |B|]`` with ``log q`` the probability of the unordered bipartition (``_log_q_pair``); for a split,
    side B's count, sum and centred outer products (``s_b``, ``outer_b``, as
    ``GaussianNIW.weighted_stats``). ``cand``: increasing point indices holding every point of C
    (:func:`candidates`), the only points visited; ``prop`` comes in as a copy of ``labels`` and only
    points of C are written."""
    ca, cb, new, is_split = slots
    mean, A, half, lw = fit
    s0, s1 = seed
    prop, res, s_b, outer_b = out
    d = x.shape[1]
    nm = cand.shape[0]
    nc = chunks(nm)
    per = -(-nm // nc)
    acc = np.zeros((nc, 5))  # o1, o2, |C|, |A|, |B|
    cs = np.zeros((nc, d))
    co = np.zeros((nc, d, d))
    target = new if is_split else ca
    M = np.ascontiguousarray(mean[:2].T)  # the two components in the layout of rows_logliks
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
            rows_logliks(xt, m, M, Af, H, code, c0, q, w, ut, lk)  # gaussian_loglik + lw, the same terms
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
                    side_a = math.log(counter_uniform(s0, s1, np.int64(i))) < lr  # one signature: int64
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
                        add_outer(co[c], xc)
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


class MoveSlots(NamedTuple):
    """The slots of one split/merge proposal.

    Parameters
    ----------
    ca : int or int32 scalar
        The cluster split (split), or the one the other merges into (merge).
    cb : int or int32 scalar
        The cluster merged into ``ca`` (merge; unused for a split).
    new : int or int32 scalar
        The free slot that receives side B of a split (unused for a merge).
    is_split : bool or bool scalar
        Split (True) or merge (False).

    Examples
    --------
    >>> MoveSlots(0, 0, 1, True).new
    1
    """

    ca: object
    cb: object
    new: object
    is_split: object


def move(x, labels, slots, theta, lw, seed, family, clip, xw=None, index=None):
    """:func:`move_sides` from JAX: ``(proposal (n,), log q, |C|, |A|, side B's weighted_stats)``.

    Parameters
    ----------
    x : array (n, d)
        The points.
    labels : int array (n,)
        The current labels.
    slots : MoveSlots
        The proposal's slots (traced scalars allowed).
    theta : GaussianParams
        The sub-cluster fit's two components.
    lw : array (2,)
        Their log weights.
    seed : uint32 array (2,)
        The counter seed of the sides' uniforms (:func:`ppclust.inference.subcluster_moves.counter_seed`).
    family : GaussianNIW
        The family (its covariance layout and ``_stats_from``).
    clip : float
        The logits are clipped to ``[-clip, clip]``.
    xw : wired x, optional
        :func:`wired` ``x``, else made here.
    index : ClusterIndex, optional
        Valid for ``labels``; None: every point visited.

    Examples
    --------
    >>> import jax, jax.numpy as jnp, numpy as np
    >>> from ppclust._jax import x64
    >>> from ppclust.families import GaussianNIW
    >>> xs = np.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> from ppclust.inference.subcluster_moves import counter_seed
    >>> with x64():
    ...     x = jnp.asarray(xs)
    ...     fam = GaussianNIW.default(x)
    ...     theta = fam.sample_posterior(jax.random.key(0), fam.stats(x, jnp.array([0, 0, 1, 1]), 2))
    ...     out = move(x, jnp.zeros(4, jnp.int32), MoveSlots(0, 0, 1, True), theta,
    ...                jnp.log(jnp.array([0.5, 0.5])), counter_seed(jax.random.key(1)), fam, 30.0)
    >>> out[0].shape, int(out[2])
    ((4,), 4)
    """
    ca, cb, new, is_split = slots
    mean, A, half, code = param_arrays(theta, family_code(family))
    n, d = x.shape
    xw = wired(x) if xw is None else xw

    def host(x, centre, labels, ca, cb, new, is_split, mean, A, half, lw, seed, *ix):
        prop = np.array(labels)  # a copy (int32 or uint8, as given): move_sides writes the points of C only
        res = np.zeros(4)
        s_b, o_b = np.zeros(d), np.zeros((d, d))
        host_slots = MoveSlots(int(ca), int(cb), int(new), bool(is_split))
        cand = candidates(n, *ix)
        out = (prop, res, s_b, o_b)
        move_sides(
            x, centre, labels, cand, host_slots, (mean, A, half, lw), code, float(clip), host_seed(seed), out
        )
        return prop, res, s_b, o_b

    i32 = lambda v: jnp.asarray(v, jnp.int32)  # noqa: E731
    lab = labels_operand(labels)
    outs = (
        jax.ShapeDtypeStruct((n,), lab.dtype),
        jax.ShapeDtypeStruct((4,), x.dtype),
        jax.ShapeDtypeStruct((d,), x.dtype),
        jax.ShapeDtypeStruct((d, d), x.dtype),
    )
    ix = () if index is None else index_args(index, index.cover[ca] | (index.cover[cb] & ~is_split))
    prop, res, s_b, o_b = call(
        host,
        outs,
        (xw, xw.centre, lab, i32(ca), i32(cb), i32(new), jnp.asarray(is_split), mean, A, half, lw, seed) + ix,
    )
    # x enters _stats_from through its column means only (the shift): the one row xw.centre has them
    side_b = family._stats_from(xw.centre[None], None, res[3][None], s_b[None], lambda xc: o_b[None])
    return prop.astype(labels.dtype), res[0], res[1], res[2], side_b
