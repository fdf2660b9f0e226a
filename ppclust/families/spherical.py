r"""The spherical Gaussian with known variance and a Gaussian prior on the mean (the DP-means limit).

As ``sigma2 -> 0`` TVClust's Gibbs sampler with this family becomes RDP-means (TVClust spec 3.2).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from ppclust.families.bregman import sq_euclidean
from ppclust.families.densities import GaussianParams, gaussian_loglik, gaussian_loglik_matrix
from ppclust.families.slots import PredictiveCache, Stats, one_hot_stats

__all__ = ["SphericalGaussian"]

Array = jax.Array


@dataclass(frozen=True)
class SphericalGaussian:
    r"""N(x; mu_k, sigma2 I) with known variance and prior mu ~ N(mu0, tau2 I).

    The scaled family of TVClust spec 3.2: as ``sigma2 -> 0`` TVClust's Gibbs sampler becomes
    RDP-means with the Bregman divergence :meth:`bregman` (squared Euclidean).
    ``Stats.scale`` holds the per-slot sum of squared norms (needed by :meth:`log_marginal`).

    Parameters
    ----------
    sigma2 : array ()
        Known within-cluster variance :math:`\sigma^2 > 0`.
    mu0 : array (d,)
        Prior mean of the cluster means.
    tau2 : array ()
        Prior variance of the cluster means :math:`\tau^2 > 0`.

    Notes
    -----
    Posterior of a slot with n points: :math:`\mu\mid\cdot\sim N(m_n, v_nI)`,
    :math:`v_n = (1/\tau^2+n/\sigma^2)^{-1}`, :math:`m_n = v_n(\mu_0/\tau^2+\sum x/\sigma^2)`.
    Compiled twins of the per-point primitives: :mod:`ppclust.families._niw_cpu` (family code
    ``KNOWN_VAR``).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> fam = SphericalGaussian(jnp.asarray(1.0), jnp.zeros(2), jnp.asarray(10.0))
    >>> x = jnp.array([[0.0, 0.0], [5.0, 5.0]])
    >>> st = fam.stats(x, jnp.array([0, 1]), 2)
    >>> int(jnp.argmax(fam.log_predictive(st, jnp.array([4.0, 5.0]))))
    1
    """

    sigma2: Array
    mu0: Array
    tau2: Array

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
        d = self.mu0.shape[-1] if d is None else d
        dtype = self.mu0.dtype if dtype is None else dtype
        return Stats(jnp.zeros(K, dtype), jnp.zeros((K, d), dtype), jnp.zeros(K, dtype))

    def stats(self, x: Array, z: Array, K: int, w: Array | None = None, reduce=None) -> Stats:
        """Sufficient statistics of labelling ``z`` over ``K`` slots (as :meth:`GaussianNIW.stats`).

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
        return Stats(n, s, r(jnp.sum(x * x, -1)))

    def add(self, stats: Stats, k, x: Array) -> Stats:
        """Statistics with x added to slot k (twin: :func:`ppclust.families._niw_cpu.rank_one`).

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
        return Stats(stats.n.at[k].add(1.0), stats.s.at[k].add(x), stats.scale.at[k].add(x @ x))

    def remove(self, stats: Stats, k, x: Array) -> Stats:
        """Statistics with x removed from slot k (twin: :func:`ppclust.families._niw_cpu.rank_one`).

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
        return Stats(stats.n.at[k].add(-1.0), stats.s.at[k].add(-x), stats.scale.at[k].add(-(x @ x)))

    def _post(self, stats: Stats):
        v = 1.0 / (1.0 / self.tau2 + stats.n / self.sigma2)
        m = v[:, None] * (self.mu0 / self.tau2 + stats.s / self.sigma2)
        return v, m

    def posterior_mean(self, stats: Stats) -> Array:
        """Posterior mean m_n of the cluster means per slot (K, d).

        Parameters
        ----------
        stats : Stats
            Statistics of the K slots.

        Returns
        -------
        array (K, d)
        """
        return self._post(stats)[1]

    def log_predictive(self, stats: Stats, x: Array) -> Array:
        r""":math:`\log N(x;\ m_n,\ (\sigma^2+v_n)I)` per slot, :math:`v_n = (1/\tau^2+n/\sigma^2)^{-1}`,
        :math:`m_n = v_n(\mu_0/\tau^2+\sum x/\sigma^2)`; through :meth:`predictive_cache`.

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
        return self.log_predictive_cached(self.predictive_cache(stats), stats, x)

    def predictive_log_norm(self, n: Array, d: int) -> Array:
        """Size-only part of the log-normaliser: none for a known variance (0).

        Parameters
        ----------
        n : array
            Slot sizes.
        d : int
            Dimension.

        Returns
        -------
        array
            Same shape as ``n``.
        """
        return jnp.zeros_like(n)

    def predictive_cache(self, stats: Stats) -> PredictiveCache:
        r"""Slot constants: :math:`c_k = -\tfrac d2\ln(2\pi p_k)`, :math:`a_k = 1/(2p_k)`,
        :math:`p_k = \sigma^2+v_n` (the predictive is :math:`c_k - a_k\|x-m_n\|^2`, no ``hexp``).
        Compiled twin: :func:`ppclust.families._niw_cpu.predictive_cache_slot`.

        Parameters
        ----------
        stats : Stats
            Statistics of the K slots.

        Returns
        -------
        PredictiveCache
        """
        d = stats.s.shape[-1]
        v, m = self._post(stats)
        pv = self.sigma2 + v
        ones = jnp.ones_like(pv)
        return PredictiveCache(m, -0.5 * d * jnp.log(2.0 * jnp.pi * pv), 0.5 / pv, ones, jnp.ones_like(m))

    def log_predictive_cached(self, cache: PredictiveCache, stats: Stats, x: Array) -> Array:
        r""":math:`c_k - a_k\|x-\mathrm{loc}_k\|^2` (K,). Compiled twin:
        :func:`ppclust.families._niw_cpu.log_predictive_cached`.

        Parameters
        ----------
        cache : PredictiveCache
            From :meth:`predictive_cache` of ``stats``.
        stats : Stats
            Statistics of the K slots.
        x : array (d,)
            A point.

        Returns
        -------
        array (K,)
            One value per slot.
        """
        u = x - cache.loc
        return cache.log_norm - cache.a1 * jnp.sum(u * u, -1)

    def log_prior_predictive(self, x: Array) -> Array:
        """log N(x; mu0, (sigma2 + tau2) I), the prior predictive.

        Parameters
        ----------
        x : array (d,)
            A point.

        Returns
        -------
        array ()
        """
        d = x.shape[-1]
        pv = self.sigma2 + self.tau2
        return -0.5 * (d * jnp.log(2.0 * jnp.pi * pv) + jnp.sum((x - self.mu0) ** 2) / pv)

    def log_marginal(self, stats: Stats) -> Array:
        """log p(all points of slot k) with the mean integrated out (K,).

        Parameters
        ----------
        stats : Stats
            Statistics of the K slots.

        Returns
        -------
        array (K,)
            One value per slot.
        """
        # per coordinate the slot's points are N(mu0 1, sigma2 I + tau2 11^T)
        d = stats.s.shape[-1]
        n = stats.n
        ss = stats.scale - 2.0 * stats.s @ self.mu0 + n * (self.mu0 @ self.mu0)  # sum ||x - mu0||^2
        t = stats.s - n[:, None] * self.mu0  # sum (x - mu0)
        quad = ss - self.tau2 / (self.sigma2 + n * self.tau2) * jnp.sum(t * t, -1)
        return (
            -0.5 * n * d * jnp.log(2.0 * jnp.pi * self.sigma2)
            - 0.5 * d * jnp.log1p(n * self.tau2 / self.sigma2)
            - 0.5 * quad / self.sigma2
        )

    def sample_posterior(self, key, stats: Stats) -> GaussianParams:
        """One mean per slot from its posterior N(m_n, v_n I) (empty slot: the prior); variance known.

        Parameters
        ----------
        key : jax.random key
            The key of the draw.
        stats : Stats
            Statistics of the K slots.

        Returns
        -------
        GaussianParams
            One draw per slot.
        """
        K, d = stats.s.shape
        v, m = self._post(stats)
        mean = m + jnp.sqrt(v)[:, None] * jax.random.normal(key, (K, d), stats.s.dtype)
        prec = jnp.broadcast_to(1.0 / jnp.sqrt(self.sigma2), (K,)).astype(mean.dtype)
        half = jnp.broadcast_to(-0.5 * d * jnp.log(self.sigma2), (K,)).astype(mean.dtype)
        return GaussianParams(mean, prec, half)

    def log_likelihood(self, params: GaussianParams, x: Array) -> Array:
        """log N(x | mean_k, sigma2 I) for every slot (K,).

        Parameters
        ----------
        params : GaussianParams
            From :meth:`sample_posterior`.
        x : array (d,)
            A point.

        Returns
        -------
        array (K,)
            One value per slot.
        """
        return gaussian_loglik(params, x)

    def log_likelihood_matrix(self, params: GaussianParams, x: Array) -> Array:
        """:meth:`log_likelihood` of every point (n, d) in every slot, (n, K).

        Parameters
        ----------
        params : GaussianParams
            From :meth:`sample_posterior`.
        x : array (n, d)
            Points.

        Returns
        -------
        array (n, K)
        """
        return gaussian_loglik_matrix(params, x)

    def bregman(self, x: Array, means: Array) -> Array:
        """Squared Euclidean distance ||x - mu||^2 (DP-means; the sigma2 factor is absorbed in lambda).

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
        return sq_euclidean(x, means)


jax.tree_util.register_dataclass(SphericalGaussian, data_fields=["sigma2", "mu0", "tau2"], meta_fields=[])
