"""The Bregman divergences against brute force."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats as sps

from ppclust.families import (
    Multinomial,
)


def test_bregman_divergences_brute_force():
    """sq_euclidean (three summation forms) and kl_divergence against NumPy / scipy.stats.entropy."""
    from ppclust.families import kl_divergence, sq_euclidean

    rng = np.random.default_rng(3)
    with jax.enable_x64(True):
        x, mu = rng.normal(size=(6, 4)), rng.normal(size=(3, 4))
        want = ((x[:, None] - mu[None]) ** 2).sum(-1)
        for kw in ({}, {"ordered": True}, {"expanded": True}):
            np.testing.assert_allclose(sq_euclidean(jnp.asarray(x), jnp.asarray(mu), **kw), want, rtol=1e-12)
        p = rng.dirichlet(np.ones(4), 6)
        p[0, 1] = 0.0  # 0 log 0 = 0
        p[0] /= p[0].sum()
        q = rng.dirichlet(np.ones(4), 3)
        want = np.array([[sps.entropy(pi, qk) for qk in q] for pi in p])
        for kw in ({}, {"expanded": True}):
            np.testing.assert_allclose(kl_divergence(jnp.asarray(p), jnp.asarray(q), **kw), want, rtol=1e-12)
        got = Multinomial(jnp.ones(4)).bregman(jnp.asarray(p * 7.0), jnp.asarray(q))  # counts: normalised
        np.testing.assert_allclose(got, want, rtol=1e-12)
