r"""Bregman divergences of the families: squared Euclidean (Gaussian) and generalised KL (multinomial).

The small-variance limits of the conjugate families (DP-means, RDP-means; Banerjee et al. 2005, Table 1).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["sq_euclidean", "kl_divergence"]

Array = jax.Array


def sq_euclidean(x: Array, means: Array, *, ordered: bool = False, expanded: bool = False) -> Array:
    r""":math:`\|x-\mu_k\|^2`, the Bregman divergence of the Gaussian families.

    Parameters
    ----------
    x : array (..., d)
        Points.
    means : array (K, d)
        Centres.
    ordered : bool, default False
        Sum the coordinates strictly left to right (a reference implementation's rounding, e.g. the
        RDP-means authors' Octave loop).
    expanded : bool, default False
        For x (n, d): :math:`\|x\|^2 - 2x^\top\mu_k + \|\mu_k\|^2` clamped at 0, by matrix products (no
        (n, K, d) array; cancels for points far from the origin relative to their spread).

    Returns
    -------
    array (..., K)
        The squared distances (default: from the differences, no cancellation).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> [float(a) for a in sq_euclidean(jnp.array([1.0, 2.0]), jnp.array([[0.0, 0.0], [1.0, 0.0]]))]
    [5.0, 4.0]
    """
    if expanded:
        sq = jnp.sum(x * x, axis=1)[:, None] - 2.0 * x @ means.T + jnp.sum(means * means, axis=1)[None, :]
        return jnp.maximum(sq, 0.0)
    diff = x[..., None, :] - means
    sq = diff * diff
    if not ordered:
        return jnp.sum(sq, -1)
    acc = sq[..., 0]
    for j in range(1, sq.shape[-1]):
        acc = acc + sq[..., j]
    return acc


def kl_divergence(x: Array, means: Array, *, expanded: bool = False) -> Array:
    r"""Generalised KL divergence, the Multinomial family's Bregman divergence.

    Parameters
    ----------
    x : array (..., d)
        Non-negative points (histogram rows).
    means : array (K, d)
        Positive centres.
    expanded : bool, default False
        For x (n, d): the cross term as one matrix product.

    Returns
    -------
    array (..., K)
        :math:`\sum_j x_j\ln x_j - x_j\ln\mu_{kj}` (:math:`0\ln0=0`); on histogram rows
        :math:`\mathrm{KL}(x\,\|\,\mu_k)`.

    References
    ----------
    A. Banerjee, S. Merugu, I. S. Dhillon and J. Ghosh, "Clustering with Bregman divergences", JMLR 6, 2005,
    Table 1.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> p = jnp.array([0.5, 0.5])
    >>> [round(float(a), 6) for a in kl_divergence(p, jnp.array([[0.5, 0.5], [0.25, 0.75]]))]
    [0.0, 0.143841]
    """
    xlogx = jnp.where(x > 0, x * jnp.log(jnp.where(x > 0, x, 1.0)), 0.0)
    if expanded:
        return jnp.sum(xlogx, axis=1)[:, None] - x @ jnp.log(means).T
    return jnp.sum(xlogx[..., None, :] - x[..., None, :] * jnp.log(means), axis=-1)
