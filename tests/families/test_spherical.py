"""SphericalGaussian against its closed forms."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats as sps

from ppclust.families import (
    SphericalGaussian,
)


def test_spherical_gaussian_marginal_and_predictive():
    with jax.enable_x64(True):
        rng = np.random.default_rng(5)
        d = 2
        fam = SphericalGaussian(jnp.asarray(0.5), jnp.asarray([0.3, -0.2]), jnp.asarray(2.0))
        x = rng.normal(size=(6, d))
        # brute force: per coordinate the vector is N(mu0 1, sigma2 I + tau2 11^T)
        cov = 0.5 * np.eye(6) + 2.0 * np.ones((6, 6))
        mvn = [sps.multivariate_normal(np.full(6, m), cov) for m in (0.3, -0.2)]
        ref = sum(g.logpdf(x[:, j]) for j, g in enumerate(mvn))
        st_ = fam.stats(jnp.asarray(x), jnp.zeros(6, int), 2)
        assert np.isclose(fam.log_marginal(st_)[0], ref, rtol=1e-10)
        total, s1 = 0.0, fam.empty(1, d)
        for i in range(6):
            total += float(fam.log_predictive(s1, jnp.asarray(x[i]))[0])
            s1 = fam.add(s1, 0, jnp.asarray(x[i]))
        assert np.isclose(total, ref, rtol=1e-10)
        assert np.allclose(
            fam.bregman(jnp.asarray(x), jnp.asarray(x[:2])), ((x[:, None] - x[None, :2]) ** 2).sum(-1)
        )
