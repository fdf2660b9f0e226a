"""GaussianML: the determinant lemma and the entropy against direct computation."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats as sps

from ppclust.families import (
    GaussianML,
    ml_entropy,
)


def test_gaussian_ml_determinant_lemma_and_entropy():
    with jax.enable_x64(True):
        rng = np.random.default_rng(7)
        n, d, K = 60, 3, 3
        x = rng.normal(size=(n, d))
        z = np.arange(n) % K
        fam = GaussianML()
        st_ = fam.stats(jnp.asarray(x), jnp.asarray(z), K)
        xq = rng.normal(size=d)
        got_add = np.asarray(fam.logdet_after_add(st_, jnp.asarray(xq)))
        for k in range(K):
            xs = np.vstack([x[z == k], xq])
            S = (xs - xs.mean(0)).T @ (xs - xs.mean(0))
            assert np.isclose(got_add[k], np.linalg.slogdet(S)[1], rtol=1e-10)
        i = 4
        got_rem = float(fam.logdet_after_remove(st_, z[i], jnp.asarray(x[i])))
        xs = x[(z == z[i]) & (np.arange(n) != i)]
        S = (xs - xs.mean(0)).T @ (xs - xs.mean(0))
        assert np.isclose(got_rem, np.linalg.slogdet(S)[1], rtol=1e-10)
        st2 = fam.remove(st_, z[i], jnp.asarray(x[i]))
        assert np.isclose(fam.logdet_scatter(st2)[z[i]], got_rem, rtol=1e-10)
        # ML entropy equals the Gaussian differential entropy of the MLE covariance
        xs = x[z == 0]
        cov = np.cov(xs.T, bias=True)
        ent = ml_entropy(jnp.asarray(float(len(xs))), fam.logdet_scatter(st_)[0], d)
        assert np.isclose(ent, sps.multivariate_normal(np.zeros(d), cov).entropy(), rtol=1e-10)
