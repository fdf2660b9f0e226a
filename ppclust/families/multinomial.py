r"""Count vectors with a Dirichlet prior on the cell probabilities (the Dirichlet-multinomial family).

CCIB's label tables are its posterior means; its Bregman divergence is the generalised KL divergence.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax.scipy.special import gammaln

from ppclust.families.bregman import kl_divergence
from ppclust.families.densities import log_multinomial_coef
from ppclust.families.slots import Stats, one_hot_stats

__all__ = ["Multinomial"]

Array = jax.Array


@dataclass(frozen=True)
class Multinomial:
    r"""Count vectors x ~ Mult(m, pi_k), pi_k ~ Dir(alpha); predictive is Dirichlet-multinomial.

    ``Stats.s`` holds the per-slot summed counts; ``Stats.scale`` the per-slot sum of log
    multinomial coefficients (so :meth:`log_marginal` is an exact probability).

    Parameters
    ----------
    alpha : array (d,)
        Dirichlet concentration (> 0).

    Notes
    -----
    Predictive of a slot with summed counts :math:`s`, :math:`a = \alpha + s`, :math:`A = \sum_j a_j`,
    for x with :math:`m = \sum_j x_j`: :math:`\ln\binom{m}{x} + \ln\Gamma(A) - \ln\Gamma(A+m)
    + \sum_j \ln\Gamma(a_j+x_j) - \ln\Gamma(a_j)` (Dirichlet-multinomial).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> fam = Multinomial(jnp.ones(3))
    >>> x = jnp.array([[5.0, 0.0, 0.0], [0.0, 0.0, 5.0]])
    >>> st = fam.stats(x, jnp.array([0, 1]), 2)
    >>> int(jnp.argmax(fam.log_predictive(st, jnp.array([0.0, 1.0, 3.0]))))
    1
    """

    alpha: Array  # (d,)

    def empty(self, K: int, d: int | None = None, dtype=None) -> Stats:
        """Statistics of ``K`` empty slots.

        Parameters
        ----------
        K : int
            Number of slots.
        d : int or None, default None
            Dimension (None: that of ``mu0``).
        dtype : dtype or None, default None
            Floating dtype (None: that of ``mu0``).

        Returns
        -------
        Stats
        """
        d = self.alpha.shape[-1] if d is None else d
        dtype = self.alpha.dtype if dtype is None else dtype
        return Stats(jnp.zeros(K, dtype), jnp.zeros((K, d), dtype), jnp.zeros(K, dtype))

    def stats(self, x: Array, z: Array, K: int, w: Array | None = None, reduce=None) -> Stats:
        """Sufficient statistics of labelling ``z`` over ``K`` slots.

        Parameters
        ----------
        x : array (n, d)
            Points.
        z : int array (n,)
            Labels (outside [0, K): counted nowhere).
        K : int
            Number of slots.
        w : array (n,) or None, default None
            Point weights.
        reduce : callable or None, default None
            Cross-device sum applied to every per-slot sum (``lambda t: jax.lax.psum(t, "data")``).

        Returns
        -------
        Stats
        """
        r, n, s = one_hot_stats(x, z, K, w, reduce)
        return Stats(n, s, r(log_multinomial_coef(x)))

    def add(self, stats: Stats, k, x: Array) -> Stats:
        """Statistics with x added to slot k.

        Parameters
        ----------
        stats : Stats
            Statistics of the K slots.
        k : int
            Slot.
        x : array (d,)
            A point.

        Returns
        -------
        Stats
        """
        return Stats(
            stats.n.at[k].add(1.0), stats.s.at[k].add(x), stats.scale.at[k].add(log_multinomial_coef(x))
        )

    def remove(self, stats: Stats, k, x: Array) -> Stats:
        """Statistics with x removed from slot k.

        Parameters
        ----------
        stats : Stats
            Statistics of the K slots.
        k : int
            Slot.
        x : array (d,)
            A point.

        Returns
        -------
        Stats
        """
        return Stats(
            stats.n.at[k].add(-1.0), stats.s.at[k].add(-x), stats.scale.at[k].add(-log_multinomial_coef(x))
        )

    def posterior_mean(self, stats: Stats) -> Array:
        """Posterior mean of the cell probabilities per slot (K, d).

        Parameters
        ----------
        stats : Stats
            Statistics of the K slots.

        Returns
        -------
        array (K, d)
        """
        return jnp.exp(self.log_posterior_mean(stats.s))

    def log_posterior_mean(self, counts: Array) -> Array:
        r"""log E[pi | counts] = log (s_j + alpha_j) - log(sum_j s_j + sum_j alpha_j), row-wise.

        With a symmetric ``alpha`` this is the additively smoothed ML estimate (CCIB's tables).

        Parameters
        ----------
        counts : array (..., d)
            Summed counts.

        Returns
        -------
        array (..., d)
        """
        a = self.alpha + counts
        return jnp.log(a) - jnp.log(a.sum(-1, keepdims=True))

    def log_predictive(self, stats: Stats, x: Array) -> Array:
        """Dirichlet-multinomial log p(x | points in slot k) for every slot (K,).

        Parameters
        ----------
        stats : Stats
            Statistics of the K slots.
        x : array (d,)
            A point.

        Returns
        -------
        array (K,)
            One value per slot.
        """
        a = self.alpha + stats.s
        A = a.sum(-1)
        m = x.sum()
        return (
            log_multinomial_coef(x) + gammaln(A) - gammaln(A + m) + jnp.sum(gammaln(a + x) - gammaln(a), -1)
        )

    def log_prior_predictive(self, x: Array) -> Array:
        """log p(x) under the prior predictive.

        Parameters
        ----------
        x : array (d,)
            A point.

        Returns
        -------
        array ()
        """
        return self.log_predictive(self.empty(1, x.shape[-1], x.dtype), x)[0]

    def log_marginal(self, stats: Stats) -> Array:
        """log p(all count vectors of slot k) with the cell probabilities integrated out (K,).

        Parameters
        ----------
        stats : Stats
            Statistics of the K slots.

        Returns
        -------
        array (K,)
            One value per slot.
        """
        a = self.alpha + stats.s
        A0 = self.alpha.sum()
        return (
            stats.scale
            + gammaln(A0)
            - gammaln(A0 + stats.s.sum(-1))
            + jnp.sum(gammaln(a) - gammaln(self.alpha), -1)
        )

    def bregman(self, x: Array, means: Array) -> Array:
        """KL(x / |x| || mean_k): the multinomial's Bregman divergence on normalised counts
        (:func:`kl_divergence`; means floored at 1e-300 so an empty cell costs a finite, huge amount).

        Parameters
        ----------
        x : array (..., d)
            Points.
        means : array (K, d)
            Centres.

        Returns
        -------
        array (..., K)
        """
        p = x / jnp.maximum(x.sum(-1, keepdims=True), 1e-300)
        return kl_divergence(p, jnp.maximum(means, 1e-300))


jax.tree_util.register_dataclass(Multinomial, data_fields=["alpha"], meta_fields=[])
