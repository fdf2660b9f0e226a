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
optimised by the online Hartigan engine :mod:`ppclust.inference.hartigan`; :func:`make_cost`
configures the shared CEC cost :class:`ppclust.inference.cec.CECCost` with its leakage term. For
``alpha >= 1/2`` the constraint is void and C3L is plain CEC with the product family (spec §3.3).

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

__all__ = [
    "LOG_2PI",
    "quantile",
    "constrained_fit_1d",
    "constrained_cost_1d",
    "Hyperplane",
    "make_hyperplane",
    "transform",
    "inverse_transform",
    "hyperplane_from_labels",
    "make_cost",
    "ClusterParams",
    "cluster_params",
    "cost_parts",
    "log_density",
    "gaussian_leakage",
    "min_kurtosis_direction",
    "gmm_1d_threshold",
    "pp_hyperplane",
    "min_size",
    "standardization",
    "standardized_hyperplane",
    "x_space_gaussians",
    "log_jacobian",
    "fit",
    "fit_batch",
]

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

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference import c3l
    >>> hp = c3l.make_hyperplane([1.0, 0.0], 1.0)
    >>> hp.normals.shape, hp.basis.shape
    ((1, 2), (2, 1))
    """

    normals: np.ndarray
    offsets: np.ndarray
    basis: np.ndarray


def make_hyperplane(normal, offset) -> Hyperplane:
    """Validate ``(normal, offset)`` (normal (N,) or (J, N); offset scalar or (J,)) and build the basis.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference import c3l
    >>> hp = c3l.make_hyperplane([1.0, 0.0], 1.0)
    >>> hp.offsets.tolist()
    [1.0]
    """
    h = np.atleast_2d(np.asarray(normal, dtype=np.float64))
    a = np.atleast_1d(np.asarray(offset, dtype=np.float64)).reshape(-1)
    if h.ndim != 2 or a.shape[0] != h.shape[0]:
        raise ValueError(
            f"hyperplane: normal must be (N,) or (J, N) and offset scalar or (J,); got shapes "
            f"{np.shape(normal)} and {np.shape(offset)}"
        )
    if not (np.all(np.isfinite(h)) and np.all(np.isfinite(a))):
        raise ValueError("hyperplane: normal and offset must be finite")
    J, N = h.shape
    u, sv, vt = np.linalg.svd(h, full_matrices=True)
    if sv.size < J or sv[-1] <= 1e-10 * max(sv[0], 1e-300):
        raise ValueError("hyperplane: the normal vectors must be non-zero and linearly independent")
    basis = vt[J:].T  # (N, N - J), orthonormal, orthogonal to every normal
    return Hyperplane(h, a, basis)


def transform(X, hp: Hyperplane) -> np.ndarray:
    """``z = (t_1..t_J, r)``: signed distances ``(h_j^T x - a_j)/||h_j||`` then ``r = Q^T x`` (n, N).

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference import c3l
    >>> hp = c3l.make_hyperplane([1.0, 0.0], 1.0)
    >>> c3l.transform(np.array([[3.0, 5.0]]), hp)[:, 0].tolist()  # signed distance 3 - 1
    [2.0]
    """
    X = np.asarray(X, dtype=np.float64)
    norms = np.linalg.norm(hp.normals, axis=1)
    t = (X @ hp.normals.T - hp.offsets) / norms
    return np.concatenate([t, X @ hp.basis], axis=1)


def inverse_transform(hp: Hyperplane):
    """Affine map ``x = A z + b`` inverting :func:`transform`; returns ``(A (N, N), b (N,))``.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference import c3l
    >>> hp = c3l.make_hyperplane([1.0, 0.0], 1.0)
    >>> A, b = c3l.inverse_transform(hp)
    >>> x = np.array([3.0, 5.0])
    >>> bool(np.allclose(A @ c3l.transform(x[None], hp)[0] + b, x))
    True
    """
    norms = np.linalg.norm(hp.normals, axis=1)
    # rows of M z-coordinates: t = (h/||h||) x - a/||h||, r = Q^T x
    M = np.concatenate([hp.normals / norms[:, None], hp.basis.T], axis=0)
    c = np.concatenate([-hp.offsets / norms, np.zeros(hp.basis.shape[1])])
    A = np.linalg.inv(M)
    return A, -A @ c


def standardization(X, standardize: bool):
    """``(center, scale)`` of the optional standardisation ``x = center + scale * xs``.

    The columns' means and standard deviations (1 where a column is constant), or zeros and ones.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference.c3l import standardization
    >>> c, s = standardization(np.array([[0.0, 1.0], [2.0, 1.0]]), True)
    >>> c.tolist(), s.tolist()
    ([1.0, 1.0], [1.0, 1.0])
    """
    X = np.asarray(X, dtype=np.float64)
    N = X.shape[1]
    center = X.mean(0) if standardize else np.zeros(N)
    sd = X.std(0) if standardize else np.ones(N)
    return center, np.where(sd > 0, sd, 1.0)


def standardized_hyperplane(hp: Hyperplane, center, scale) -> Hyperplane:
    """The hyperplane ``h^T x = a`` in standardised coordinates ``xs = (x - center) / scale``.

    ``h^T x = a`` <=> ``(h scale)^T xs = a - h^T center``.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference.c3l import make_hyperplane, standardized_hyperplane
    >>> hp0 = make_hyperplane([1.0, 0.0], 3.0)
    >>> hp = standardized_hyperplane(hp0, np.array([1.0, 0.0]), np.array([2.0, 1.0]))
    >>> hp.normals.tolist(), hp.offsets.tolist()
    ([[2.0, 0.0]], [2.0])
    """
    return make_hyperplane(hp.normals * scale, hp.offsets - hp.normals @ center)


def x_space_gaussians(params: ClusterParams, hp: Hyperplane, center, scale):
    """``(means (k, N), covariances (k, N, N))`` of the fitted product Gaussians mapped back to X space.

    ``params`` holds the live clusters (in z space of the standardised hyperplane ``hp``);
    ``x = center + scale * (A z + b)`` with ``(A, b)`` = :func:`inverse_transform`.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference.c3l import ClusterParams, make_hyperplane, x_space_gaussians
    >>> one = np.ones((1, 1))
    >>> params = ClusterParams(np.ones(1), 2 * one, one, one, one, one, one, one, np.zeros((1, 1)),
    ...                        np.ones((1, 1, 1)), np.zeros(1), np.zeros(1))
    >>> means, covs = x_space_gaussians(params, make_hyperplane([1.0, 0.0], 0.0), np.zeros(2), np.ones(2))
    >>> means.tolist(), covs.shape
    ([[2.0, 0.0]], (1, 2, 2))
    """
    A, b = inverse_transform(hp)
    J = hp.normals.shape[0]
    N = A.shape[0]
    k = params.t_loc.shape[0]
    zmean = np.concatenate([params.t_loc, params.r_mean], axis=1)
    zcov = np.zeros((k, N, N))
    zcov[:, np.arange(J), np.arange(J)] = params.t_scale**2
    zcov[:, J:, J:] = params.r_cov
    means = center + scale * (zmean @ A.T + b)
    AS = scale[:, None] * A
    return means, np.einsum("ij,kjl,ml->kim", AS, zcov, AS)


def log_jacobian(hp: Hyperplane, scale) -> float:
    """ln |det| of the Jacobian of ``x -> z`` (standardisation by ``scale``, then :func:`transform`).

    Adds to a log-density in z space to give one in X space.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference.c3l import log_jacobian, make_hyperplane
    >>> abs(log_jacobian(make_hyperplane([1.0, 0.0], 0.0), np.ones(2))) < 1e-12
    True
    """
    A, _ = inverse_transform(hp)
    return float(-np.linalg.slogdet(A)[1] - np.sum(np.log(scale)))


def hyperplane_from_labels(X, y, C: float = 1.0, random_state=0):
    """Linear SVM (``C``, standardised features) on the labelled points -> ``(normal, offset)`` in X space.

    Spec §5.2 resolution [ours]: plain ``LinearSVC(C=1)`` on features standardised with the mean and
    standard deviation of *all* rows of X; the hyperplane is mapped back to the original coordinates.
    ``y`` uses two categories ``{0, 1}`` (``-1`` = unlabelled); the + side is category 1. With ``J > 2``
    categories one-vs-rest hyperplanes are returned ((J, N) normals; the extension in the module
    docstring). Raises ``ValueError`` if fewer than two categories have labelled points.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference import c3l
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [4.0, 0.0], [4.0, 1.0]])
    >>> normal, offset = c3l.hyperplane_from_labels(X, np.array([0, 0, 1, 1]))
    >>> bool(normal[0] > 0 and 0 < offset / normal[0] < 4)
    True
    """
    from sklearn.svm import LinearSVC

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    lab = y >= 0
    cats = np.unique(y[lab])
    if cats.size < 2:
        raise ValueError(
            "hyperplane_from_labels: y needs labelled points of at least two categories "
            f"(found {cats.tolist()}); pass hyperplane=(normal, offset) instead"
        )
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


def make_cost(z, n_dec: int, alpha, var_floor_rel: float = 1e-10, reg_covar: float = 0.0) -> CECCost:
    """The C3L cost: :class:`~ppclust.inference.cec.CECCost` with the leakage term, no label term.

    Parameters
    ----------
    z : array of shape (n, J + d)
        Transformed data (:func:`transform`).
    n_dec : int
        J, decision coordinates.
    alpha : float or array of shape (J,)
        Leakage bounds.
    var_floor_rel : float, default=1e-10
        Floor on the 1-D variances, relative to each decision coordinate's variance (spec §7.3).
    reg_covar : float, default=0.0
        Relative covariance regulariser: the ridge :func:`ppclust.inference.hartigan.ridge` of the r-part
        is added to every cluster's r-scatter.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from ppclust.inference.c3l import make_cost
    >>> cost = make_cost(jnp.ones((10, 3)), 1, 0.05)
    >>> cost.n_dec, cost.dim, cost.n_labels
    (1, 2, 0)
    """
    z = jnp.asarray(z)
    alpha = jnp.broadcast_to(jnp.asarray(alpha, z.dtype), (n_dec,))
    tvar = np.var(np.asarray(z)[:, :n_dec], axis=0)  # on the host: no program compiled per n
    floor = jax.device_put(var_floor_rel * np.where(tvar > 0, tvar, 1.0))
    rho = hartigan.ridge(np.asarray(z)[:, n_dec:], reg_covar) if z.shape[1] > n_dec else 0.0
    d = z.shape[1] - n_dec
    return CECCost(
        jnp.asarray(z.shape[0], z.dtype),
        jnp.asarray(0.0, z.dtype),
        quantile(alpha),
        floor,
        jnp.asarray(rho, z.dtype),
        n_labels=0,
        n_dec=n_dec,
        dim=d,
        min_count=d + 2.0,
    )


def min_size(n: int, d_r: int, min_cluster_fraction: float = 0.05) -> int:
    """Deletion threshold ``max(ceil(min_cluster_fraction * n), d_r + 3)`` (spec §2.5).

    After the R CEC package's ``card.min = "5%"``.

    Examples
    --------
    >>> from ppclust.inference.c3l import min_size
    >>> min_size(150, 19), min_size(1000, 2)
    (22, 50)
    """
    return int(max(math.ceil(min_cluster_fraction * n), d_r + 3))


# ---------------------------------------------------------------------------------------------
# Reading the fitted model
# ---------------------------------------------------------------------------------------------


class ClusterParams(NamedTuple):
    """Fitted product Gaussians in z space (K slots; inactive slots hold garbage).

    weight (K,) p_k; t_loc, t_scale (K, J) the constrained 1-D fits; t_mu, t_s (K, J) the data mean / MLE
    std of t; active_constraint (K, J) bool; natural_leakage (K, J) Phi(-|mu|/s); leakage (K, J)
    Phi(-|m|/sigma) (<= alpha); r_mean (K, d); r_cov (K, d, d) MLE covariance; entropy parts (K,) e1, er.

    Examples
    --------
    >>> from ppclust.inference.c3l import ClusterParams
    >>> len(ClusterParams._fields)
    12
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
    return ClusterParams(
        stats.n / cost.n_total, m, sig, stats.t_mean, s, act, nat, leak, r_mean, r_cov, e1.sum(-1), er
    )


class CostParts(NamedTuple):
    """Cost (8) and its parts (spec §2.6): total = complexity + one_d + rest.

    Examples
    --------
    >>> import jax, jax.numpy as jnp, numpy as np
    >>> from ppclust.inference import c3l
    >>> rng = np.random.default_rng(0)
    >>> z = jnp.asarray(np.c_[rng.normal(size=40) + np.repeat([-3.0, 3.0], 20), rng.normal(size=40)])
    >>> cost = c3l.make_cost(z, 1, 0.05)
    >>> stats = cost.stats(z, None, jnp.asarray(np.arange(40) >= 20, jnp.int32), 2)
    >>> params = c3l.cluster_params(cost, stats)
    >>> np.asarray(params.weight).tolist()
    [0.5, 0.5]
    """

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
    """``ln p_k + ln N(t; m_k, sigma_k^2) + ln N(r; rbar_k, S_k)`` for every point and slot -> (n, K).

    Examples
    --------
    >>> import jax, jax.numpy as jnp, numpy as np
    >>> from ppclust.inference import c3l
    >>> rng = np.random.default_rng(0)
    >>> z = jnp.asarray(np.c_[rng.normal(size=40) + np.repeat([-3.0, 3.0], 20), rng.normal(size=40)])
    >>> cost = c3l.make_cost(z, 1, 0.05)
    >>> stats = cost.stats(z, None, jnp.asarray(np.arange(40) >= 20, jnp.int32), 2)
    >>> params = c3l.cluster_params(cost, stats)
    >>> c3l.log_density(z, params, 1).shape
    (40, 2)
    """
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

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference.c3l import gaussian_leakage
    >>> float(gaussian_leakage(np.zeros(2), np.eye(2), np.array([1.0, 0.0]), 0.0))  # centred on the plane
    0.5
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

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference.c3l import min_kurtosis_direction
    >>> X = np.random.default_rng(0).normal(size=(100, 2)) + np.repeat([[-4.0, 0.0], [4.0, 0.0]], 50, 0)
    >>> h, k, W, mean = min_kurtosis_direction(X, n_starts=4, n_steps=50)
    >>> h.shape, W.shape, bool(k < 3.0)  # a bimodal projection has kurtosis below the normal's 3
    ((2,), (2, 2), True)
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
        w, k = _min_kurtosis_sphered(
            as_key(random_state), jnp.asarray(xs), n_starts=n_starts, n_steps=n_steps
        )
        w = np.asarray(w)
        k = float(k)
    return W @ w, k, W, mean


def gmm_1d_threshold(y, n_iter: int = 500, tol: float = 1e-10):
    """Two-component 1-D Gaussian mixture by EM (init: the two halves split at the median) and the crossing
    point of the weighted densities between the two means (spec §7.2). Returns ``(tau, params, labels)``
    with params = (weights, means, variances) and labels the MAP component (0 = lower mean).

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference.c3l import gmm_1d_threshold
    >>> rng = np.random.default_rng(0)
    >>> y = np.r_[rng.normal(size=50) - 4.0, rng.normal(size=50) + 4.0]
    >>> tau, _, labels = gmm_1d_threshold(y)
    >>> bool(-2.0 < tau < 2.0), int(labels.sum())
    (True, 50)
    """
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
    c = (
        0.5 * mu[1] ** 2 / var[1]
        - 0.5 * mu[0] ** 2 / var[0]
        + np.log(w[0] / w[1])
        + 0.5 * np.log(var[1] / var[0])
    )
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
    then run C3L with ``hyperplane=(normal, offset)`` to refine (see :class:`ppclust.C3L`).

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference.c3l import pp_hyperplane
    >>> X = np.random.default_rng(0).normal(size=(100, 2)) + np.repeat([[-4.0, 0.0], [4.0, 0.0]], 50, 0)
    >>> normal, offset, labels = pp_hyperplane(X, n_starts=4)
    >>> normal.shape, sorted(np.bincount(labels).tolist())
    ((2,), [50, 50])
    """
    h, _, _, mean = min_kurtosis_direction(X, random_state=random_state, n_starts=n_starts)
    proj = (np.asarray(X, dtype=np.float64) - mean) @ h
    tau, _, labels = gmm_1d_threshold(proj)
    return h, float(h @ mean + tau), labels


# ---------------------------------------------------------------------------------------------
# Driver: restarts of the Hartigan engine
# ---------------------------------------------------------------------------------------------


def fit(
    key,
    z,
    cost: CECCost,
    *,
    K: int,
    min_size,
    n_init: int = 10,
    init: str = "random",
    max_passes: int = 100,
    reassign: str = "immediate",
    devices="auto",
    backend: str = "auto",
    centres=None,
):
    """``n_init`` Hartigan restarts (:func:`ppclust.inference.hartigan.fit`); keeps the first lowest
    cost. Returns a :class:`~ppclust.inference.hartigan.HartiganFit` ``(best, costs, n_passes,
    n_clusters)`` (JAX arrays; a restart that failed has a non-finite cost).

    ``reassign="immediate"`` is the spec's deletion rule (§2.5): a deleted cluster's points are
    reinserted at once. ``devices``, ``backend``, ``centres`` (``init="labels"``): see
    :func:`ppclust.inference.hartigan.fit`.

    Examples
    --------
    >>> import jax, jax.numpy as jnp, numpy as np
    >>> from ppclust.inference import c3l
    >>> rng = np.random.default_rng(0)
    >>> z = jnp.asarray(np.c_[rng.normal(size=40) + np.repeat([-4.0, 4.0], 20), rng.normal(size=40)])
    >>> with jax.enable_x64(True):
    ...     out = c3l.fit(jax.random.key(0), z, c3l.make_cost(z, 1, 0.05), K=2, min_size=5, n_init=2,
    ...                   init="k-means++")
    >>> int(out.best.active.sum())
    2
    """
    return hartigan.fit(
        key,
        cost,
        z,
        None,
        K=K,
        min_size=min_size,
        n_init=n_init,
        init=init,
        max_passes=max_passes,
        reassign=reassign,
        devices=devices,
        backend=backend,
        centres=centres,
    )


def fit_batch(
    key,
    z,
    cost: CECCost,
    *,
    K: int,
    min_size,
    n_init: int = 10,
    init: str = "random",
    max_iter: int = 100,
    polish: bool = True,
    max_passes: int = 100,
    reassign: str = "immediate",
    backend: str = "auto",
    mesh=None,
    centres=None,
):
    """C3L by batch (Lloyd-type) steps with the leakage-constrained models, then Hartigan passes
    (:func:`ppclust.inference.hartigan.fit_batch`; ``mesh``: points split over a 1-D data mesh). Returns a
    :class:`~ppclust.inference.hartigan.HartiganFit`.

    Examples
    --------
    >>> import jax, jax.numpy as jnp, numpy as np
    >>> from ppclust.inference import c3l
    >>> rng = np.random.default_rng(0)
    >>> z = jnp.asarray(np.c_[rng.normal(size=40) + np.repeat([-4.0, 4.0], 20), rng.normal(size=40)])
    >>> with jax.enable_x64(True):
    ...     out = c3l.fit_batch(jax.random.key(0), z, c3l.make_cost(z, 1, 0.05), K=2, min_size=5, n_init=2,
    ...                         init="k-means++")
    >>> int(out.best.active.sum())
    2
    """
    fitted, _ = hartigan.fit_batch(
        key,
        cost,
        z,
        None,
        K=K,
        min_size=min_size,
        n_init=n_init,
        init=init,
        max_iter=max_iter,
        polish=polish,
        polish_passes=max_passes,
        reassign=reassign,
        backend=backend,
        mesh=mesh,
        centres=centres,
    )
    return fitted
