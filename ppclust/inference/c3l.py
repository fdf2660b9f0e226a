r"""C3L: cross-entropy clustering with controlled cluster leakage (Śmieja, Struski & Tabor 2017).

Model (spec ``c3l.md`` §1). Data are mapped by :func:`transform` to ``z = (t, r)``: ``t`` is the signed
distance to the decision hyperplane :math:`H=\{h^\top x=a\}` and ``r`` the coordinates in an orthonormal
basis of :math:`h^\perp`. Every cluster gets a *product* Gaussian
:math:`N(t; m, \sigma^2)\,N(r; \bar m, S)` (the paper's family :math:`\mathcal G_{1,d}`) whose leakage
:math:`\Phi(-|m|/\sigma)` is at most ``alpha``. The cost of a hard partition is CEC's

.. math::  E = \sum_i p_i\,\big(-\ln p_i + E_1(\mu_i, s_i^2;\alpha) + \tfrac d2\ln(2\pi e)
           + \tfrac12\ln\det S_i\big),\qquad p_i = n_i / n,

with :math:`E_1` the closed-form constrained 1-D cross-entropy of Theorem 1
(:func:`constrained_fit_1d`, in the numerically stable Vieta form of spec §1.5). The partition is
optimised by the generic online Hartigan engine :mod:`ppclust.inference.hartigan`; :class:`C3LCost` is
the per-cluster cost object it needs. For ``alpha >= 1/2`` the constraint is void and C3L is plain
CEC with the product family (spec §3.3).

**Extension beyond the paper [ours].** With ``J > 1`` decision hyperplanes (e.g. one-vs-rest
discriminants of ``J`` categories) ``z = (t_1..t_J, r)`` with ``t_j`` the signed distance to ``H_j``
and ``r`` an orthonormal basis of the complement of ``span(h_1..h_J)``; every ``t_j`` gets its own 1-D
Gaussian with its own constraint, each solved by Theorem 1. The map is linear and invertible, so
costs differ from the product-family cross-entropy in ``x`` only by a constant. The mass outside the
target cell is at most :math:`1-(1-\alpha)^J`; a joint "one cell with probability >= 1-alpha"
constraint has no closed form and is *not* what is fitted. The paper treats ``J = 1`` only.

Other pieces: :func:`hyperplane_from_labels` (linear SVM on the labelled points, spec §5.2
resolution), :func:`gaussian_leakage` (leakage of any Gaussian w.r.t. a hyperplane, for baselines),
and the projection-pursuit pipeline of the paper's Sec. 6.3 (:func:`min_kurtosis_direction`,
:func:`gmm_1d_threshold`, :func:`pp_hyperplane`).
"""

from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.scipy.special import ndtr

from ppclust.families import (
    LOG_2PI,
    chol_logdet,
    gaussian_logpdf_chol,
    ml_entropy,
    normal_logpdf,
)
from ppclust.inference import hartigan
from ppclust.inference.cec import CECCost, CECStats, constrained_cost_1d, constrained_fit_1d, quantile

__all__ = ["LOG_2PI", "quantile", "constrained_fit_1d", "constrained_cost_1d", "Hyperplane",
           "make_hyperplane", "transform", "inverse_transform", "hyperplane_from_labels",
           "make_cost", "ClusterParams", "cluster_params", "cost_parts", "log_density", "gaussian_leakage",
           "min_kurtosis_direction", "gmm_1d_threshold", "pp_hyperplane", "default_card_min"]

Array = jax.Array


# ---------------------------------------------------------------------------------------------
# Theorem 1: the leakage-constrained 1-D Gaussian
# ---------------------------------------------------------------------------------------------


def cross_entropy_1d(mu, s2, m, sigma):
    r"""Cross-entropy :math:`h(m,\sigma)` of a sample (mean ``mu``, MLE variance ``s2``) w.r.t. N(m, s^2)."""
    return 0.5 * jnp.log(2.0 * jnp.pi * sigma**2) + ((mu - m) ** 2 + s2) / (2.0 * sigma**2)


# ---------------------------------------------------------------------------------------------
# The preprocessing map T_H (spec §2.1)
# ---------------------------------------------------------------------------------------------


class Hyperplane(NamedTuple):
    """``J`` decision hyperplanes ``h_j^T x = a_j`` in R^N (J = 1 is the paper's case).

    normals : (J, N) as given; offsets : (J,); basis : (N, N - J) orthonormal basis of the
    complement of span(normals) (the ``r`` coordinates).
    """

    normals: np.ndarray
    offsets: np.ndarray
    basis: np.ndarray


def make_hyperplane(normal, offset) -> Hyperplane:
    """Validate ``(normal, offset)`` (normal (N,) or (J, N); offset scalar or (J,)) and build the basis."""
    h = np.atleast_2d(np.asarray(normal, dtype=np.float64))
    a = np.atleast_1d(np.asarray(offset, dtype=np.float64)).reshape(-1)
    if h.ndim != 2 or a.shape[0] != h.shape[0]:
        raise ValueError(f"hyperplane: normal must be (N,) or (J, N) and offset scalar or (J,); got shapes "
                         f"{np.shape(normal)} and {np.shape(offset)}")
    if not (np.all(np.isfinite(h)) and np.all(np.isfinite(a))):
        raise ValueError("hyperplane: normal and offset must be finite")
    J, N = h.shape
    u, sv, vt = np.linalg.svd(h, full_matrices=True)
    if sv.size < J or sv[-1] <= 1e-10 * max(sv[0], 1e-300):
        raise ValueError("hyperplane: the normal vectors must be non-zero and linearly independent")
    basis = vt[J:].T  # (N, N - J), orthonormal, orthogonal to every normal
    return Hyperplane(h, a, basis)


def transform(X, hp: Hyperplane) -> np.ndarray:
    """``z = (t_1..t_J, r)``: signed distances ``(h_j^T x - a_j)/||h_j||`` then ``r = Q^T x`` (n, N)."""
    X = np.asarray(X, dtype=np.float64)
    norms = np.linalg.norm(hp.normals, axis=1)
    t = (X @ hp.normals.T - hp.offsets) / norms
    return np.concatenate([t, X @ hp.basis], axis=1)


def inverse_transform(hp: Hyperplane):
    """Affine map ``x = A z + b`` inverting :func:`transform`; returns ``(A (N, N), b (N,))``."""
    norms = np.linalg.norm(hp.normals, axis=1)
    # rows of M z-coordinates: t = (h/||h||) x - a/||h||, r = Q^T x
    M = np.concatenate([hp.normals / norms[:, None], hp.basis.T], axis=0)
    c = np.concatenate([-hp.offsets / norms, np.zeros(hp.basis.shape[1])])
    A = np.linalg.inv(M)
    return A, -A @ c


def hyperplane_from_labels(X, y, C: float = 1.0, random_state=0):
    """Linear SVM (``C``, standardised features) on the labelled points -> ``(normal, offset)`` in X space.

    Spec §5.2 resolution [ours]: plain ``LinearSVC(C=1)`` on features standardised with the mean and
    standard deviation of *all* rows of X; the hyperplane is mapped back to the original coordinates.
    ``y`` uses two categories ``{0, 1}`` (``-1`` = unlabelled); the + side is category 1. With ``J > 2``
    categories one-vs-rest hyperplanes are returned ((J, N) normals; the extension in the module
    docstring). Raises ``ValueError`` if fewer than two categories have labelled points.
    """
    from sklearn.svm import LinearSVC

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    lab = y >= 0
    cats = np.unique(y[lab])
    if cats.size < 2:
        raise ValueError("hyperplane_from_labels: y needs labelled points of at least two categories "
                         f"(found {cats.tolist()}); pass hyperplane=(normal, offset) instead")
    mean = X.mean(0)
    std = X.std(0)
    std = np.where(std > 0, std, 1.0)
    Xs = (X[lab] - mean) / std
    svm = LinearSVC(C=C, random_state=random_state, dual="auto", max_iter=20000)
    svm.fit(Xs, y[lab])
    w = np.atleast_2d(svm.coef_)  # (1, N) for two classes (+ = the larger label), (J, N) one-vs-rest
    b = np.atleast_1d(svm.intercept_)
    normal = w / std
    offset = -b + (w * mean / std).sum(1)  # w^T (x - mean)/std + b = 0  <=>  normal^T x = offset
    if normal.shape[0] == 1:
        return normal[0], float(offset[0])
    return normal, offset


# ---------------------------------------------------------------------------------------------
# The per-cluster cost object for ppclust.inference.hartigan
# ---------------------------------------------------------------------------------------------


def make_cost(z, n_dec: int, alpha, var_floor_rel: float = 1e-10, reg: float = 0.0) -> CECCost:
    """Cost object for transformed data ``z`` (n, J + d); ``alpha`` scalar or (J,). ``reg`` > 0 adds the
    ridge :func:`ppclust.inference.hartigan.ridge` of the r-part to every cluster's r-scatter."""
    z = jnp.asarray(z)
    alpha = jnp.broadcast_to(jnp.asarray(alpha, z.dtype), (n_dec,))
    tvar = np.var(np.asarray(z)[:, :n_dec], axis=0)  # on the host: no program compiled per n (issue 18)
    floor = jax.device_put(var_floor_rel * np.where(tvar > 0, tvar, 1.0))
    rho = hartigan.ridge(np.asarray(z)[:, n_dec:], reg) if z.shape[1] > n_dec else 0.0
    d = z.shape[1] - n_dec
    return CECCost(jnp.asarray(z.shape[0], z.dtype), jnp.asarray(0.0, z.dtype), quantile(alpha), floor,
                   jnp.asarray(rho, z.dtype), n_labels=0, n_dec=n_dec, dim=d, min_count=d + 2.0)


def default_card_min(n: int, d_r: int, frac: float = 0.05) -> int:
    """``max(ceil(frac * n), d + 3)`` (spec §2.5, after the R CEC package's ``card.min = "5%"``)."""
    return int(max(math.ceil(frac * n), d_r + 3))


# ---------------------------------------------------------------------------------------------
# Reading the fitted model
# ---------------------------------------------------------------------------------------------


class ClusterParams(NamedTuple):
    """Fitted product Gaussians in z space (K slots; inactive slots hold garbage).

    weight (K,) p_k; t_loc, t_scale (K, J) the constrained 1-D fits; t_mu, t_s (K, J) the data mean / MLE
    std of t; active_constraint (K, J) bool; natural_leakage (K, J) Phi(-|mu|/s); leakage (K, J)
    Phi(-|m|/sigma) (<= alpha); r_mean (K, d); r_cov (K, d, d) MLE covariance; entropy parts (K,) e1, er.
    """

    weight: Array
    t_loc: Array
    t_scale: Array
    t_mu: Array
    t_s: Array
    active_constraint: Array
    natural_leakage: Array
    leakage: Array
    r_mean: Array
    r_cov: Array
    e1: Array
    er: Array


def cluster_params(cost: CECCost, stats: CECStats) -> ClusterParams:
    safe = jnp.maximum(stats.n, 1.0)
    s2 = jnp.maximum(stats.t_m2 / safe[:, None], cost.var_floor)
    m, sig, e1, act = constrained_fit_1d(stats.t_mean, s2, cost.p)
    s = jnp.sqrt(s2)
    nat = ndtr(-jnp.abs(stats.t_mean) / s)
    leak = ndtr(-jnp.abs(m) / sig)
    d = cost.dim
    if d > 0:
        r_mean = stats.s / safe[:, None]
        L = stats.scale
        r_cov = (L @ jnp.swapaxes(L, -1, -2)) / safe[:, None, None]
        er = ml_entropy(safe, chol_logdet(L), d)
    else:
        r_mean = jnp.zeros((stats.n.shape[0], 0))
        r_cov = jnp.zeros((stats.n.shape[0], 0, 0))
        er = jnp.zeros_like(safe)
    return ClusterParams(stats.n / cost.n_total, m, sig, stats.t_mean, s, act, nat, leak, r_mean, r_cov,
                         e1.sum(-1), er)


class CostParts(NamedTuple):
    """Cost (8) and its parts (spec §2.6): total = complexity + one_d + rest."""

    total: Array
    complexity: Array  # sum -p ln p
    one_d: Array  # sum p E1
    rest: Array  # sum p (r-part entropy)


def cost_parts(params: ClusterParams, active) -> CostParts:
    w = jnp.where(active, params.weight, 0.0)
    pos = w > 0
    cx = -jnp.sum(jnp.where(pos, w * jnp.log(jnp.where(pos, w, 1.0)), 0.0))
    a = jnp.sum(jnp.where(pos, w * params.e1, 0.0))
    b = jnp.sum(jnp.where(pos, w * params.er, 0.0))
    return CostParts(cx + a + b, cx, a, b)


def log_density(z, params: ClusterParams, n_dec: int) -> Array:
    """``ln p_k + ln N(t; m_k, sigma_k^2) + ln N(r; rbar_k, S_k)`` for every point and slot -> (n, K)."""
    z = jnp.asarray(z)
    t, r = z[:, :n_dec], z[:, n_dec:]
    lt = normal_logpdf(t[:, None, :], params.t_loc[None], params.t_scale[None]).sum(-1)
    if r.shape[1] > 0:
        lr = gaussian_logpdf_chol(r, params.r_mean, jnp.linalg.cholesky(params.r_cov))
    else:
        lr = 0.0
    return jnp.log(params.weight)[None] + lt + lr


def gaussian_leakage(mean, cov, normal, offset):
    r"""Leakage :math:`\Phi(-|h^\top m-a|/\sqrt{h^\top\Sigma h})` of N(mean, cov) w.r.t. ``h^T x = a``.

    Broadcasts over leading axes of ``mean`` (..., N) and ``cov`` (..., N, N) (spec §1.2).
    """
    mean = np.asarray(mean, dtype=np.float64)
    cov = np.asarray(cov, dtype=np.float64)
    h = np.asarray(normal, dtype=np.float64)
    num = np.abs(mean @ h - offset)
    den = np.sqrt(np.einsum("i,...ij,j->...", h, cov, h))
    from scipy.special import ndtr as _ndtr

    return _ndtr(-num / den)


# ---------------------------------------------------------------------------------------------
# Projection pursuit (paper Sec. 6.3, spec §4) [ours: algorithmic details]
# ---------------------------------------------------------------------------------------------


@partial(jax.jit, static_argnames=("n_starts", "n_steps"))
def _min_kurtosis_sphered(key, xs, n_starts: int = 50, n_steps: int = 300, lr: float = 0.1):
    """Minimise the sample kurtosis of ``xs @ w`` over unit ``w`` (xs sphered) by projected gradient."""

    def kurt(w):
        w = w / jnp.linalg.norm(w)
        y = xs @ w
        y = y - y.mean()
        return jnp.mean(y**4) / jnp.mean(y**2) ** 2

    g = jax.grad(kurt)

    def one(w0):
        def body(_, w):
            w = w - lr * g(w)
            return w / jnp.linalg.norm(w)

        w = lax.fori_loop(0, n_steps, body, w0 / jnp.linalg.norm(w0))
        return w, kurt(w)

    w0 = jax.random.normal(key, (n_starts, xs.shape[1]), xs.dtype)
    ws, ks = jax.vmap(one)(w0)
    best = jnp.argmin(ks)
    return ws[best], ks[best]


def min_kurtosis_direction(X, random_state=0, n_starts: int = 50, n_steps: int = 300):
    """Unit direction ``w`` (in sphered coordinates) minimising the kurtosis of the projection [ours].

    The paper used R's REPPlab without stating the algorithm; here the data are sphered
    (``xs = (x - mean) W`` with ``W = Sigma^{-1/2}``) and the kurtosis is minimised over the unit sphere
    by projected gradient from ``n_starts`` random starts. Returns ``(h, kurtosis, W, mean)`` with
    ``h = W w`` the direction in the original space (projection ``h^T (x - mean)``).
    """
    from ppclust._jax import as_key, x64

    X = np.asarray(X, dtype=np.float64)
    mean = X.mean(0)
    cov = np.cov(X, rowvar=False, bias=True)
    ev, V = np.linalg.eigh(cov)
    keep = ev > 1e-10 * ev.max()
    W = V[:, keep] / np.sqrt(ev[keep])  # (N, r) whitening
    xs = (X - mean) @ W
    with x64():
        w, k = _min_kurtosis_sphered(as_key(random_state), jnp.asarray(xs), n_starts=n_starts,
                                     n_steps=n_steps)
        w = np.asarray(w)
        k = float(k)
    return W @ w, k, W, mean


def gmm_1d_threshold(y, n_iter: int = 500, tol: float = 1e-10):
    """Two-component 1-D Gaussian mixture by EM (init: the two halves split at the median) and the crossing
    point of the weighted densities between the two means (spec §7.2). Returns ``(tau, params, labels)``
    with params = (weights, means, variances) and labels the MAP component (0 = lower mean)."""
    y = np.asarray(y, dtype=np.float64)
    med = np.median(y)
    lo, hi = y[y <= med], y[y > med]
    w = np.array([lo.size, hi.size], float) / y.size
    mu = np.array([lo.mean(), hi.mean()])
    var = np.array([lo.var(), hi.var()]) + 1e-12 * y.var()
    ll_old = -np.inf
    for _ in range(n_iter):
        lp = np.log(w) + normal_logpdf(y[:, None], mu, np.sqrt(var), xp=np)
        mx = lp.max(1, keepdims=True)
        ll = float((mx[:, 0] + np.log(np.exp(lp - mx).sum(1))).sum())
        r = np.exp(lp - mx)
        r /= r.sum(1, keepdims=True)
        nk = r.sum(0)
        w = nk / y.size
        mu = (r * y[:, None]).sum(0) / nk
        var = (r * (y[:, None] - mu) ** 2).sum(0) / nk + 1e-12 * y.var()
        if ll - ll_old < tol * abs(ll):
            break
        ll_old = ll
    order = np.argsort(mu)
    w, mu, var = w[order], mu[order], var[order]
    # crossing of w0 N(mu0, v0) and w1 N(mu1, v1): quadratic a y^2 + b y + c = 0
    a = 0.5 / var[1] - 0.5 / var[0]
    b = mu[0] / var[0] - mu[1] / var[1]
    c = (0.5 * mu[1] ** 2 / var[1] - 0.5 * mu[0] ** 2 / var[0] + np.log(w[0] / w[1])
         + 0.5 * np.log(var[1] / var[0]))
    if abs(a) < 1e-14 * (abs(b) + 1e-300):
        roots = np.array([-c / b])
    else:
        roots = np.roots([a, b, c])
        roots = roots[np.isreal(roots)].real
    inside = roots[(roots >= mu[0]) & (roots <= mu[1])]
    tau = float(inside[0]) if inside.size else float(0.5 * (mu[0] + mu[1]))
    lp = np.log(w) + normal_logpdf(y[:, None], mu, np.sqrt(var), xp=np)
    return tau, (w, mu, var), np.argmax(lp, 1).astype(np.int32)


def pp_hyperplane(X, random_state=0, n_starts: int = 50):
    """Projection-pursuit categorisation (paper Sec. 6.3): minimum-kurtosis direction, 2-component 1-D
    GMM, boundary at the density crossing. Returns ``(normal, offset, pp_labels)`` in the original space;
    then run C3L with ``hyperplane=(normal, offset)`` to refine (see :class:`ppclust.C3L`)."""
    h, _, _, mean = min_kurtosis_direction(X, random_state=random_state, n_starts=n_starts)
    proj = (np.asarray(X, dtype=np.float64) - mean) @ h
    tau, _, labels = gmm_1d_threshold(proj)
    return h, float(h @ mean + tau), labels


# ---------------------------------------------------------------------------------------------
# Driver: restarts of the Hartigan engine
# ---------------------------------------------------------------------------------------------


def fit(key, z, cost: CECCost, *, K: int, min_size, n_init: int = 10, init: str = "random",
        max_passes: int = 100, reassign: str = "immediate", devices="auto", backend: str = "auto",
        centres=None):
    """``n_init`` Hartigan restarts (:func:`ppclust.inference.hartigan.fit`); keeps the first lowest
    cost. Returns a :class:`~ppclust.inference.hartigan.HartiganFit` ``(best, costs, n_passes,
    n_clusters)`` (JAX arrays; a restart that failed has a non-finite cost).

    ``reassign="immediate"`` is the spec's deletion rule (§2.5): a deleted cluster's points are
    reinserted at once. ``devices``, ``backend``, ``centres`` (``init="labels"``): see
    :func:`ppclust.inference.hartigan.fit`.
    """
    return hartigan.fit(key, cost, z, None, K=K, min_size=min_size, n_init=n_init, init=init,
                        max_passes=max_passes, reassign=reassign, devices=devices, backend=backend,
                        centres=centres)


def fit_batch(key, z, cost: CECCost, *, K: int, min_size, n_init: int = 10, init: str = "random",
              max_iter: int = 100, polish: bool = True, max_passes: int = 100, reassign: str = "immediate",
              backend: str = "auto", mesh=None, centres=None):
    """C3L by batch (Lloyd-type) steps with the leakage-constrained models, then Hartigan passes
    (:func:`ppclust.inference.hartigan.fit_batch`; ``mesh``: points split over a 1-D data mesh). Returns a
    :class:`~ppclust.inference.hartigan.HartiganFit`."""
    fitted, _ = hartigan.fit_batch(key, cost, z, None, K=K, min_size=min_size, n_init=n_init, init=init,
                                   max_iter=max_iter, polish=polish, polish_passes=max_passes,
                                   reassign=reassign, backend=backend, mesh=mesh, centres=centres)
    return fitted
