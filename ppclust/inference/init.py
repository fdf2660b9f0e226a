"""Seeding of cluster centres shared by the solvers (k-means++ D^2 sampling, Arthur & Vassilvitskii 2007).

Used by :mod:`ppclust.inference.em` (and the Gibbs start of the semi-supervised GMM). Inputs are assumed
validated; pure JAX, jittable.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["kmeanspp_centres", "nearest_centre"]


def kmeanspp_centres(key, x, centres, fixed):
    """Fill the rows of ``centres`` (k, d) where ``fixed`` is False by k-means++ D^2 sampling.

    The fixed rows (e.g. labelled class means) count as already chosen. With no fixed row, the first
    centre is a uniformly drawn point.
    """
    k = centres.shape[0]
    big = jnp.finfo(x.dtype).max
    d_fixed = jnp.sum((x[:, None] - centres[None]) ** 2, -1)  # (n, k)
    dmin0 = jnp.min(jnp.where(fixed[None], d_fixed, big), axis=1)
    keys = jax.random.split(key, k)

    def body(j, carry):
        cs, dmin, any_chosen = carry
        # D^2 weights; uniform before the first centre or when every point sits on a centre
        logits = jnp.where(dmin > 0, jnp.log(jnp.maximum(dmin, 1e-300)), -jnp.inf)
        uniform = ~any_chosen | jnp.all(jnp.isneginf(logits))
        logits = jnp.where(uniform, 0.0, logits)
        i = jax.random.categorical(keys[j], logits).astype(jnp.int32)
        take = ~fixed[j]
        c = jnp.where(take, x[i], cs[j])
        dnew = jnp.minimum(jnp.where(any_chosen, dmin, big), jnp.sum((x - c[None]) ** 2, axis=1))
        return cs.at[j].set(c), jnp.where(take, dnew, dmin), any_chosen | take

    cs, _, _ = jax.lax.fori_loop(0, k, body, (centres, dmin0, jnp.any(fixed)))
    return cs


def nearest_centre(x, centres, allowed):
    """Label (int32, (n,)) of each point's nearest centre (squared Euclidean, expanded form, first on
    ties) among the components it is ``allowed`` (n, k) to use."""
    d2 = jnp.sum(x * x, 1)[:, None] - 2 * x @ centres.T + jnp.sum(centres**2, 1)[None]
    return jnp.argmin(jnp.where(allowed, d2, jnp.inf), axis=1).astype(jnp.int32)
