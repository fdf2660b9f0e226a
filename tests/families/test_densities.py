"""The Gaussian log-densities against scipy and against each other."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats as sps

from ppclust._jax import x64
from ppclust.families import (
    GaussianParams,
    gaussian_loglik,
    gaussian_loglik_matrix,
    ml_entropy,
)


@pytest.mark.parametrize(("shape", "d"), [((5, 3, 3), 3), ((5, 6, 6), 6), ((5, 3), 3), ((5,), 3)])
def test_loglik_matrix_equals_per_point_loglik(shape, d):
    """The (n, K) data term of the parallel sampler (full / diagonal / spherical precision factors) equals
    the per-point ``gaussian_loglik`` row by row."""
    with x64():
        rng = np.random.default_rng(4)
        x = jnp.asarray(rng.normal(size=(40, d)) * 2.0)
        factor = rng.normal(size=shape) + (3 * np.eye(d) if len(shape) == 3 else 2.0)
        params = GaussianParams(
            jnp.asarray(rng.normal(size=(5, d))), jnp.asarray(factor), jnp.asarray(rng.normal(size=5))
        )
        per_point = jax.vmap(gaussian_loglik, (None, 0))(params, x)
        np.testing.assert_allclose(gaussian_loglik_matrix(params, x), per_point, rtol=1e-10, atol=1e-10)


def test_gaussian_log_densities_match_scipy():
    """The 1-D, isotropic and Cholesky-factored Gaussian log-densities and the ML entropy that
    the CCIB, C3L, Hartigan and CEC-IB callers share, in JAX and NumPy, against scipy.stats."""
    from ppclust.families import (
        gaussian_log_normaliser_chol,
        gaussian_logpdf_chol,
        isotropic_gaussian_loglik,
        normal_logpdf,
    )

    rng = np.random.default_rng(3)
    x, loc, scale = rng.normal(size=7), rng.normal(size=7), rng.uniform(0.3, 2.0, 7)
    ref = sps.norm.logpdf(x, loc, scale)
    np.testing.assert_allclose(normal_logpdf(x, loc, scale, xp=np), ref, rtol=1e-12)
    d, K, n = 3, 2, 5
    mean = rng.normal(size=(K, d))
    A = rng.normal(size=(K, d, d))
    cov = A @ np.transpose(A, (0, 2, 1)) + 0.5 * np.eye(d)
    pts = rng.normal(size=(n, d))
    ref_mvn = np.stack([sps.multivariate_normal(mean[k], cov[k]).logpdf(pts) for k in range(K)], 1)
    iso = np.stack([sps.multivariate_normal(mean[k], 1.7 * np.eye(d)).logpdf(pts) for k in range(K)], 1)
    sq = ((pts[:, None] - mean[None]) ** 2).sum(-1)
    np.testing.assert_allclose(isotropic_gaussian_loglik(sq, 1.7, d, xp=np), iso, rtol=1e-12)
    L = np.linalg.cholesky(cov)
    ent = [sps.multivariate_normal(mean[k], cov[k]).entropy() for k in range(K)]
    np.testing.assert_allclose(ml_entropy(1.0, np.linalg.slogdet(cov)[1], d, xp=np), ent, rtol=1e-12)
    # log normaliser = -log density at the mean
    np.testing.assert_allclose(
        gaussian_log_normaliser_chol(L, xp=np),
        [-sps.multivariate_normal(mean[k], cov[k]).logpdf(mean[k]) for k in range(K)],
        rtol=1e-12,
    )
    with x64():
        np.testing.assert_allclose(np.asarray(normal_logpdf(jnp.asarray(x), loc, scale)), ref, rtol=1e-12)
        np.testing.assert_allclose(
            np.asarray(isotropic_gaussian_loglik(jnp.asarray(sq), 1.7, d)), iso, rtol=1e-12
        )
        got = gaussian_logpdf_chol(jnp.asarray(pts), jnp.asarray(mean), jnp.asarray(L))
        np.testing.assert_allclose(np.asarray(got), ref_mvn, rtol=1e-12)
        np.testing.assert_allclose(
            np.asarray(ml_entropy(jnp.full(K, 9.0), jnp.asarray(np.linalg.slogdet(9.0 * cov)[1]), d)),
            ent,
            rtol=1e-12,
        )
