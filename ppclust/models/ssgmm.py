r"""Semi-supervised Gaussian mixture: generative model with partial (optionally noisy) labels.

Generative story (``K`` components, ``C`` classes, class map ``g: {0..K-1} -> {-1, 0..C-1}``):

.. math::

    \pi \sim \mathrm{Dir}(\alpha),\quad (\mu_k, \Sigma_k) \sim p(\mu, \Sigma),\quad
    z_i \sim \mathrm{Cat}(\pi),\quad x_i \mid z_i \sim \mathcal{N}(\mu_{z_i}, \Sigma_{z_i}),

    \text{and, for a labelled point,}\quad
    p(y_i = c \mid z_i = k) = \begin{cases} 1 - \varepsilon & g(k) = c \\
        \varepsilon / (C - 1) & \text{otherwise.} \end{cases}

With ``eps = 0`` a labelled point can only come from its class's components (Rmixmod ``knownLabels`` /
mclust ``MclustSSC``; CEC-IB spec section 4.1); several components may share a class, and a component with
``g(k) = -1`` ("free") takes no labelled point. ``eps > 0`` is the label-noise model: a wrong label costs
``log(eps / (C - 1))`` instead of forcing the fit.

The assignments are marginalised (``logsumexp`` factor; ``funsor`` enumeration is not available), so the
model runs under NUTS; the per-point term is exactly :func:`ppclust.inference.em.e_step`'s
(:func:`ppclust.families.log_gaussian_prob`).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.scipy.special import logsumexp

from ppclust.families import log_gaussian_prob
from ppclust.sideinfo import label_noise_update  # the M-step for eps (side-information math)

__all__ = ["default_component_classes", "label_log_mask", "label_noise_update", "ssgmm_model",
           "ssgmm_log_likelihood"]


def default_component_classes(n_components: int, n_classes: int) -> np.ndarray:
    """Class of each component: component k -> class k mod C (so k = c for the first C components)."""
    if n_classes == 0:
        return np.full(n_components, -1, np.int32)
    return (np.arange(n_components) % n_classes).astype(np.int32)


def label_log_mask(y_codes, component_classes, n_classes, eps=0.0):
    """log p(observed label | z = k), shape (n, k), and the hard ``allowed`` mask (n, k) (host NumPy).

    ``y_codes``: (n,) class indices 0..C-1, or -1 for unlabelled (row of zeros / all allowed).
    """
    y_codes = np.asarray(y_codes)
    g = np.asarray(component_classes)
    labelled = y_codes >= 0
    same = (g[None, :] == y_codes[:, None]) & labelled[:, None]
    with np.errstate(divide="ignore"):
        other = np.log(eps / max(n_classes - 1, 1)) if eps > 0 else -np.inf
        keep = np.log1p(-eps)
    log_mask = np.where(labelled[:, None], np.where(same, keep, other), 0.0)
    allowed = np.where(labelled[:, None], same, True)
    return log_mask, allowed


def ssgmm_log_likelihood(x, weights, means, prec_chol, log_mask=None, cov_type="full"):
    """Marginal log-likelihood sum_i log sum_k p(y_i | k) pi_k N(x_i; mu_k, Sigma_k)."""
    lp = log_gaussian_prob(x, means, prec_chol, cov_type) + jnp.log(weights)[None]
    if log_mask is not None:
        lp = lp + log_mask
    return jnp.sum(logsumexp(lp, axis=1))


def ssgmm_model(x, log_mask=None, *, n_components, cov_type="full", alpha=1.0, prior_scale=None):
    """NumPyro model with the assignments summed out (sites ``weights``, ``means``, scale sites).

    Priors (weakly informative, for NUTS checks): ``weights ~ Dir(alpha)``, ``means ~ N(mean(x), 10 sd)``;
    full: ``Sigma_k = diag(s_k) L_k L_k^T diag(s_k)`` with ``L_k ~ LKJCholesky(d, 2)``,
    ``s_k ~ HalfNormal(prior_scale)``; diag: per-dimension sds ``HalfNormal``; spherical: one sd each;
    tied: one LKJ/HalfNormal pair. ``prior_scale`` defaults to 2 x the data sd.

    The likelihood is ``numpyro.factor("obs", ...)`` with :func:`ssgmm_log_likelihood`.
    """
    x = jnp.asarray(x)
    n, d = x.shape
    k = n_components
    centre = jnp.mean(x, 0)
    sd = jnp.std(x, 0) + 1e-12
    scale = 2.0 * sd if prior_scale is None else jnp.broadcast_to(jnp.asarray(prior_scale), (d,))
    weights = numpyro.sample("weights", dist.Dirichlet(jnp.full((k,), alpha)))
    means = numpyro.sample("means", dist.Normal(centre, 10.0 * sd).expand((k, d)).to_event(2))
    if cov_type in ("full", "tied"):
        m = k if cov_type == "full" else 1
        corr = numpyro.sample("corr_chol", dist.LKJCholesky(d, 2.0).expand((m,)).to_event(1))
        sds = numpyro.sample("sds", dist.HalfNormal(scale).expand((m, d)).to_event(2))
        cov_chol = sds[:, :, None] * corr  # lower Cholesky of Sigma
        eye = jnp.broadcast_to(jnp.eye(d, dtype=x.dtype), cov_chol.shape)
        prec_chol = jnp.swapaxes(jnp.linalg.solve(cov_chol, eye), -1, -2)
        if cov_type == "tied":
            prec_chol = prec_chol[0]
    elif cov_type == "diag":
        sds = numpyro.sample("sds", dist.HalfNormal(scale).expand((k, d)).to_event(2))
        prec_chol = 1.0 / sds
    else:
        sds = numpyro.sample("sds", dist.HalfNormal(jnp.mean(scale)).expand((k,)).to_event(1))
        prec_chol = 1.0 / sds
    numpyro.factor("obs", ssgmm_log_likelihood(x, weights, means, prec_chol, log_mask, cov_type))
