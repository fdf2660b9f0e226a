r"""Closed-form log-densities and expectations: Gaussian, Student-t, Wishart, multinomial coefficient.

The explicit-parameter Gaussian of the samplers (:class:`GaussianParams`, drawn by a family's
``sample_posterior``) and the densities the solvers evaluate directly. Compiled twin:
:mod:`ppclust.families._densities_cpu`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.linalg import solve_triangular
from jax.scipy.special import gammaln, multigammaln

__all__ = [
    "LOG_2PI",
    "LOG_2PIE",
    "normal_logpdf",
    "isotropic_gaussian_loglik",
    "gaussian_log_normaliser_chol",
    "gaussian_logpdf_chol",
    "mvt_logpdf",
    "GaussianParams",
    "gaussian_loglik",
    "gaussian_loglik_matrix",
    "wishart_expected_logdet",
    "wishart_entropy",
    "log_multinomial_coef",
]

Array = jax.Array
#: :math:`\ln 2\pi`
LOG_2PI = math.log(2.0 * math.pi)
#: :math:`\ln 2\pi e`
LOG_2PIE = math.log(2.0 * math.pi * math.e)


def normal_logpdf(x, loc, scale, *, xp=jnp):
    r"""Elementwise 1-D Gaussian log-density.

    Parameters
    ----------
    x, loc, scale : array_like (broadcasting)
        Points, means and standard deviations :math:`\sigma > 0`.
    xp : module, default ``jax.numpy``
        The array namespace (``numpy`` for host-side code).

    Returns
    -------
    array
        :math:`\ln N(x; \mu, \sigma^2) = -\tfrac12\ln 2\pi - \ln\sigma - \tfrac12((x-\mu)/\sigma)^2`.

    Examples
    --------
    >>> import numpy as np
    >>> round(float(normal_logpdf(0.0, 0.0, 1.0, xp=np)), 6)
    -0.918939
    """
    return -0.5 * LOG_2PI - xp.log(scale) - 0.5 * ((x - loc) / scale) ** 2


def isotropic_gaussian_loglik(sq, var, d, *, xp=jnp):
    r"""Log-likelihood of ``d`` coordinates under :math:`N(\mu, s^2 I_d)` from the squared distance.

    Parameters
    ----------
    sq : array_like
        Squared distances :math:`\|x-\mu\|^2`.
    var : array_like
        Variances :math:`s^2 > 0` (broadcasting with ``sq``).
    d : int
        Number of coordinates.
    xp : module, default ``jax.numpy``
        The array namespace.

    Returns
    -------
    array
        :math:`-\tfrac{sq}{2s^2} - \tfrac d2\ln(2\pi s^2)`.

    Examples
    --------
    >>> import numpy as np
    >>> round(float(isotropic_gaussian_loglik(0.0, 1.0, 2, xp=np)), 6)
    -1.837877
    """
    return -0.5 * sq / var - 0.5 * d * xp.log(2 * math.pi * var)


def gaussian_log_normaliser_chol(L, *, xp=jnp):
    r"""Log normaliser of :math:`N(\mu, LL^\top)` from a lower Cholesky factor.

    Parameters
    ----------
    L : array (..., d, d)
        Lower Cholesky factor(s) of the covariance.
    xp : module, default ``jax.numpy``
        The array namespace.

    Returns
    -------
    array (...)
        :math:`\tfrac d2\ln 2\pi + \sum_i\ln|L_{ii}|` (= :math:`\tfrac d2\ln 2\pi + \tfrac12\ln\det LL^\top`).

    Examples
    --------
    >>> import numpy as np
    >>> round(float(gaussian_log_normaliser_chol(np.eye(2), xp=np)), 6)
    1.837877
    """
    d = L.shape[-1]
    return 0.5 * d * LOG_2PI + xp.sum(xp.log(xp.abs(xp.diagonal(L, axis1=-2, axis2=-1))), -1)


def gaussian_logpdf_chol(x: Array, mean: Array, L: Array) -> Array:
    r"""Full-covariance log-density :math:`\ln N(x_i; \mu_k, L_kL_k^\top)` for every point and slot.

    Parameters
    ----------
    x : array (n, d)
        Points.
    mean : array (K, d)
        Means.
    L : array (K, d, d)
        Lower Cholesky factors of the covariances.

    Returns
    -------
    array (n, K)
        With :math:`w = L_k^{-1}(x_i-\mu_k)`: :math:`-\tfrac d2\ln 2\pi - \tfrac12\ln\det L_kL_k^\top
        - \tfrac12\|w\|^2` (:func:`gaussian_log_normaliser_chol`).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> lp = gaussian_logpdf_chol(jnp.zeros((3, 2)), jnp.zeros((1, 2)), jnp.eye(2)[None])
    >>> lp.shape, round(float(lp[0, 0]), 6)
    ((3, 1), -1.837877)
    """
    diff = x[:, None, :] - mean[None]  # (n, K, d)
    w = jax.vmap(lambda Lk, dk: solve_triangular(Lk, dk.T, lower=True).T, in_axes=(0, 1), out_axes=1)(L, diff)
    return -gaussian_log_normaliser_chol(L)[None] - 0.5 * jnp.sum(w * w, -1)


def mvt_logpdf(delta: Array, logdet: Array, df: Array, d: int) -> Array:
    r"""Multivariate Student-t log-density from the Mahalanobis term and the log-determinant of the scale.

    Parameters
    ----------
    delta : array
        :math:`(x-\mu)^\top\Sigma^{-1}(x-\mu)`.
    logdet : array
        :math:`\ln\det\Sigma` (the scale matrix).
    df : array
        Degrees of freedom :math:`\nu > 0`.
    d : int
        Dimension.

    Returns
    -------
    array
        :math:`\ln\Gamma(\tfrac{\nu+d}2) - \ln\Gamma(\tfrac\nu2) - \tfrac d2\ln(\nu\pi)
        - \tfrac12\ln\det\Sigma - \tfrac{\nu+d}2\ln(1 + \delta/\nu)` (Murphy 2007, eq. 232's density).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> round(float(mvt_logpdf(jnp.array(0.0), jnp.array(0.0), jnp.array(1.0), 1)), 6)
    -1.14473
    """
    return (
        gammaln((df + d) / 2.0)
        - gammaln(df / 2.0)
        - 0.5 * d * jnp.log(df * jnp.pi)
        - 0.5 * logdet
        - 0.5 * (df + d) * jnp.log1p(delta / df)
    )


class GaussianParams(NamedTuple):
    r"""Explicit Gaussian cluster parameters of ``K`` slots (Neal 2000, Algorithm 2).

    Parameters
    ----------
    mean : array (K, d)
        Means.
    prec_factor : array
        A factor :math:`A` of the precision, :math:`A^\top A=\Sigma^{-1}`: (K, d, d) full, (K, d) diagonal
        (:math:`1/\sigma_j`), (K,) spherical (:math:`1/\sigma`).
    half_logdet_prec : array (K,)
        :math:`\tfrac12\ln\det\Sigma^{-1}`.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> p = GaussianParams(jnp.zeros((2, 3)), jnp.ones(2), jnp.zeros(2))
    >>> p.mean.shape
    (2, 3)
    """

    mean: Array
    prec_factor: Array
    half_logdet_prec: Array


def gaussian_loglik(params: GaussianParams, x: Array) -> Array:
    r""":math:`\ln N(x\mid\mu_k,\Sigma_k)` of one point in every slot: one matrix-vector product, no solve.

    Parameters
    ----------
    params : GaussianParams
        The slots' parameters.
    x : array (d,)
        The point.

    Returns
    -------
    array (K,)
        :math:`-\tfrac d2\ln 2\pi + \tfrac12\ln\det\Sigma_k^{-1} - \tfrac12\|A_k(x-\mu_k)\|^2`.

    Notes
    -----
    Compiled twin: :func:`ppclust.families._densities_cpu.gaussian_loglik` (one point, one slot).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> p = GaussianParams(jnp.zeros((2, 2)), jnp.ones(2), jnp.zeros(2))
    >>> [round(float(a), 6) for a in gaussian_loglik(p, jnp.zeros(2))]
    [-1.837877, -1.837877]
    """
    u = x - params.mean
    A = params.prec_factor
    if A.ndim == 3:
        w = jnp.einsum("kij,kj->ki", A, u)
    elif A.ndim == 2:
        w = A * u
    else:
        w = A[:, None] * u
    return -0.5 * x.shape[-1] * LOG_2PI + params.half_logdet_prec - 0.5 * jnp.sum(w * w, -1)


def gaussian_loglik_matrix(params: GaussianParams, x: Array) -> Array:
    r""":func:`gaussian_loglik` for a batch of points as matrix products.

    Parameters
    ----------
    params : GaussianParams
        The slots' parameters.
    x : array (n, d)
        Points.

    Returns
    -------
    array (n, K)
        The log-densities.

    Notes
    -----
    The expanded square :math:`(x-\mu_k)^\top P_k (x-\mu_k) = x^\top P_k x - 2x^\top P_k\mu_k
    + \mu_k^\top P_k\mu_k` with :math:`P_k = A_k^\top A_k`: full covariance with d <= 4 one (n, d^2) x
    (d^2, K) and one (n, d) x (d, K) product (d > 4: :math:`\|A_k x - A_k\mu_k\|^2` from one (n, d) x
    (d, K d) product), diagonal / spherical two (n, d) x (d, K) products (clamped at 0 against rounding).
    The parallel samplers' data term (an n x K block, no loop over points).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> p = GaussianParams(jnp.zeros((2, 2)), jnp.ones(2), jnp.zeros(2))
    >>> gaussian_loglik_matrix(p, jnp.zeros((5, 2))).shape
    (5, 2)
    """
    A, mean = params.prec_factor, params.mean
    K, d = mean.shape
    if A.ndim == 3 and d > 4:  # (n, K d) product, then the square: no (n, d^2) features
        w = (x @ A.reshape(K * d, d).T).reshape(x.shape[0], K, d) - jnp.einsum("kij,kj->ki", A, mean)
        sq = jnp.sum(w * w, -1)
    elif A.ndim == 3:
        P = jnp.einsum("kji,kjl->kil", A, A)
        b = jnp.einsum("kil,kl->ki", P, mean)
        quad = (x[:, :, None] * x[:, None, :]).reshape(-1, d * d) @ P.reshape(K, d * d).T
        sq = jnp.maximum(quad - 2.0 * x @ b.T + jnp.sum(b * mean, -1), 0.0)
    else:
        a2 = A * A if A.ndim == 2 else jnp.broadcast_to((A * A)[:, None], mean.shape)
        sq = (x * x) @ a2.T - 2.0 * x @ (a2 * mean).T + jnp.sum(a2 * mean * mean, -1)
        sq = jnp.maximum(sq, 0.0)
    return -0.5 * d * LOG_2PI + params.half_logdet_prec - 0.5 * sq


def wishart_expected_logdet(logdet_w: Array, nu: Array, d: int) -> Array:
    r""":math:`\mathbb E\ln|\Lambda|` under :math:`\Lambda\sim\mathcal W(W,\nu)`.

    Parameters
    ----------
    logdet_w : array
        :math:`\ln|W|` of the scale matrix.
    nu : array
        Degrees of freedom (> d - 1).
    d : int
        Dimension.

    Returns
    -------
    array
        :math:`\sum_{a=1}^d\psi(\tfrac{\nu+1-a}2)+d\ln2+\ln|W|` (Bishop 2006, eq. B.81).

    References
    ----------
    C. M. Bishop, *Pattern Recognition and Machine Learning*, Springer 2006, Appendix B.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> round(float(wishart_expected_logdet(jnp.array(0.0), jnp.array(3.0), 1)), 6)  # digamma(3/2) + ln 2
    0.729637
    """
    a = jnp.arange(1, d + 1, dtype=jnp.result_type(nu, float))
    return (
        jnp.sum(jax.scipy.special.digamma((jnp.asarray(nu)[..., None] + 1 - a) / 2), -1)
        + d * math.log(2.0)
        + logdet_w
    )


def wishart_entropy(logdet_w: Array, nu: Array, d: int) -> Array:
    r"""Entropy of :math:`\mathcal W(W,\nu)`.

    Parameters
    ----------
    logdet_w : array
        :math:`\ln|W|` of the scale matrix.
    nu : array
        Degrees of freedom (> d - 1).
    d : int
        Dimension.

    Returns
    -------
    array
        :math:`-\ln B(W,\nu) -\tfrac{\nu-d-1}2\mathbb E\ln|\Lambda|+\tfrac{\nu d}2` with
        :math:`\ln B=-\tfrac\nu2\ln|W| -\tfrac{\nu d}2\ln2-\ln\Gamma_d(\tfrac\nu2)` (Bishop 2006, eqs. B.79,
        B.82; :func:`wishart_expected_logdet`).

    References
    ----------
    C. M. Bishop, *Pattern Recognition and Machine Learning*, Springer 2006, Appendix B.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> bool(jnp.isfinite(wishart_entropy(jnp.array(0.0), jnp.array(4.0), 2)))
    True
    """
    log_b = -0.5 * nu * logdet_w - 0.5 * nu * d * math.log(2.0) - multigammaln(0.5 * nu, d)
    return -log_b - 0.5 * (nu - d - 1) * wishart_expected_logdet(logdet_w, nu, d) + 0.5 * nu * d


def log_multinomial_coef(x: Array) -> Array:
    r"""Log multinomial coefficient :math:`\ln(m! / \prod_j x_j!)`, :math:`m = \sum_j x_j`, of count vectors.

    Parameters
    ----------
    x : array (..., d)
        Counts.

    Returns
    -------
    array (...)
        The log coefficients.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> round(float(log_multinomial_coef(jnp.array([1.0, 1.0, 0.0]))), 6)  # ln 2
    0.693147
    """
    return gammaln(jnp.sum(x, -1) + 1.0) - jnp.sum(gammaln(x + 1.0), -1)
