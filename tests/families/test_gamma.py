"""The fixed-proposal gamma sampler against scipy's gamma distribution."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats as sps

from ppclust._jax import x64
from ppclust.families.gamma import gamma_draws


@pytest.mark.parametrize("a", [0.3, 1.0, 4.5])
def test_gamma_draws_follow_the_gamma_distribution(a):
    with x64():
        g = np.asarray(gamma_draws(jax.random.key(0), a, (4000,), jnp.float64))
    assert (g > 0).all()
    assert sps.kstest(g, sps.gamma(a).cdf).pvalue > 1e-3
