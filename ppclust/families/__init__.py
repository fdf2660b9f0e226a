"""Observation families as the algebra of their sufficient statistics, shared by every method of ppclust.

* TVClust's and the semi-supervised GMM's Gibbs conditionals use the conjugate families' ``log_predictive``
  and ``log_prior_predictive`` (cluster parameters integrated out, Neal 2000, Alg. 3):
  :class:`GaussianNIW` (:mod:`~ppclust.families.niw`), :class:`SphericalGaussian`
  (:mod:`~ppclust.families.spherical`), :class:`Multinomial` (:mod:`~ppclust.families.multinomial`);
* RDP-means / DP-means use their small-variance limits, the Bregman divergences
  (:mod:`~ppclust.families.bregman`);
* CEC, CEC-IB and C3L use :class:`GaussianML` (:mod:`~ppclust.families.gaussian_ml`) with the rank-one
  Cholesky algebra of :mod:`~ppclust.families.cholesky`;
* EM's semi-supervised GMM uses the explicit-parameter Gaussian of :mod:`~ppclust.families.gaussian_em`.

Per-cluster statistics live in fixed-capacity arrays of ``K`` slots (:mod:`~ppclust.families.slots`), so
every solver is shape-static and jittable; all functions are pure JAX, hyper-parameters are pytree leaves,
the covariance structure is static. The compiled (numba) twins sit beside the modules they mirror
(``_cholesky_cpu``, ``_niw_cpu``, ``_densities_cpu``), listed in :data:`ppclust.families._twins.TWINS`.
"""

from ppclust.families.bregman import kl_divergence, sq_euclidean
from ppclust.families.cholesky import (
    SING_TOL,
    chol_downdate,
    chol_logdet,
    chol_rank_one,
    chol_singular,
    chol_update,
    solve_lower,
    solve_lower_sq,
)
from ppclust.families.densities import (
    LOG_2PI,
    LOG_2PIE,
    GaussianParams,
    gaussian_log_normaliser_chol,
    gaussian_loglik,
    gaussian_loglik_matrix,
    gaussian_logpdf_chol,
    isotropic_gaussian_loglik,
    log_multinomial_coef,
    mvt_logpdf,
    normal_logpdf,
    wishart_entropy,
    wishart_expected_logdet,
)
from ppclust.families.gamma import gamma_draws
from ppclust.families.gaussian_em import (
    GMMParams,
    NIWPrior,
    covariances,
    gaussian_map_estimate,
    gaussian_moment_stats,
    log_gaussian_prob,
    mixture_niw_prior,
    niw_log_prior,
    precision_cholesky,
)
from ppclust.families.gaussian_ml import ML_SING_TOL, GaussianML, ml_degenerate, ml_entropy, ml_logdet
from ppclust.families.multinomial import Multinomial
from ppclust.families.niw import DEFAULT_KAPPA0, GaussianNIW
from ppclust.families.slots import PredictiveCache, Stats
from ppclust.families.spherical import SphericalGaussian

__all__ = [
    # slots
    "Stats",
    "PredictiveCache",
    # conjugate families
    "GaussianNIW",
    "DEFAULT_KAPPA0",
    "SphericalGaussian",
    "Multinomial",
    # maximum-likelihood Gaussian (CEC)
    "GaussianML",
    "ML_SING_TOL",
    "ml_entropy",
    "ml_logdet",
    "ml_degenerate",
    # explicit-parameter Gaussian mixture (EM)
    "GMMParams",
    "NIWPrior",
    "mixture_niw_prior",
    "precision_cholesky",
    "covariances",
    "gaussian_moment_stats",
    "gaussian_map_estimate",
    "niw_log_prior",
    "log_gaussian_prob",
    # Cholesky algebra
    "SING_TOL",
    "chol_rank_one",
    "chol_update",
    "chol_downdate",
    "chol_logdet",
    "chol_singular",
    "solve_lower",
    "solve_lower_sq",
    # densities
    "LOG_2PI",
    "LOG_2PIE",
    "GaussianParams",
    "gaussian_loglik",
    "gaussian_loglik_matrix",
    "normal_logpdf",
    "isotropic_gaussian_loglik",
    "gaussian_log_normaliser_chol",
    "gaussian_logpdf_chol",
    "mvt_logpdf",
    "wishart_expected_logdet",
    "wishart_entropy",
    "log_multinomial_coef",
    # sampling, divergences
    "gamma_draws",
    "sq_euclidean",
    "kl_divergence",
]
