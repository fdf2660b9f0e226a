r"""The Gaussian with its conjugate Normal-inverse-Wishart prior, cluster parameters integrated out.

TVClust's and the semi-supervised GMM's Gibbs conditionals use :meth:`GaussianNIW.log_predictive` and
:meth:`GaussianNIW.log_prior_predictive` (Neal 2000, Alg. 3); TVClust's variational algorithm its
:meth:`GaussianNIW.soft_stats`; the sub-cluster sampler its :meth:`GaussianNIW.pool` and
:meth:`GaussianNIW.sample_posterior`. One point joining or leaving a slot costs O(d^2).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
from jax.scipy.linalg import solve_triangular
from jax.scipy.special import gammaln, multigammaln

from ppclust.families.bregman import sq_euclidean
from ppclust.families.cholesky import chol_logdet, chol_rank_one, solve_lower_sq
from ppclust.families.densities import LOG_2PI, GaussianParams, gaussian_loglik, gaussian_loglik_matrix
from ppclust.families.gamma import GAMMA_TRIES, draw_block, mt_gamma
from ppclust.families.slots import PredictiveCache, Stats, centered_scatter, one_hot_stats, triangle_outer_sum

__all__ = ["DEFAULT_KAPPA0", "GaussianNIW"]

Array = jax.Array

#: ppclust's default prior strength of the NIW mean, kappa0 = 1: the prior mean counts as one observation
#: (a unit-information prior: weak, yet it keeps the predictive of a one-point cluster proper and scale
#: aware; TVClust spec 2.7 [R]). The one default of ppclust's NIW priors (:meth:`GaussianNIW.default`):
#: TVClust's sampler, and the fixed-K semi-supervised GMM's EM MAP fit and Gibbs sampler
#: (:func:`ppclust.families.mixture_niw_prior`; see docs/decisions/ for the evidence).
DEFAULT_KAPPA0 = 1.0


@dataclass(frozen=True)
class GaussianNIW:
    r"""Gaussian likelihood with its conjugate prior, cluster parameters integrated out.

    ``covariance="full"``: :math:`\Sigma \sim IW(\Psi_0, \nu_0)`, :math:`\mu\mid\Sigma \sim
    N(\mu_0, \Sigma/\kappa_0)` (TVClust spec 1.1, 2.3-2.4). Posterior after ``n`` points:
    :math:`\kappa_n=\kappa_0+n`, :math:`\nu_n=\nu_0+n`, :math:`\mu_n=(\kappa_0\mu_0+\sum x)/\kappa_n`,
    :math:`\Psi_n=\Psi_0+S+\tfrac{\kappa_0 n}{\kappa_n}(\bar x-\mu_0)(\bar x-\mu_0)^\top`.
    ``Stats.scale`` is the lower Cholesky factor of :math:`\Psi_n` (K, d, d); adding x updates it by
    the rank-one term :math:`\tfrac{\kappa_n}{\kappa_n+1}(x-\mu_n)(x-\mu_n)^\top`.
    The predictive is a Student-t with :math:`\nu_n-d+1` degrees of freedom and scale
    :math:`\Psi_n(\kappa_n+1)/(\kappa_n(\nu_n-d+1))`.

    ``covariance="diag"``: independent per-coordinate Normal-inverse-gamma, :math:`\sigma_j^2\sim
    IG(\nu_0/2, \Psi_{0,jj}/2)`; ``scale`` holds :math:`\Psi_{n,jj}` (K, d).
    ``covariance="spherical"``: one variance per cluster, :math:`\sigma^2\sim IG(\nu_0 d/2,
    \mathrm{tr}\Psi_0/2)`; ``scale`` holds :math:`\mathrm{tr}\Psi_n` (K,).

    Parameters
    ----------
    mu0 : array (d,)
        Prior mean :math:`\mu_0`.
    kappa0 : array ()
        Prior strength of the mean :math:`\kappa_0 > 0`; :data:`DEFAULT_KAPPA0` in :meth:`default`.
    nu0 : array ()
        Prior degrees of freedom :math:`\nu_0` (> d - 1 for "full").
    psi0 : array (d, d)
        Prior scale :math:`\Psi_0` (positive definite); only its diagonal is used for "diag" and
        "spherical".
    covariance : {"full", "diag", "spherical"}, default "full"
        Covariance structure.

    Notes
    -----
    Every method is pure JAX and jittable; the hyper-parameters are pytree leaves and ``covariance`` is
    static. Compiled twins of the per-point primitives: :mod:`ppclust.families._niw_cpu`.

    References
    ----------
    K. P. Murphy, "Conjugate Bayesian analysis of the Gaussian distribution", 2007.
    R. M. Neal, "Markov chain sampling methods for Dirichlet process mixture models", JCGS 9(2), 2000.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> x = jnp.array([[0.0, 1.0], [1.0, 0.0], [4.0, 4.0], [5.0, 4.0]])
    >>> fam = GaussianNIW.default(x)
    >>> st = fam.stats(x, jnp.array([0, 0, 1, 1]), 3)
    >>> [float(a) for a in st.n]
    [2.0, 2.0, 0.0]
    >>> lp = fam.log_predictive(st, jnp.array([4.5, 4.0]))
    >>> int(jnp.argmax(lp[:2]))  # the nearer of the two occupied slots
    1
    """

    mu0: Array
    kappa0: Array
    nu0: Array
    psi0: Array  # (d, d); only its diagonal is used for "diag"/"spherical"
    covariance: str = field(default="full")

    def __post_init__(self):
        if self.covariance not in ("full", "diag", "spherical"):
            raise ValueError(f"covariance must be 'full', 'diag' or 'spherical', got {self.covariance!r}")

    @classmethod
    def default(
        cls,
        x,
        covariance: str = "full",
        kappa0: float = DEFAULT_KAPPA0,
        nu0: float | None = None,
        psi_scale: float = 1.0,
    ) -> GaussianNIW:
        """A weak data-scaled prior: mu0 = data mean, Psi0 = psi_scale * diag(var(x)) * (nu0 - d - 1 or 1).

        With standardised features and ``psi_scale=1`` this is the spec's [R] default
        (mu0 = 0, kappa0 = 1, Psi0 = I, nu0 = d + 2, TVClust spec 2.7).

        Parameters
        ----------
        x : array (n, d)
            The data the prior is scaled to.
        covariance : {"full", "diag", "spherical"}, default "full"
            Covariance structure.
        kappa0 : float, default DEFAULT_KAPPA0
            Prior strength of the mean (1: one observation).
        nu0 : float or None, default None
            Prior degrees of freedom (None: d + 2).
        psi_scale : float, default 1.0
            Factor of the prior scale.

        Returns
        -------
        GaussianNIW
        """
        x = jnp.asarray(x)
        d = x.shape[1]
        nu0 = float(d + 2) if nu0 is None else float(nu0)
        var = jnp.maximum(jnp.var(x, axis=0), 1e-12)
        psi0 = psi_scale * jnp.diag(var) * max(nu0 - d - 1.0, 1.0)
        return cls(x.mean(0), jnp.asarray(kappa0, x.dtype), jnp.asarray(nu0, x.dtype), psi0, covariance)

    # -- per-slot posterior quantities ---------------------------------------------------------
    @classmethod
    def from_prior(cls, prior, covariance: str = "full") -> GaussianNIW:
        """The collapsed family of the NIW part of an explicit-parameter
        :class:`~ppclust.families.NIWPrior` (same hyper-parameters: the Gibbs sampler and EM's MAP fit then
        share one prior).

        Parameters
        ----------
        prior : NIWPrior
            Explicit-parameter prior of :mod:`ppclust.families.gaussian_em`.
        covariance : {"full", "diag", "spherical"}, default "full"
            Covariance structure.

        Returns
        -------
        GaussianNIW
        """
        return cls(prior.mean0, prior.kappa0, prior.nu0, prior.psi0, covariance)

    def _post(self, stats: Stats):
        kn = self.kappa0 + stats.n
        mun = (self.kappa0 * self.mu0 + stats.s) / kn[:, None]
        return kn, self.nu0 + stats.n, mun

    def _psi0_scale(self):
        if self.covariance == "full":
            return jnp.linalg.cholesky(self.psi0)
        if self.covariance == "diag":
            return jnp.diagonal(self.psi0)
        return jnp.trace(self.psi0) * jnp.ones(())

    def empty(self, K: int, d: int | None = None, dtype=None) -> Stats:
        """Statistics of ``K`` empty slots (n = 0, s = 0, scale = the prior's Psi_0 in reduced form)."""
        d = self.mu0.shape[-1] if d is None else d
        dtype = self.mu0.dtype if dtype is None else dtype
        sc = self._psi0_scale().astype(dtype)
        return Stats(jnp.zeros(K, dtype), jnp.zeros((K, d), dtype), jnp.broadcast_to(sc, (K,) + sc.shape))

    def stats(self, x: Array, z: Array, K: int, w: Array | None = None, reduce=None) -> Stats:
        """Sufficient statistics of labelling ``z`` over ``K`` slots (labels outside [0, K) count
        nowhere), point weights ``w``. ``reduce``: for one device's rows of a sharded data set, the
        cross-device sum (``lambda t: jax.lax.psum(t, "data")``) applied to every per-slot sum before
        the statistics are finished, so every device returns the whole data set's statistics.

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
        summ, n, s = one_hot_stats(x, z, K, w, reduce)
        return self._stats_from(x, summ, n, s, triangle_outer_sum(summ), reduce)

    def soft_stats(self, x: Array, r: Array) -> Stats:
        """Posterior statistics from soft assignments ``r`` (n, K) (responsibilities; one-hot rows give
        :meth:`stats`). With ``W = Psi_n^{-1}`` these are the Normal-Wishart variational updates (Bishop
        2006, eqs. 10.60-10.63: beta_k = kappa_n, m_k = mu_n, nu_k = nu_n).

        Parameters
        ----------
        x : array (n, d)
            Points.
        r : array (n, K)
            Responsibilities.

        Returns
        -------
        Stats
        """
        return self._stats_from(x, lambda v: jnp.tensordot(r, v, axes=(0, 0)), r.sum(0), r.T @ x)

    def _stats_from(self, x: Array, summ, n: Array, s: Array, outer_sum=None, reduce=None) -> Stats:
        """Shared body of :meth:`stats` and :meth:`soft_stats`: ``summ`` sums a per-point array into slots."""
        S = centered_scatter(x, summ, n, s, outer_sum, reduce)
        kn = self.kappa0 + n
        dev = s / jnp.maximum(n, 1e-300)[:, None] - self.mu0
        shrink = self.kappa0 * n / kn
        psin = self.psi0 + S + shrink[:, None, None] * dev[:, :, None] * dev[:, None, :]
        if self.covariance == "full":
            scale = jnp.linalg.cholesky(psin)
        elif self.covariance == "diag":
            scale = jnp.diagonal(psin, axis1=1, axis2=2)
        else:
            scale = jnp.trace(psin, axis1=1, axis2=2)
        return Stats(n, s, scale)

    def weighted_stats(self, x: Array, w: Array) -> Stats:
        """:meth:`stats` of one group with point weights ``w`` (n,) (a 0/1 mask: the points of a group), as
        one slot: the scatter is one (d, n) x (n, d) product (d > 4; a fused reduction for d <= 4), not
        the (n, d, d) segment sum of :meth:`stats` (less memory traffic). For the sub-cluster
        sampler's split proposals (:mod:`ppclust.inference.subcluster`).

        Parameters
        ----------
        x : array (n, d)
            Points.
        w : array (n,)
            Point weights.

        Returns
        -------
        Stats
            One slot.
        """

        def outer_sum(xc):
            if xc.shape[1] > 4:
                return ((xc * w[:, None]).T @ xc)[None]
            return jnp.sum(w[:, None, None] * xc[:, :, None] * xc[:, None, :], 0)[None]

        return self._stats_from(x, None, w.sum()[None], (w @ x)[None], outer_sum)

    def _psin_reduced(self, stats: Stats) -> Array:
        r""":math:`\Psi_n` per slot in the form ``scale`` stores it (full: the matrix; diag: its diagonal;
        spherical: its trace)."""
        if self.covariance == "full":
            return stats.scale @ jnp.swapaxes(stats.scale, -1, -2)
        return stats.scale

    def _prior_part(self, n: Array, s: Array) -> Array:
        r""":math:`\Psi_0+\tfrac{\kappa_0 n}{\kappa_n}(\bar x-\mu_0)(\bar x-\mu_0)^\top` in the reduced form
        of :meth:`_psin_reduced` (so :math:`\Psi_n` minus it is the scatter S)."""
        dev = s / jnp.maximum(n, 1e-300)[:, None] - self.mu0
        shrink = self.kappa0 * n / (self.kappa0 + n)
        if self.covariance == "full":
            return self.psi0 + shrink[:, None, None] * dev[:, :, None] * dev[:, None, :]
        if self.covariance == "diag":
            return jnp.diagonal(self.psi0) + shrink[:, None] * dev * dev
        return jnp.trace(self.psi0) + shrink * jnp.sum(dev * dev, -1)

    def pool(self, a: Stats, b: Stats, sign: float = 1.0) -> Stats:
        r"""Statistics of the union of the disjoint groups ``a`` and ``b`` (``sign=1``), or of group ``a``
        without its subgroup ``b`` (``sign=-1``), slot by slot, from the statistics alone (no pass over
        the points): the scatters add up with the between-group term
        :math:`\tfrac{n_1n_2}{n_1+n_2}(\bar x_1-\bar x_2)(\bar x_1-\bar x_2)^\top` of the two disjoint
        parts (the pooled-variance identity), then :math:`\Psi_n` as in :meth:`stats`. Lets a split/merge
        move update two slots in :math:`O(d^3)` (:mod:`ppclust.inference.subcluster`).

        Parameters
        ----------
        a : Stats
            Statistics of the first groups (K slots).
        b : Stats
            Statistics of the second groups (disjoint from ``a``, or subgroups of it).
        sign : float, default 1.0
            +1: union; -1: ``a`` without ``b``.

        Returns
        -------
        Stats
        """
        n = a.n + sign * b.n
        s = a.s + sign * b.s
        S_a = self._psin_reduced(a) - self._prior_part(a.n, a.s)
        S_b = self._psin_reduced(b) - self._prior_part(b.n, b.s)
        # the two disjoint parts: (a, b) for a union of total n; (result, b) of total a.n for a difference
        n1, tot = jnp.where(sign > 0, a.n, n), jnp.where(sign > 0, n, a.n)
        s1 = jnp.where(sign > 0, a.s.T, s.T).T
        delta = b.n[:, None] * s1 - n1[:, None] * b.s  # n1 n2 (mean1 - mean2)
        den = jnp.maximum(n1 * b.n * tot, 1e-300)
        if self.covariance == "full":
            between = delta[:, :, None] * delta[:, None, :] / den[:, None, None]
        elif self.covariance == "diag":
            between = delta * delta / den[:, None]
        else:
            between = jnp.sum(delta * delta, -1) / den
        psin = self._prior_part(n, s) + S_a + sign * (S_b + between)
        if self.covariance == "full":
            psin = 0.5 * (psin + jnp.swapaxes(psin, -1, -2))
            return Stats(n, s, jnp.linalg.cholesky(psin))
        return Stats(n, s, psin)

    def _rank_one(self, stats: Stats, k, x: Array, sign: float) -> Stats:
        # state "without x": for add that is the current slot, for remove the slot after removal
        n_wo = stats.n[k] - (sign < 0)
        s_wo = stats.s[k] - (sign < 0) * x
        kn = self.kappa0 + n_wo
        mun = (self.kappa0 * self.mu0 + s_wo) / kn
        u = x - mun
        c = kn / (kn + 1.0)
        if self.covariance == "full":
            new = chol_rank_one(stats.scale[k], jnp.sqrt(c) * u, sign, unroll=True)
        elif self.covariance == "diag":
            new = stats.scale[k] + sign * c * u * u
        else:
            new = stats.scale[k] + sign * c * jnp.dot(u, u)
        return Stats(stats.n.at[k].add(sign), stats.s.at[k].add(sign * x), stats.scale.at[k].set(new))

    def add(self, stats: Stats, k, x: Array) -> Stats:
        """Statistics with x added to slot k, in O(d^2) (a rank-one Cholesky update for "full").

        Compiled twin: :func:`ppclust.families._niw_cpu.rank_one` (sign +1)."""
        return self._rank_one(stats, k, x, 1.0)

    def remove(self, stats: Stats, k, x: Array) -> Stats:
        """Statistics with x removed from slot k, in O(d^2) (a rank-one Cholesky downdate for "full").

        Compiled twin: :func:`ppclust.families._niw_cpu.rank_one` (sign -1)."""
        return self._rank_one(stats, k, x, -1.0)

    def posterior_params(self, stats: Stats):
        """(kappa_n, nu_n, mu_n) per slot (the Cholesky factor of Psi_n is ``stats.scale``)."""
        return self._post(stats)

    def posterior_mean(self, stats: Stats) -> Array:
        """Posterior mean of the cluster means, mu_n per slot (K, d)."""
        return self._post(stats)[2]

    def posterior_mean_covariance(self, stats: Stats) -> Array:
        r""":math:`E[\Sigma_k\mid\text{slot }k]` in scikit-learn's shapes: ``full`` (K, d, d)
        :math:`\Psi_n/(\nu_n-d-1)` (inverse-Wishart mean), ``diag`` (K, d) :math:`\Psi_{n,jj}/(\nu_n-2)`
        (inverse-gamma :math:`IG(\nu_n/2,\Psi_{n,jj}/2)`), ``spherical`` (K,)
        :math:`\mathrm{tr}\Psi_n/(\nu_n d-2)`. Finite for :math:`\nu_n > d+1` (full) / > 2 / > 2/d.

        Parameters
        ----------
        stats : Stats
            Statistics of the K slots.

        Returns
        -------
        array
            (K, d, d) full, (K, d) diag, (K,) spherical.
        """
        d = stats.s.shape[-1]
        nun = self.nu0 + stats.n
        if self.covariance == "full":
            L = stats.scale
            return L @ jnp.swapaxes(L, -1, -2) / (nun - d - 1.0)[:, None, None]
        if self.covariance == "diag":
            return stats.scale / (nun - 2.0)[:, None]
        return stats.scale / (nun * d - 2.0)

    def log_predictive(self, stats: Stats, x: Array) -> Array:
        r"""log p(x | points in slot k) for every slot (Student-t); empty slots give the prior predictive.

        ``full``: :math:`t_{\nu_n-d+1}\big(x;\ \mu_n,\ \Psi_n(\kappa_n+1)/(\kappa_n(\nu_n-d+1))\big)`
        (Murphy 2007 eq. 232; TVClust eq. 11's collapsed data term); ``diag``: a product of univariate
        :math:`t_{\nu_n}(x_j;\mu_{n,j},\Psi_{n,jj}(\kappa_n+1)/(\kappa_n\nu_n))`; ``spherical``: the
        isotropic :math:`t_{\nu_n d}` with variance :math:`\mathrm{tr}\Psi_n(\kappa_n+1)/(\kappa_n\nu_n d)`.
        Evaluated through :meth:`predictive_cache` and :meth:`log_predictive_cached` (one definition).

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

    # -- the predictive in cached form (Gibbs sweeps; compiled twins in ppclust.families._niw_cpu) ---------
    def predictive_log_norm(self, n: Array, d: int) -> Array:
        r"""The part of the Student-t log-normaliser that depends on the slot size ``n`` only.

        ``full``: :math:`\ln\Gamma(\tfrac{\mathrm{df}+d}2)-\ln\Gamma(\tfrac{\mathrm{df}}2)`,
        :math:`\mathrm{df}=\nu_0+n-d+1`; ``diag``: d times the univariate one with
        :math:`-\tfrac12\ln(\mathrm{df}\,\pi)`, df = :math:`\nu_0+n`; ``spherical``: df =
        :math:`(\nu_0+n)d`, with :math:`-\tfrac d2\ln(\mathrm{df}\,\pi)`.
        Compiled twin: :func:`ppclust.families._niw_cpu.predictive_log_norm`.

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
        nu0 = self.nu0
        if self.covariance == "full":
            df = nu0 + n - d + 1.0
            return gammaln((df + d) / 2.0) - gammaln(df / 2.0)
        if self.covariance == "diag":
            df = nu0 + n
            return d * (gammaln((df + 1.0) / 2.0) - gammaln(df / 2.0) - 0.5 * jnp.log(df * jnp.pi))
        df = (nu0 + n) * d
        return gammaln((df + d) / 2.0) - gammaln(df / 2.0) - 0.5 * d * jnp.log(df * jnp.pi)

    def predictive_cache(self, stats: Stats) -> PredictiveCache:
        r"""Slot constants of :meth:`log_predictive` (:class:`PredictiveCache`).

        ``full``: :math:`c_k = \mathrm{norm}(n_k) - \sum_j\ln L_{k,jj}
        - \tfrac d2\ln(\pi(\kappa_n+1)/\kappa_n)`,
        :math:`a_k=\kappa_n/(\kappa_n+1)`, :math:`h_k=(\mathrm{df}+d)/2`, so that
        :math:`\log p = c_k - h_k\ln(1 + a_k\|L_k^{-1}(x-\mu_n)\|^2)`: the :func:`mvt_logpdf` of the
        docstring above with :math:`\tfrac12\ln|\Psi_n\,\mathrm{fac}|` and
        :math:`\delta/\mathrm{df}=a_k\|L^{-1}u\|^2` expanded
        (fac = :math:`(\kappa_n+1)/(\kappa_n\mathrm{df})`).
        ``diag``: :math:`b_{kj}=1/(\sigma^2_{kj}\mathrm{df})`, :math:`h_k=(\mathrm{df}+1)/2`;
        ``spherical``: :math:`a_k=1/(\sigma^2_k\mathrm{df})`, :math:`h_k=(\mathrm{df}+d)/2`.
        Compiled twin: :func:`ppclust.families._niw_cpu.predictive_cache_slot` (one slot).

        Parameters
        ----------
        stats : Stats
            Statistics of the K slots.

        Returns
        -------
        PredictiveCache
        """
        K, d = stats.s.shape
        kn, nun, mun = self._post(stats)
        norm = self.predictive_log_norm(stats.n, d)
        ones = jnp.ones_like(kn)
        if self.covariance == "full":
            diag = jnp.diagonal(stats.scale, axis1=-2, axis2=-1)
            log_norm = norm - jnp.sum(jnp.log(diag), -1) - 0.5 * d * jnp.log(jnp.pi * (kn + 1.0) / kn)
            return PredictiveCache(mun, log_norm, kn / (kn + 1.0), 0.5 * (nun - d + 1.0 + d), 1.0 / diag)
        if self.covariance == "diag":
            a = nun / 2.0
            df = 2.0 * a
            var = (stats.scale / 2.0) * ((kn + 1.0) / (a * kn))[:, None]
            return PredictiveCache(
                mun, norm - 0.5 * jnp.sum(jnp.log(var), -1), ones, 0.5 * (df + 1.0), 1.0 / (var * df[:, None])
            )
        a = nun * d / 2.0
        df = 2.0 * a
        var = (stats.scale / 2.0) * (kn + 1.0) / (a * kn)
        return PredictiveCache(
            mun, norm - 0.5 * d * jnp.log(var), 1.0 / (var * df), 0.5 * (df + d), jnp.ones_like(stats.s)
        )

    def log_predictive_cached(self, cache: PredictiveCache, stats: Stats, x: Array) -> Array:
        r""":meth:`log_predictive` of x at every slot from the slot constants (K,), O(K d^2) (full) / O(K d).

        ``full``: :math:`c_k - h_k\ln(1 + a_k\|L_k^{-1}(x - \mathrm{loc}_k)\|^2)` (``stats.scale`` = L);
        ``diag``: :math:`c_k - h_k\sum_j\ln(1 + b_{kj}(x_j-\mathrm{loc}_{kj})^2)`; ``spherical``:
        :math:`c_k - h_k\ln(1 + a_k\|x-\mathrm{loc}_k\|^2)`.
        Compiled twin: :func:`ppclust.families._niw_cpu.log_predictive_cached`.

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
        if self.covariance == "full":
            q = solve_lower_sq(stats.scale, u)
            return cache.log_norm - cache.hexp * jnp.log1p(cache.a1 * q)
        if self.covariance == "diag":
            return cache.log_norm - cache.hexp * jnp.sum(jnp.log1p(u * u * cache.b1), -1)
        return cache.log_norm - cache.hexp * jnp.log1p(cache.a1 * jnp.sum(u * u, -1))

    def log_predictive_loo(self, stats: Stats, k, x: Array) -> Array:
        r""":meth:`log_predictive` of x at slot k with x itself left out of the slot, from the slot's
        current factor (``full`` only; no downdate).

        With :math:`v = x - \mu_{n,-x}`, :math:`c = \kappa'/(\kappa'+1)` (:math:`\kappa' = \kappa_0+n_k-1`)
        and :math:`a = v^\top\Psi_n^{-1}v`: :math:`\Psi_{-x} = \Psi_n - c\,vv^\top`, so
        :math:`|\Psi_{-x}| = |\Psi_n|\,r` and :math:`v^\top\Psi_{-x}^{-1}v = a/r` with :math:`r = 1-ca`
        (matrix determinant lemma, Sherman-Morrison) and the Student-t collapses to
        :math:`\mathrm{norm}(n_k-1) - \sum_j\ln L_{jj} - \tfrac d2\ln(\pi(\kappa'+1)/\kappa')
        + \tfrac{\mathrm{df}'+d-1}2\ln r`. Needs :math:`n_k \ge 2` and r well above 0 (else the
        compiled sweep downdates explicitly).
        Compiled twin: :func:`ppclust.families._niw_cpu.log_predictive_loo`.

        Parameters
        ----------
        stats : Stats
            Statistics of the K slots.
        k : int
            Slot holding x and at least one other point.
        x : array (d,)
            A point.

        Returns
        -------
        array ()
        """
        if self.covariance != "full":
            raise ValueError(f"log_predictive_loo is defined for covariance='full', got {self.covariance!r}")
        d = x.shape[-1]
        n1 = stats.n[k] - 1.0
        kn1 = self.kappa0 + n1
        c = kn1 / (kn1 + 1.0)
        L = stats.scale[k]
        v = x - (self.kappa0 * self.mu0 + stats.s[k] - x) / kn1
        r = 1.0 - c * solve_lower_sq(L[None], v[None])[0]
        df1 = self.nu0 + n1 - d + 1.0
        return (
            self.predictive_log_norm(n1, d)
            - jnp.sum(jnp.log(jnp.diagonal(L)))
            - 0.5 * d * jnp.log(jnp.pi * (kn1 + 1.0) / kn1)
            + 0.5 * (df1 + d - 1.0) * jnp.log(r)
        )

    def log_prior_predictive(self, x: Array) -> Array:
        """log p(x) under the prior predictive (an empty slot's :meth:`log_predictive`)."""
        return self.log_predictive(self.empty(1, x.shape[-1], x.dtype), x)[0]

    def log_marginal(self, stats: Stats) -> Array:
        """log p(all points of slot k) with parameters integrated out; 0 for empty slots."""
        return jnp.where(stats.n > 0, self._log_marginal(stats), 0.0)

    def _log_marginal(self, stats: Stats) -> Array:
        d = stats.s.shape[-1]
        kn, nun, _ = self._post(stats)
        n = stats.n
        if self.covariance == "full":
            ld0 = jnp.linalg.slogdet(self.psi0)[1]
            return (
                -0.5 * n * d * jnp.log(jnp.pi)
                + multigammaln(nun / 2.0, d)
                - multigammaln(self.nu0 / 2.0, d)
                + 0.5 * self.nu0 * ld0
                - 0.5 * nun * chol_logdet(stats.scale)
                + 0.5 * d * (jnp.log(self.kappa0) - jnp.log(kn))
            )
        if self.covariance == "diag":
            a0, an = self.nu0 / 2.0, nun / 2.0
            b0, bn = jnp.diagonal(self.psi0) / 2.0, stats.scale / 2.0
            per = (
                gammaln(an)[:, None]
                - gammaln(a0)
                + a0 * jnp.log(b0)
                - an[:, None] * jnp.log(bn)
                + 0.5 * (jnp.log(self.kappa0) - jnp.log(kn))[:, None]
                - 0.5 * n[:, None] * LOG_2PI
            )
            return per.sum(-1)
        a0, an = self.nu0 * d / 2.0, nun * d / 2.0
        b0, bn = jnp.trace(self.psi0) / 2.0, stats.scale / 2.0
        return (
            gammaln(an)
            - gammaln(a0)
            + a0 * jnp.log(b0)
            - an * jnp.log(bn)
            + 0.5 * d * (jnp.log(self.kappa0) - jnp.log(kn))
            - 0.5 * n * d * LOG_2PI
        )

    def sample_posterior(self, key, stats: Stats) -> GaussianParams:
        r"""One draw :math:`(\mu_k, \Sigma_k)` per slot from the NIW posterior (empty slot: the prior).

        ``full``: Bartlett, :math:`W = BB^\top\sim\mathrm{Wishart}(I,\nu_n)` (B lower,
        :math:`B_{jj}^2\sim\chi^2_{\nu_n-j}`, j = 0..d-1, N(0, 1) below), :math:`\Sigma^{-1}=L^{-\top}WL^{-1}`
        with :math:`L` = ``stats.scale`` = chol(:math:`\Psi_n`), so :math:`\Sigma\sim IW(\Psi_n,\nu_n)` and
        ``prec_factor`` :math:`A=B^\top L^{-1}`; then :math:`\mu=\mu_n+A^{-1}\varepsilon/\sqrt{\kappa_n}`.
        ``diag``/``spherical``: :math:`\sigma^2\sim IG(a_n, b_n)` as in :meth:`log_predictive`.

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
        dtype = stats.s.dtype
        kn, nun, mun = self._post(stats)
        T = GAMMA_TRIES
        g = K * d if self.covariance != "spherical" else K  # gamma variates
        n_tri = K * d * d if self.covariance == "full" else 0
        z, u = draw_block(key, dtype, T * g + n_tri + K * d, (T + 1) * g)
        gz, tri, eps = z[: T * g], z[T * g : T * g + n_tri], z[T * g + n_tri :].reshape(K, d)
        gshape = (K, d) if self.covariance != "spherical" else (K,)

        def gam(a):
            a = jnp.broadcast_to(a, gshape)
            return mt_gamma(
                a, gz.reshape((T,) + gshape), u[: T * g].reshape((T,) + gshape), u[T * g :].reshape(gshape)
            )

        if self.covariance == "full":
            chi2 = 2.0 * gam((nun[:, None] - jnp.arange(d)) / 2.0)
            B = jnp.tril(tri.reshape(K, d, d), -1) + jax.vmap(jnp.diag)(jnp.sqrt(chi2))
            L = stats.scale
            Linv = jax.vmap(lambda l_: solve_triangular(l_, jnp.eye(d, dtype=dtype), lower=True))(L)
            A = jnp.swapaxes(B, 1, 2) @ Linv
            half = 0.5 * jnp.sum(jnp.log(chi2), -1) - jnp.sum(jnp.log(jnp.diagonal(L, axis1=1, axis2=2)), -1)
            y = jax.vmap(lambda b_, e_: solve_triangular(b_, e_, lower=True, trans=1))(B, eps)  # B^-T eps
            mean = mun + jnp.einsum("kij,kj->ki", L, y) / jnp.sqrt(kn)[:, None]
            return GaussianParams(mean, A, half)
        if self.covariance == "diag":
            sig2 = (stats.scale / 2.0) / gam((nun / 2.0)[:, None])
            mean = mun + jnp.sqrt(sig2 / kn[:, None]) * eps
            return GaussianParams(mean, 1.0 / jnp.sqrt(sig2), -0.5 * jnp.sum(jnp.log(sig2), -1))
        sig2 = (stats.scale / 2.0) / gam(nun * d / 2.0)
        mean = mun + jnp.sqrt(sig2 / kn)[:, None] * eps
        return GaussianParams(mean, 1.0 / jnp.sqrt(sig2), -0.5 * d * jnp.log(sig2))

    def log_likelihood(self, params: GaussianParams, x: Array) -> Array:
        """log p(x | theta_k) for every slot, theta from :meth:`sample_posterior` (K,)."""
        return gaussian_loglik(params, x)

    def log_likelihood_matrix(self, params: GaussianParams, x: Array) -> Array:
        """:meth:`log_likelihood` of every point (n, d) in every slot, (n, K)."""
        return gaussian_loglik_matrix(params, x)

    def bregman(self, x: Array, means: Array) -> Array:
        """Squared Euclidean distance, the small-variance limit of the Gaussian (DP-means)."""
        return sq_euclidean(x, means)


jax.tree_util.register_dataclass(
    GaussianNIW, data_fields=["mu0", "kappa0", "nu0", "psi0"], meta_fields=["covariance"]
)
