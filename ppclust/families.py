"""Observation families as the algebra of their sufficient statistics.

Every method in ppclust reads its per-cluster likelihood from here (DESIGN "The shared model
definitions"):

* TVClust's and the semi-supervised GMM's Gibbs conditionals use :meth:`log_predictive` and
  :meth:`log_prior_predictive` (cluster parameters integrated out, Neal 2000, Alg. 3);
* RDP-means / DP-means use :meth:`bregman`, the small-variance limit of the same family;
* CEC, CEC-IB and C3L use :class:`GaussianML` (maximum-likelihood Gaussian, cross-entropy
  ``ml_entropy``) with the same rank-one Cholesky algebra.

Per-cluster statistics live in fixed-capacity arrays (``K`` slots) so that every solver is
shape-static and jittable. One point joining or leaving a cluster costs O(d^2) through a rank-one
Cholesky up/down-date, never O(d^3).

Conventions: all functions are pure JAX and jittable; hyperparameters are pytree leaves; the
covariance structure is static. ``Stats.n`` holds (possibly weighted) counts as floats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.scipy.linalg import solve_triangular
from jax.scipy.special import gammaln, multigammaln

Array = jax.Array
LOG_2PI = math.log(2.0 * math.pi)
LOG_2PIE = math.log(2.0 * math.pi * math.e)
#: A Gaussian cluster is numerically singular when its scatter's lambda_min <= SING_TOL * lambda_max
#: (the CEC-IB reference README's rule; 1e-12 is ~1e4 float64 epsilons, well above rounding noise).
SING_TOL = 1e-12


#: ppclust's default prior strength of the NIW mean, kappa0 = 1: the prior mean counts as one observation
#: (a unit-information prior: weak, yet it keeps the predictive of a one-point cluster proper and scale
#: aware; TVClust spec 2.7 [R]). The one default of ppclust's NIW priors (:meth:`GaussianNIW.default`):
#: TVClust's sampler, and the fixed-K semi-supervised GMM's EM MAP fit and Gibbs sampler
#: (:func:`mixture_niw_prior`; the evidence for the mixture is in ``benchmarks/results/ssgmm_prior.md``).
DEFAULT_KAPPA0 = 1.0


class Stats(NamedTuple):
    """Fixed-capacity sufficient statistics of ``K`` cluster slots.

    n : (K,) counts; s : (K, d) sums of the points; scale : family-specific (see each family).
    """

    n: Array
    s: Array
    scale: Array


class PredictiveCache(NamedTuple):
    r"""A family's posterior predictive of ``K`` slots in the form a Gibbs sweep evaluates per point.

    Every family here has a predictive :math:`\log p(x\mid k) = c_k - h_k\,\phi(a_k\,q_k(x))` with
    :math:`q_k(x)` the (scaled) squared distance of x to ``loc[k]``; the slot constants depend on the slot's
    statistics only, so a sweep computes them once per slot change (O(d) per slot and point remain).

    loc : (K, d) predictive location; log_norm : (K,) :math:`c_k` (normaliser and log-determinant);
    a1 : (K,) factor of the quadratic form; hexp : (K,) exponent :math:`h_k`; b1 : (K, d) per-coordinate
    factors (full: the reciprocal Cholesky diagonal; diag: :math:`1/(\sigma^2_{kj}\,\mathrm{df}_k)`).
    Unused fields are filled with ones.
    """

    loc: Array
    log_norm: Array
    a1: Array
    hexp: Array
    b1: Array


# ----------------------------------------------------------------------------------------------
# Rank-one Cholesky algebra
# ----------------------------------------------------------------------------------------------


# XLA on CPU runs a loop body as a sequence of small kernels; a fori_loop over d columns per rank-one update
# or a LAPACK triangular solve over K slots per point is dozens of them inside a Gibbs sweep. For small d the
# same recurrences are unrolled in Python so that XLA fuses them (thresholds measured on the TVClust sweep).
_UNROLL_CHOL_D = 4
_UNROLL_SOLVE_D = 16


def _chol_rank_one(L: Array, v: Array, sign: float, unroll: bool = False) -> Array:
    """chol(L L^T + sign * v v^T) in O(d^2) (sign = +1 update, -1 downdate).

    Standard column-by-column Givens-type recurrence; a downdate that would leave the matrix
    indefinite produces NaN, which callers detect (it means the cluster became singular).
    ``unroll``: the same recurrence unrolled over the columns when d <= ``_UNROLL_CHOL_D`` (same values).
    Compiled twin: :func:`ppclust._families_cpu.chol_rank_one`.
    """
    d = L.shape[-1]
    if unroll and d <= _UNROLL_CHOL_D:
        return _chol_rank_one_unrolled(L, v, sign)
    idx = jnp.arange(d)

    def body(k, carry):
        L, v = carry
        lkk, vk = L[k, k], v[k]
        r = jnp.sqrt(lkk * lkk + sign * vk * vk)
        c = r / lkk
        s = vk / lkk
        below = idx > k
        col = jnp.where(below, (L[:, k] + sign * s * v) / c, L[:, k]).at[k].set(r)
        v = jnp.where(below, c * v - s * col, v)
        return L.at[:, k].set(col), v

    return lax.fori_loop(0, d, body, (L, v))[0]


def _chol_rank_one_unrolled(L: Array, v: Array, sign: float) -> Array:
    """:func:`_chol_rank_one` with the column loop unrolled in Python (small static d)."""
    d = L.shape[-1]
    idx = np.arange(d)
    for k in range(d):
        lkk, vk = L[k, k], v[k]
        r = jnp.sqrt(lkk * lkk + sign * vk * vk)
        c = r / lkk
        s = vk / lkk
        below = idx > k
        col = jnp.where(below, (L[:, k] + sign * s * v) / c, jnp.where(idx == k, r, L[:, k]))
        v = jnp.where(below, c * v - s * col, v)
        L = L.at[:, k].set(col)
    return L


def solve_lower_sq(L: Array, u: Array) -> Array:
    r""":math:`\|L_k^{-1}u_k\|^2` for a batch of lower factors L (K, d, d) and vectors u (K, d), (K,).

    Forward substitution unrolled over the d columns (vectorised over the K slots) when d <=
    ``_UNROLL_SOLVE_D``, a triangular solve otherwise. Compiled twin: :func:`ppclust._families_cpu.solve_sq`.
    """
    d = u.shape[-1]
    if d > _UNROLL_SOLVE_D:
        w = _solve_lower(L, u)
        return jnp.sum(w * w, -1)
    w, q = [], 0.0
    for j in range(d):
        acc = u[:, j]
        for m in range(j):
            acc = acc - L[:, j, m] * w[m]
        w.append(acc / L[:, j, j])
        q = q + w[j] * w[j]
    return q


def chol_update(L: Array, v: Array) -> Array:
    """Lower Cholesky factor of ``L L^T + v v^T`` in O(d^2)."""
    return _chol_rank_one(L, v, 1.0)


def chol_downdate(L: Array, v: Array) -> Array:
    """Lower Cholesky factor of ``L L^T - v v^T`` in O(d^2) (NaN if the result is not PD)."""
    return _chol_rank_one(L, v, -1.0)


def chol_logdet(L: Array) -> Array:
    """log det(L L^T) for a (batch of) lower Cholesky factor(s)."""
    return 2.0 * jnp.sum(jnp.log(jnp.diagonal(L, axis1=-2, axis2=-1)), axis=-1)


def _solve_lower(L: Array, b: Array) -> Array:
    """L^{-1} b for a batch of factors L (K, d, d) and vectors b (K, d)."""
    return jax.vmap(lambda l_, b_: solve_triangular(l_, b_, lower=True))(L, b)


def _slot_sum(v: Array, z: Array, K: int, w: Array | None) -> Array:
    r"""Per-slot sums :math:`\sum_i w_i [z_i = k] v_i` (K, ...); labels outside [0, K) are dropped.

    On CPU a segment sum (O(n), one pass); elsewhere a one-hot matrix product (no scatter atomics on
    accelerators). On XLA:CPU the one-hot product costs about 100x the segment sum at n = 10^5, K = 32."""
    if w is not None:
        v = v * w.reshape((-1,) + (1,) * (v.ndim - 1))
    if jax.default_backend() == "cpu":
        return jax.ops.segment_sum(v, z, K)
    r = jax.nn.one_hot(z, K, dtype=v.dtype)
    return jnp.tensordot(r, v, axes=(0, 0))


def _one_hot_stats(x: Array, z: Array, K: int, w: Array | None, reduce=None):
    """``(slot_sum, n, s)``: the per-slot summing function of this labelling, counts and sums.

    ``reduce``: None, or a function applied to every per-slot sum, e.g. ``lambda t: jax.lax.psum(t,
    "data")`` when ``x`` holds one device's rows of a sharded data set (the sums are then the data set's;
    the families' ``stats(..., reduce=)``)."""
    if reduce is None:
        summ = lambda v: _slot_sum(v, z, K, w)  # noqa: E731
    else:
        summ = lambda v: reduce(_slot_sum(v, z, K, w))  # noqa: E731
    n = summ(jnp.ones(x.shape[:1], x.dtype))
    return summ, n, summ(x)


def _triangle_outer_sum(summ):
    """``outer_sum`` for :func:`_centered_scatter`: the per-slot sums of the d(d+1)/2 upper-triangle products
    only, mirrored (the same additions as the full (n, d, d) sum, so the same values, with half the
    memory traffic: about 1.7x faster at d = 30, 3x at d = 2 for the segment sum on CPU)."""
    def outer_sum(xc):
        d = xc.shape[1]
        iu, ju = np.triu_indices(d)
        t = summ(xc[:, iu] * xc[:, ju])
        out = jnp.zeros(t.shape[:1] + (d, d), t.dtype)
        return out.at[:, iu, ju].set(t).at[:, ju, iu].set(t)

    return outer_sum


def _centered_scatter(x: Array, summ, n: Array, s: Array, outer_sum=None, reduce=None) -> Array:
    """Per-slot scatter sum_i r_ik (x_i - xbar_k)(x_i - xbar_k)^T, shift-stabilised (``summ`` from
    :func:`_one_hot_stats`; ``outer_sum(xc)``, if given, sums the outer products of the shifted points
    itself, e.g. as one matrix product). The shift is the mean of the rows, of all devices' rows under
    ``reduce`` (any shift gives the same scatter in exact arithmetic; all devices must use one)."""
    c = x.mean(0) if reduce is None else reduce(x.sum(0)) / reduce(jnp.asarray(x.shape[0], x.dtype))
    xc = x - c
    sc = s - n[:, None] * c
    outer = summ(xc[:, :, None] * xc[:, None, :]) if outer_sum is None else outer_sum(xc)
    mean_c = sc / jnp.maximum(n, 1e-300)[:, None]
    return outer - n[:, None, None] * mean_c[:, :, None] * mean_c[:, None, :]


def mvt_logpdf(delta: Array, logdet: Array, df: Array, d: int) -> Array:
    """Multivariate Student-t log-density from the Mahalanobis term and log|scale|."""
    return (gammaln((df + d) / 2.0) - gammaln(df / 2.0) - 0.5 * d * jnp.log(df * jnp.pi)
            - 0.5 * logdet - 0.5 * (df + d) * jnp.log1p(delta / df))


_GAMMA_TRIES = 12


def _mt_gamma(a: Array, z: Array, u: Array, ub: Array) -> Array:
    """Marsaglia-Tsang transform of given normals ``z``/uniforms ``u`` (tries, *shape) and ``ub`` (*shape)."""
    boost = a < 1.0
    b = jnp.where(boost, a + 1.0, a)
    dd = b - 1.0 / 3.0
    c = 1.0 / jnp.sqrt(9.0 * dd)
    v = (1.0 + c * z) ** 3
    ok = (v > 0) & (jnp.log(u) < 0.5 * z * z + dd - dd * v + dd * jnp.log(jnp.where(v > 0, v, 1.0)))
    first = jnp.where(ok.any(0), jnp.argmax(ok, 0), z.shape[0] - 1)
    g = dd * jnp.maximum(jnp.take_along_axis(v, first[None], 0)[0], 1e-300)
    return jnp.where(boost, g * jnp.exp(jnp.log(ub) / a), g)


def _draw_block(key, dtype, n_normal: int, n_uniform: int):
    """One normal and one uniform call for all the randomness of a draw (each threefry call compiles
    separately and costs about a second of compile time in a vmapped sweep)."""
    kz, ku = jax.random.split(key)
    return (jax.random.normal(kz, (n_normal,), dtype),
            jax.random.uniform(ku, (n_uniform,), dtype, minval=jnp.finfo(dtype).tiny))


def gamma_draws(key, a: Array, shape, dtype) -> Array:
    r"""Gamma(a, 1) variates by Marsaglia & Tsang (2000) with a fixed number of proposals.

    Each variate gets ``_GAMMA_TRIES`` = 12 vectorised proposals and keeps the first accepted one
    (acceptance >= 0.95 per proposal for shape >= 1, so all rejected has probability < 1e-15; that case
    keeps the last proposal). ``a < 1`` uses Gamma(a + 1) * U^(1/a). Same distribution as
    ``jax.random.gamma`` without its while loop (cheaper to compile inside the vmapped Gibbs sweep).
    """
    shape = tuple(shape)
    m = math.prod(shape)
    T = _GAMMA_TRIES
    z, u = _draw_block(key, dtype, T * m, (T + 1) * m)
    return _mt_gamma(jnp.broadcast_to(jnp.asarray(a, dtype), shape), z.reshape((T,) + shape),
                     u[:T * m].reshape((T,) + shape), u[T * m:].reshape(shape))


class GaussianParams(NamedTuple):
    r"""Explicit Gaussian cluster parameters of ``K`` slots (Neal 2000, Algorithm 2).

    ``mean`` (K, d); ``prec_factor`` a factor :math:`A` of the precision, :math:`A^\top A=\Sigma^{-1}`:
    (K, d, d) full, (K, d) diagonal (:math:`1/\sigma_j`), (K,) spherical (:math:`1/\sigma`);
    ``half_logdet_prec`` (K,) :math:`\tfrac12\log\det\Sigma^{-1}`.
    """

    mean: Array
    prec_factor: Array
    half_logdet_prec: Array


def gaussian_loglik(params: GaussianParams, x: Array) -> Array:
    """log N(x | mean_k, Sigma_k) for every slot (K,): one matrix-vector product, no solve."""
    u = x - params.mean
    A = params.prec_factor
    if A.ndim == 3:
        w = jnp.einsum("kij,kj->ki", A, u)
    elif A.ndim == 2:
        w = A * u
    else:
        w = A[:, None] * u
    return -0.5 * x.shape[-1] * LOG_2PI + params.half_logdet_prec - 0.5 * jnp.sum(w * w, -1)


def gaussian_loglik_matrix(params: GaussianParams, x: Array) -> Array:
    r""":func:`gaussian_loglik` for a batch of points, (n, d) -> (n, K), as matrix products.

    The expanded square :math:`(x-\mu_k)^\top P_k (x-\mu_k) = x^\top P_k x - 2x^\top P_k\mu_k
    + \mu_k^\top P_k\mu_k` with :math:`P_k = A_k^\top A_k`: full covariance with d <= 4 one (n, d^2) x
    (d^2, K) and one (n, d) x (d, K) product (d > 4: :math:`\|A_k x - A_k\mu_k\|^2` from one (n, d) x
    (d, K d) product), diagonal / spherical two (n, d) x (d, K) products (clamped at 0 against
    rounding). The parallel samplers' data term (n x K block, no loop over points).
    """
    A, mean = params.prec_factor, params.mean
    K, d = mean.shape
    if A.ndim == 3 and d > 4:  # (n, K d) product, then the square: no (n, d^2) features
        w = (x @ A.reshape(K * d, d).T).reshape(x.shape[0], K, d) - jnp.einsum("kij,kj->ki", A, mean)
        sq = jnp.sum(w * w, -1)
    elif A.ndim == 3:
        P = jnp.einsum("kji,kjl->kil", A, A)
        b = jnp.einsum("kil,kl->ki", P, mean)
        quad = (x[:, :, None] * x[:, None, :]).reshape(-1, d * d) @ P.reshape(K, d * d).T
        sq = jnp.maximum(quad - 2.0 * x @ b.T + jnp.sum(b * mean, -1), 0.0)
    else:
        a2 = A * A if A.ndim == 2 else jnp.broadcast_to((A * A)[:, None], mean.shape)
        sq = (x * x) @ a2.T - 2.0 * x @ (a2 * mean).T + jnp.sum(a2 * mean * mean, -1)
        sq = jnp.maximum(sq, 0.0)
    return -0.5 * d * LOG_2PI + params.half_logdet_prec - 0.5 * sq


def normal_logpdf(x, loc, scale, *, xp=jnp):
    r"""Elementwise 1-D Gaussian log-density :math:`\ln N(x; \mu, \sigma^2) = -\tfrac12\ln 2\pi - \ln\sigma
    - \tfrac12((x-\mu)/\sigma)^2` (broadcasting; ``scale`` = :math:`\sigma`). ``xp``: the array namespace
    (default ``jax.numpy``; ``numpy`` for host-side code)."""
    return -0.5 * LOG_2PI - xp.log(scale) - 0.5 * ((x - loc) / scale) ** 2


def isotropic_gaussian_loglik(sq, var, d, *, xp=jnp):
    r"""Log-likelihood of ``d`` independent coordinates under :math:`N(\mu, s^2 I_d)` from the squared
    distance ``sq`` = :math:`\|x-\mu\|^2`: :math:`-\tfrac{sq}{2s^2} - \tfrac d2\ln(2\pi s^2)` (broadcasting;
    ``var`` = :math:`s^2`)."""
    return -0.5 * sq / var - 0.5 * d * xp.log(2 * math.pi * var)


def gaussian_log_normaliser_chol(L, *, xp=jnp):
    r"""Log normaliser of :math:`N(\mu, LL^\top)`: :math:`\tfrac d2\ln 2\pi + \sum_i\ln|L_{ii}|`
    (= :math:`\tfrac d2\ln 2\pi + \tfrac12\ln\det LL^\top`), for a (batch of) (d, d) lower factor(s)."""
    d = L.shape[-1]
    return 0.5 * d * LOG_2PI + xp.sum(xp.log(xp.abs(xp.diagonal(L, axis1=-2, axis2=-1))), -1)


def gaussian_logpdf_chol(x: Array, mean: Array, L: Array) -> Array:
    r"""Full-covariance log-density :math:`\ln N(x_i; \mu_k, L_kL_k^\top)` for every point and slot:
    ``x`` (n, d), ``mean`` (K, d), lower factors ``L`` (K, d, d) -> (n, K); with
    :math:`w = L_k^{-1}(x_i-\mu_k)` it is
    :math:`-\tfrac d2\ln 2\pi - \tfrac12\ln\det L_kL_k^\top - \tfrac12\|w\|^2`
    (:func:`gaussian_log_normaliser_chol`)."""
    diff = x[:, None, :] - mean[None]  # (n, K, d)
    w = jax.vmap(lambda Lk, dk: solve_triangular(Lk, dk.T, lower=True).T, in_axes=(0, 1), out_axes=1)(L, diff)
    return -gaussian_log_normaliser_chol(L)[None] - 0.5 * jnp.sum(w * w, -1)


def _pytree(cls, data: tuple[str, ...], meta: tuple[str, ...] = ()):
    jax.tree_util.register_dataclass(cls, data_fields=list(data), meta_fields=list(meta))
    return cls


# ----------------------------------------------------------------------------------------------
# Gaussian with Normal-inverse-Wishart prior
# ----------------------------------------------------------------------------------------------


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
    def default(cls, x, covariance: str = "full", kappa0: float = DEFAULT_KAPPA0, nu0: float | None = None,
                psi_scale: float = 1.0) -> GaussianNIW:
        """A weak data-scaled prior: mu0 = data mean, Psi0 = psi_scale * diag(var(x)) * (nu0 - d - 1 or 1).

        With standardised features and ``psi_scale=1`` this is the spec's [R] default
        (mu0 = 0, kappa0 = 1, Psi0 = I, nu0 = d + 2, TVClust spec 2.7).
        """
        x = jnp.asarray(x)
        d = x.shape[1]
        nu0 = float(d + 2) if nu0 is None else float(nu0)
        var = jnp.maximum(jnp.var(x, axis=0), 1e-12)
        psi0 = psi_scale * jnp.diag(var) * max(nu0 - d - 1.0, 1.0)
        return cls(x.mean(0), jnp.asarray(kappa0, x.dtype), jnp.asarray(nu0, x.dtype), psi0, covariance)

    # -- per-slot posterior quantities ---------------------------------------------------------
    @classmethod
    def from_prior(cls, prior: NIWPrior, covariance: str = "full") -> GaussianNIW:
        """The collapsed family of the NIW part of an explicit-parameter :class:`NIWPrior` (same
        hyper-parameters: the Gibbs sampler and EM's MAP fit then share one prior)."""
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
        d = self.mu0.shape[-1] if d is None else d
        dtype = self.mu0.dtype if dtype is None else dtype
        sc = self._psi0_scale().astype(dtype)
        return Stats(jnp.zeros(K, dtype), jnp.zeros((K, d), dtype), jnp.broadcast_to(sc, (K,) + sc.shape))

    def stats(self, x: Array, z: Array, K: int, w: Array | None = None, reduce=None) -> Stats:
        """Sufficient statistics of labelling ``z`` over ``K`` slots (labels outside [0, K) count
        nowhere), point weights ``w``. ``reduce``: for one device's rows of a sharded data set, the
        cross-device sum (``lambda t: jax.lax.psum(t, "data")``) applied to every per-slot sum before
        the statistics are finished, so every device returns the whole data set's statistics."""
        summ, n, s = _one_hot_stats(x, z, K, w, reduce)
        return self._stats_from(x, summ, n, s, _triangle_outer_sum(summ), reduce)

    def soft_stats(self, x: Array, r: Array) -> Stats:
        """Posterior statistics from soft assignments ``r`` (n, K) (responsibilities; one-hot rows give
        :meth:`stats`). With ``W = Psi_n^{-1}`` these are the Normal-Wishart variational updates (Bishop
        2006, eqs. 10.60-10.63: beta_k = kappa_n, m_k = mu_n, nu_k = nu_n)."""
        return self._stats_from(x, lambda v: jnp.tensordot(r, v, axes=(0, 0)), r.sum(0), r.T @ x)

    def _stats_from(self, x: Array, summ, n: Array, s: Array, outer_sum=None, reduce=None) -> Stats:
        """Shared body of :meth:`stats` and :meth:`soft_stats`: ``summ`` sums a per-point array into slots."""
        S = _centered_scatter(x, summ, n, s, outer_sum, reduce)
        kn = self.kappa0 + n
        dev = s / jnp.maximum(n, 1e-300)[:, None] - self.mu0
        shrink = (self.kappa0 * n / kn)
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
        the (n, d, d) segment sum of :meth:`stats` (about 10x faster at d = 30). For the sub-cluster
        sampler's split proposals (:mod:`ppclust.inference.subcluster`)."""
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
        move update two slots in :math:`O(d^3)` (:mod:`ppclust.inference.subcluster`)."""
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
            new = _chol_rank_one(stats.scale[k], jnp.sqrt(c) * u, sign, unroll=True)
        elif self.covariance == "diag":
            new = stats.scale[k] + sign * c * u * u
        else:
            new = stats.scale[k] + sign * c * jnp.dot(u, u)
        return Stats(stats.n.at[k].add(sign), stats.s.at[k].add(sign * x), stats.scale.at[k].set(new))

    def add(self, stats: Stats, k, x: Array) -> Stats:
        return self._rank_one(stats, k, x, 1.0)

    def remove(self, stats: Stats, k, x: Array) -> Stats:
        return self._rank_one(stats, k, x, -1.0)

    def posterior_params(self, stats: Stats):
        """(kappa_n, nu_n, mu_n) per slot (the Cholesky factor of Psi_n is ``stats.scale``)."""
        return self._post(stats)

    def posterior_mean(self, stats: Stats) -> Array:
        return self._post(stats)[2]

    def posterior_mean_covariance(self, stats: Stats) -> Array:
        r""":math:`E[\Sigma_k\mid\text{slot }k]` in scikit-learn's shapes: ``full`` (K, d, d)
        :math:`\Psi_n/(\nu_n-d-1)` (inverse-Wishart mean), ``diag`` (K, d) :math:`\Psi_{n,jj}/(\nu_n-2)`
        (inverse-gamma :math:`IG(\nu_n/2,\Psi_{n,jj}/2)`), ``spherical`` (K,)
        :math:`\mathrm{tr}\Psi_n/(\nu_n d-2)`. Finite for :math:`\nu_n > d+1` (full) / > 2 / > 2/d."""
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
        """
        return self.log_predictive_cached(self.predictive_cache(stats), stats, x)

    # -- the predictive in cached form (Gibbs sweeps; compiled twins in ppclust._families_cpu) ---------
    def predictive_log_norm(self, n: Array, d: int) -> Array:
        r"""The part of the Student-t log-normaliser that depends on the slot size ``n`` only.

        ``full``: :math:`\ln\Gamma(\tfrac{\mathrm{df}+d}2)-\ln\Gamma(\tfrac{\mathrm{df}}2)`,
        :math:`\mathrm{df}=\nu_0+n-d+1`; ``diag``: d times the univariate one with
        :math:`-\tfrac12\ln(\mathrm{df}\,\pi)`, df = :math:`\nu_0+n`; ``spherical``: df =
        :math:`(\nu_0+n)d`, with :math:`-\tfrac d2\ln(\mathrm{df}\,\pi)`.
        Compiled twin: :func:`ppclust._families_cpu.predictive_log_norm`.
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
        Compiled twin: :func:`ppclust._families_cpu.predictive_cache_slot` (one slot).
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
            return PredictiveCache(mun, norm - 0.5 * jnp.sum(jnp.log(var), -1), ones, 0.5 * (df + 1.0),
                                   1.0 / (var * df[:, None]))
        a = nun * d / 2.0
        df = 2.0 * a
        var = (stats.scale / 2.0) * (kn + 1.0) / (a * kn)
        return PredictiveCache(mun, norm - 0.5 * d * jnp.log(var), 1.0 / (var * df), 0.5 * (df + d),
                               jnp.ones_like(stats.s))

    def log_predictive_cached(self, cache: PredictiveCache, stats: Stats, x: Array) -> Array:
        r""":meth:`log_predictive` of x at every slot from the slot constants (K,), O(K d^2) (full) / O(K d).

        ``full``: :math:`c_k - h_k\ln(1 + a_k\|L_k^{-1}(x - \mathrm{loc}_k)\|^2)` (``stats.scale`` = L);
        ``diag``: :math:`c_k - h_k\sum_j\ln(1 + b_{kj}(x_j-\mathrm{loc}_{kj})^2)`; ``spherical``:
        :math:`c_k - h_k\ln(1 + a_k\|x-\mathrm{loc}_k\|^2)`.
        Compiled twin: :func:`ppclust._families_cpu.log_predictive_cached`.
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
        compiled sweep downdates explicitly). Compiled twin: :func:`ppclust._families_cpu.log_predictive_loo`.
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
        return (self.predictive_log_norm(n1, d) - jnp.sum(jnp.log(jnp.diagonal(L)))
                - 0.5 * d * jnp.log(jnp.pi * (kn1 + 1.0) / kn1) + 0.5 * (df1 + d - 1.0) * jnp.log(r))

    def log_prior_predictive(self, x: Array) -> Array:
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
            return (-0.5 * n * d * jnp.log(jnp.pi)
                    + multigammaln(nun / 2.0, d) - multigammaln(self.nu0 / 2.0, d)
                    + 0.5 * self.nu0 * ld0 - 0.5 * nun * chol_logdet(stats.scale)
                    + 0.5 * d * (jnp.log(self.kappa0) - jnp.log(kn)))
        if self.covariance == "diag":
            a0, an = self.nu0 / 2.0, nun / 2.0
            b0, bn = jnp.diagonal(self.psi0) / 2.0, stats.scale / 2.0
            per = (gammaln(an)[:, None] - gammaln(a0) + a0 * jnp.log(b0) - an[:, None] * jnp.log(bn)
                   + 0.5 * (jnp.log(self.kappa0) - jnp.log(kn))[:, None] - 0.5 * n[:, None] * LOG_2PI)
            return per.sum(-1)
        a0, an = self.nu0 * d / 2.0, nun * d / 2.0
        b0, bn = jnp.trace(self.psi0) / 2.0, stats.scale / 2.0
        return (gammaln(an) - gammaln(a0) + a0 * jnp.log(b0) - an * jnp.log(bn)
                + 0.5 * d * (jnp.log(self.kappa0) - jnp.log(kn)) - 0.5 * n * d * LOG_2PI)

    def sample_posterior(self, key, stats: Stats) -> GaussianParams:
        r"""One draw :math:`(\mu_k, \Sigma_k)` per slot from the NIW posterior (empty slot: the prior).

        ``full``: Bartlett, :math:`W = BB^\top\sim\mathrm{Wishart}(I,\nu_n)` (B lower,
        :math:`B_{jj}^2\sim\chi^2_{\nu_n-j}`, j = 0..d-1, N(0, 1) below), :math:`\Sigma^{-1}=L^{-\top}WL^{-1}`
        with :math:`L` = ``stats.scale`` = chol(:math:`\Psi_n`), so :math:`\Sigma\sim IW(\Psi_n,\nu_n)` and
        ``prec_factor`` :math:`A=B^\top L^{-1}`; then :math:`\mu=\mu_n+A^{-1}\varepsilon/\sqrt{\kappa_n}`.
        ``diag``/``spherical``: :math:`\sigma^2\sim IG(a_n, b_n)` as in :meth:`log_predictive`.
        """
        K, d = stats.s.shape
        dtype = stats.s.dtype
        kn, nun, mun = self._post(stats)
        T = _GAMMA_TRIES
        g = K * d if self.covariance != "spherical" else K  # gamma variates
        n_tri = K * d * d if self.covariance == "full" else 0
        z, u = _draw_block(key, dtype, T * g + n_tri + K * d, (T + 1) * g)
        gz, tri, eps = z[:T * g], z[T * g:T * g + n_tri], z[T * g + n_tri:].reshape(K, d)
        gshape = (K, d) if self.covariance != "spherical" else (K,)

        def gam(a):
            a = jnp.broadcast_to(a, gshape)
            return _mt_gamma(a, gz.reshape((T,) + gshape), u[:T * g].reshape((T,) + gshape),
                             u[T * g:].reshape(gshape))

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


_pytree(GaussianNIW, ("mu0", "kappa0", "nu0", "psi0"), ("covariance",))


# ----------------------------------------------------------------------------------------------
# Spherical Gaussian with known variance (the DP-means / RDP-means limit)
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SphericalGaussian:
    r"""N(x; mu_k, sigma2 I) with known variance and prior mu ~ N(mu0, tau2 I).

    The scaled family of TVClust spec 3.2: as ``sigma2 -> 0`` TVClust's Gibbs sampler becomes
    RDP-means with the Bregman divergence :meth:`bregman` (squared Euclidean).
    ``Stats.scale`` holds the per-slot sum of squared norms (needed by :meth:`log_marginal`).
    """

    sigma2: Array
    mu0: Array
    tau2: Array

    def empty(self, K: int, d: int | None = None, dtype=None) -> Stats:
        d = self.mu0.shape[-1] if d is None else d
        dtype = self.mu0.dtype if dtype is None else dtype
        return Stats(jnp.zeros(K, dtype), jnp.zeros((K, d), dtype), jnp.zeros(K, dtype))

    def stats(self, x: Array, z: Array, K: int, w: Array | None = None, reduce=None) -> Stats:
        r, n, s = _one_hot_stats(x, z, K, w, reduce)
        return Stats(n, s, r(jnp.sum(x * x, -1)))

    def add(self, stats: Stats, k, x: Array) -> Stats:
        return Stats(stats.n.at[k].add(1.0), stats.s.at[k].add(x), stats.scale.at[k].add(x @ x))

    def remove(self, stats: Stats, k, x: Array) -> Stats:
        return Stats(stats.n.at[k].add(-1.0), stats.s.at[k].add(-x), stats.scale.at[k].add(-(x @ x)))

    def _post(self, stats: Stats):
        v = 1.0 / (1.0 / self.tau2 + stats.n / self.sigma2)
        m = v[:, None] * (self.mu0 / self.tau2 + stats.s / self.sigma2)
        return v, m

    def posterior_mean(self, stats: Stats) -> Array:
        return self._post(stats)[1]

    def log_predictive(self, stats: Stats, x: Array) -> Array:
        r""":math:`\log N(x;\ m_n,\ (\sigma^2+v_n)I)` per slot, :math:`v_n = (1/\tau^2+n/\sigma^2)^{-1}`,
        :math:`m_n = v_n(\mu_0/\tau^2+\sum x/\sigma^2)`; through :meth:`predictive_cache`."""
        return self.log_predictive_cached(self.predictive_cache(stats), stats, x)

    def predictive_log_norm(self, n: Array, d: int) -> Array:
        """Size-only part of the log-normaliser: none for a known variance (0)."""
        return jnp.zeros_like(n)

    def predictive_cache(self, stats: Stats) -> PredictiveCache:
        r"""Slot constants: :math:`c_k = -\tfrac d2\ln(2\pi p_k)`, :math:`a_k = 1/(2p_k)`,
        :math:`p_k = \sigma^2+v_n` (the predictive is :math:`c_k - a_k\|x-m_n\|^2`, no ``hexp``).
        Compiled twin: :func:`ppclust._families_cpu.predictive_cache_slot`."""
        d = stats.s.shape[-1]
        v, m = self._post(stats)
        pv = self.sigma2 + v
        ones = jnp.ones_like(pv)
        return PredictiveCache(m, -0.5 * d * jnp.log(2.0 * jnp.pi * pv), 0.5 / pv, ones, jnp.ones_like(m))

    def log_predictive_cached(self, cache: PredictiveCache, stats: Stats, x: Array) -> Array:
        r""":math:`c_k - a_k\|x-\mathrm{loc}_k\|^2` (K,). Compiled twin:
        :func:`ppclust._families_cpu.log_predictive_cached`."""
        u = x - cache.loc
        return cache.log_norm - cache.a1 * jnp.sum(u * u, -1)

    def log_prior_predictive(self, x: Array) -> Array:
        d = x.shape[-1]
        pv = self.sigma2 + self.tau2
        return -0.5 * (d * jnp.log(2.0 * jnp.pi * pv) + jnp.sum((x - self.mu0) ** 2) / pv)

    def log_marginal(self, stats: Stats) -> Array:
        # per coordinate the slot's points are N(mu0 1, sigma2 I + tau2 11^T)
        d = stats.s.shape[-1]
        n = stats.n
        ss = stats.scale - 2.0 * stats.s @ self.mu0 + n * (self.mu0 @ self.mu0)  # sum ||x - mu0||^2
        t = stats.s - n[:, None] * self.mu0  # sum (x - mu0)
        quad = ss - self.tau2 / (self.sigma2 + n * self.tau2) * jnp.sum(t * t, -1)
        return (-0.5 * n * d * jnp.log(2.0 * jnp.pi * self.sigma2)
                - 0.5 * d * jnp.log1p(n * self.tau2 / self.sigma2) - 0.5 * quad / self.sigma2)

    def sample_posterior(self, key, stats: Stats) -> GaussianParams:
        """One mean per slot from its posterior N(m_n, v_n I) (empty slot: the prior); variance known."""
        K, d = stats.s.shape
        v, m = self._post(stats)
        mean = m + jnp.sqrt(v)[:, None] * jax.random.normal(key, (K, d), stats.s.dtype)
        prec = jnp.broadcast_to(1.0 / jnp.sqrt(self.sigma2), (K,)).astype(mean.dtype)
        half = jnp.broadcast_to(-0.5 * d * jnp.log(self.sigma2), (K,)).astype(mean.dtype)
        return GaussianParams(mean, prec, half)

    def log_likelihood(self, params: GaussianParams, x: Array) -> Array:
        """log N(x | mean_k, sigma2 I) for every slot (K,)."""
        return gaussian_loglik(params, x)

    def log_likelihood_matrix(self, params: GaussianParams, x: Array) -> Array:
        """:meth:`log_likelihood` of every point (n, d) in every slot, (n, K)."""
        return gaussian_loglik_matrix(params, x)

    def bregman(self, x: Array, means: Array) -> Array:
        """Squared Euclidean distance ||x - mu||^2 (DP-means; the sigma2 factor is absorbed in lambda)."""
        return sq_euclidean(x, means)


_pytree(SphericalGaussian, ("sigma2", "mu0", "tau2"))


# ----------------------------------------------------------------------------------------------
# Multinomial with Dirichlet prior (count data, text)
# ----------------------------------------------------------------------------------------------


def log_multinomial_coef(x: Array) -> Array:
    """log(m! / prod_j x_j!) for count vectors x (..., d)."""
    return gammaln(jnp.sum(x, -1) + 1.0) - jnp.sum(gammaln(x + 1.0), -1)


@dataclass(frozen=True)
class Multinomial:
    r"""Count vectors x ~ Mult(m, pi_k), pi_k ~ Dir(alpha); predictive is Dirichlet-multinomial.

    ``Stats.s`` holds the per-slot summed counts; ``Stats.scale`` the per-slot sum of log
    multinomial coefficients (so :meth:`log_marginal` is an exact probability).
    """

    alpha: Array  # (d,)

    def empty(self, K: int, d: int | None = None, dtype=None) -> Stats:
        d = self.alpha.shape[-1] if d is None else d
        dtype = self.alpha.dtype if dtype is None else dtype
        return Stats(jnp.zeros(K, dtype), jnp.zeros((K, d), dtype), jnp.zeros(K, dtype))

    def stats(self, x: Array, z: Array, K: int, w: Array | None = None, reduce=None) -> Stats:
        r, n, s = _one_hot_stats(x, z, K, w, reduce)
        return Stats(n, s, r(log_multinomial_coef(x)))

    def add(self, stats: Stats, k, x: Array) -> Stats:
        return Stats(stats.n.at[k].add(1.0), stats.s.at[k].add(x),
                     stats.scale.at[k].add(log_multinomial_coef(x)))

    def remove(self, stats: Stats, k, x: Array) -> Stats:
        return Stats(stats.n.at[k].add(-1.0), stats.s.at[k].add(-x),
                     stats.scale.at[k].add(-log_multinomial_coef(x)))

    def posterior_mean(self, stats: Stats) -> Array:
        return jnp.exp(self.log_posterior_mean(stats.s))

    def log_posterior_mean(self, counts: Array) -> Array:
        r"""log E[pi | counts] = log (s_j + alpha_j) - log(sum_j s_j + sum_j alpha_j), row-wise.

        With a symmetric ``alpha`` this is the additively smoothed ML estimate (CCIB's tables).
        """
        a = self.alpha + counts
        return jnp.log(a) - jnp.log(a.sum(-1, keepdims=True))

    def log_predictive(self, stats: Stats, x: Array) -> Array:
        a = self.alpha + stats.s
        A = a.sum(-1)
        m = x.sum()
        return (log_multinomial_coef(x) + gammaln(A) - gammaln(A + m)
                + jnp.sum(gammaln(a + x) - gammaln(a), -1))

    def log_prior_predictive(self, x: Array) -> Array:
        return self.log_predictive(self.empty(1, x.shape[-1], x.dtype), x)[0]

    def log_marginal(self, stats: Stats) -> Array:
        a = self.alpha + stats.s
        A0 = self.alpha.sum()
        return (stats.scale + gammaln(A0) - gammaln(A0 + stats.s.sum(-1))
                + jnp.sum(gammaln(a) - gammaln(self.alpha), -1))

    def bregman(self, x: Array, means: Array) -> Array:
        """KL(x / |x| || mean_k): the multinomial's Bregman divergence on normalised counts
        (:func:`kl_divergence`; means floored at 1e-300 so an empty cell costs a finite, huge amount)."""
        p = x / jnp.maximum(x.sum(-1, keepdims=True), 1e-300)
        return kl_divergence(p, jnp.maximum(means, 1e-300))


_pytree(Multinomial, ("alpha",))


# ----------------------------------------------------------------------------------------------
# Maximum-likelihood Gaussian (CEC, CEC-IB, C3L)
# ----------------------------------------------------------------------------------------------


def wishart_expected_logdet(logdet_w: Array, nu: Array, d: int) -> Array:
    r""":math:`\mathbb E\ln|\Lambda|` under :math:`\Lambda\sim\mathcal W(W,\nu)` (Bishop 2006, B.81):
    :math:`\sum_{a=1}^d\psi(\tfrac{\nu+1-a}2)+d\ln2+\ln|W|`."""
    a = jnp.arange(1, d + 1, dtype=jnp.result_type(nu, float))
    return jnp.sum(jax.scipy.special.digamma((jnp.asarray(nu)[..., None] + 1 - a) / 2), -1) \
        + d * math.log(2.0) + logdet_w


def wishart_entropy(logdet_w: Array, nu: Array, d: int) -> Array:
    r"""Entropy of :math:`\mathcal W(W,\nu)` (Bishop 2006, B.82): :math:`-\ln B(W,\nu)
    -\tfrac{\nu-d-1}2\mathbb E\ln|\Lambda|+\tfrac{\nu d}2`, with :math:`\ln B=-\tfrac\nu2\ln|W|
    -\tfrac{\nu d}2\ln2-\ln\Gamma_d(\tfrac\nu2)` (B.79)."""
    log_b = -0.5 * nu * logdet_w - 0.5 * nu * d * math.log(2.0) - multigammaln(0.5 * nu, d)
    return -log_b - 0.5 * (nu - d - 1) * wishart_expected_logdet(logdet_w, nu, d) + 0.5 * nu * d


def ml_entropy(n: Array, logdet_scatter: Array, d: int, *, xp=jnp) -> Array:
    r"""Differential entropy (nats) of the ML Gaussian of a cluster: :math:`\tfrac d2\ln(2\pi e)
    + \tfrac12\ln\det(S/n)` with S the scatter (CEC-IB spec 1.1, 1.6). With ``n = 1`` and
    ``logdet_scatter`` = :math:`\ln\det\Sigma` it is the entropy of N(m, Sigma). ``xp``: the array
    namespace (``numpy`` for host-side references)."""
    return 0.5 * d * LOG_2PIE + 0.5 * (logdet_scatter - d * xp.log(n))


@dataclass(frozen=True)
class GaussianML:
    r"""Maximum-likelihood Gaussian statistics: ``Stats.scale`` = lower Cholesky factor of the scatter
    :math:`S_k=\sum_{i\in k}(x_i-\bar x_k)(x_i-\bar x_k)^\top` (K, d, d).

    Adding x to a cluster of n points adds :math:`\tfrac{n}{n+1}(x-\bar x)(x-\bar x)^\top`; removing
    it subtracts :math:`\tfrac{n}{n-1}(x-\bar x)(x-\bar x)^\top` (mean taken with x). The matrix
    determinant lemma gives the log-determinant after a move in O(d^2) per slot. A slot needs at
    least d + 1 points for a nonsingular scatter; singular or empty slots hold NaN/garbage that
    callers mask out (the CEC engine deletes clusters below d + 2 points).
    """

    def empty(self, K: int, d: int, dtype=jnp.float64) -> Stats:
        return Stats(jnp.zeros(K, dtype), jnp.zeros((K, d), dtype), jnp.zeros((K, d, d), dtype))

    def stats(self, x: Array, z: Array, K: int, w: Array | None = None, reduce=None) -> Stats:
        r, n, s = _one_hot_stats(x, z, K, w, reduce)
        return Stats(n, s, jnp.linalg.cholesky(_centered_scatter(x, r, n, s, reduce=reduce)))

    def mean(self, stats: Stats) -> Array:
        return stats.s / jnp.maximum(stats.n, 1e-300)[:, None]

    posterior_mean = mean

    def add(self, stats: Stats, k, x: Array) -> Stats:
        n = stats.n[k]
        u = x - stats.s[k] / jnp.maximum(n, 1e-300)
        L = chol_update(stats.scale[k], jnp.sqrt(n / (n + 1.0)) * u)
        return Stats(stats.n.at[k].add(1.0), stats.s.at[k].add(x), stats.scale.at[k].set(L))

    def remove(self, stats: Stats, k, x: Array) -> Stats:
        n = stats.n[k]
        u = x - stats.s[k] / n
        L = chol_downdate(stats.scale[k], jnp.sqrt(n / (n - 1.0)) * u)
        return Stats(stats.n.at[k].add(-1.0), stats.s.at[k].add(-x), stats.scale.at[k].set(L))

    def logdet_scatter(self, stats: Stats) -> Array:
        return chol_logdet(stats.scale)

    def logdet_after_add(self, stats: Stats, x: Array) -> Array:
        """log det of every slot's scatter if x joined it: logdet S + log(1 + n/(n+1) u^T S^{-1} u)."""
        n = stats.n
        u = x - self.mean(stats)
        w = _solve_lower(stats.scale, u)
        return self.logdet_scatter(stats) + jnp.log1p(n / (n + 1.0) * jnp.sum(w * w, -1))

    def logdet_after_remove(self, stats: Stats, k, x: Array) -> Array:
        """log det of slot k's scatter after removing x (NaN or -inf when it becomes singular)."""
        n = stats.n[k]
        u = x - stats.s[k] / n
        w = solve_triangular(stats.scale[k], u, lower=True)
        return chol_logdet(stats.scale[k]) + jnp.log1p(-n / (n - 1.0) * jnp.dot(w, w))

    def bregman(self, x: Array, means: Array) -> Array:
        return sq_euclidean(x, means)


_pytree(GaussianML, ())


def sq_euclidean(x: Array, means: Array, *, ordered: bool = False, expanded: bool = False) -> Array:
    r""":math:`\|x-\mu_k\|^2`, the Bregman divergence of the Gaussian families, for x (..., d) and means
    (K, d) -> (..., K).

    Default: from the differences (no cancellation). ``ordered``: the coordinates summed strictly left to
    right (a reference implementation's rounding, e.g. the RDP-means authors' Octave loop).
    ``expanded``: :math:`\|x\|^2 - 2x^\top\mu_k + \|\mu_k\|^2` clamped at 0 for x (n, d), by matrix
    products (no (n, K, d) array; cancellation for points far from the origin relative to their spread).
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
    r"""Generalised KL :math:`\sum_j x_j\ln x_j - x_j\ln\mu_{kj}` (:math:`0\ln0=0`) for x (..., d) and
    means (K, d) -> (..., K): the Multinomial family's Bregman divergence (on histogram rows it is
    :math:`\mathrm{KL}(x\,\|\,\mu_k)`; Banerjee et al. 2005, Table 1). ``expanded``: x (n, d), the
    cross term as one matrix product."""
    xlogx = jnp.where(x > 0, x * jnp.log(jnp.where(x > 0, x, 1.0)), 0.0)
    if expanded:
        return jnp.sum(xlogx, axis=1)[:, None] - x @ jnp.log(means).T
    return jnp.sum(xlogx[..., None, :] - x[..., None, :] * jnp.log(means), axis=-1)


# ----------------------------------------------------------------------------------------------
# Explicit Gaussian parameters in precision-Cholesky form (EM, the semi-supervised GMM)
# ----------------------------------------------------------------------------------------------


def _log_det_prec_chol(prec_chol, cov_type, d):
    """log det(P) per component (= -1/2 log det Sigma)."""
    if cov_type == "full":
        return jnp.sum(jnp.log(jnp.diagonal(prec_chol, axis1=-2, axis2=-1)), axis=-1)
    if cov_type == "tied":
        return jnp.sum(jnp.log(jnp.diagonal(prec_chol)))
    if cov_type == "diag":
        return jnp.sum(jnp.log(prec_chol), axis=-1)
    return d * jnp.log(prec_chol)


def log_gaussian_prob(x, means, prec_chol, cov_type):
    r""":math:`\log N(x_i;\mu_k,\Sigma_k) = -\tfrac12(d\ln 2\pi + \|P_k^\top(x_i-\mu_k)\|^2) + \ln|P_k|`
    for all points and components, (n, k), with ``prec_chol`` :math:`P_k` a Cholesky factor of the precision
    (scikit-learn's parameterisation: full (k, d, d) upper, tied (d, d), diag (k, d), spherical (k,)).
    Matrix products over all components (no (n, k, d) array for diag/spherical/tied)."""
    n, d = x.shape
    k = means.shape[0]
    log_det = _log_det_prec_chol(prec_chol, cov_type, d)
    if cov_type == "full":
        # (n, d) @ (d, k*d): one matmul for all components.
        y = (x @ jnp.transpose(prec_chol, (1, 0, 2)).reshape(d, k * d)).reshape(n, k, d)
        y = y - jnp.einsum("kd,kde->ke", means, prec_chol)[None]
        maha = jnp.sum(y * y, axis=-1)
    elif cov_type == "tied":
        y = x @ prec_chol
        mu = means @ prec_chol
        maha = jnp.sum(y * y, 1)[:, None] - 2 * y @ mu.T + jnp.sum(mu * mu, 1)[None]
    elif cov_type == "diag":
        prec = prec_chol**2
        maha = (x * x) @ prec.T - 2 * x @ (means * prec).T + jnp.sum(means**2 * prec, 1)[None]
    else:
        prec = prec_chol**2
        maha = (jnp.sum(x * x, 1)[:, None] - 2 * x @ means.T + jnp.sum(means**2, 1)[None]) * prec[None]
    return -0.5 * (d * LOG_2PI + maha) + log_det


class GMMParams(NamedTuple):
    """Mixture parameters.

    weights: (k,) mixing proportions; means: (k, d);
    prec_chol: Cholesky of the precision: full (k, d, d) upper, tied (d, d), diag (k, d), spherical (k,).
    """

    weights: jax.Array
    means: jax.Array
    prec_chol: jax.Array


class NIWPrior(NamedTuple):
    """Conjugate MAP prior: Dirichlet(alpha) on weights, Normal-inverse-Wishart on (mu, Sigma).

    mu_k | Sigma_k ~ N(mean0, Sigma_k / kappa0), Sigma_k ~ IW(psi0, nu0). For ``"diag"`` the prior is the
    product over dimensions of the 1-D version, sigma_j^2 ~ IG(nu0 / 2, psi0_jj / 2); ``"spherical"``:
    sigma^2 ~ IG(nu0 d / 2, trace(psi0) / 2) with ``d`` mean coordinates -- the conventions of
    :class:`GaussianNIW`, so that EM's MAP fit and the Gibbs sampler share one prior
    (:func:`mixture_niw_prior`, :meth:`GaussianNIW.from_prior`). ``alpha >= 1`` (alpha = 1: no weight
    prior).
    """

    alpha: jax.Array  # ()
    mean0: jax.Array  # (d,)
    kappa0: jax.Array  # ()
    nu0: jax.Array  # ()
    psi0: jax.Array  # (d, d)


def mixture_niw_prior(x, alpha=1.0, *, kappa0=DEFAULT_KAPPA0) -> NIWPrior:
    r"""The default conjugate prior of a fixed-K Gaussian mixture, shared by EM's MAP fit
    (``SemiSupervisedGMM(prior="default")``) and the Gibbs sampler (``BayesianSemiSupervisedGMM``): the
    NIW hyper-parameters of :meth:`GaussianNIW.default` (the one default NIW prior of ppclust, TVClust's
    too) -- :math:`\mu_0 = \bar x`, :math:`\kappa_0` = :data:`DEFAULT_KAPPA0` = 1, :math:`\nu_0 = d + 2`,
    :math:`\Psi_0 = \mathrm{diag}(\mathrm{var}(x))` -- and weights :math:`\mathrm{Dir}(\alpha)` (EM's MAP).

    Chosen on evidence (``benchmarks/results/ssgmm_prior.md``, ``benchmarks/bench_ssgmm_prior.py``: 4 real
    data sets x 3 splits, held-out log density and ARI, EM MAP and Gibbs under four priors) over mclust's
    ``priorControl()`` (Fraley & Raftery 2007: :math:`\kappa_0 = 0.01`, :math:`\Psi_0 = \mathrm{cov}(x) /
    K^{2/d}`), which EM used before: the mclust prior had the best held-out density on none of the four
    data sets for either algorithm; :math:`\kappa_0` (0.01 or 1) moved the mean held-out log density by
    less than 0.2 nats per point, in opposite directions for EM and Gibbs, so ppclust's one value 1 is kept;
    :math:`\Psi_0 = \mathrm{diag\,var}` gave EM the best held-out density on every data set. Recorded
    cost: the Gibbs sampler's ARI on breast_cancer (d = 30, strongly correlated features) is 0.33 under
    this prior against 0.76 under mclust's full-covariance :math:`\Psi_0`.
    For ``"diag"`` / ``"spherical"`` the prior uses ``diag(psi0)`` / ``trace(psi0)`` (:class:`NIWPrior`,
    :class:`GaussianNIW`, same conventions).
    """
    fam = GaussianNIW.default(x, "full", kappa0=kappa0)
    return NIWPrior(jnp.asarray(alpha, fam.mu0.dtype), fam.mu0, fam.kappa0, fam.nu0, fam.psi0)


def precision_cholesky(cov, cov_type):
    """Cholesky of the precision from covariances (NaN when a covariance is not positive definite)."""
    if cov_type in ("full", "tied"):
        chol = jnp.linalg.cholesky(cov)
        eye = jnp.broadcast_to(jnp.eye(cov.shape[-1], dtype=cov.dtype), cov.shape)
        return jnp.swapaxes(solve_triangular(chol, eye, lower=True), -1, -2)
    return 1.0 / jnp.sqrt(cov)


def covariances(prec_chol, cov_type):
    """Covariances back from the precision Cholesky (same shapes as scikit-learn's ``covariances_``)."""
    if cov_type in ("full", "tied"):
        prec = prec_chol @ jnp.swapaxes(prec_chol, -1, -2)
        return jnp.linalg.inv(prec)
    return 1.0 / prec_chol**2


def gaussian_moment_stats(x, resp, cov_type):
    """Sufficient statistics of the M-step: (nk (k,), s = resp^T x (k, d), second moments).

    Second moments: ``sum_i r_ik x_i x_i^T`` (k, d, d) for "full"/"tied", ``resp^T (x*x)`` (k, d)
    otherwise. All three are sums over points, so a data-parallel run adds the per-device values.
    """
    n, d = x.shape
    k = resp.shape[1]
    nk = resp.sum(0)
    s = resp.T @ x  # (k, d) weighted sums
    if cov_type in ("full", "tied"):
        # second moments in one matmul: (n, k*d)^T @ (n, d)
        m2 = ((resp[:, :, None] * x[:, None, :]).reshape(n, k * d).T @ x).reshape(k, d, d)
    else:
        m2 = resp.T @ (x * x)  # (k, d)
    return nk, s, m2


def gaussian_map_estimate(stats, cov_type, reg_covar, prior=None):
    r"""Mixture parameters maximising the weighted likelihood (``prior=None``) or the posterior under
    :class:`NIWPrior` (MAP), from the moment statistics of :func:`gaussian_moment_stats` (the M-step of EM).

    MAP (full): :math:`\pi_k\propto n_k+\alpha-1`, :math:`\mu_k=(\kappa_0\mu_0+s_k)/(\kappa_0+n_k)`,
    :math:`\Sigma_k=(S_k+\kappa_0(\mu_k-\mu_0)(\mu_k-\mu_0)^\top+\Psi_0)/(n_k+\nu_0+d+2)` (Fraley & Raftery
    2007, mclust's MAP); diag / spherical / tied: the 1-D and pooled analogues. ``reg_covar`` is added to
    the covariance diagonals afterwards, as scikit-learn does."""
    nk, s, m2 = stats
    k, d = s.shape
    eps = 10 * jnp.finfo(s.dtype).eps  # as scikit-learn: keeps empty components finite
    nk = nk + eps
    if prior is None:
        weights = nk / jnp.sum(nk)
        means = s / nk[:, None]
    else:
        weights = (nk + prior.alpha - 1.0) / (jnp.sum(nk) + k * (prior.alpha - 1.0))
        means = (prior.kappa0 * prior.mean0[None] + s) / (prior.kappa0 + nk)[:, None]
    if cov_type in ("full", "tied"):
        outer_ms = means[:, :, None] * s[:, None, :]
        scatter = (
            m2
            - outer_ms
            - jnp.swapaxes(outer_ms, 1, 2)
            + nk[:, None, None] * (means[:, :, None] * means[:, None, :])
        )
        if prior is not None:
            dm = means - prior.mean0[None]
            scatter = scatter + prior.kappa0 * dm[:, :, None] * dm[:, None, :]
        if cov_type == "full":
            if prior is None:
                cov = scatter / nk[:, None, None]
            else:
                cov = (scatter + prior.psi0[None]) / (nk + prior.nu0 + d + 2.0)[:, None, None]
        else:
            tot = jnp.sum(scatter, 0)
            if prior is None:
                cov = tot / jnp.sum(nk)
            else:
                cov = (tot + prior.psi0) / (jnp.sum(nk) + prior.nu0 + d + 1.0 + k)
        cov = cov + reg_covar * jnp.eye(d, dtype=s.dtype)
        cov = 0.5 * (cov + jnp.swapaxes(cov, -1, -2))
    else:
        scatter = m2 - 2 * means * s + nk[:, None] * means**2
        if prior is not None:
            scatter = scatter + prior.kappa0 * (means - prior.mean0[None]) ** 2
        if cov_type == "diag":
            if prior is None:
                cov = scatter / nk[:, None]
            else:
                cov = (scatter + jnp.diagonal(prior.psi0)[None]) / (nk + prior.nu0 + 3.0)[:, None]
        else:
            if prior is None:
                cov = scatter.sum(1) / (d * nk)
            else:
                cov = (scatter.sum(1) + jnp.trace(prior.psi0)) / (d * nk + d * prior.nu0 + 2.0 + d)
        cov = cov + reg_covar
    return GMMParams(weights, means, precision_cholesky(cov, cov_type))


def niw_log_prior(params, prior, cov_type):
    """log p(pi) + sum_k log p(mu_k, Sigma_k) up to an additive constant (0 when ``prior`` is None).

    Exactly the density whose mode :func:`gaussian_map_estimate` computes, so EM is monotone in
    likelihood + this.
    """
    if prior is None:
        return jnp.asarray(0.0, params.means.dtype)
    k, d = params.means.shape
    out = (prior.alpha - 1.0) * jnp.sum(jnp.log(params.weights))
    pc = params.prec_chol
    dm = params.means - prior.mean0[None]
    if cov_type in ("full", "tied"):
        y = jnp.einsum("kd,kde->ke", dm, pc) if cov_type == "full" else dm @ pc
        mean_term = -0.5 * prior.kappa0 * jnp.sum(y * y)
        logdet_p = jnp.sum(jnp.log(jnp.diagonal(pc, axis1=-2, axis2=-1)), axis=-1)  # = -1/2 log det Sigma
        prec = pc @ jnp.swapaxes(pc, -1, -2)
        tr = jnp.sum(prec * prior.psi0, axis=(-2, -1))
        n_cov = k if cov_type == "full" else 1
        # IW: -(nu0 + d + 1)/2 log|S| - tr(psi0 S^-1)/2 ; normal mean: -1/2 log|S| per component
        out = (
            out
            + mean_term
            + jnp.sum((prior.nu0 + d + 1.0) * logdet_p - 0.5 * tr)
            + k * jnp.sum(logdet_p) / n_cov
        )
    elif cov_type == "diag":
        prec = pc**2
        out = out + jnp.sum(
            -0.5 * prior.kappa0 * dm**2 * prec
            + 0.5 * (prior.nu0 + 3.0) * jnp.log(prec)
            - 0.5 * jnp.diagonal(prior.psi0)[None] * prec
        )
    else:
        prec = pc**2
        out = out + jnp.sum(
            -0.5 * prior.kappa0 * jnp.sum(dm**2, 1) * prec
            + 0.5 * (d * prior.nu0 + 2.0 + d) * jnp.log(prec)
            - 0.5 * jnp.trace(prior.psi0) * prec
        )
    return out


# ----------------------------------------------------------------------------------------------
# Maximum-likelihood Gaussian: singularity of a cluster's scatter (CEC, CEC-IB, C3L; Hartigan engine)
# ----------------------------------------------------------------------------------------------

#: A scatter S is numerically singular when lambda_min <= ML_SING_TOL * lambda_max (CEC-IB reference
#: README: the authors' jar treats det S <= 0 as +inf; round-off makes exactly singular subsets of
#: real data come out with a tiny positive det, so a relative eigenvalue test is used instead).
ML_SING_TOL = SING_TOL


def chol_singular(L: Array, tol: float = ML_SING_TOL) -> Array:
    """Numerical singularity of ``S = L L^T`` from its lower factor, O(d^2) per factor (batched).

    True when some pivot :math:`L_{jj}^2` (a Schur complement of S, so ``>= lambda_min``) is at most
    ``tol`` x the largest diagonal entry of S (``<= lambda_max``), or the factor is not finite (a failed
    down-date).
    """
    piv = jnp.diagonal(L, axis1=-2, axis2=-1) ** 2
    diag_s = jnp.sum(L * L, -1)
    return ~jnp.all(jnp.isfinite(L), axis=(-2, -1)) | (jnp.min(piv, -1) <= tol * jnp.max(diag_s, -1))


def ml_logdet(L: Array, tol: float = ML_SING_TOL) -> Array:
    """``log det(L L^T)`` of a (batch of) scatter factor(s); ``-inf`` when :func:`chol_singular`."""
    return jnp.where(chol_singular(L, tol), -jnp.inf,
                     2.0 * jnp.sum(jnp.log(jnp.abs(jnp.diagonal(L, axis1=-2, axis2=-1))), -1))


def ml_degenerate(L: Array, n: Array, min_count, tol: float = ML_SING_TOL) -> Array:
    """Slots whose ML Gaussian is unusable: fewer than ``min_count`` points, a non-finite factor, or
    lambda_min(S) <= ``tol`` lambda_max(S) (eigenvalues of ``S = L L^T``, O(d^3))."""
    S = L @ jnp.swapaxes(L, -1, -2)
    finite = jnp.all(jnp.isfinite(L), axis=(-2, -1))
    ev = jnp.linalg.eigvalsh(jnp.where(finite[..., None, None], S, jnp.eye(L.shape[-1], dtype=L.dtype)))
    return ~finite | (ev[..., 0] <= tol * ev[..., -1]) | (n < min_count)
