r"""The collapsed Gibbs sweep of :mod:`ppclust.inference.gibbs` compiled as one CPU loop (numba).

Kept whole although over 700 lines: the sweep and its leave-one-out twin (the pointwise predictive of
PSIS-LOO, :func:`loo_log_predictive`) run the same per-point kernels (slot cache refresh, own-slot
leave-one-out, link terms, candidate slots), compiled into both; split, one module would import the
other's private kernels.

Why a second implementation: a sequential sweep is a scalar loop over points. XLA:CPU runs the loop body
as a chain of small kernels, whose launch costs cap the jitted sweep's point updates per second whatever
the arithmetic costs. Here the whole sweep is one compiled function: per point
the O(K d^2) predictive and O(degree) link counts (same equations as :func:`gibbs.conditional`), and
per *changed slot* a cached predictive (location, Cholesky, log-normaliser) refreshed after each rank-one
update, so only O(d^2) work and one log remain per occupied slot; the point's own slot is evaluated
without removing the point (:func:`_loo_full`).

It consumes the sweep's random inputs drawn by JAX (visiting order and one uniform per point, inverse-CDF
draw as :func:`gibbs.draw_categorical`), so it takes the same decisions as the XLA sweep up to float
rounding; ``tests/inference/test_gibbs_cpu.py`` checks label-for-label agreement and the exact posterior.
It runs inside ``jit``/``vmap``/``scan`` through :func:`jax.pure_callback` (chains batched in one call);
once a stop is requested (:func:`ppclust._progress.stop_requested`) the callback returns the state
unchanged without sweeping, so a stopped fit's program runs out at once.

Families: :class:`~ppclust.families.GaussianNIW` (full, diag, spherical) and
:class:`~ppclust.families.SphericalGaussian`; the others use the XLA sweep. The family algebra (rank-one
updates, the cached predictive and its leave-one-out form) is not restated here: it is the compiled twin
of each family function in :mod:`ppclust.families._niw_cpu`, tested primitive by primitive against the JAX
definitions; this module holds only the sweep (CRP weights, link terms, the draw, the state).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ppclust import _progress
from ppclust.families import Stats, _niw_cpu
from ppclust.families._niw_cpu import (
    FULL,
    SlotCache,
    family_arrays,
    family_code,
    log_predictive_cached,
    log_predictive_loo,
    predictive_cache_slot,
    predictive_log_norm,
    rank_one,
)
from ppclust.families._numba import available, compile_kernel, inline_kernel
from ppclust.inference._callback import from_wire, to_wire, unwire, wire, wire_shape

__all__ = ["supports", "sweep", "loo_log_predictive"]

_PQ = {"fixed": 0, "sample": 0, "collapse": 1}


class _Flags(NamedTuple):
    """The static settings of a compiled sweep call (one numba specialisation per field type)."""

    code: int  # family code (_niw_cpu.family_code)
    pq: int  # 1: link rates collapsed, 0: fixed or sampled p, q
    finite: bool  # finite Dirichlet mixture (else the DP's CRP)
    has_lp: bool  # a per-point log prior over slots is given
    K: int
    d: int
    m: int  # scale entries per slot


class _Data(NamedTuple):
    """What a sweep conditions on: points, link table (neighbours, signs, weights), per-point log prior."""

    x: np.ndarray
    nbr: np.ndarray
    sgn: np.ndarray
    wgt: np.ndarray
    lpp: np.ndarray


class _Model(NamedTuple):
    """The family (``code``, ``mu0``, ``hyp`` of :func:`family_arrays`), the link prior ``pri`` = (a_p, b_p,
    a_q, b_q) and the static switches of :class:`_Flags`."""

    code: int
    mu0: np.ndarray
    hyp: np.ndarray
    pri: np.ndarray
    pq: int
    finite: bool
    has_lp: bool


class _Sizes(NamedTuple):
    """The slot-size terms of one sweep: the lookup ``table`` of :func:`_size_cached` (NaN: not yet filled),
    log alpha, alpha / K and whether the mixture is finite."""

    table: np.ndarray
    log_alpha: float
    alpha_k: float
    finite: bool


class _LinkPrior(NamedTuple):
    """The link likelihood of one sweep: ``pq`` (1: collapsed rates), ``pri`` = (a_p, b_p, a_q, b_q) and
    the per-link log-odds ``xi1``, ``xi2`` of fixed rates."""

    pq: int
    pri: np.ndarray
    xi1: float
    xi2: float


def supports(family) -> bool:
    """Whether :func:`sweep` implements this family.

    Parameters
    ----------
    family : object
        A family of :mod:`ppclust.families`.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW, Multinomial
    >>> supports(Multinomial(jnp.ones(3)))
    False
    """
    return available() and family_code(family) is not None


def sweep(order_u, u, state, x, links, family, prior, pq, partition="dp", point_logprior=None, n_valid=None):
    """One collapsed sweep (the contract of ``gibbs._sweep`` with the order given by its uniforms, see
    :func:`gibbs.shuffle_order`): returns ``(labels, stats, counts, overflow)``.

    Operands are packed into seven arrays (each operand of a host callback has a fixed cost per call).

    Parameters
    ----------
    order_u : array (n,)
        The uniforms of the visiting order (:func:`gibbs.shuffle_order`).
    u : array (n,)
        One uniform per point (the inverse-CDF draw).
    state : GibbsState
        Labels, statistics, pair counts, p, q, alpha and the overflow flag.
    x : array (n, d)
        The points.
    links : Links
        The link table (neighbours, signs, weights).
    family : GaussianNIW or SphericalGaussian
        The family (:func:`supports`).
    prior : TVClustPrior
        The link prior (a_p, b_p, a_q, b_q).
    pq : {"fixed", "sample", "collapse"}
        How the link rates enter.
    partition : {"dp", "finite"}, default="dp"
        The CRP, or a finite Dirichlet mixture over the slots.
    point_logprior : array (n, K) or None, default=None
        A per-point log prior over the slots.
    n_valid : int scalar or None, default=None
        Only the first ``n_valid`` rows are points (traced; the rest is bucket padding, which the host
        function cuts off before the compiled sweep and returns unchanged). None: every row.

    Examples
    --------
    >>> import jax, jax.numpy as jnp, numpy as np
    >>> from ppclust._jax import x64
    >>> from ppclust.families import GaussianNIW
    >>> xs = np.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> from ppclust.inference.gibbs import init
    >>> from ppclust.models.tvclust import TVClustPrior, make_links
    >>> with x64():
    ...     x = jnp.asarray(xs)
    ...     fam, links = GaussianNIW.default(x), make_links(4, [[0, 1]], [1])
    ...     u = jnp.full(4, 0.5)
    ...     labels, stats, counts, overflow = sweep(u, u, init(x, links, fam, k_max=4), x, links, fam,
    ...                                             TVClustPrior(), "collapse")
    >>> labels.shape, bool(overflow)
    ((4,), False)
    """
    code = family_code(family)
    if code is None or not available():
        raise ValueError(f"the compiled CPU sweep does not support {type(family).__name__}")
    dtype = x.dtype
    st = state.stats
    K, d = st.s.shape
    m = int(np.prod(st.scale.shape[1:], dtype=int))
    mu0, hyp = family_arrays(family, dtype)
    pri = jnp.stack([jnp.asarray(v, dtype) for v in (prior.a_p, prior.b_p, prior.a_q, prior.b_q)])
    has_lp = point_logprior is not None
    args = (
        jnp.stack([order_u, u]).astype(dtype),
        jnp.concatenate([state.labels.astype(jnp.int32), state.overflow.astype(jnp.int32)[None]]),
        jnp.concatenate(
            [
                st.n,
                st.s.ravel(),
                _scale_layout(st.scale, code).ravel(),
                state.counts,
                jnp.stack([state.p, state.q, state.alpha]),
            ]
        ).astype(dtype),
        x,
        links.nbr.astype(jnp.int32),
        jnp.stack([links.sgn, links.wgt]).astype(dtype),
        point_logprior.astype(dtype) if has_lp else jnp.zeros((1, 1), dtype),
        jnp.concatenate([mu0, hyp, pri]),
    ) + (() if n_valid is None else (jnp.asarray(n_valid, jnp.int32),))
    outs = (args[1], args[2])
    dtypes = [np.dtype(a.dtype) for a in args]
    flags = _Flags(code, _PQ[pq], partition == "finite", has_lp, K, d, m)

    def host(*wired):
        if _progress.stop_requested():  # a stopped fit: its program runs out at once, its result unread
            return wired[1], wired[2]
        arrays = [unwire(a, t) for a, t in zip(wired, dtypes, strict=True)]
        res = _host(arrays, flags) if n_valid is None else _host_valid(arrays, flags)
        return tuple(to_wire(r) for r in res)

    res = jax.pure_callback(
        host, tuple(wire_shape(o) for o in outs), *(wire(a) for a in args), vmap_method="expand_dims"
    )
    labi, flt = (from_wire(r, o.dtype) for r, o in zip(res, outs, strict=True))
    n_pts = x.shape[0]
    o = K + K * d
    scale = _scale_layout(flt[o : o + K * m].reshape(st.scale.shape), code)
    stats = Stats(flt[:K], flt[K:o].reshape(K, d), scale)
    counts = flt[o + K * m : o + K * m + 4]
    return labi[:n_pts].astype(state.labels.dtype), stats, counts, labi[n_pts] != 0


def _scale_layout(scale, code):
    """Cholesky factors go column-major into the kernel (its inner loops run down a column) and back."""
    return jnp.swapaxes(scale, -1, -2) if code == FULL else scale


def _host(args, flags):
    """Flatten the vmap batch axes (size 1 = shared by all chains), run the chains, restore the axes."""
    nb = args[1].ndim - 1  # batch axes in front of the (n + 1,) labels
    batch = np.broadcast_shapes(*(a.shape[:nb] for a in args))
    nbatch = int(np.prod(batch))

    def flat(a, own):
        core = a.shape[nb:]
        if own:  # mutated in place: an owned copy (JAX's buffers are not ours to write)
            return np.array(np.broadcast_to(a, batch + core).reshape((nbatch,) + core), copy=True, order="C")
        if int(np.prod(a.shape[:nb])) == 1:
            return np.ascontiguousarray(a.reshape((1,) + core))
        return np.ascontiguousarray(np.broadcast_to(a, batch + core).reshape((nbatch,) + core))

    rand, labi, flt, x, nbr, linkf, lpp, par = (flat(a, i in (1, 2)) for i, a in enumerate(args))
    _sweep_chains(rand, labi, flt, x, nbr, linkf, lpp, par, flags)
    return labi.reshape(batch + labi.shape[1:]), flt.reshape(batch + flt.shape[1:])


def _host_valid(args, flags):
    """:func:`_host` on the first ``n_valid`` rows (the last operand); the padding rows' labels come back
    as they went in."""
    nv = int(np.asarray(args[-1]).reshape(-1)[0])
    rand, labi, flt, x, nbr, linkf, lpp, par = args[:-1]
    n = x.shape[-2]
    rows = (
        rand[..., :nv],
        np.concatenate([labi[..., :nv], labi[..., n:]], axis=-1),
        flt,
        x[..., :nv, :],
        nbr[..., :nv, :],
        linkf[..., :nv, :],
        lpp[..., :nv, :] if flags.has_lp else lpp,
        par,
    )
    lab, flt = _host(list(rows), flags)
    out = np.array(np.broadcast_to(labi, lab.shape[:-1] + labi.shape[-1:]))
    out[..., :nv] = lab[..., :nv]
    out[..., n] = lab[..., nv]
    return out, flt


def _ir_inline(fn):
    """A small per-point kernel shared by the sweep and the PSIS-LOO kernel, inlined into both by numba's IR
    inlining (``inline="always"``): a numba call per point costs more than its body. Only helpers with few
    array arguments: each inlined array argument still costs reference counting per point, and IR inlining
    re-types the body at each call site (first-compile time)."""
    return compile_kernel(fn, inline="always")


# ---------------------------------------------------------------------------------------------------
# numba kernels. Per chain: state arrays (labels, n, s, scale, counts, overflow) are updated in place.
# Full-covariance Cholesky factors are stored column-major (L[j, m] at m * d + j).
# Per slot cache: loc (K, d) predictive location, lw0 (K,) size term + log-normaliser, a1 (K,) quadratic-form
# factor, hexp (K,) exponent, b1 (K, d) reciprocal Cholesky diagonal (full) / per-coordinate factors.
# ---------------------------------------------------------------------------------------------------


@inline_kernel
def _size_term(nk, code, d, nu0, log_alpha, alpha_k, finite):
    """The part of a slot's log-weight that depends on its size only: the CRP / Dirichlet weight
    (log n_k, log alpha for the new cluster, or log(n_k + alpha/K)) plus the predictive's Gamma-function
    normaliser (TVClust eq. 11, Neal 2000 eq. 3.7; :func:`ppclust.families._niw_cpu.predictive_log_norm`)."""
    return _crp_weight(nk, log_alpha, alpha_k, finite) + predictive_log_norm(nk, code, d, nu0)


@_ir_inline
def _crp_weight(nk, log_alpha, alpha_k, finite):
    """A slot's log prior weight from its size (x_i left out): log(n_k + alpha/K) for the finite
    Dirichlet mixture, else the CRP's log n_k for an occupied slot and log alpha for a new cluster
    (TVClust eq. 11, Neal 2000 eq. 3.7)."""
    if finite:
        return math.log(nk + alpha_k)
    if nk > 0.0:
        return math.log(nk)
    return log_alpha


@inline_kernel
def _size_cached(nk, sizes, code, d, nu0):
    """:func:`_size_term` looked up for integer sizes in ``sizes.table`` (:class:`_Sizes`; filled on first
    use; sizes change by one per move)."""
    table = sizes.table
    m = int(nk)
    if m == nk and 0 <= m < table.shape[0]:
        v = table[m]
        if v != v:
            v = _size_term(nk, code, d, nu0, sizes.log_alpha, sizes.alpha_k, sizes.finite)
            table[m] = v
        return v
    return _size_term(nk, code, d, nu0, sizes.log_alpha, sizes.alpha_k, sizes.finite)


@inline_kernel
def _refresh(k, code, n, s, sc, mu0, hyp, cache, sizes):
    """Cache slot k's predictive plus size term in ``cache`` (:class:`SlotCache`): lw0[k] - hexp[k] log(1 +
    a1[k] q(x)), q the Mahalanobis form (:func:`ppclust.families._niw_cpu.predictive_cache_slot`)."""
    size = _size_cached(n[k], sizes, code, mu0.shape[0], hyp[1])
    predictive_cache_slot(k, size, code, n, s, sc, mu0, hyp, cache)


@inline_kernel
def _loo_full(k, xi, n, s, sc, mu0, hyp, cache, w, sizes):
    """Slot k's log-weight for x_i with x_i itself left out, without touching the slot (full covariance,
    :func:`ppclust.families._niw_cpu.log_predictive_loo`); NaN when the caller must downdate explicitly."""
    size = _size_cached(n[k] - 1.0, sizes, np.int64(FULL), xi.shape[0], hyp[1])
    return log_predictive_loo(k, xi, size, n, s, sc, mu0, hyp, cache, w)


@_ir_inline
def _candidates(n, k_old, finite, cand):
    """The slots x_i may move to, in slot order, written to ``cand[:na]``: the occupied ones and the first
    free one (a new cluster), every slot for a finite mixture. Returns ``(na, new, a_old)``: their number,
    the free slot (-1 if none: k_max exhausted) and x_i's own slot's position in ``cand``."""
    na = np.int64(0)
    new = -1
    a_old = -1
    for k in range(n.shape[0]):
        if finite or n[k] > 0.0:
            if k == k_old:
                a_old = na
            cand[na] = k
            na += 1
        elif new < 0:
            new = k
            cand[na] = k
            na += 1
    return na, new, a_old


@inline_kernel
def link_counts(i, labels, nbr, sgn, wgt, f, st):
    """Point i's weighted friends ``f[k]`` and strangers ``st[k]`` per slot, added in place (the caller
    zeroes the touched slots after the move), and its totals: ``(F, S, degree)``. Twin of
    :func:`ppclust.sideinfo.link_counts` for one point, O(degree)."""
    F = 0.0
    S = 0.0
    deg = 0
    for j in range(nbr.shape[1]):
        g = sgn[i, j]
        if g != 0.0:
            lab = labels[nbr[i, j]]
            if g > 0.0:
                f[lab] += wgt[i, j]
                F += wgt[i, j]
            else:
                st[lab] += wgt[i, j]
                S += wgt[i, j]
            deg += 1
    return F, S, deg


@inline_kernel
def link_terms(i, labels, nbr, sgn, f, st, F, S, c, prior, link):
    """Twin of ``gibbs._link_terms``: writes ``link[k]`` at the slots of i's neighbours as the offset
    from the value of a slot holding none of them (a constant over slots, dropped: it cancels in the
    draw) and returns that value. ``c`` = (N11, N01, N10, N00) without i's links, ``prior`` a
    :class:`_LinkPrior`. Collapsed (pq = 1): ln B(a_p + N11 + f_k, b_p + N01 + s_k) +
    ln B(a_q + N00 + S - s_k, b_q + N10 + F - f_k); else f_k xi1 - s_k xi2 (value 0)."""
    c0, c1, c2, c3 = c
    pri, xi1, xi2 = prior.pri, prior.xi1, prior.xi2
    base = 0.0
    if prior.pq == 1:
        a_p, b_p, a_q, b_q = pri[0], pri[1], pri[2], pri[3]
        base = _betaln(a_p + c0, b_p + c1) + _betaln(a_q + c3 + S, b_q + c2 + F)
        for j in range(nbr.shape[1]):
            if sgn[i, j] != 0.0:
                lab = labels[nbr[i, j]]
                link[lab] = (
                    _betaln(a_p + c0 + f[lab], b_p + c1 + st[lab])
                    + _betaln(a_q + c3 + S - st[lab], b_q + c2 + F - f[lab])
                ) - base
    else:
        for j in range(nbr.shape[1]):
            if sgn[i, j] != 0.0:
                lab = labels[nbr[i, j]]
                link[lab] = f[lab] * xi1 - st[lab] * xi2
    return base


@_ir_inline
def clear_link_slots(i, labels, nbr, sgn, f, st, link):
    """Zero the scratch ``f``, ``st``, ``link`` at the slots of i's neighbours (what :func:`link_counts` and
    :func:`link_terms` wrote), so that every slot reads zero for the next point."""
    for j in range(nbr.shape[1]):
        if sgn[i, j] != 0.0:
            lab = labels[nbr[i, j]]
            f[lab] = 0.0
            st[lab] = 0.0
            link[lab] = 0.0


@inline_kernel
def draw_categorical(logw, na, mx, u):
    """Twin of ``gibbs.draw_categorical`` over ``logw[:na]`` (max ``mx``, ``-inf`` allowed): the first
    index whose cumulative weight exceeds ``u`` times the total (``logw`` is overwritten by the cumulative
    weights); a zero weight is never returned."""
    total = 0.0
    for a in range(na):
        if logw[a] > -np.inf:
            total += math.exp(logw[a] - mx)
        logw[a] = total
    thr = u * total
    for a in range(na):
        if logw[a] > thr:
            return a
    return na - 1


@inline_kernel
def _save_slot(k, n, s, sc, cache, keep):
    """Copy slot k's stats and cache into ``keep`` (layout: n, lw0, a1, hexp, s, loc, b1, scale)."""
    loc, lw0, a1, hexp, b1 = cache.loc, cache.lw0, cache.a1, cache.hexp, cache.b1
    d = s.shape[1]
    keep[0] = n[k]
    keep[1] = lw0[k]
    keep[2] = a1[k]
    keep[3] = hexp[k]
    for j in range(d):
        keep[4 + j] = s[k, j]
        keep[4 + d + j] = loc[k, j]
        keep[4 + 2 * d + j] = b1[k, j]
    for j in range(sc.shape[1]):
        keep[4 + 3 * d + j] = sc[k, j]


@inline_kernel
def _restore_slot(k, n, s, sc, cache, keep):
    """Inverse of :func:`_save_slot`: removing x_i and adding it back is the identity, without rounding."""
    loc, lw0, a1, hexp, b1 = cache.loc, cache.lw0, cache.a1, cache.hexp, cache.b1
    d = s.shape[1]
    n[k] = keep[0]
    lw0[k] = keep[1]
    a1[k] = keep[2]
    hexp[k] = keep[3]
    for j in range(d):
        s[k, j] = keep[4 + j]
        loc[k, j] = keep[4 + d + j]
        b1[k, j] = keep[4 + 2 * d + j]
    for j in range(sc.shape[1]):
        sc[k, j] = keep[4 + 3 * d + j]


@inline_kernel
def _betaln(a, b):
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def _compile_sweep(fn):
    """The sweep kernels, recompiled (not read from numba's disk cache) when the family twins change."""
    return compile_kernel(fn, depends=(_niw_cpu.__file__,))


@_compile_sweep
def _sweep_one(order, u, labels, n, s, sc, counts, pqa, data, model):
    """One chain's sweep in place: ``labels``, the slots' ``n``, ``s``, ``sc`` and the pair ``counts``
    (N11, N01, N10, N00) are updated; ``pqa`` = (p, q, alpha); ``data`` a :class:`_Data`, ``model`` a
    :class:`_Model`. Returns whether the free slots ran out (a new cluster was not offered)."""
    x, nbr, sgn, wgt, lpp = data
    mu0, hyp, code, finite, has_lp = model.mu0, model.hyp, model.code, model.finite, model.has_lp
    p, q, alpha = pqa
    npts, d = x.shape
    K = n.shape[0]
    dt = x.dtype
    cache = SlotCache(
        np.empty((K, d), dt),
        np.empty(K, dt),
        np.empty(K, dt),
        np.empty(K, dt),
        np.empty((K, d), dt),
        np.zeros(K, dt),
    )
    w = np.empty(d, dt)
    v = np.empty(d, dt)
    m_sc = sc.shape[1]
    keep = np.empty(4 + 3 * d + m_sc, dt)  # slot k_old before the removal (restored if it is redrawn)
    f = np.zeros(K, dt)
    st = np.zeros(K, dt)
    link = np.zeros(K, dt)
    logw = np.empty(K, dt)
    cand = np.empty(K, np.int64)
    sizes = _Sizes(np.full(npts + 2, np.nan, dt), math.log(alpha), alpha / K, finite)
    for k in range(K):
        _refresh(k, code, n, s, sc, mu0, hyp, cache, sizes)
    prior = _LinkPrior(model.pq, model.pri, math.log(p) - math.log1p(-q), math.log(q) - math.log1p(-p))
    overflow = False
    for t in range(npts):
        i = order[t]
        xi = x[i]
        k_old = np.int64(labels[i])
        # x_i's own slot without x_i: in closed form from the current factor when the slot keeps other
        # points (full covariance); else by an explicit downdate, undone by a copy if x_i is redrawn there
        lw_own = np.nan
        if code == FULL and n[k_old] >= 2.0:
            lw_own = _loo_full(k_old, xi, n, s, sc, mu0, hyp, cache, w, sizes)
        removed = lw_own != lw_own
        if removed:  # (not a shared helper: inlined, its many array arguments cost the diag sweep)
            _save_slot(k_old, n, s, sc, cache, keep)
            rank_one(k_old, xi, -1.0, code, n, s, sc, mu0, hyp, v)
            _refresh(k_old, code, n, s, sc, mu0, hyp, cache, sizes)
        # friends f_k / strangers s_k of i per slot (eqs. 11, 13), O(degree)
        F, S, deg = link_counts(i, labels, nbr, sgn, wgt, f, st)
        c0 = counts[0] - f[k_old]
        c1 = counts[1] - st[k_old]
        c2 = counts[2] - (F - f[k_old])
        c3 = counts[3] - (S - st[k_old])
        # link term of a slot holding none of i's neighbours (every free slot) and offsets from it
        if deg > 0:
            link_terms(i, labels, nbr, sgn, f, st, F, S, (c0, c1, c2, c3), prior, link)
        # candidate slots in slot order: occupied ones and the first free one (new cluster, lw0 has
        # log alpha); every slot for a finite mixture
        na, new, a_old = _candidates(n, k_old, finite, cand)
        if not finite and new < 0:
            overflow = True
        skip = -1 if removed else k_old
        log_predictive_cached(code, xi, cand, na, skip, sc, cache, w, logw)
        if not removed:
            logw[a_old] = lw_own
        # + link offsets from `base` (common to all slots; 0 at the free slot), inverse-CDF draw
        mx = -np.inf
        for a in range(na):
            k = cand[a]
            lw = logw[a] + link[k]
            if has_lp:
                lw += lpp[i, k]
            if lw != lw:
                lw = -np.inf
            logw[a] = lw
            if lw > mx:
                mx = lw
        k_new = cand[draw_categorical(logw, na, mx, u[i])]
        if k_new == k_old:  # the usual case near convergence: nothing to update
            if removed:
                _restore_slot(k_old, n, s, sc, cache, keep)
        else:
            if not removed:
                rank_one(k_old, xi, -1.0, code, n, s, sc, mu0, hyp, v)
                _refresh(k_old, code, n, s, sc, mu0, hyp, cache, sizes)
            rank_one(k_new, xi, 1.0, code, n, s, sc, mu0, hyp, v)
            _refresh(k_new, code, n, s, sc, mu0, hyp, cache, sizes)
        counts[0] = c0 + f[k_new]
        counts[1] = c1 + st[k_new]
        counts[2] = c2 + (F - f[k_new])
        counts[3] = c3 + (S - st[k_new])
        labels[i] = k_new
        if deg > 0:
            clear_link_slots(i, labels, nbr, sgn, f, st, link)
    return overflow


@_compile_sweep
def _sweep_chains(rand, labi, flt, x, nbr, linkf, lpp, par, flags):
    """Unpack each chain's row (layouts of :func:`sweep`, settings :class:`_Flags`) and sweep the chains one
    after the other; an input with batch size 1 serves every chain."""
    K, d, m = flags.K, flags.d, flags.m
    npts = labi.shape[1] - 1
    o = K + K * d
    for c in range(labi.shape[0]):
        row = flt[c]
        r = rand[min(c, rand.shape[0] - 1)]
        lk = linkf[min(c, linkf.shape[0] - 1)]
        pr = par[min(c, par.shape[0] - 1)]
        order = np.arange(npts)
        pu = r[0]
        for t in range(npts - 1, 0, -1):  # gibbs.shuffle_order
            j = min(int(pu[t] * (t + 1)), t)
            tmp = order[t]
            order[t] = order[j]
            order[j] = tmp
        lab = labi[c, :npts]
        data = _Data(
            x[min(c, x.shape[0] - 1)],
            nbr[min(c, nbr.shape[0] - 1)],
            lk[0],
            lk[1],
            lpp[min(c, lpp.shape[0] - 1)],
        )
        model = _Model(
            flags.code, pr[:d], pr[d : d + 4], pr[d + 4 : d + 8], flags.pq, flags.finite, flags.has_lp
        )
        pqa = (row[o + K * m + 4], row[o + K * m + 5], row[o + K * m + 6])
        ovf = _sweep_one(
            order,
            r[1],
            lab,
            row[:K],
            row[K:o].reshape((K, d)),
            row[o : o + K * m].reshape((K, m)),
            row[o + K * m : o + K * m + 4],
            pqa,
            data,
            model,
        )
        if ovf:
            labi[c, npts] = 1


# ---------------------------------------------------------------------------------------------------
# leave-one-out predictive (PSIS-LOO's pointwise log-likelihood), the weights of the sweep without a draw
# ---------------------------------------------------------------------------------------------------


def loo_log_predictive(
    labels,
    x,
    links,
    family,
    prior,
    pair_counts,
    link_alpha,
    *,
    pq="collapse",
    partition="dp",
    point_logprior=None,
    k_max,
):
    r"""The compiled twin of :func:`ppclust.posterior.loo_log_predictive`'s XLA program, for the families of
    :func:`supports`: per draw and point :math:`\log\sum_k w_k p_k - \log\sum_k w_k` with :math:`w_k` the
    sweep's prior weights (CRP or Dirichlet size term times the link term) and :math:`p_k` the predictive,
    the point's own contribution left out (the weights the sweep draws from, :func:`sweep`).

    ``labels`` (S, n) compact slot ids ``< k_max``; ``pair_counts`` (S, 4) ``[N11, N01, N10, N00]`` of each
    draw; ``link_alpha`` the ``(p, q, alpha)`` of each draw, three (S,) arrays or scalars. Statistics
    are rebuilt per draw by rank-one additions (O(S n d^2)), so the
    values agree with the XLA program to rounding (``tests/test_gibbs_cpu.py``). Returns (S, n) float64.

    Parameters
    ----------
    labels : int array (S, n)
        Compact slot ids ``< k_max`` of each draw.
    x : array (n, d)
        The points.
    links : Links
        The link table.
    family : GaussianNIW or SphericalGaussian
        The family (:func:`supports`).
    prior : TVClustPrior
        The link prior.
    pair_counts : array (S, 4)
        ``[N11, N01, N10, N00]`` of each draw.
    link_alpha : tuple of three (S,) arrays or scalars
        ``(p, q, alpha)`` of each draw.
    pq : {"fixed", "sample", "collapse"}, default="collapse"
        How the link rates enter.
    partition : {"dp", "finite"}, default="dp"
        The CRP or a finite Dirichlet mixture.
    point_logprior : array (n, k_max) or None, default=None
        A per-point log prior over the slots.
    k_max : int
        Slots.

    Examples
    --------
    >>> import jax, jax.numpy as jnp, numpy as np
    >>> from ppclust._jax import x64
    >>> from ppclust.families import GaussianNIW
    >>> xs = np.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> from ppclust.models.tvclust import TVClustPrior, make_links
    >>> links = make_links(4, [[0, 1]], [1])
    >>> with x64():
    ...     fam = GaussianNIW.default(jnp.asarray(xs))
    ...     out = loo_log_predictive(np.array([[0, 0, 1, 1]]), xs, links, fam, TVClustPrior(),
    ...                              np.array([[1.0, 0.0, 0.0, 0.0]]), (0.9, 0.9, 1.0), k_max=4)
    >>> out.shape
    (1, 4)
    """
    code = family_code(family)
    if code is None or not available():
        raise ValueError(f"the compiled CPU sweep does not support {type(family).__name__}")
    f64 = np.float64
    xn = np.ascontiguousarray(np.asarray(x, f64))
    mu0, hyp = (np.asarray(v, f64) for v in family_arrays(family, f64))
    sc0 = np.ascontiguousarray(np.asarray(_scale_layout(family.empty(1).scale, code), f64)[0].reshape(-1))
    pri = np.array([prior.a_p, prior.b_p, prior.a_q, prior.b_q], f64)
    pri.flags.writeable = False  # read-only as the sweep's (from its program): link kernels compiled once
    lab = np.ascontiguousarray(np.asarray(labels, np.int32))
    S, n = lab.shape
    pqa = np.ascontiguousarray(np.stack([np.broadcast_to(np.asarray(v, f64), (S,)) for v in link_alpha], 1))
    has_lp = point_logprior is not None
    lpp = np.array(point_logprior, f64) if has_lp else np.zeros((1, 1))  # writable either way: one signature
    out = np.empty((S, n))
    own = lambda a, dt=f64: np.ascontiguousarray(np.asarray(a, dt))  # noqa: E731
    # writable link signs and weights, as the sweep's: the link kernels compiled once for both
    data = _Data(xn, own(links.nbr, np.int32), np.array(links.sgn, f64), np.array(links.wgt, f64), lpp)
    model = _Model(code, mu0, hyp, pri, _PQ[pq], partition == "finite", has_lp)
    _loo_draws(lab, pqa, own(pair_counts), data, model, sc0, int(k_max), out)
    return out


@_compile_sweep
def _loo_draws(labels, pqa, pcounts, data, model, sc0, K, out):
    """Per draw r (labels[r], pqa[r] = (p, q, alpha), pcounts[r]) and point, the leave-one-out predictive
    of :func:`loo_log_predictive` into ``out[r]``; ``data`` a :class:`_Data`, ``model`` a :class:`_Model`,
    ``sc0`` an empty slot's scale."""
    x, nbr, sgn, wgt, lpp = data
    mu0, hyp, code, finite, has_lp = model.mu0, model.hyp, model.code, model.finite, model.has_lp
    S, npts = labels.shape
    d = x.shape[1]
    m_sc = sc0.shape[0]
    n = np.empty(K)
    s = np.empty((K, d))
    sc = np.empty((K, m_sc))
    cache = SlotCache(np.empty((K, d)), np.empty(K), np.empty(K), np.empty(K), np.empty((K, d)), np.zeros(K))
    w = np.empty(d)
    v = np.empty(d)
    keep = np.empty(4 + 3 * d + m_sc)
    table = np.empty(npts + 2)
    f = np.zeros(K)
    st = np.zeros(K)
    link = np.zeros(K)
    logw = np.empty(K)
    base = np.empty(K)
    cand = np.empty(K, np.int64)
    for r in range(S):
        lab = labels[r]
        p, q, alpha = pqa[r, 0], pqa[r, 1], pqa[r, 2]
        counts = pcounts[r]
        for k in range(K):
            n[k] = 0.0
            for j in range(d):
                s[k, j] = 0.0
            for j in range(m_sc):
                sc[k, j] = sc0[j]
        for i in range(npts):
            rank_one(np.int64(lab[i]), x[i], 1.0, code, n, s, sc, mu0, hyp, v)
        table[:] = np.nan
        log_alpha = math.log(alpha)
        alpha_k = alpha / K
        sizes = _Sizes(table, log_alpha, alpha_k, finite)
        for k in range(K):
            _refresh(k, code, n, s, sc, mu0, hyp, cache, sizes)
        prior = _LinkPrior(model.pq, model.pri, math.log(p) - math.log1p(-q), math.log(q) - math.log1p(-p))
        for i in range(npts):
            xi = x[i]
            k_old = np.int64(lab[i])
            lw_own = np.nan
            if code == FULL and n[k_old] >= 2.0:
                lw_own = _loo_full(k_old, xi, n, s, sc, mu0, hyp, cache, w, sizes)
            removed = lw_own != lw_own
            if removed:  # as in the sweep (_sweep_one)
                _save_slot(k_old, n, s, sc, cache, keep)
                rank_one(k_old, xi, -1.0, code, n, s, sc, mu0, hyp, v)
                _refresh(k_old, code, n, s, sc, mu0, hyp, cache, sizes)
            F, Sn, deg = link_counts(i, lab, nbr, sgn, wgt, f, st)
            if deg > 0:
                c = (
                    counts[0] - f[k_old],
                    counts[1] - st[k_old],
                    counts[2] - (F - f[k_old]),
                    counts[3] - (Sn - st[k_old]),
                )
                link_terms(i, lab, nbr, sgn, f, st, F, Sn, c, prior, link)
            na, _, a_old = _candidates(n, k_old, finite, cand)
            log_predictive_cached(code, xi, cand, na, -1 if removed else k_old, sc, cache, w, logw)
            if not removed:
                logw[a_old] = lw_own
            # prior weight of each candidate: size term (x_i left out) + link term; logw adds the predictive
            mx = -np.inf
            mb = -np.inf
            for a in range(na):
                k = cand[a]
                crp = _crp_weight(
                    n[k] - (1.0 if (k == k_old and not removed) else 0.0), log_alpha, alpha_k, finite
                )
                lw = logw[a] + link[k]
                if has_lp:
                    lw += lpp[i, k]
                if lw != lw or lw == -np.inf:
                    logw[a] = -np.inf
                    base[a] = -np.inf
                    continue
                logw[a] = lw
                base[a] = crp + link[k]
                mx = max(mx, lw)
                mb = max(mb, base[a])
            tw = 0.0
            tb = 0.0
            for a in range(na):
                if logw[a] > -np.inf:
                    tw += math.exp(logw[a] - mx)
                    tb += math.exp(base[a] - mb)
            out[r, i] = (mx + math.log(tw)) - (mb + math.log(tb))
            if removed:
                _restore_slot(k_old, n, s, sc, cache, keep)
            if deg > 0:
                clear_link_slots(i, lab, nbr, sgn, f, st, link)
