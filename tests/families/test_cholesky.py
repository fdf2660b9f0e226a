"""The rank-one Cholesky algebra against recomputed factors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ppclust.families import (
    chol_downdate,
    chol_logdet,
    chol_update,
)


def test_chol_update_downdate_roundtrip():
    with jax.enable_x64(True):
        rng = np.random.default_rng(0)
        a = rng.normal(size=(5, 5))
        A = a @ a.T + 5 * np.eye(5)
        v = rng.normal(size=5)
        L = jnp.linalg.cholesky(A)
        L1 = chol_update(L, v)
        np.testing.assert_allclose(L1 @ L1.T, A + np.outer(v, v), rtol=1e-12, atol=1e-12)
        L2 = chol_downdate(L1, v)
        np.testing.assert_allclose(L2, L, rtol=1e-10, atol=1e-10)
        assert np.isclose(chol_logdet(L1), np.linalg.slogdet(A + np.outer(v, v))[1])
