"""Multinomial against scipy's Dirichlet-multinomial."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats as sps

from ppclust.families import (
    Multinomial,
)


def test_multinomial_is_scipy_dirichlet_multinomial():
    with jax.enable_x64(True):
        rng = np.random.default_rng(6)
        alpha = np.array([0.5, 1.0, 2.0, 0.7])
        fam = Multinomial(jnp.asarray(alpha))
        x = rng.integers(0, 5, size=(7, 4)).astype(float)
        z = np.array([0, 0, 1, 1, 1, 0, 1])
        st_ = fam.stats(jnp.asarray(x), jnp.asarray(z), 3)
        q = np.array([2.0, 0.0, 3.0, 1.0])
        got = np.asarray(fam.log_predictive(st_, jnp.asarray(q)))
        for k in range(3):
            ref = sps.dirichlet_multinomial(alpha + x[z == k].sum(0), q.sum()).logpmf(q)
            assert np.isclose(got[k], ref, rtol=1e-10)
        total, s1 = 0.0, fam.empty(1)
        for i in range(7):
            total += float(fam.log_predictive(s1, jnp.asarray(x[i]))[0])
            s1 = fam.add(s1, 0, jnp.asarray(x[i]))
        assert np.isclose(fam.log_marginal(s1)[0], total, rtol=1e-10)
        # KL Bregman divergence of normalised counts
        mu = np.array([[0.25] * 4, [0.1, 0.2, 0.3, 0.4]])
        p = q / q.sum()
        ref = [np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1) / m), 0)) for m in mu]
        np.testing.assert_allclose(fam.bregman(jnp.asarray(q), jnp.asarray(mu)), ref, rtol=1e-12)
