"""Per-slot sums and scatters against numpy loops."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ppclust._jax import x64
from ppclust.families.slots import centered_scatter, one_hot_stats, slot_sum, triangle_outer_sum


def _data(seed=0, n=30, d=3, K=4):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)) + 10.0, rng.integers(-1, K + 1, n), rng.uniform(0.5, 2.0, n), K


def test_slot_sum_drops_labels_outside_the_slots():
    x, z, w, K = _data()
    with x64():
        got = np.asarray(slot_sum(jnp.asarray(x), jnp.asarray(z), K, jnp.asarray(w)))
    want = np.stack([(w[z == k, None] * x[z == k]).sum(0) for k in range(K)])
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_centered_scatter_both_outer_sums():
    x, z, w, K = _data(1)
    with x64():
        summ, n, s = one_hot_stats(jnp.asarray(x), jnp.asarray(z), K, None)
        full = np.asarray(centered_scatter(jnp.asarray(x), summ, n, s))
        tri = np.asarray(centered_scatter(jnp.asarray(x), summ, n, s, triangle_outer_sum(summ)))
    for k in range(K):
        xk = x[z == k]
        want = (xk - xk.mean(0)).T @ (xk - xk.mean(0)) if len(xk) else np.zeros((3, 3))
        np.testing.assert_allclose(full[k], want, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(tri, full)
