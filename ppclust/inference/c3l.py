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
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.scipy.special import ndtr, ndtri

from ppclust.families import (
    LOG_2PI,
    ML_SING_TOL,
    GaussianML,
    Stats,
    chol_logdet,
    gaussian_logpdf_chol,
    ml_degenerate,
    ml_entropy,
    ml_logdet,
    normal_logpdf,
)
from ppclust.inference import hartigan

__all__ = ["LOG_2PI", "quantile", "constrained_fit_1d", "constrained_cost_1d", "Hyperplane",
           "make_hyperplane", "transform", "inverse_transform", "hyperplane_from_labels", "C3LStats",
           "C3LCost", "ClusterParams", "cluster_params", "cost_parts", "log_density", "gaussian_leakage",
           "min_kurtosis_direction", "gmm_1d_threshold", "pp_hyperplane", "default_card_min"]

Array = jax.Array
#: A cluster's r-scatter is numerically singular when lambda_min <= SING_TOL * lambda_max.
SING_TOL = ML_SING_TOL


# ---------------------------------------------------------------------------------------------
# Theorem 1: the leakage-constrained 1-D Gaussian
# ---------------------------------------------------------------------------------------------


def quantile(alpha) -> Array:
    r""":math:`p^\alpha=\Phi^{-1}(1-\alpha)`, computed as ``-ndtri(alpha)`` (no cancellation for tiny alpha).

    ``alpha >= 1/2`` gives ``p <= 0``: the constraint is void.
    """
    return -ndtri(jnp.asarray(alpha, dtype=jnp.result_type(float)))


def constrained_fit_1d(mu, s2, p):
    r"""Leakage-constrained ML fit of a 1-D Gaussian (Theorem 1, spec §1.5).

    Minimises the cross-entropy :math:`h(m,\sigma)=\tfrac12\ln(2\pi\sigma^2)+((\mu-m)^2+s^2)/(2\sigma^2)`
    of a sample with mean ``mu`` and MLE variance ``s2`` subject to :math:`|m|\ge p\,\sigma`
    (leakage :math:`\Phi(-|m|/\sigma)\le\alpha`, ``p = quantile(alpha)``). Broadcasts.

    Returns ``(m, sigma, E1, active)``. Inactive (``p <= 0`` or :math:`|\mu|\ge p s`): the MLE,
    :math:`E_1=\tfrac12(1+\ln 2\pi s^2)`. Active: :math:`m=\mathrm{sgn}(\mu)\,2p(s^2+\mu^2)/(p|\mu|
    +\sqrt{(p^2+4)\mu^2+4s^2})` (the quadratic's same-sign root, Vieta form without cancellation),
    :math:`\sigma=|m|/p`, :math:`E_1=\tfrac12(1+p^2-p^2\mu/m+\ln(2\pi m^2/p^2))`; ``sgn(0) = +1``.
    """
    mu, s2, p = jnp.broadcast_arrays(*map(jnp.asarray, (mu, s2, p)))
    s = jnp.sqrt(s2)
    active = (p > 0) & (jnp.abs(mu) < p * s)
    pa = jnp.where(active, p, 1.0)  # safe p inside the active branch
    amu = jnp.abs(mu)
    sgn = jnp.where(mu < 0, -1.0, 1.0)
    disc = (pa * pa + 4.0) * mu * mu + 4.0 * s2
    m_act = sgn * 2.0 * pa * (s2 + mu * mu) / (pa * amu + jnp.sqrt(disc))
    m_safe = jnp.where(active, m_act, 1.0)
    e_act = 0.5 * (1.0 + pa * pa - pa * pa * mu / m_safe + LOG_2PI + 2.0 * jnp.log(jnp.abs(m_safe))
                   - 2.0 * jnp.log(pa))
    e_mle = 0.5 * (1.0 + LOG_2PI + jnp.log(s2))
    m = jnp.where(active, m_act, mu)
    sigma = jnp.where(active, jnp.abs(m_act) / pa, s)
    return m, sigma, jnp.where(active, e_act, e_mle), active


def constrained_cost_1d(mu, s2, p):
    """E1 only (see :func:`constrained_fit_1d`)."""
    return constrained_fit_1d(mu, s2, p)[2]


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


class C3LStats(NamedTuple):
    """Per-slot sufficient statistics. n (K,); t_mean, t_m2 (K, J) mean and centred sum of squares of
    the decision coordinates (Welford); r : :class:`ppclust.families.Stats` of ``GaussianML`` (scale =
    Cholesky of the r-scatter)."""

    n: Array
    t_mean: Array
    t_m2: Array
    r: Stats


@dataclass(frozen=True)
class C3LCost:
    """C3L per-cluster cost :math:`p_k(-\\ln p_k + E(Y_k))` for :mod:`ppclust.inference.hartigan`.

    ``x`` passed to the engine is ``z = transform(X, hp)`` (n, J + d); ``side`` is unused (pass ``None``).
    p : (J,) quantiles ``quantile(alpha_j)``; n_total : n; var_floor : (J,) floor on the 1-D MLE
    variance (spec §7.3); n_dec : J, dim_r : d (static).
    """

    p: Array
    n_total: Array
    var_floor: Array
    n_dec: int
    dim_r: int
    ridge: Array = 0.0

    # -- engine interface --------------------------------------------------------------------
    def stats(self, x, side, labels, K):
        J = self.n_dec
        r1 = jax.nn.one_hot(labels, K, dtype=x.dtype)
        n = r1.sum(0)
        t = x[:, :J]
        t_mean = (r1.T @ t) / jnp.maximum(n, 1.0)[:, None]
        dev = t[:, None, :] - t_mean[None]  # (n, K, J) two-pass
        t_m2 = jnp.einsum("nk,nkj->kj", r1, dev * dev)
        if self.dim_r > 0:
            xr = x[:, J:]

            def regularised(_):  # two-pass scatter + pseudo-scatter ridge * I (hartigan.ridge)
                s = r1.T @ xr
                xc = xr[:, None, :] - (s / jnp.maximum(n, 1.0)[:, None])[None]
                scatter = jnp.einsum("nk,nki,nkj->kij", r1, xc, xc) + self.ridge * jnp.eye(self.dim_r)
                return Stats(n, s, jnp.linalg.cholesky(scatter))

            # only when asked for: unregularised fits keep GaussianML's statistics bit for bit
            rs = jax.lax.cond(self.ridge > 0, regularised, lambda _: GaussianML().stats(xr, labels, K), None)
        else:
            rs = Stats(n, jnp.zeros((K, 0), x.dtype), jnp.zeros((K, 0, 0), x.dtype))
        return C3LStats(n, t_mean, t_m2, rs)

    def count(self, stats):
        return stats.n

    def cost(self, stats):
        return self._cluster_cost(stats.n, stats.t_mean, stats.t_m2, self._logdet(stats.r))

    def degenerate(self, stats):
        if self.dim_r > 0:
            return ml_degenerate(stats.r.scale, stats.n, self.dim_r + 2)
        return stats.n < self.dim_r + 2

    def cost_add(self, stats, x_i, side_i):
        J = self.n_dec
        n = stats.n
        t = x_i[:J]
        delta = t - stats.t_mean
        n1 = n + 1.0
        mean = stats.t_mean + delta / n1[:, None]
        m2 = stats.t_m2 + (n / n1)[:, None] * delta * delta
        if self.dim_r > 0:
            logdet = GaussianML().logdet_after_add(stats.r, x_i[J:])
        else:
            logdet = jnp.zeros_like(n)
        return self._cluster_cost(n1, mean, m2, logdet)

    def cost_slot(self, stats, k):
        logdet = ml_logdet(stats.r.scale[k]) if self.dim_r > 0 else jnp.zeros_like(stats.n[k])
        return self._cluster_cost(stats.n[k], stats.t_mean[k], stats.t_m2[k], logdet)

    def add(self, stats, k, x_i, side_i):
        return self._move(stats, k, x_i, 1.0)

    def remove(self, stats, k, x_i, side_i):
        return self._move(stats, k, x_i, -1.0)

    # -- helpers -----------------------------------------------------------------------------
    def _move(self, stats, k, x_i, sign):
        J = self.n_dec
        n = stats.n[k]
        n1 = n + sign
        t = x_i[:J]
        delta = t - stats.t_mean[k]
        if sign > 0:
            mean = stats.t_mean[k] + delta / n1
            m2 = stats.t_m2[k] + n / n1 * delta * delta
        else:
            mean = jnp.where(n1 > 0, stats.t_mean[k] - delta / jnp.maximum(n1, 1.0), 0.0)
            m2 = jnp.maximum(stats.t_m2[k] - n / jnp.maximum(n1, 1.0) * delta * delta, 0.0)
        if self.dim_r > 0:
            fam = GaussianML()
            r = fam.add(stats.r, k, x_i[J:]) if sign > 0 else fam.remove(stats.r, k, x_i[J:])
        else:
            r = stats.r._replace(n=stats.r.n.at[k].add(sign))
        return C3LStats(stats.n.at[k].add(sign), stats.t_mean.at[k].set(mean), stats.t_m2.at[k].set(m2), r)

    def _logdet(self, r: Stats):
        if self.dim_r == 0:
            return jnp.zeros_like(r.n)
        return ml_logdet(r.scale)

    # -- compiled CPU engine (ppclust.inference._hartigan_cpu) --------------------------------
    def to_cpu(self, stats):
        K = stats.n.shape[0]
        zero = jnp.zeros(K, stats.t_mean.dtype)
        return hartigan.CPUStats(stats.n, stats.r.s, stats.r.scale, stats.t_mean, stats.t_m2,
                        jnp.zeros((K, 0), stats.t_mean.dtype), zero, zero)

    def from_cpu(self, cs):
        return C3LStats(cs.n, cs.t_mean, cs.t_m2, Stats(cs.n, cs.s, cs.scale))

    def cpu_params(self):
        return {"n_total": self.n_total, "p": self.p, "floor": self.var_floor, "min_count": self.dim_r + 2.0,
                "sing_tol": SING_TOL, "ridge": self.ridge}

    def _cluster_cost(self, nk, t_mean, t_m2, logdet_scatter):
        return _cluster_cost(self.p, self.n_total, self.var_floor, self.dim_r, nk, t_mean, t_m2,
                             logdet_scatter)


jax.tree_util.register_dataclass(C3LCost, data_fields=["p", "n_total", "var_floor", "ridge"],
                                 meta_fields=["n_dec", "dim_r"])


def _cluster_cost(p, n_total, var_floor, d, nk, t_mean, t_m2, logdet_scatter):
    r"""Per-cluster cost (8): :func:`ppclust.inference.hartigan.cluster_cost` with the constrained 1-D
    terms :math:`\sum_j E_1` (Theorem 1) as the method's own term; 0 empty, +inf singular."""
    safe = jnp.maximum(nk, 1.0)
    s2 = jnp.maximum(t_m2 / safe[..., None], var_floor)
    e1 = constrained_cost_1d(t_mean, s2, p).sum(-1)
    return hartigan.cluster_cost(n_total, d, nk, logdet_scatter, e1)


def make_cost(z, n_dec: int, alpha, var_floor_rel: float = 1e-10, reg: float = 0.0) -> C3LCost:
    """Cost object for transformed data ``z`` (n, J + d); ``alpha`` scalar or (J,). ``reg`` > 0 adds the
    ridge :func:`ppclust.inference.hartigan.ridge` of the r-part to every cluster's r-scatter."""
    z = jnp.asarray(z)
    alpha = jnp.broadcast_to(jnp.asarray(alpha, z.dtype), (n_dec,))
    tvar = np.var(np.asarray(z)[:, :n_dec], axis=0)  # on the host: no program compiled per n (issue 18)
    floor = jax.device_put(var_floor_rel * np.where(tvar > 0, tvar, 1.0))
    rho = hartigan.ridge(np.asarray(z)[:, n_dec:], reg) if z.shape[1] > n_dec else 0.0
    return C3LCost(quantile(alpha), jnp.asarray(z.shape[0], z.dtype), floor, n_dec, z.shape[1] - n_dec,
                   jnp.asarray(rho, z.dtype))


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


def cluster_params(cost: C3LCost, stats: C3LStats) -> ClusterParams:
    safe = jnp.maximum(stats.n, 1.0)
    s2 = jnp.maximum(stats.t_m2 / safe[:, None], cost.var_floor)
    m, sig, e1, act = constrained_fit_1d(stats.t_mean, s2, cost.p)
    s = jnp.sqrt(s2)
    nat = ndtr(-jnp.abs(stats.t_mean) / s)
    leak = ndtr(-jnp.abs(m) / sig)
    d = cost.dim_r
    if d > 0:
        r_mean = stats.r.s / safe[:, None]
        L = stats.r.scale
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


def fit(key, z, cost: C3LCost, *, K: int, min_size, n_init: int = 10, init: str = "random",
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


def fit_batch(key, z, cost: C3LCost, *, K: int, min_size, n_init: int = 10, init: str = "random",
              max_iter: int = 100, polish: bool = True, max_passes: int = 100, reassign: str = "immediate",
              backend: str = "auto", mesh=None, centres=None):
    """C3L by batch (Lloyd-type) steps with the leakage-constrained models, then Hartigan passes
    (:func:`ppclust.inference.hartigan.fit_batch`; ``mesh``: points split over a 1-D data mesh). Returns a
    :class:`~ppclust.inference.hartigan.HartiganFit`."""
    fitted, _ = hartigan.fit_batch(key, cost, z, None, K=K, min_size=min_size, n_init=n_init, init=init,
                                   max_iter=max_iter, polish=polish, polish_passes=max_passes,
                                   reassign=reassign, backend=backend, mesh=mesh, centres=centres)
    return fitted
