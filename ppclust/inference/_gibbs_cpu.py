r"""The collapsed Gibbs sweep of :mod:`ppclust.inference.gibbs` compiled as one CPU loop (numba).

Why a second implementation: a sequential sweep is a scalar loop over points. XLA:CPU runs the loop body
as a chain of ~30-40 small kernels (about 0.1-0.3 us each), which caps the jitted sweep near 1e5
point-updates/s whatever the arithmetic costs. Here the whole sweep is one compiled function: per point
the O(K d^2) predictive and O(degree) link counts (same equations as :func:`gibbs.conditional`), and
per *changed slot* a cached predictive (location, Cholesky, log-normaliser) refreshed after each rank-one
update, so only O(d^2) work and one ``log1p`` remain per occupied slot.

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


def sweep(order, u, state, x, links, family, prior, pq, partition="dp", point_logprior=None):
    """One collapsed sweep (same contract as ``gibbs._sweep``): ``(labels, stats, counts, overflow)``."""
    code = _family_code(family)
    if code is None or numba is None:
        raise ValueError(f"the compiled CPU sweep does not support {type(family).__name__}")
    dtype = x.dtype
    mu0, hyp = _family_arrays(family, dtype)
    pri = jnp.stack([jnp.asarray(v, dtype) for v in (prior.a_p, prior.b_p, prior.a_q, prior.b_q)])
    has_lp = point_logprior is not None
    lpp = point_logprior if has_lp else jnp.zeros((1, 1), dtype)
    st = state.stats
    shapes = (jax.ShapeDtypeStruct(state.labels.shape, state.labels.dtype),
              jax.ShapeDtypeStruct(st.n.shape, st.n.dtype), jax.ShapeDtypeStruct(st.s.shape, st.s.dtype),
              jax.ShapeDtypeStruct(st.scale.shape, st.scale.dtype),
              jax.ShapeDtypeStruct(state.counts.shape, state.counts.dtype),
              jax.ShapeDtypeStruct((), jnp.bool_))

    def host(*args):
        return _host(args, code, _PQ[pq], partition == "finite", has_lp)

    args = (order.astype(jnp.int32), u, state.labels, st.n, st.s, st.scale, state.counts, state.overflow,
            state.p, state.q, state.alpha, x, links.nbr.astype(jnp.int32), links.sgn.astype(dtype),
            links.wgt.astype(dtype), lpp, mu0, hyp, pri)
    labels, n, s, scale, counts, overflow = jax.pure_callback(host, shapes, *args, vmap_method="expand_dims")
    return labels, Stats(n, s, scale), counts, overflow


def _host(args, code, pq, finite, has_lp):
    """Flatten the vmap batch axes (size 1 = shared by all chains), run the chains, restore the axes."""
    args = [np.asarray(a) for a in args]
    nb = args[2].ndim - 1  # batch axes in front of the labels' (n,)
    batch = np.broadcast_shapes(*(a.shape[:nb] for a in args))
    nbatch = int(np.prod(batch))

    def flat(a, own):
        core = a.shape[nb:]
        if own:  # mutated in place: an owned copy (JAX's buffers are not ours to write)
            return np.array(np.broadcast_to(a, batch + core).reshape((nbatch,) + core), copy=True, order="C")
        if int(np.prod(a.shape[:nb])) == 1:
            return np.ascontiguousarray(a.reshape((1,) + core))
        return np.ascontiguousarray(np.broadcast_to(a, batch + core).reshape((nbatch,) + core))

    f = [flat(a, i in (2, 3, 4, 5, 6, 7)) for i, a in enumerate(args)]
    order, u, labels, n, s, scale, counts, overflow, p, q, alpha, x, nbr, sgn, wgt, lpp, mu0, hyp, pri = f
    scale2 = scale.reshape(nbatch, n.shape[1], -1)  # a view: (K, d, d) -> (K, d*d), (K, d), (K,) -> (K, 1)
    _sweep_chains(order, u, labels, n, s, scale2, counts, overflow, p, q, alpha, x, nbr, sgn, wgt, lpp,
                  mu0, hyp, pri, code, pq, finite, has_lp)
    return tuple(o.reshape(batch + o.shape[1:]) for o in (labels, n, s, scale, counts, overflow))


# ---------------------------------------------------------------------------------------------------
# numba kernels. Per chain: state arrays (labels, n, s, scale, counts, overflow) are updated in place.
# Per slot cache: loc (K, d) predictive location, cst (K,) log-normaliser, a1 (K,) quadratic-form
# factor, hexp (K,) exponent, b1 (K, d) reciprocal Cholesky diagonal (full) / per-coordinate factors.
# ---------------------------------------------------------------------------------------------------

_LOG_PI = math.log(math.pi)
_LOG_2PI = math.log(2.0 * math.pi)


def _njit(fn):
    return fn if numba is None else numba.njit(cache=True, nogil=True)(fn)


@_njit
def _refresh(k, code, n, s, sc, mu0, hyp, loc, cst, a1, hexp, b1):
    """Cached predictive of slot k from its stats (the quantities of ``GaussianNIW.log_predictive``)."""
    d = mu0.shape[0]
    nk = n[k]
    if code == _KNOWN_VAR:
        sigma2, tau2 = hyp[2], hyp[3]
        v = 1.0 / (1.0 / tau2 + nk / sigma2)
        for j in range(d):
            loc[k, j] = v * (mu0[j] / tau2 + s[k, j] / sigma2)
        pv = sigma2 + v
        cst[k] = -0.5 * d * math.log(2.0 * math.pi * pv)
        a1[k] = 0.5 / pv
        return
    kappa0, nu0 = hyp[0], hyp[1]
    kn = kappa0 + nk
    nun = nu0 + nk
    for j in range(d):
        loc[k, j] = (kappa0 * mu0[j] + s[k, j]) / kn
    if code == _FULL:
        df = nun - d + 1.0
        fac = (kn + 1.0) / (kn * df)
        prod = 1.0
        for j in range(d):
            ljj = sc[k, j * d + j]
            b1[k, j] = 1.0 / ljj
            prod *= ljj
        if prod > 0.0 and prod < np.inf:
            logdiag = math.log(prod)
        else:  # extreme scales: the d logs
            logdiag = 0.0
            for j in range(d):
                logdiag += math.log(sc[k, j * d + j])
        logdet = 2.0 * logdiag + d * math.log(fac)
        cst[k] = (math.lgamma((df + d) / 2.0) - math.lgamma(df / 2.0) - 0.5 * d * math.log(df * math.pi)
                  - 0.5 * logdet)
        a1[k] = 1.0 / (fac * df)
        hexp[k] = 0.5 * (df + d)
    elif code == _DIAG:
        a = nun / 2.0
        df = 2.0 * a
        logvar = 0.0
        for j in range(d):
            var = (sc[k, j] / 2.0) * (kn + 1.0) / (a * kn)
            b1[k, j] = 1.0 / (var * df)
            logvar += math.log(var)
        cst[k] = d * (math.lgamma((df + 1.0) / 2.0) - math.lgamma(df / 2.0) - 0.5 * math.log(df * math.pi)) \
            - 0.5 * logvar
        hexp[k] = 0.5 * (df + 1.0)
    else:  # spherical NIW
        a = nun * d / 2.0
        df = 2.0 * a
        var = (sc[k, 0] / 2.0) * (kn + 1.0) / (a * kn)
        cst[k] = (math.lgamma((df + d) / 2.0) - math.lgamma(df / 2.0) - 0.5 * d * math.log(df * math.pi)
                  - 0.5 * d * math.log(var))
        a1[k] = 1.0 / (var * df)
        hexp[k] = 0.5 * (df + d)


@_njit
def _log_pred(k, code, xi, sc, loc, cst, a1, hexp, b1, w):
    """log p(x_i | slot k) from the cache (``w`` is scratch of length d)."""
    d = xi.shape[0]
    if code == _FULL:
        q = 0.0
        for j in range(d):  # forward substitution L w = x - loc
            acc = xi[j] - loc[k, j]
            row = j * d
            for m in range(j):
                acc -= sc[k, row + m] * w[m]
            wj = acc * b1[k, j]
            w[j] = wj
            q += wj * wj
        return cst[k] - hexp[k] * math.log1p(a1[k] * q)
    if code == _DIAG:
        prod = 1.0
        for j in range(d):
            t = xi[j] - loc[k, j]
            prod *= 1.0 + t * t * b1[k, j]
        return cst[k] - hexp[k] * math.log(prod)
    q = 0.0
    for j in range(d):
        t = xi[j] - loc[k, j]
        q += t * t
    if code == _SPHERICAL:
        return cst[k] - hexp[k] * math.log1p(a1[k] * q)
    return cst[k] - a1[k] * q


@_njit
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
    for j in range(d):
        v[j] = xi[j] - (kappa0 * mu0[j] + (s[k, j] - rem * xi[j])) / kn
    if code == _FULL:
        root = math.sqrt(c)
        for j in range(d):
            v[j] = root * v[j]
        for m in range(d):  # the column recurrence of families._chol_rank_one
            lmm = sc[k, m * d + m]
            vm = v[m]
            r = math.sqrt(lmm * lmm + sign * vm * vm)
            cc = r / lmm
            sn = vm / lmm
            sc[k, m * d + m] = r
            for j in range(m + 1, d):
                col = (sc[k, j * d + m] + sign * sn * v[j]) / cc
                sc[k, j * d + m] = col
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


@_njit
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
    cst = np.empty(K, dt)
    a1 = np.empty(K, dt)
    hexp = np.empty(K, dt)
    w = np.empty(d, dt)
    v = np.empty(d, dt)
    f = np.zeros(K, dt)
    st = np.zeros(K, dt)
    link = np.zeros(K, dt)
    logw = np.empty(K, dt)
    for k in range(K):
        _refresh(k, code, n, s, sc, mu0, hyp, loc, cst, a1, hexp, b1)
    xi1 = math.log(p) - math.log1p(-q)
    xi2 = math.log(q) - math.log1p(-p)
    a_p, b_p, a_q, b_q = pri[0], pri[1], pri[2], pri[3]
    log_alpha = math.log(alpha)
    overflow = False
    for t in range(npts):
        i = order[t]
        xi = x[i]
        k_old = labels[i]
        _rank_one(k_old, xi, -1.0, code, n, s, sc, mu0, hyp, v)
        _refresh(k_old, code, n, s, sc, mu0, hyp, loc, cst, a1, hexp, b1)
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
        # weights over slots; `link` holds the offset from `base`, which is common to every slot
        mx = -np.inf
        new = -1
        for k in range(K):
            if finite:
                lw = (math.log(n[k] + alpha / K) + _log_pred(k, code, xi, sc, loc, cst, a1, hexp, b1, w)
                      + link[k])
            elif n[k] > 0:
                lw = math.log(n[k]) + _log_pred(k, code, xi, sc, loc, cst, a1, hexp, b1, w) + link[k]
            elif new < 0:
                new = k
                lw = log_alpha + _log_pred(k, code, xi, sc, loc, cst, a1, hexp, b1, w)
            else:
                lw = -np.inf
            if has_lp:
                lw += lpp[i, k]
            if lw != lw:
                lw = -np.inf
            logw[k] = lw
            if lw > mx:
                mx = lw
        if not finite and new < 0:
            overflow = True
        total = 0.0
        for k in range(K):
            if logw[k] > -np.inf:
                total += math.exp(logw[k] - mx)
            logw[k] = total  # now the cumulative weight
        thr = u[i] * total
        k_new = K - 1
        for k in range(K):
            if logw[k] > thr:
                k_new = k
                break
        _rank_one(k_new, xi, 1.0, code, n, s, sc, mu0, hyp, v)
        _refresh(k_new, code, n, s, sc, mu0, hyp, loc, cst, a1, hexp, b1)
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
def _sweep_chains(order, u, labels, n, s, sc, counts, overflow, p, q, alpha, x, nbr, sgn, wgt, lpp, mu0, hyp,
                  pri, code, pq, finite, has_lp):
    """Chains one after the other; a shared (batch size 1) input serves every chain."""
    for c in range(labels.shape[0]):
        ovf = _sweep_one(order[min(c, order.shape[0] - 1)], u[min(c, u.shape[0] - 1)], labels[c], n[c], s[c],
                         sc[c], counts[c], p[min(c, p.shape[0] - 1)], q[min(c, q.shape[0] - 1)],
                         alpha[min(c, alpha.shape[0] - 1)], x[min(c, x.shape[0] - 1)],
                         nbr[min(c, nbr.shape[0] - 1)], sgn[min(c, sgn.shape[0] - 1)],
                         wgt[min(c, wgt.shape[0] - 1)], lpp[min(c, lpp.shape[0] - 1)],
                         mu0[min(c, mu0.shape[0] - 1)], hyp[min(c, hyp.shape[0] - 1)],
                         pri[min(c, pri.shape[0] - 1)], code, pq, finite, has_lp)
        overflow[c] = overflow[c] or ovf
