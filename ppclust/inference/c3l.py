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

The hyperplanes and the map :func:`transform` are defined in :mod:`ppclust.inference.hyperplane` and
re-exported here. Other pieces: :func:`hyperplane_from_labels` (linear SVM on the labelled points, spec §5.2
resolution), :func:`gaussian_leakage` (leakage of any Gaussian w.r.t. a hyperplane, for baselines),
and the projection-pursuit pipeline of the paper's Sec. 6.3 (:func:`min_kurtosis_direction`,
:func:`gmm_1d_threshold`, :func:`pp_hyperplane`, defined in :mod:`ppclust.inference.projection_pursuit` and
re-exported here).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
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
from ppclust.inference.hyperplane import (
    Hyperplane,
    hyperplane_from_labels,
    inverse_transform,
    log_jacobian,
    make_hyperplane,
    standardization,
    standardized_hyperplane,
    transform,
)
from ppclust.inference.projection_pursuit import gmm_1d_threshold, min_kurtosis_direction, pp_hyperplane

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
    "CONFIG",
    "fit",
    "fit_batch",
    "fit_batch_rows",
]

Array = jax.Array


# ---------------------------------------------------------------------------------------------
# Theorem 1: the leakage-constrained 1-D Gaussian
# ---------------------------------------------------------------------------------------------


def cross_entropy_1d(mu, s2, m, sigma):
    r"""Cross-entropy :math:`h(m,\sigma)` of a sample (mean ``mu``, MLE variance ``s2``) w.r.t. N(m, s^2)."""
    return 0.5 * jnp.log(2.0 * jnp.pi * sigma**2) + ((mu - m) ** 2 + s2) / (2.0 * sigma**2)


# ---------------------------------------------------------------------------------------------
# Fitted Gaussians back in X space
# ---------------------------------------------------------------------------------------------


def x_space_gaussians(params: ClusterParams, hp: Hyperplane, center, scale):
    """``(means (k, N), covariances (k, N, N))`` of the fitted product Gaussians mapped back to X space.

    ``params`` holds the live clusters (in z space of the standardised hyperplane ``hp``);
    ``x = center + scale * (A z + b)`` with ``(A, b)`` = :func:`inverse_transform`.

    Parameters
    ----------
    params : ClusterParams
        The live clusters' fits.
    hp : Hyperplane
        The standardised hyperplane.
    center, scale : arrays (N,)
        Of :func:`standardization`.

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


# ---------------------------------------------------------------------------------------------
# The per-cluster cost object for ppclust.inference.hartigan
# ---------------------------------------------------------------------------------------------


def make_cost(
    z, n_dec: int, alpha, var_floor_rel: float = 1e-10, reg_covar: float = 0.0, *, reduce=None
) -> CECCost:
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
    reduce : callable or None, default=None
        Rows spread over processes: ``z`` is this process's rows and ``reduce(a)`` sums ``a`` over processes
        (:func:`ppclust._devices.process_sum`); the row count and the variances are those of all rows.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from ppclust.inference.c3l import make_cost
    >>> cost = make_cost(jnp.ones((10, 3)), 1, 0.05)
    >>> cost.n_dec, cost.dim, cost.n_labels
    (1, 2, 0)
    """
    z = jnp.asarray(z)
    alpha = np.broadcast_to(np.asarray(alpha, z.dtype), (n_dec,))  # on the host: no program per operation
    d = z.shape[1] - n_dec
    n = z.shape[0]
    if reduce is None:
        tvar = np.var(np.asarray(z)[:, :n_dec], axis=0)  # on the host: no program compiled per n
        rho = hartigan.ridge(np.asarray(z)[:, n_dec:], reg_covar) if d > 0 else 0.0
    else:  # two-pass variances of all rows
        zl = np.asarray(z, np.float64)
        n = int(reduce(np.float64(zl.shape[0])))
        var = reduce(((zl - reduce(zl.sum(0)) / n) ** 2).sum(0)) / n
        tvar = var[:n_dec]
        tr = float(np.sum(var[n_dec:]))
        rho = float(reg_covar) * (tr / d if tr > 0 else 1.0) if d > 0 and reg_covar > 0 else 0.0
    floor = jax.device_put(var_floor_rel * np.where(tvar > 0, tvar, 1.0))
    return CECCost(
        jnp.asarray(n, z.dtype),
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

    Parameters
    ----------
    n : int
        Points.
    d_r : int
        Dimension of the r coordinates.
    min_cluster_fraction : float, default=0.05
        Fraction of n.

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
    r"""Fitted product Gaussians in z space (K slots; inactive slots hold garbage).

    Parameters
    ----------
    weight : array (K,)
        :math:`p_k = n_k / n`.
    t_loc, t_scale : arrays (K, J)
        The constrained 1-D fits (location, scale).
    t_mu, t_s : arrays (K, J)
        The data mean and MLE standard deviation of t.
    active_constraint : bool array (K, J)
        Whether the leakage constraint binds.
    natural_leakage : array (K, J)
        :math:`\Phi(-|\mu|/s)` of the unconstrained fit.
    leakage : array (K, J)
        :math:`\Phi(-|m|/\sigma)` of the fit (<= alpha).
    r_mean : array (K, d)
        Means of the r coordinates.
    r_cov : array (K, d, d)
        Their MLE covariances.
    e1, er : arrays (K,)
        The entropy parts: the 1-D terms (summed over J) and the r part.

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


@jax.jit
def cluster_params(cost: CECCost, stats: CECStats) -> ClusterParams:
    """The fitted product Gaussians of every slot from its statistics (spec §1.5, Theorem 1).

    Parameters
    ----------
    cost : CECCost
        :func:`make_cost`'s (its quantiles, variance floor and weights).
    stats : CECStats
        The slots' statistics (``cost.stats`` or a Hartigan result's ``stats``).

    Returns
    -------
    ClusterParams

    Examples
    --------
    >>> import jax.numpy as jnp, numpy as np
    >>> from ppclust.inference import c3l
    >>> rng = np.random.default_rng(0)
    >>> z = jnp.asarray(np.c_[rng.normal(size=40) + np.repeat([-3.0, 3.0], 20), rng.normal(size=40)])
    >>> cost = c3l.make_cost(z, 1, 0.05)
    >>> stats = cost.stats(z, None, jnp.asarray(np.arange(40) >= 20, jnp.int32), 2)
    >>> np.asarray(c3l.cluster_params(cost, stats).weight).tolist()
    [0.5, 0.5]
    """
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
    r"""Cost (8) and its parts (spec §2.6): total = complexity + one_d + rest.

    Parameters
    ----------
    total : array
        The cost.
    complexity : array
        :math:`-\sum_k p_k \ln p_k`.
    one_d : array
        :math:`\sum_k p_k E_1` (the constrained 1-D terms).
    rest : array
        :math:`\sum_k p_k` times the r part's entropy.

    Examples
    --------
    >>> CostParts._fields
    ('total', 'complexity', 'one_d', 'rest')
    """

    total: Array
    complexity: Array  # sum -p ln p
    one_d: Array  # sum p E1
    rest: Array  # sum p (r-part entropy)


@jax.jit
def cost_parts(params: ClusterParams, active) -> CostParts:
    """The cost of the active slots and its parts (spec §2.6).

    Parameters
    ----------
    params : ClusterParams
        :func:`cluster_params`'s.
    active : bool array (K,)
        The live slots (the others count nowhere).

    Returns
    -------
    CostParts

    Examples
    --------
    >>> import jax.numpy as jnp, numpy as np
    >>> from ppclust.inference import c3l
    >>> rng = np.random.default_rng(0)
    >>> z = jnp.asarray(np.c_[rng.normal(size=40) + np.repeat([-3.0, 3.0], 20), rng.normal(size=40)])
    >>> cost = c3l.make_cost(z, 1, 0.05)
    >>> stats = cost.stats(z, None, jnp.asarray(np.arange(40) >= 20, jnp.int32), 2)
    >>> parts = c3l.cost_parts(c3l.cluster_params(cost, stats), jnp.ones(2, bool))
    >>> round(float(parts.complexity), 4)  # two halves: ln 2
    0.6931
    >>> bool(jnp.isclose(parts.total, parts.complexity + parts.one_d + parts.rest))
    True
    """
    w = jnp.where(active, params.weight, 0.0)
    pos = w > 0
    cx = -jnp.sum(jnp.where(pos, w * jnp.log(jnp.where(pos, w, 1.0)), 0.0))
    a = jnp.sum(jnp.where(pos, w * params.e1, 0.0))
    b = jnp.sum(jnp.where(pos, w * params.er, 0.0))
    return CostParts(cx + a + b, cx, a, b)


def log_density(z, params: ClusterParams, n_dec: int) -> Array:
    """``ln p_k + ln N(t; m_k, sigma_k^2) + ln N(r; rbar_k, S_k)`` for every point and slot -> (n, K).

    Parameters
    ----------
    z : array (n, J + d)
        Points in z coordinates.
    params : ClusterParams
        The fits.
    n_dec : int
        J, decision coordinates.

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

    Parameters
    ----------
    mean : array (..., N)
        Means.
    cov : array (..., N, N)
        Covariances.
    normal : array (N,)
        The hyperplane's normal h.
    offset : float
        Its offset a.

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
# Driver: restarts of the Hartigan engine
# ---------------------------------------------------------------------------------------------


#: C3L's restart options: random initial partitions, and the spec's deletion rule (§2.5: a deleted
#: cluster's points are reinserted at once)
CONFIG = hartigan.HartiganConfig(init="random", reassign="immediate")


def fit(
    key,
    z,
    cost: CECCost,
    config: hartigan.HartiganConfig | None = None,
    *,
    K: int,
    min_size,
    devices="auto",
    centres=None,
    **options,
):
    """``n_init`` Hartigan restarts (:func:`ppclust.inference.hartigan.fit`); keeps the first lowest
    cost.

    Parameters
    ----------
    key : JAX key
        Seeds the restarts' initial partitions.
    z : array (n, d)
        The data in C3L's coordinates.
    cost : CECCost
        :func:`make_cost`'s.
    config : HartiganConfig or None, default=None
        The restarts' options; None: :data:`CONFIG` (``init="random"``, ``reassign="immediate"``).
    K : int
        Slots (initial clusters).
    min_size : float
        A cluster with fewer points is deleted.
    devices, centres
        See :func:`ppclust.inference.hartigan.fit` (``centres`` with ``init="labels"``).
    **options
        Fields of :class:`~ppclust.inference.hartigan.HartiganConfig` replacing those of ``config``.

    Returns
    -------
    HartiganFit
        ``(best, costs, n_passes, n_clusters)`` (JAX arrays; a restart that failed has a non-finite cost).

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
    config = (CONFIG if config is None else config).with_options(**options)
    return hartigan.fit(key, cost, z, None, config, K=K, min_size=min_size, devices=devices, centres=centres)


def fit_batch(
    key,
    z,
    cost: CECCost,
    config: hartigan.HartiganConfig | None = None,
    *,
    K: int,
    min_size,
    mesh=None,
    centres=None,
    **options,
):
    """C3L by batch (Lloyd-type) steps with the leakage-constrained models, then Hartigan passes
    (:func:`ppclust.inference.hartigan.fit_batch`).

    Parameters
    ----------
    key : JAX key
        Seeds the restarts' initial partitions.
    z : array (n, d)
        The data in C3L's coordinates.
    cost : CECCost
        :func:`make_cost`'s.
    config : HartiganConfig or None, default=None
        As :func:`fit` (``max_iter``, ``polish`` read; ``max_passes`` caps the polish).
    K : int
        Slots (initial clusters).
    min_size : float
        A cluster with fewer points is deleted.
    mesh : None or a 1-D data mesh, default=None
        Points split over its devices.
    centres : array (m, d) or None, default=None
        With ``init="labels"``: fixed initial centres.
    **options
        Fields of :class:`~ppclust.inference.hartigan.HartiganConfig` replacing those of ``config``.

    Returns
    -------
    HartiganFit

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
    config = (CONFIG if config is None else config).with_options(**options)
    fitted, _ = hartigan.fit_batch(
        key, cost, z, None, config, K=K, min_size=min_size, mesh=mesh, centres=centres
    )
    return fitted


def fit_batch_rows(
    key, z, cost: CECCost, layout, config: hartigan.HartiganConfig | None = None, *, K, min_size, **options
):
    """:func:`fit_batch` on rows spread over processes (:func:`ppclust.inference.hartigan.fit_batch_rows`);
    call it on every process, inside ``jax.enable_x64(True)``.

    Parameters
    ----------
    key : JAX key
        Seeds the restarts' initial partitions (the same on every process).
    z : jax.Array of shape (P * block, J + d)
        The global rows in C3L's coordinates (:func:`ppclust.distributed.process_rows` of each process's
        :func:`transform`).
    cost : CECCost
        :func:`make_cost` of all rows (``reduce``).
    layout : ppclust._devices.RowLayout
        The rows per process.
    config : HartiganConfig or None, default=None
        As :func:`fit_batch`.
    K : int
        Slots (initial clusters).
    min_size : float
        A cluster with fewer points is deleted.
    **options
        Fields of :class:`~ppclust.inference.hartigan.HartiganConfig` replacing those of ``config``.

    Returns
    -------
    HartiganFit
        ``best.labels``: this process's rows (NumPy).

    Examples
    --------
    >>> import jax, jax.numpy as jnp, numpy as np
    >>> from ppclust import distributed
    >>> from ppclust.inference import c3l
    >>> rng = np.random.default_rng(0)
    >>> z = np.c_[rng.normal(size=40) + np.repeat([-4.0, 4.0], 20), rng.normal(size=40)]
    >>> with jax.enable_x64(True):
    ...     Z = distributed.process_rows(z)
    ...     cost = c3l.make_cost(z, 1, 0.05, reduce=lambda a: a)
    ...     out = c3l.fit_batch_rows(jax.random.key(0), Z, cost, distributed.layout(Z), K=2, min_size=5,
    ...                              n_init=2, init="k-means++")
    >>> int(out.best.active.sum()), out.best.labels.shape
    (2, (40,))
    """
    config = (CONFIG if config is None else config).with_options(**options)
    return hartigan.fit_batch_rows(key, cost, z, None, layout, config, K=K, min_size=min_size)
