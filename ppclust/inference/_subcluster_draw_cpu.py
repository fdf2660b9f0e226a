r"""The compiled draw of the sub-cluster sampler's label step (d): the unlinked block's labels, CPU.

The twin of ``subcluster._block_draw`` on one device (:func:`draw_block`) and of
:func:`ppclust.inference.subcluster.accept_sub_blocks` (:func:`accept_sub_blocks`), called from the jitted
sweep through :mod:`ppclust.inference._callback`. Up to d = ``_BOUND_MIN_D`` the draw is
:func:`dense_draw`: blocks of points with the points innermost in every loop (vector loops, no reduction
across lanes) and a branch-free exp (:func:`fexp`, within 3 ulp of libm's). Above it is
:func:`block_draw`: per point, an O(d) bound of each slot's density skips the O(d^2) densities (and exps)
that lie ``cut`` nats below the largest, with an exact redraw when the left-out mass could matter. Both
draw point i with the uniform :func:`ppclust.inference._counter_rng.counter_uniform` of i, so the draws are
the XLA draws up to float rounding (``tests/inference/test_subcluster_cpu.py``).
"""

from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ppclust.families import LOG_2PI, _numba
from ppclust.families._densities_cpu import UPPER, gaussian_loglik
from ppclust.families._niw_cpu import DIAG, FULL, family_code
from ppclust.inference import _counter_rng, _subcluster_cpu
from ppclust.inference._callback import call, labels_operand
from ppclust.inference._counter_rng import counter_uniform, host_seed
from ppclust.inference._subcluster_cpu import chunks, param_arrays, rows_logliks

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

__all__ = ["draw_block", "accept_sub_blocks"]

#: the kernels here inline the families' compiled densities, the counter uniforms and the row densities of
#: _subcluster_cpu: those files' stamps are folded into numba's disk-cache key (an edit recompiles them)
compile_kernel = partial(_numba.compile_kernel, depends=(_counter_rng.__file__, _subcluster_cpu.__file__))


def _parallel_kernel(fn):
    return compile_kernel(fn, parallel=True)


def _contracted_kernel(fn):
    """:func:`_parallel_kernel` whose multiply-adds may fuse (fastmath ``contract``). No reassociation."""
    return compile_kernel(fn, parallel=True, fastmath={"contract"})


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
_E0, _E1, _E2, _E3, _E4, _E5, _E6, _E7, _E8, _E9, _E10, _E11, _E12 = (
    1.0 / math.factorial(i) for i in range(13)
)


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
def dense_draw(x, keep, labels, M, Af, H, act, K, code, seed, z, cnt):
    r"""The unlinked block's draw of ``subcluster._fused_draw`` (label step (d)) with every weight: for each
    point without ``keep``, :math:`z_i` = the count of cumulative sums :math:`c_k \le u_i T` of the
    weights :math:`e_k = \exp(\ell_k - \max_j\ell_j)`, :math:`\ell_k = \log\pi_k + \log p(x_i\mid
    \theta_k)`, :math:`T` their sum and :math:`u_i` = ``counter_uniform(s0, s1, i)``, ``seed`` = ``(s0,
    s1)`` (``_draw_rows``'s
    inverse CDF, summed in slot order); kept points keep ``labels``; ``cnt`` (K,) the new slot counts
    (labels outside [0, K) count nowhere). The parameters are those of the slots ``act`` only (the slots
    with :math:`\log\pi_k > -\infty`, in increasing order; the others are never drawn, their weight is
    0), in the slots-by-rows layout of :func:`rows_logliks` (:func:`draw_block` builds it); an index j
    among them is slot ``act[j]``, as the count over all K slots gives (0 weights add nothing), and a count
    past the last (rounding at u T = T) is K - 1, as in ``_draw_rows``.

    Points go in blocks of ``_ROWS``, the rows innermost in every loop (log densities, maxima, :func:`fexp`,
    sums, counts), so each loop is a vector loop over points (a per-point loop's scalar maxima, branches
    and libm calls cost more than the densities). The exps differ from libm's (and
    XLA's) by rounding only, so the draws are the XLA draws up to rounding (the parity test compares them
    label for label)."""
    s0, s1 = seed
    n, d = x.shape
    ka = H.shape[1]
    nb = -(-n // _ROWS)
    nc = chunks(n)
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
            rows_logliks(xt, m, M, Af, H, code, c0, q, w, ut, lk)
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


class _Slots(NamedTuple):
    """The drawable slots' parameters in the layout of :func:`block_draw`: ``mean`` (K, d), ``A`` (K, m) as
    :func:`~ppclust.families._densities_cpu.gaussian_loglik` takes them, ``H`` (2, K) half log determinants
    and log weights (:func:`rows_logliks`), ``act`` the slot of each and ``pos[k]`` slot k's index among
    them (-1: not drawable)."""

    mean: np.ndarray
    A: np.ndarray
    H: np.ndarray
    act: np.ndarray
    pos: np.ndarray


@partial(compile_kernel, inline="always")
def _bounded_logliks(x, i, slots, bound, code, c0, cut, start, sc, lk, skip):
    r"""The log densities plus log weights of the slots (``slots`` a :class:`_Slots`: ``mean`` (K, d),
    ``A`` (K, m) as :func:`~ppclust.families._densities_cpu.gaussian_loglik` takes them, ``H`` (2, K) as
    :func:`rows_logliks`) one slot at a time, slot ``start`` first, skipping the slots whose upper bound
    :math:`c_0 + h_k - \tfrac12 b_k + \log\pi_k` is at least ``cut`` below the largest density so far
    (``skip[k]``, ``lk[k]`` then holds the bound). :math:`b_k \le u^\top P_k u` (:math:`u = x_i - \mu_k`)
    is :func:`precision_bound`'s (``bound`` = ``(lam, V)``): ``lam[k] = (c, c - \lambda_1, c - \lambda_2)``
    and ``V[k]`` (2, d) the
    eigenvectors of the precision's two smallest eigenvalues, :math:`b_k = c\|u\|^2 - \sum_t (c -
    \lambda_t)(v_t^\top u)^2`: one O(d) pass (three sums) where the density is O(d^2). Returns the index
    of the largest."""
    mean, A, H = slots.mean, slots.A, slots.H
    lam, V = bound
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
def block_draw(x, keep, labels, slots, bound, K, code, seed, cut, z, cnt):
    r"""The unlinked block's draw of :func:`dense_draw` (the same draws up to rounding) for d >
    ``_BOUND_MIN_D``, one point at a time, skipping densities: a slot whose O(d) upper bound
    (:func:`_bounded_logliks`, from :func:`precision_bound`'s ``bound`` = ``(lam, V)``) is ``cut`` below
    the largest density so far is not computed in O(d^2). Parameters of the slots ``act`` only, a
    :class:`_Slots` (:func:`draw_block` builds them; the point's current slot is computed first); ``seed``
    = ``(s0, s1)`` of the uniforms.

    The weights :math:`e_k = \exp(\ell_k - \max_j\ell_j)` are computed only where :math:`\ell_k - \max > -`
    ``cut`` (for separated clusters most points need none: the largest weight is 1). The draw is the count
    of cumulative sums :math:`c_k \le u\,T`; leaving out :math:`m` terms each below :math:`e^{-\text{cut}}`
    moves every :math:`c_k` and :math:`T` by at most :math:`D = m e^{-\text{cut}}` (and :math:`uT` by at
    most :math:`uD < D`), so no comparison can change when every :math:`|c_k - uT| > D`: then the index is
    the one of the full sum (in exact arithmetic). Otherwise (probability about :math:`2KD` per point) the
    point is redrawn with every density and exp. So the draw is the full inverse-CDF draw, not an
    approximation (``cut`` trades exps and densities for redraws only); the two backends still differ by
    float rounding only (the chain test compares them label for label)."""
    mean, A, H, act, pos = slots
    s0, s1 = seed
    n, d = x.shape
    ka = H.shape[1]
    nc = chunks(n)
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
            am = _bounded_logliks(x, i, slots, bound, code, c0, cut, max(start, 0), sc, lk, skip)
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


#: above this dimension :func:`draw_block` runs :func:`block_draw` (each slot's density bounded in O(d)
#: before it is computed in O(d^2), :func:`_bounded_logliks`); up to it :func:`dense_draw` (every density
#: and weight, vector loops over points)
_BOUND_MIN_D = 4


#: a slot's precision bound uses fewer than two eigen-directions when its smallest eigenvalues are at
#: least this fraction of the third (:func:`precision_bound`)
_BOUND_ROUND = 0.5


def precision_bound(A, code, d):
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
    where the smallest eigenvalue alone (:math:`c = \lambda_1`) would bound every
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


def draw_block(x, keep, labels, log_pi, theta, seed, family, cut, xw=None, n_valid=None):
    """:func:`dense_draw` (d <= ``_BOUND_MIN_D``) or :func:`block_draw` from JAX: ``(labels (n,), counts
    (K,))``, the twin of ``subcluster._block_draw`` on one device with uniforms
    ``counter_uniform(seed, arange(n))`` (``xw``: :func:`wired` ``x``, else made here). Rows from
    ``n_valid`` on (bucket padding) keep their labels without a visit.

    Parameters
    ----------
    x : array (n, d)
        The points.
    keep : bool array (n,)
        Points that keep their label (the linked block).
    labels : int array (n,)
        Current slots.
    log_pi : array (K,)
        Log weights (``-inf``: a slot never drawn).
    theta : GaussianParams
        The slots' parameters.
    seed : uint32 array (2,)
        Counter seed of the uniforms.
    family : GaussianNIW
        The family (its layout).
    cut : float
        Nats below the largest density at which :func:`block_draw` skips a slot.
    xw : wired x or None, default=None
        :func:`wired` ``x``, else made here.
    n_valid : int scalar or None, default=None
        The points among the rows (the rest is bucket padding, kept); None: every row.

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
    ...     log_pi = jnp.log(jnp.array([0.5, 0.5]))
    ...     z, cnt = draw_block(x, jnp.zeros(4, bool), jnp.array([0, 0, 1, 1]), log_pi, theta,
    ...                         counter_seed(jax.random.key(1)), fam, 20.0)
    >>> z.shape, int(cnt.sum())
    ((4,), 4)
    """
    mean, A, half, code = param_arrays(theta, family_code(family))
    n, d = x.shape
    K = log_pi.shape[0]

    def host(x, keep, labels, M, Af, H, seed, nv):
        act = np.flatnonzero(H[1] > -np.inf).astype(np.int32)  # the slots that can be drawn
        z = np.empty(n, labels.dtype)
        cnt = np.zeros(K, np.int64)
        seed = host_seed(seed)
        nv = int(nv)  # the padding rows keep their labels (outside the slots: counted nowhere)
        z[nv:] = labels[nv:]
        x, keep, labels, out = x[:nv], keep[:nv], labels[:nv], z
        z = out[:nv]
        Ha = np.ascontiguousarray(H[:, act])
        if d <= _BOUND_MIN_D:
            Ma, Afa = np.ascontiguousarray(M[:, act]), np.ascontiguousarray(Af[:, act])
            dense_draw(x, keep, labels, Ma, Afa, Ha, act, K, code, seed, z, cnt)
            return out, cnt.astype(np.int32)
        mean, A = np.ascontiguousarray(M[:, act].T), np.ascontiguousarray(Af[:, act].T)
        pos = np.full(K, -1, np.int32)
        pos[act] = np.arange(len(act))
        bound = precision_bound(A, code, d)
        block_draw(x, keep, labels, _Slots(mean, A, Ha, act, pos), bound, K, code, seed, float(cut), z, cnt)
        return out, cnt.astype(np.int32)

    lab = labels_operand(labels)
    outs = (jax.ShapeDtypeStruct((n,), lab.dtype), jax.ShapeDtypeStruct((K,), jnp.int32))
    nv = jnp.asarray(n if n_valid is None else n_valid, jnp.int32)
    return call(
        host, outs, (x if xw is None else xw, keep, lab, mean.T, A.T, jnp.stack([half, log_pi]), seed, nv)
    )


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
    in its own dtype (whole numbers).

    Parameters
    ----------
    labels : int array (n,)
        Current slots.
    draw : int array (n,)
        The drawn slots (:func:`draw_block`'s labels).
    sizes : array (K,)
        Slot sizes.
    n_blocks : int or int scalar
        Sub-blocks: each is accepted whole or not at all, in order (``subcluster.accept_sub_blocks``);
        may be traced.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> z = jnp.array([0, 0, 0, 0])
    >>> labels, sizes = accept_sub_blocks(jnp.array([0, 0, 1, 1]), z, jnp.array([2.0, 2.0]), 4)
    >>> labels.tolist(), sizes.tolist()
    ([0, 0, 0, 1], [3.0, 1.0])
    """
    n, K = labels.shape[0], sizes.shape[0]

    def host(labels, z, sizes, n_blocks):
        n_blocks = int(n_blocks)
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
    blocks = jnp.asarray(n_blocks, jnp.int32)
    z, now = call(host, outs, (lab, draw.astype(lab.dtype), jnp.round(sizes).astype(jnp.int32), blocks))
    return z.astype(labels.dtype), now.astype(sizes.dtype)
