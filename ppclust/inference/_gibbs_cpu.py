r"""The collapsed Gibbs sweep of :mod:`ppclust.inference.gibbs` compiled as one CPU loop (numba).

Why a second implementation: a sequential sweep is a scalar loop over points. XLA:CPU runs the loop body
as a chain of ~30-40 small kernels (about 0.1-0.3 us each), which caps the jitted sweep near 1e5
point-updates/s whatever the arithmetic costs. Here the whole sweep is one compiled function: per point
the O(K d^2) predictive and O(degree) link counts (same equations as :func:`gibbs.conditional`), and
per *changed slot* a cached predictive (location, Cholesky, log-normaliser) refreshed after each rank-one
update, so only O(d^2) work and one log remain per occupied slot; the point's own slot is evaluated
without removing the point (:func:`_loo_full`).

It consumes the sweep's random inputs drawn by JAX (visiting order and one uniform per point, inverse-CDF
draw as :func:`gibbs.draw_categorical`), so it takes the same decisions as the XLA sweep up to float
rounding; ``tests/test_gibbs_cpu.py`` checks label-for-label agreement and the exact posterior.
It runs inside ``jit``/``vmap``/``scan`` through :func:`jax.pure_callback` (chains batched in one call).

Families: :class:`~ppclust.families.GaussianNIW` (full, diag, spherical) and
:class:`~ppclust.families.SphericalGaussian`; the others use the XLA sweep.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ppclust.families import GaussianNIW, SphericalGaussian, Stats

try:  # numba is a run-time dependency; without it (e.g. a Python it has no wheel for) XLA sweeps run
    import numba
except ImportError:  # pragma: no cover - exercised only where numba is missing
    numba = None

__all__ = ["available", "supports", "sweep"]

_FULL, _DIAG, _SPHERICAL, _KNOWN_VAR = 0, 1, 2, 3
_PQ = {"fixed": 0, "sample": 0, "collapse": 1}


def available() -> bool:
    """True when numba imports (the compiled CPU sweep can run)."""
    return numba is not None


def _family_code(family):
    if isinstance(family, GaussianNIW):
        return {"full": _FULL, "diag": _DIAG, "spherical": _SPHERICAL}[family.covariance]
    if isinstance(family, SphericalGaussian):
        return _KNOWN_VAR
    return None


def supports(family) -> bool:
    """Whether :func:`sweep` implements this family."""
    return available() and _family_code(family) is not None


def _family_arrays(family, dtype):
    if isinstance(family, GaussianNIW):
        hyp = jnp.stack([family.kappa0, family.nu0, 1.0, 1.0])
    else:
        hyp = jnp.stack([jnp.asarray(1.0, dtype), 1.0, family.sigma2, family.tau2])
    return jnp.asarray(family.mu0, dtype), hyp.astype(dtype)


def sweep(order_u, u, state, x, links, family, prior, pq, partition="dp", point_logprior=None):
    """One collapsed sweep (the contract of ``gibbs._sweep`` with the order given by its uniforms, see
    :func:`gibbs.shuffle_order`): returns ``(labels, stats, counts, overflow)``.

    Operands are packed into seven arrays (each operand of a host callback costs ~40 us per call).
    """
    code = _family_code(family)
    if code is None or numba is None:
        raise ValueError(f"the compiled CPU sweep does not support {type(family).__name__}")
    dtype = x.dtype
    st = state.stats
    K, d = st.s.shape
    m = int(np.prod(st.scale.shape[1:], dtype=int))
    mu0, hyp = _family_arrays(family, dtype)
    pri = jnp.stack([jnp.asarray(v, dtype) for v in (prior.a_p, prior.b_p, prior.a_q, prior.b_q)])
    has_lp = point_logprior is not None
    args = (
        jnp.stack([order_u, u]).astype(dtype),
        jnp.concatenate([state.labels.astype(jnp.int32), state.overflow.astype(jnp.int32)[None]]),
        jnp.concatenate([st.n, st.s.ravel(), _scale_layout(st.scale, code).ravel(), state.counts,
                         jnp.stack([state.p, state.q, state.alpha])]).astype(dtype),
        x,
        links.nbr.astype(jnp.int32),
        jnp.stack([links.sgn, links.wgt]).astype(dtype),
        point_logprior.astype(dtype) if has_lp else jnp.zeros((1, 1), dtype),
        jnp.concatenate([mu0, hyp, pri]),
    )
    outs = (args[1], args[2])
    dtypes = [np.dtype(a.dtype) for a in args]
    flags = (code, _PQ[pq], partition == "finite", has_lp, K, d, m)

    def host(*wired):
        res = _host([_unwire(a, t) for a, t in zip(wired, dtypes, strict=True)], flags)
        return tuple(_to_wire(r) for r in res)

    res = jax.pure_callback(host, tuple(_wire_shape(o) for o in outs), *(_wire(a) for a in args),
                            vmap_method="expand_dims")
    labi, flt = (_from_wire(r, o.dtype) for r, o in zip(res, outs, strict=True))
    n_pts = x.shape[0]
    o = K + K * d
    scale = _scale_layout(flt[o:o + K * m].reshape(st.scale.shape), code)
    stats = Stats(flt[:K], flt[K:o].reshape(K, d), scale)
    counts = flt[o + K * m:o + K * m + 4]
    return labi[:n_pts].astype(state.labels.dtype), stats, counts, labi[n_pts] != 0


def _scale_layout(scale, code):
    """Cholesky factors go column-major into the kernel (its inner loops run down a column) and back."""
    return jnp.swapaxes(scale, -1, -2) if code == _FULL else scale


# 64-bit arrays cross the callback as uint32 pairs: JAX canonicalises a callback's inputs and outputs with
# the x64 flag of the thread that runs it, not the caller's `jax.enable_x64` scope (float64 would silently
# arrive as float32).
def _wire(a):
    if np.dtype(a.dtype).itemsize == 8:
        return jax.lax.bitcast_convert_type(a, jnp.uint32)
    return a


def _unwire(a, dtype):
    a = np.asarray(a)
    if dtype.itemsize == 8:
        return np.ascontiguousarray(a).view(dtype)[..., 0]
    return a


def _wire_shape(a):
    if a.dtype.itemsize == 8:
        return jax.ShapeDtypeStruct(a.shape + (2,), jnp.uint32)
    return jax.ShapeDtypeStruct(a.shape, a.dtype)


def _to_wire(a):
    if a.dtype.itemsize == 8:
        return np.ascontiguousarray(a).view(np.uint32).reshape(a.shape + (2,))
    return a


def _from_wire(r, dtype):
    if np.dtype(dtype).itemsize == 8:
        return jax.lax.bitcast_convert_type(r, dtype)
    return r


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
    _sweep_chains(rand, labi, flt, x, nbr, linkf, lpp, par, *flags)
    return labi.reshape(batch + labi.shape[1:]), flt.reshape(batch + flt.shape[1:])


# ---------------------------------------------------------------------------------------------------
# numba kernels. Per chain: state arrays (labels, n, s, scale, counts, overflow) are updated in place.
# Full-covariance Cholesky factors are stored column-major (L[j, m] at m * d + j).
# Per slot cache: loc (K, d) predictive location, lw0 (K,) size term + log-normaliser, a1 (K,) quadratic-form
# factor, hexp (K,) exponent, b1 (K, d) reciprocal Cholesky diagonal (full) / per-coordinate factors.
# ---------------------------------------------------------------------------------------------------

def _compile(fn, **options):
    if numba is None:
        return fn
    try:  # compiled code cached on disk (next to the module, else numba's user cache directory)
        return numba.njit(cache=True, nogil=True, error_model="numpy", **options)(fn)
    except RuntimeError:  # no writable cache location (read-only install and home): compile per process
        return numba.njit(nogil=True, error_model="numpy", **options)(fn)


def _njit(fn):
    return _compile(fn)


def _inline(fn):
    # IR-inlined into the sweep: a real call would pass ~10 array structs and reference-count each
    # (atomic increments) per slot and point, which measured 2x the arithmetic.
    return _compile(fn, inline="always")


@_inline
def _size_term(nk, code, d, nu0, log_alpha, alpha_k, finite):
    """The part of a slot's log-weight that depends on its size only: the CRP / Dirichlet weight
    (log n_k, log alpha for the new cluster, or log(n_k + alpha/K)) plus the predictive's Gamma-function
    normaliser (TVClust eq. 11, Neal 2000 eq. 3.7)."""
    if finite:
        lw = math.log(nk + alpha_k)
    elif nk > 0.0:
        lw = math.log(nk)
    else:
        lw = log_alpha
    if code == _FULL:
        df = nu0 + nk - d + 1.0
        lw += math.lgamma((df + d) / 2.0) - math.lgamma(df / 2.0)
    elif code == _DIAG:
        df = nu0 + nk
        lw += d * (math.lgamma((df + 1.0) / 2.0) - math.lgamma(df / 2.0) - 0.5 * math.log(df * math.pi))
    elif code == _SPHERICAL:
        df = (nu0 + nk) * d
        lw += math.lgamma((df + d) / 2.0) - math.lgamma(df / 2.0) - 0.5 * d * math.log(df * math.pi)
    return lw


@_inline
def _size_cached(nk, table, code, d, nu0, log_alpha, alpha_k, finite):
    """:func:`_size_term` looked up for integer sizes (filled on first use; sizes change by one per move)."""
    m = int(nk)
    if m == nk and 0 <= m < table.shape[0]:
        v = table[m]
        if v != v:
            v = _size_term(nk, code, d, nu0, log_alpha, alpha_k, finite)
            table[m] = v
        return v
    return _size_term(nk, code, d, nu0, log_alpha, alpha_k, finite)


@_inline
def _refresh(k, code, n, s, sc, mu0, hyp, loc, lw0, a1, hexp, b1, hl, table, log_alpha, alpha_k, finite):
    """Cache slot k's predictive (``GaussianNIW.log_predictive`` / ``SphericalGaussian.log_predictive``):
    log p(x | slot k) + size term = lw0[k] - hexp[k] log(1 + a1[k] q(x)), q the Mahalanobis form."""
    d = mu0.shape[0]
    nk = n[k]
    size = _size_cached(nk, table, code, d, hyp[1], log_alpha, alpha_k, finite)
    if code == _KNOWN_VAR:
        sigma2, tau2 = hyp[2], hyp[3]
        v = 1.0 / (1.0 / tau2 + nk / sigma2)
        for j in range(d):
            loc[k, j] = v * (mu0[j] / tau2 + s[k, j] / sigma2)
        pv = sigma2 + v
        lw0[k] = size - 0.5 * d * math.log(2.0 * math.pi * pv)
        a1[k] = 0.5 / pv
        return
    kappa0, nu0 = hyp[0], hyp[1]
    kn = kappa0 + nk
    nun = nu0 + nk
    ikn = 1.0 / kn
    for j in range(d):
        loc[k, j] = (kappa0 * mu0[j] + s[k, j]) * ikn
    if code == _FULL:
        # 0.5 (d log(df pi) + log|Psi_n| + d log fac) = log prod(L_jj) + 0.5 d log(pi (kn+1)/kn)
        df = nun - d + 1.0
        prod = 1.0
        for j in range(d):
            ljj = sc[k, j * d + j]
            b1[k, j] = 1.0 / ljj
            prod *= ljj
        if prod > 0.0 and prod < np.inf:
            hl[k] = math.log(prod)
        else:  # extreme scales: one log per coordinate
            hl[k] = 0.0
            for j in range(d):
                hl[k] += math.log(sc[k, j * d + j])
        lw0[k] = size - hl[k] - 0.5 * d * math.log(math.pi * (kn + 1.0) * ikn)
        a1[k] = kn / (kn + 1.0)  # 1 / (fac df), fac = (kn + 1) / (kn df) the predictive scale factor
        hexp[k] = 0.5 * (df + d)
    elif code == _DIAG:
        a = nun / 2.0
        df = 2.0 * a
        prod = 1.0
        for j in range(d):
            var = (sc[k, j] / 2.0) * (kn + 1.0) / (a * kn)
            b1[k, j] = 1.0 / (var * df)
            prod *= var
        if prod > 0.0 and prod < np.inf:
            logvar = math.log(prod)
        else:
            logvar = 0.0
            for j in range(d):
                logvar += math.log((sc[k, j] / 2.0) * (kn + 1.0) / (a * kn))
        lw0[k] = size - 0.5 * logvar
        hexp[k] = 0.5 * (df + 1.0)
    else:  # spherical NIW
        a = nun * d / 2.0
        df = 2.0 * a
        var = (sc[k, 0] / 2.0) * (kn + 1.0) / (a * kn)
        lw0[k] = size - 0.5 * d * math.log(var)
        a1[k] = 1.0 / (var * df)
        hexp[k] = 0.5 * (df + d)


@_inline
def _solve_sq(k, sc, b1, w):
    """|L_k^{-1} u|^2 by forward substitution in place (``w`` holds u on entry, L_k^{-1} u on exit;
    L column-major: L[j, m] at m d + j, ``b1`` its reciprocal diagonal)."""
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


@_inline
def _log_preds(code, xi, cand, na, skip, sc, loc, lw0, a1, hexp, b1, w, out):
    """out[a] = log-weight without link term of slot cand[a], from the cache (``w``: scratch, length d);
    slot ``skip`` (-1: none) is left to the caller.

    ``log(1 + t)``, not ``log1p``: libm's log1p costs 3x here and the difference (< 1e-16 absolute for
    t < 1e-8) is far below what changes a draw. One loop per family: no family branch in the slot loop."""
    d = xi.shape[0]
    if code == _FULL:
        for a in range(na):
            k = cand[a]
            if k == skip:
                continue
            for j in range(d):
                w[j] = xi[j] - loc[k, j]
            q = _solve_sq(k, sc, b1, w)
            out[a] = lw0[k] - hexp[k] * math.log(1.0 + a1[k] * q)
    elif code == _DIAG:
        for a in range(na):
            k = cand[a]
            prod = 1.0
            for j in range(d):
                t = xi[j] - loc[k, j]
                prod *= 1.0 + t * t * b1[k, j]
            out[a] = lw0[k] - hexp[k] * math.log(prod)
    else:
        for a in range(na):
            k = cand[a]
            q = 0.0
            for j in range(d):
                t = xi[j] - loc[k, j]
                q += t * t
            if code == _SPHERICAL:
                out[a] = lw0[k] - hexp[k] * math.log(1.0 + a1[k] * q)
            else:
                out[a] = lw0[k] - a1[k] * q


@_inline
def _rank_one(k, xi, sign, code, n, s, sc, mu0, hyp, v):
    """Add (sign = 1) or remove (sign = -1) x_i from slot k, as ``GaussianNIW._rank_one``."""
    d = xi.shape[0]
    if code == _KNOWN_VAR:
        ss = 0.0
        for j in range(d):
            ss += xi[j] * xi[j]
            s[k, j] += sign * xi[j]
        n[k] += sign
        sc[k, 0] += sign * ss
        return
    kappa0 = hyp[0]
    rem = 1.0 if sign < 0 else 0.0
    kn = kappa0 + (n[k] - rem)
    c = kn / (kn + 1.0)
    ikn = 1.0 / kn
    for j in range(d):
        v[j] = xi[j] - (kappa0 * mu0[j] + (s[k, j] - rem * xi[j])) * ikn
    if code == _FULL:
        root = math.sqrt(c)
        for j in range(d):
            v[j] = root * v[j]
        for m in range(d):  # the column recurrence of families._chol_rank_one
            lmm = sc[k, m * d + m]
            vm = v[m]
            r = math.sqrt(lmm * lmm + sign * vm * vm)
            inv = 1.0 / lmm
            cc = r * inv
            sn = vm * inv
            icc = lmm / r  # 1 / cc: one division per column instead of one per entry
            sc[k, m * d + m] = r
            for j in range(m + 1, d):  # column m of L is contiguous (column-major)
                col = (sc[k, m * d + j] + sign * sn * v[j]) * icc
                sc[k, m * d + j] = col
                v[j] = cc * v[j] - sn * col
    elif code == _DIAG:
        for j in range(d):
            sc[k, j] += sign * c * v[j] * v[j]
    else:
        dot = 0.0
        for j in range(d):
            dot += v[j] * v[j]
        sc[k, 0] += sign * c * dot
    n[k] += sign
    for j in range(d):
        s[k, j] += sign * xi[j]


@_inline
def _loo_full(k, xi, n, s, sc, mu0, hyp, b1, hl, w, table, log_alpha, alpha_k, finite):
    """Slot k's log-weight for x_i with x_i itself left out, without touching the slot (full covariance).

    With v = x_i - mu_{-i}, c = kn'/(kn'+1) and a = v' Psi_n^-1 v (one solve with the current factor),
    Psi_{-i} = Psi_n - c v v' gives |Psi_{-i}| = |Psi_n| r and v' Psi_{-i}^-1 v = a / r with r = 1 - c a
    (matrix determinant lemma, Sherman-Morrison), and the Student-t log-weight collapses to
    size(n') - log prod(L_jj) - d/2 log(pi (kn'+1)/kn') + ((df' + d - 1) / 2) log r.
    NaN (caller downdates explicitly) when r is too small to trust."""
    d = xi.shape[0]
    kappa0, nu0 = hyp[0], hyp[1]
    n1 = n[k] - 1.0
    kn1 = kappa0 + n1
    ikn = 1.0 / kn1
    c = kn1 / (kn1 + 1.0)
    for j in range(d):
        w[j] = xi[j] - (kappa0 * mu0[j] + (s[k, j] - xi[j])) * ikn
    r = 1.0 - c * _solve_sq(k, sc, b1, w)
    if not r > 1e-8:
        return np.nan
    df1 = nu0 + n1 - d + 1.0
    size = _size_cached(n1, table, _FULL, d, nu0, log_alpha, alpha_k, finite)
    return (size - hl[k] - 0.5 * d * math.log(math.pi * (kn1 + 1.0) * ikn)
            + 0.5 * (df1 + d - 1.0) * math.log(r))


@_inline
def _save_slot(k, n, s, sc, loc, lw0, a1, hexp, b1, keep):
    """Copy slot k's stats and cache into ``keep`` (layout: n, lw0, a1, hexp, s, loc, b1, scale)."""
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


@_inline
def _restore_slot(k, n, s, sc, loc, lw0, a1, hexp, b1, keep):
    """Inverse of :func:`_save_slot`: removing x_i and adding it back is the identity, without rounding."""
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


@_inline
def _betaln(a, b):
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


@_njit
def _sweep_one(order, u, labels, n, s, sc, counts, p, q, alpha, x, nbr, sgn, wgt, lpp, mu0, hyp, pri, code,
               pq, finite, has_lp):
    npts, d = x.shape
    K = n.shape[0]
    dmax = nbr.shape[1]
    dt = x.dtype
    loc = np.empty((K, d), dt)
    b1 = np.empty((K, d), dt)
    lw0 = np.empty(K, dt)
    hl = np.zeros(K, dt)
    table = np.full(npts + 2, np.nan, dt)
    a1 = np.empty(K, dt)
    hexp = np.empty(K, dt)
    w = np.empty(d, dt)
    v = np.empty(d, dt)
    m_sc = sc.shape[1]
    keep = np.empty(4 + 3 * d + m_sc, dt)  # slot k_old before the removal (restored if it is redrawn)
    f = np.zeros(K, dt)
    st = np.zeros(K, dt)
    link = np.zeros(K, dt)
    logw = np.empty(K, dt)
    cand = np.empty(K, np.int64)
    log_alpha = math.log(alpha)
    alpha_k = alpha / K
    for k in range(K):
        _refresh(k, code, n, s, sc, mu0, hyp, loc, lw0, a1, hexp, b1, hl, table, log_alpha, alpha_k, finite)
    xi1 = math.log(p) - math.log1p(-q)
    xi2 = math.log(q) - math.log1p(-p)
    a_p, b_p, a_q, b_q = pri[0], pri[1], pri[2], pri[3]
    overflow = False
    for t in range(npts):
        i = order[t]
        xi = x[i]
        k_old = labels[i]
        # x_i's own slot without x_i: in closed form from the current factor when the slot keeps other
        # points (full covariance); else by an explicit downdate, undone by a copy if x_i is redrawn there
        lw_own = np.nan
        if code == _FULL and n[k_old] >= 2.0:
            lw_own = _loo_full(k_old, xi, n, s, sc, mu0, hyp, b1, hl, w, table, log_alpha, alpha_k, finite)
        removed = lw_own != lw_own
        if removed:
            _save_slot(k_old, n, s, sc, loc, lw0, a1, hexp, b1, keep)
            _rank_one(k_old, xi, -1.0, code, n, s, sc, mu0, hyp, v)
            _refresh(k_old, code, n, s, sc, mu0, hyp, loc, lw0, a1, hexp, b1, hl, table, log_alpha, alpha_k,
                     finite)
        # friends f_k / strangers s_k of i per slot (eqs. 11, 13), O(degree)
        F = 0.0
        S = 0.0
        deg = 0
        for j in range(dmax):
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
        c0 = counts[0] - f[k_old]
        c1 = counts[1] - st[k_old]
        c2 = counts[2] - (F - f[k_old])
        c3 = counts[3] - (S - st[k_old])
        base = 0.0  # link term of a slot holding none of i's neighbours (every free slot)
        if deg > 0:
            if pq == 1:
                base = _betaln(a_p + c0, b_p + c1) + _betaln(a_q + c3 + S, b_q + c2 + F)
                for j in range(dmax):
                    if sgn[i, j] != 0.0:
                        lab = labels[nbr[i, j]]
                        link[lab] = (_betaln(a_p + c0 + f[lab], b_p + c1 + st[lab])
                                     + _betaln(a_q + c3 + S - st[lab], b_q + c2 + F - f[lab])) - base
            else:
                for j in range(dmax):
                    if sgn[i, j] != 0.0:
                        lab = labels[nbr[i, j]]
                        link[lab] = f[lab] * xi1 - st[lab] * xi2
        # candidate slots in slot order: occupied ones and the first free one (new cluster, lw0 has
        # log alpha); every slot for a finite mixture
        na = 0
        new = -1
        a_old = -1
        for k in range(K):
            if finite or n[k] > 0.0:
                if k == k_old:
                    a_old = na
                cand[na] = k
                na += 1
            elif new < 0:
                new = k
                cand[na] = k
                na += 1
        if not finite and new < 0:
            overflow = True
        _log_preds(code, xi, cand, na, -1 if removed else k_old, sc, loc, lw0, a1, hexp, b1, w, logw)
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
        total = 0.0
        for a in range(na):
            if logw[a] > -np.inf:
                total += math.exp(logw[a] - mx)
            logw[a] = total  # now the cumulative weight
        thr = u[i] * total
        k_new = cand[na - 1]
        for a in range(na):
            if logw[a] > thr:
                k_new = cand[a]
                break
        if k_new == k_old:  # the usual case near convergence: nothing to update
            if removed:
                _restore_slot(k_old, n, s, sc, loc, lw0, a1, hexp, b1, keep)
        else:
            if not removed:
                _rank_one(k_old, xi, -1.0, code, n, s, sc, mu0, hyp, v)
                _refresh(k_old, code, n, s, sc, mu0, hyp, loc, lw0, a1, hexp, b1, hl, table, log_alpha,
                         alpha_k, finite)
            _rank_one(k_new, xi, 1.0, code, n, s, sc, mu0, hyp, v)
            _refresh(k_new, code, n, s, sc, mu0, hyp, loc, lw0, a1, hexp, b1, hl, table, log_alpha, alpha_k,
                     finite)
        counts[0] = c0 + f[k_new]
        counts[1] = c1 + st[k_new]
        counts[2] = c2 + (F - f[k_new])
        counts[3] = c3 + (S - st[k_new])
        labels[i] = k_new
        if deg > 0:
            for j in range(dmax):
                if sgn[i, j] != 0.0:
                    lab = labels[nbr[i, j]]
                    f[lab] = 0.0
                    st[lab] = 0.0
                    link[lab] = 0.0
    return overflow


@_njit
def _sweep_chains(rand, labi, flt, x, nbr, linkf, lpp, par, code, pq, finite, has_lp, K, d, m):
    """Unpack each chain's row (layouts of :func:`sweep`) and sweep the chains one after the other; an input
    with batch size 1 serves every chain."""
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
        ovf = _sweep_one(order, r[1], lab, row[:K], row[K:o].reshape((K, d)),
                         row[o:o + K * m].reshape((K, m)), row[o + K * m:o + K * m + 4],
                         row[o + K * m + 4], row[o + K * m + 5], row[o + K * m + 6],
                         x[min(c, x.shape[0] - 1)], nbr[min(c, nbr.shape[0] - 1)], lk[0], lk[1],
                         lpp[min(c, lpp.shape[0] - 1)], pr[:d], pr[d:d + 4], pr[d + 4:d + 8], code, pq,
                         finite, has_lp)
        if ovf:
            labi[c, npts] = 1
