r"""The explicit-parameter Gaussian mixture of EM: precision-Cholesky parameters, M-step, NIW MAP prior.

The semi-supervised GMM's EM fit (:mod:`ppclust.inference.em`) and CEC-IB's Gaussian read-out use these
functions in scikit-learn's parameterisation (``prec_chol``: a Cholesky factor of the precision).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import solve_triangular

from ppclust.families.densities import LOG_2PI
from ppclust.families.niw import DEFAULT_KAPPA0, GaussianNIW

__all__ = [
    "GMMParams",
    "NIWPrior",
    "log_gaussian_prob",
    "mixture_niw_prior",
    "precision_cholesky",
    "covariances",
    "gaussian_moment_stats",
    "gaussian_map_estimate",
    "niw_log_prior",
]


def _log_det_prec_chol(prec_chol, cov_type, d):
    """log det(P) per component (= -1/2 log det Sigma)."""
    if cov_type == "full":
        return jnp.sum(jnp.log(jnp.diagonal(prec_chol, axis1=-2, axis2=-1)), axis=-1)
    if cov_type == "tied":
        return jnp.sum(jnp.log(jnp.diagonal(prec_chol)))
    if cov_type == "diag":
        return jnp.sum(jnp.log(prec_chol), axis=-1)
    return d * jnp.log(prec_chol)


def log_gaussian_prob(x, means, prec_chol, cov_type):
    r"""Gaussian log-densities of all points under all components, in precision-Cholesky form.

    Parameters
    ----------
    x : array (n, d)
        Points.
    means : array (k, d)
        Component means.
    prec_chol : array
        Cholesky factor :math:`P_k` of the precisions (scikit-learn's parameterisation): full (k, d, d)
        upper, tied (d, d), diag (k, d), spherical (k,).
    cov_type : {"full", "tied", "diag", "spherical"}
        Covariance structure.

    Returns
    -------
    array (n, k)
        :math:`\log N(x_i;\mu_k,\Sigma_k) = -\tfrac12(d\ln 2\pi + \|P_k^\top(x_i-\mu_k)\|^2) + \ln|P_k|`.

    Notes
    -----
    Memory O(n (k + d)): matrix products over all components for diag / spherical / tied, one component
    at a time for full (no (n, k, d) array).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> lp = log_gaussian_prob(jnp.zeros((4, 2)), jnp.zeros((3, 2)), jnp.ones(3), "spherical")
    >>> lp.shape, round(float(lp[0, 0]), 6)
    ((4, 3), -1.837877)
    """
    d = x.shape[1]
    log_det = _log_det_prec_chol(prec_chol, cov_type, d)
    if cov_type == "full":
        maha = _maha_full(x, means, prec_chol)
    elif cov_type == "tied":
        y = x @ prec_chol
        mu = means @ prec_chol
        maha = jnp.sum(y * y, 1)[:, None] - 2 * y @ mu.T + jnp.sum(mu * mu, 1)[None]
    elif cov_type == "diag":
        prec = prec_chol**2
        maha = (x * x) @ prec.T - 2 * x @ (means * prec).T + jnp.sum(means**2 * prec, 1)[None]
    else:
        prec = prec_chol**2
        maha = (jnp.sum(x * x, 1)[:, None] - 2 * x @ means.T + jnp.sum(means**2, 1)[None]) * prec[None]
    return -0.5 * (d * LOG_2PI + maha) + log_det


# elements of one block's (components, n, d) temporary in the traced per-component loop (64 MiB in float64)
_BLOCK_ELEMENTS = 1 << 23


def _per_component(fn, parts, x):
    """``fn`` of each component's slices of ``parts`` (arrays with a leading component axis), stacked on
    that axis. A NumPy loop when ``x`` and ``parts`` are NumPy arrays (no program per shape), one (n, d)
    temporary at a time. Else ``lax.map`` (traced, inside the caller's program): on the CPU one component
    at a time (an (n, d) product stays in cache); on an accelerator over blocks of components, each block
    one batched matrix product whose (block, n, d) temporary holds at most ``_BLOCK_ELEMENTS`` elements, so
    that many components on small row chunks make a few large products rather than one small product
    (and one kernel launch) each."""
    if all(isinstance(a, np.ndarray) for a in (x, *parts)):
        return np.stack([fn(p) for p in zip(*parts, strict=True)])
    block = 1
    if jax.default_backend() != "cpu":
        block = min(parts[0].shape[0], max(1, _BLOCK_ELEMENTS // max(1, x.shape[0] * x.shape[1])))
    return jax.lax.map(fn, parts, batch_size=block if block > 1 else None)


def _maha_full(x, means, prec_chol):
    """(n, k) squared norms of ``P_k^T (x_i - mu_k)``, never an (n, k, d) array."""

    def one(mp):
        y = x @ mp[1] - mp[0] @ mp[1]
        return (y * y).sum(axis=-1)

    return _per_component(one, (means, prec_chol), x).T


def _second_moments(x, resp):
    """(k, d, d) sums ``sum_i r_ik x_i x_i^T``, never an (n, k, d) array."""
    return _per_component(lambda r: (x * r[0][:, None]).T @ x, (resp.T,), x)


class GMMParams(NamedTuple):
    """Gaussian mixture parameters in precision-Cholesky form.

    Parameters
    ----------
    weights : array (k,)
        Mixing proportions.
    means : array (k, d)
        Component means.
    prec_chol : array
        Cholesky factor of the precision: full (k, d, d) upper, tied (d, d), diag (k, d), spherical (k,).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> p = GMMParams(jnp.full(2, 0.5), jnp.zeros((2, 3)), jnp.ones(2))
    >>> p.means.shape
    (2, 3)
    """

    weights: jax.Array
    means: jax.Array
    prec_chol: jax.Array


class NIWPrior(NamedTuple):
    r"""Conjugate MAP prior of a Gaussian mixture: Dirichlet weights, Normal-inverse-Wishart (mu, Sigma).

    :math:`\mu_k\mid\Sigma_k \sim N(\mu_0, \Sigma_k/\kappa_0)`, :math:`\Sigma_k \sim IW(\Psi_0, \nu_0)`. For
    ``"diag"`` the prior is the product over dimensions of the 1-D version,
    :math:`\sigma_j^2 \sim IG(\nu_0/2, \Psi_{0,jj}/2)`; ``"spherical"``:
    :math:`\sigma^2 \sim IG(\nu_0 d/2, \mathrm{tr}\Psi_0/2)` with d mean coordinates -- the conventions of
    :class:`~ppclust.families.GaussianNIW`, so that EM's MAP fit and the Gibbs sampler share one prior
    (:func:`mixture_niw_prior`, :meth:`~ppclust.families.GaussianNIW.from_prior`).

    Parameters
    ----------
    alpha : array ()
        Symmetric Dirichlet concentration, >= 1 (1: no weight prior).
    mean0 : array (d,)
        Prior mean :math:`\mu_0`.
    kappa0 : array ()
        Prior strength of the mean.
    nu0 : array ()
        Prior degrees of freedom.
    psi0 : array (d, d)
        Prior scale :math:`\Psi_0`.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> p = NIWPrior(jnp.asarray(1.0), jnp.zeros(2), jnp.asarray(1.0), jnp.asarray(4.0), jnp.eye(2))
    >>> p.psi0.shape
    (2, 2)
    """

    alpha: jax.Array  # ()
    mean0: jax.Array  # (d,)
    kappa0: jax.Array  # ()
    nu0: jax.Array  # ()
    psi0: jax.Array  # (d, d)


def mixture_niw_prior(x, alpha=1.0, *, kappa0=DEFAULT_KAPPA0, weight=None) -> NIWPrior:
    r"""The default conjugate prior of a fixed-K Gaussian mixture.

    Shared by EM's MAP fit (``SemiSupervisedGMM(prior="default")``) and the Gibbs sampler
    (``BayesianSemiSupervisedGMM``): the NIW hyper-parameters of
    :meth:`~ppclust.families.GaussianNIW.default` (the one default NIW prior of ppclust, TVClust's too) and
    weights :math:`\mathrm{Dir}(\alpha)` (EM's MAP). See docs/decisions/ for the evidence behind it.

    Parameters
    ----------
    x : array (n, d)
        The data the prior is scaled to.
    alpha : float, default 1.0
        Symmetric Dirichlet concentration of the weights (1: no weight prior).
    kappa0 : float, default :data:`~ppclust.families.DEFAULT_KAPPA0`
        Prior strength of the means (1: the prior mean counts as one observation).
    weight : array (n,) or None, default None
        0/1 row weights (0 on the padding rows of a bucketed ``x``, :func:`ppclust._buckets.pad_rows`):
        the mean and variance are those of the rows of weight 1, computed by one program per bucket.

    Returns
    -------
    NIWPrior
        :math:`\mu_0 = \bar x`, :math:`\kappa_0`, :math:`\nu_0 = d + 2`,
        :math:`\Psi_0 = \mathrm{diag}(\mathrm{var}(x))`.

    Notes
    -----
    For ``"diag"`` / ``"spherical"`` models the prior uses :math:`\mathrm{diag}(\Psi_0)` /
    :math:`\mathrm{tr}(\Psi_0)` (:class:`NIWPrior`).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> p = mixture_niw_prior(jnp.array([[0.0, 0.0], [2.0, 4.0]]))
    >>> float(p.nu0), p.psi0.tolist()
    (4.0, [[1.0, 0.0], [0.0, 4.0]])
    """
    if weight is not None:
        return _weighted_niw_prior(x, weight, alpha, kappa0)
    fam = GaussianNIW.default(x, "full", kappa0=kappa0)
    return NIWPrior(jnp.asarray(alpha, fam.mu0.dtype), fam.mu0, fam.kappa0, fam.nu0, fam.psi0)


@jax.jit
def _weighted_niw_prior(x, w, alpha, kappa0) -> NIWPrior:
    """:meth:`GaussianNIW.default`'s hyper-parameters (``nu0 = d + 2``, so ``Psi0 = diag(var)``) from the
    rows of weight 1: padding rows add nothing to the mean or the variance."""
    x = jnp.asarray(x)
    w = jnp.asarray(w, x.dtype)
    d = x.shape[1]
    m = jnp.sum(w)
    mean = jnp.sum(w[:, None] * x, 0) / m
    var = jnp.maximum(jnp.sum(w[:, None] * (x - mean) ** 2, 0) / m, 1e-12)
    dt = x.dtype
    return NIWPrior(
        jnp.asarray(alpha, dt), mean, jnp.asarray(kappa0, dt), jnp.asarray(d + 2.0, dt), jnp.diag(var)
    )


def precision_cholesky(cov, cov_type):
    r"""Cholesky factors of the precisions from covariances.

    Parameters
    ----------
    cov : array
        Covariances: full (k, d, d), tied (d, d), diag (k, d), spherical (k,).
    cov_type : {"full", "tied", "diag", "spherical"}
        Covariance structure.

    Returns
    -------
    array
        :math:`P` with :math:`PP^\top = \Sigma^{-1}` (upper, :math:`P = L^{-\top}` for
        :math:`\Sigma = LL^\top`) for full / tied; :math:`1/\sqrt{\sigma^2}` otherwise. NaN when a
        covariance is not positive definite.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> precision_cholesky(jnp.array([4.0, 0.25]), "spherical").tolist()
    [0.5, 2.0]
    """
    if cov_type in ("full", "tied"):
        chol = jnp.linalg.cholesky(cov)
        eye = jnp.broadcast_to(jnp.eye(cov.shape[-1], dtype=cov.dtype), cov.shape)
        return jnp.swapaxes(solve_triangular(chol, eye, lower=True), -1, -2)
    return 1.0 / jnp.sqrt(cov)


@partial(jax.jit, static_argnames=("cov_type",))
def covariances(prec_chol, cov_type):
    r"""Covariances back from the precision Cholesky factors.

    Parameters
    ----------
    prec_chol : array
        As :func:`precision_cholesky` returns.
    cov_type : {"full", "tied", "diag", "spherical"}
        Covariance structure.

    Returns
    -------
    array
        :math:`(PP^\top)^{-1}` (full / tied) or :math:`1/P^2`, in scikit-learn's ``covariances_`` shapes.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> covariances(jnp.array([0.5, 2.0]), "spherical").tolist()
    [4.0, 0.25]
    """
    if cov_type in ("full", "tied"):
        prec = prec_chol @ jnp.swapaxes(prec_chol, -1, -2)
        return jnp.linalg.inv(prec)
    return 1.0 / prec_chol**2


def gaussian_moment_stats(x, resp, cov_type):
    r"""Sufficient statistics of the EM M-step.

    Parameters
    ----------
    x : array (n, d)
        Points.
    resp : array (n, k)
        Responsibilities.
    cov_type : {"full", "tied", "diag", "spherical"}
        Covariance structure.

    Returns
    -------
    nk : array (k,)
        :math:`\sum_i r_{ik}`.
    s : array (k, d)
        :math:`\sum_i r_{ik} x_i`.
    m2 : array
        :math:`\sum_i r_{ik} x_ix_i^\top` (k, d, d) for "full" / "tied", :math:`\sum_i r_{ik} x_i^2`
        (k, d) otherwise.

    Notes
    -----
    All three are sums over points, so a data-parallel run adds the per-device values.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> nk, s, m2 = gaussian_moment_stats(jnp.array([[1.0], [3.0]]), jnp.array([[1.0], [1.0]]), "diag")
    >>> float(nk[0]), float(s[0, 0]), float(m2[0, 0])
    (2.0, 4.0, 10.0)
    """
    nk = resp.sum(0)
    s = resp.T @ x  # (k, d) weighted sums
    if cov_type in ("full", "tied"):
        m2 = _second_moments(x, resp)
    else:
        m2 = resp.T @ (x * x)  # (k, d)
    return nk, s, m2


def gaussian_map_estimate(stats, cov_type, reg_covar, prior=None):
    r"""Mixture parameters maximising the weighted likelihood or the posterior (the M-step of EM).

    Parameters
    ----------
    stats : tuple
        ``(nk, s, m2)`` of :func:`gaussian_moment_stats`.
    cov_type : {"full", "tied", "diag", "spherical"}
        Covariance structure.
    reg_covar : float
        Added to the covariance diagonals after the estimate (as scikit-learn does), >= 0.
    prior : NIWPrior or None, default None
        None: maximum likelihood; else the MAP estimate under the prior.

    Returns
    -------
    GMMParams
        Weights, means and precision Cholesky factors.

    Notes
    -----
    MAP (full): :math:`\pi_k\propto n_k+\alpha-1`, :math:`\mu_k=(\kappa_0\mu_0+s_k)/(\kappa_0+n_k)`,
    :math:`\Sigma_k=(S_k+\kappa_0(\mu_k-\mu_0)(\mu_k-\mu_0)^\top+\Psi_0)/(n_k+\nu_0+d+2)` (Fraley & Raftery
    2007, mclust's MAP); diag / spherical / tied: the 1-D and pooled analogues.

    References
    ----------
    C. Fraley and A. E. Raftery, "Bayesian regularization for normal mixture estimation and model-based
    clustering", Journal of Classification 24, 2007.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> st = gaussian_moment_stats(jnp.array([[1.0], [3.0]]), jnp.array([[1.0], [1.0]]), "diag")
    >>> p = gaussian_map_estimate(st, "diag", 0.0)
    >>> round(float(p.means[0, 0]), 3), round(float(covariances(p.prec_chol, "diag")[0, 0]), 3)
    (2.0, 1.0)
    """
    nk, s, m2 = stats
    k, d = s.shape
    eps = 10 * jnp.finfo(s.dtype).eps  # as scikit-learn: keeps empty components finite
    nk = nk + eps
    if prior is None:
        weights = nk / jnp.sum(nk)
        means = s / nk[:, None]
    else:
        weights = (nk + prior.alpha - 1.0) / (jnp.sum(nk) + k * (prior.alpha - 1.0))
        means = (prior.kappa0 * prior.mean0[None] + s) / (prior.kappa0 + nk)[:, None]
    if cov_type in ("full", "tied"):
        outer_ms = means[:, :, None] * s[:, None, :]
        scatter = (
            m2
            - outer_ms
            - jnp.swapaxes(outer_ms, 1, 2)
            + nk[:, None, None] * (means[:, :, None] * means[:, None, :])
        )
        if prior is not None:
            dm = means - prior.mean0[None]
            scatter = scatter + prior.kappa0 * dm[:, :, None] * dm[:, None, :]
        if cov_type == "full":
            if prior is None:
                cov = scatter / nk[:, None, None]
            else:
                cov = (scatter + prior.psi0[None]) / (nk + prior.nu0 + d + 2.0)[:, None, None]
        else:
            tot = jnp.sum(scatter, 0)
            if prior is None:
                cov = tot / jnp.sum(nk)
            else:
                cov = (tot + prior.psi0) / (jnp.sum(nk) + prior.nu0 + d + 1.0 + k)
        cov = cov + reg_covar * jnp.eye(d, dtype=s.dtype)
        cov = 0.5 * (cov + jnp.swapaxes(cov, -1, -2))
    else:
        scatter = m2 - 2 * means * s + nk[:, None] * means**2
        if prior is not None:
            scatter = scatter + prior.kappa0 * (means - prior.mean0[None]) ** 2
        if cov_type == "diag":
            if prior is None:
                cov = scatter / nk[:, None]
            else:
                cov = (scatter + jnp.diagonal(prior.psi0)[None]) / (nk + prior.nu0 + 3.0)[:, None]
        else:
            if prior is None:
                cov = scatter.sum(1) / (d * nk)
            else:
                cov = (scatter.sum(1) + jnp.trace(prior.psi0)) / (d * nk + d * prior.nu0 + 2.0 + d)
        cov = cov + reg_covar
    return GMMParams(weights, means, precision_cholesky(cov, cov_type))


def niw_log_prior(params, prior, cov_type):
    r"""Log density of the mixture parameters under :class:`NIWPrior`, up to an additive constant.

    Parameters
    ----------
    params : GMMParams
        Mixture parameters.
    prior : NIWPrior or None
        The prior (None: returns 0).
    cov_type : {"full", "tied", "diag", "spherical"}
        Covariance structure.

    Returns
    -------
    array ()
        :math:`\ln p(\pi) + \sum_k \ln p(\mu_k, \Sigma_k)`, exactly the density whose mode
        :func:`gaussian_map_estimate` computes, so EM is monotone in likelihood + this.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> p = GMMParams(jnp.full(2, 0.5), jnp.zeros((2, 2)), jnp.ones(2))
    >>> float(niw_log_prior(p, None, "spherical"))
    0.0
    >>> prior = mixture_niw_prior(jnp.array([[0.0, 0.0], [2.0, 2.0]]))
    >>> bool(jnp.isfinite(niw_log_prior(p, prior, "spherical")))
    True
    """
    if prior is None:
        return jnp.asarray(0.0, params.means.dtype)
    k, d = params.means.shape
    out = (prior.alpha - 1.0) * jnp.sum(jnp.log(params.weights))
    pc = params.prec_chol
    dm = params.means - prior.mean0[None]
    if cov_type in ("full", "tied"):
        y = jnp.einsum("kd,kde->ke", dm, pc) if cov_type == "full" else dm @ pc
        mean_term = -0.5 * prior.kappa0 * jnp.sum(y * y)
        logdet_p = jnp.sum(jnp.log(jnp.diagonal(pc, axis1=-2, axis2=-1)), axis=-1)  # = -1/2 log det Sigma
        prec = pc @ jnp.swapaxes(pc, -1, -2)
        tr = jnp.sum(prec * prior.psi0, axis=(-2, -1))
        n_cov = k if cov_type == "full" else 1
        # IW: -(nu0 + d + 1)/2 log|S| - tr(psi0 S^-1)/2 ; normal mean: -1/2 log|S| per component
        out = (
            out
            + mean_term
            + jnp.sum((prior.nu0 + d + 1.0) * logdet_p - 0.5 * tr)
            + k * jnp.sum(logdet_p) / n_cov
        )
    elif cov_type == "diag":
        prec = pc**2
        out = out + jnp.sum(
            -0.5 * prior.kappa0 * dm**2 * prec
            + 0.5 * (prior.nu0 + 3.0) * jnp.log(prec)
            - 0.5 * jnp.diagonal(prior.psi0)[None] * prec
        )
    else:
        prec = pc**2
        out = out + jnp.sum(
            -0.5 * prior.kappa0 * jnp.sum(dm**2, 1) * prec
            + 0.5 * (d * prior.nu0 + 2.0 + d) * jnp.log(prec)
            - 0.5 * jnp.trace(prior.psi0) * prec
        )
    return out
