r"""The cross-entropy clustering (CEC) cost that CEC-IB and C3L share, minimised by :mod:`.hartigan`.

One concrete per-cluster cost with two optional terms: the information-bottleneck label term of CEC-IB
(Śmieja & Geiger 2017, eq. 11) and the leakage-constrained 1-D terms of C3L (Śmieja, Struski & Tabor
2017, eq. 8, Theorem 1). For a cluster :math:`Y_k` of :math:`n_k` of the :math:`n` points,

.. math::  E(Y_k) = \frac{n_k}{n}\Big(\ln n - \ln n_k + H_{ML}(n_k, \ln\det S_k)
           + \sum_{j<J} E_1(\mu_{kj}, s^2_{kj}; \alpha_j) + \beta\,H(Z\mid Y_k\cap X_l)\Big)

with :math:`H_{ML}` the entropy of the maximum-likelihood Gaussian of the last d coordinates
(:func:`ppclust.families.ml_entropy`, :math:`S_k` their scatter plus an optional ridge), :math:`E_1` the
closed-form constrained 1-D cross-entropy of the J leading (decision) coordinates
(:func:`constrained_fit_1d`) and :math:`H(Z\mid Y_k\cap X_l)` the entropy of the labels of the
cluster's labelled members (:func:`label_entropy`). CEC-IB: ``J = 0`` and labels; C3L: ``J >= 1`` and
no labels; plain CEC: neither.

:class:`CECCost` holds the parameters; :class:`CECStats` the per-slot sufficient statistics, one layout
for the XLA engine (:mod:`.hartigan`), its compiled twin (:mod:`._hartigan_cpu`) and the batch steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.special import ndtri, xlogy

from ppclust.families import LOG_2PI, ML_SING_TOL, GaussianML, Stats, ml_degenerate, ml_entropy, ml_logdet

__all__ = [
    "SING_TOL",
    "CECStats",
    "CECCost",
    "cluster_cost",
    "label_entropy",
    "quantile",
    "constrained_fit_1d",
    "constrained_cost_1d",
]

Array = jax.Array
#: A cluster's scatter is numerically singular when lambda_min <= SING_TOL * lambda_max.
SING_TOL = ML_SING_TOL
_ML = GaussianML()


# ---------------------------------------------------------------------------------------------
# the optional terms
# ---------------------------------------------------------------------------------------------


@jax.jit  # one program (ndtri run eagerly builds one per operation)
def quantile(alpha) -> Array:
    r""":math:`p^\alpha=\Phi^{-1}(1-\alpha)`, the leakage bound's quantile (C3L, Theorem 1).

    Parameters
    ----------
    alpha : float or array
        Leakage bound in (0, 1). ``alpha >= 1/2`` gives ``p <= 0``: the constraint is void.

    Returns
    -------
    Array
        ``-ndtri(alpha)`` (no cancellation for tiny alpha).

    Examples
    --------
    >>> from ppclust.inference.cec import quantile
    >>> float(quantile(0.5)) == 0.0  # alpha = 1/2: no constraint
    True
    """
    return -ndtri(jnp.asarray(alpha, dtype=jnp.result_type(float)))


def constrained_fit_1d(mu, s2, p):
    r"""Leakage-constrained ML fit of a 1-D Gaussian (C3L, Theorem 1; spec ``c3l.md`` §1.5).

    Minimises the cross-entropy :math:`h(m,\sigma)=\tfrac12\ln(2\pi\sigma^2)+((\mu-m)^2+s^2)/(2\sigma^2)`
    of a sample with mean ``mu`` and MLE variance ``s2`` subject to :math:`|m|\ge p\,\sigma`
    (leakage :math:`\Phi(-|m|/\sigma)\le\alpha`, ``p = quantile(alpha)``). Broadcasts.

    Parameters
    ----------
    mu, s2 : array
        Sample mean and MLE variance (``s2 > 0``).
    p : array
        :func:`quantile` of the leakage bound.

    Returns
    -------
    (m, sigma, E1, active)
        Inactive (``p <= 0`` or :math:`|\mu|\ge p s`): the MLE, :math:`E_1=\tfrac12(1+\ln 2\pi s^2)`.
        Active: :math:`m=\mathrm{sgn}(\mu)\,2p(s^2+\mu^2)/(p|\mu|+\sqrt{(p^2+4)\mu^2+4s^2})` (the
        quadratic's same-sign root, Vieta form without cancellation), :math:`\sigma=|m|/p`,
        :math:`E_1=\tfrac12(1+p^2-p^2\mu/m+\ln(2\pi m^2/p^2))`; ``sgn(0) = +1``.

    Examples
    --------
    >>> from ppclust.inference.cec import constrained_fit_1d, quantile
    >>> m, sigma, e1, active = constrained_fit_1d(0.1, 1.0, quantile(0.05))
    >>> bool(active), round(float(abs(m) / sigma - quantile(0.05)), 9)
    (True, 0.0)
    """
    mu, s2, p = jnp.broadcast_arrays(*map(jnp.asarray, (mu, s2, p)))
    s = jnp.sqrt(s2)
    active = (p > 0) & (jnp.abs(mu) < p * s)
    pa = jnp.where(active, p, 1.0)  # safe p inside the active branch
    amu = jnp.abs(mu)
    sgn = jnp.where(mu < 0, -1.0, 1.0)
    disc = (pa * pa + 4.0) * mu * mu + 4.0 * s2
    m_act = sgn * 2.0 * pa * (s2 + mu * mu) / (pa * amu + jnp.sqrt(disc))
    m_safe = jnp.where(active, m_act, 1.0)
    e_act = 0.5 * (
        1.0 + pa * pa - pa * pa * mu / m_safe + LOG_2PI + 2.0 * jnp.log(jnp.abs(m_safe)) - 2.0 * jnp.log(pa)
    )
    e_mle = 0.5 * (1.0 + LOG_2PI + jnp.log(s2))
    m = jnp.where(active, m_act, mu)
    sigma = jnp.where(active, jnp.abs(m_act) / pa, s)
    return m, sigma, jnp.where(active, e_act, e_mle), active


def constrained_cost_1d(mu, s2, p):
    """:math:`E_1` of :func:`constrained_fit_1d` alone.

    Parameters
    ----------
    mu, s2 : array
        Sample mean and MLE variance (``s2 > 0``).
    p : array
        :func:`quantile` of the leakage bound.

    Examples
    --------
    >>> import math
    >>> from ppclust.inference.cec import constrained_cost_1d
    >>> abs(float(constrained_cost_1d(3.0, 1.0, 1.0)) - 0.5 * (1 + math.log(2 * math.pi))) < 1e-6
    True
    """
    return constrained_fit_1d(mu, s2, p)[2]


def label_entropy(n_lab, clogc):
    r"""The label entropy :math:`H(Z\mid Y_k\cap X_l)` of a cluster (CEC-IB eq. 10, count form).

    :math:`H = \ln L_k - \tfrac1{L_k}\sum_j c_{kj}\ln c_{kj}`.

    Parameters
    ----------
    n_lab : array
        :math:`L_k`, labelled points of the cluster; the entropy is 0 when it is 0.
    clogc : array
        :math:`\sum_j c_{kj}\ln c_{kj}` over the label categories j.

    Examples
    --------
    >>> import math
    >>> from ppclust.inference.cec import label_entropy
    >>> abs(float(label_entropy(2.0, 0.0)) - math.log(2)) < 1e-6  # two labels, one of each category
    True
    """
    safe_l = jnp.maximum(n_lab, 1.0)
    return jnp.where(n_lab > 0, jnp.log(safe_l) - clogc / safe_l, 0.0)


def cluster_cost(n_total, d: int, nk, logdet_scatter, extra):
    r"""Per-cluster cost of every CEC method (CEC-IB eq. 11, C3L eq. 8), in counts.

    .. math:: E(Y_k) = \frac{n_k}{n}\Big(\ln n - \ln n_k + H(\mathcal N(\mu_k,\Sigma_k)) + e_k\Big)

    Parameters
    ----------
    n_total : float
        n, all points.
    d : int
        Dimension of the Gaussian part (its entropy term is absent when 0).
    nk : array
        Points of the cluster; an empty cluster costs 0.
    logdet_scatter : array
        ln det of the cluster's scatter; NaN or -inf (singular) gives +inf.
    extra : array
        The optional terms :math:`e_k` (:math:`\sum_j E_1 + \beta H(Z\mid Y_k\cap X_l)`).

    Examples
    --------
    >>> from ppclust.inference.cec import cluster_cost
    >>> float(cluster_cost(10.0, 0, 10.0, 0.0, 0.0))  # one cluster holding every point, no terms
    0.0
    """
    safe = jnp.maximum(nk, 1.0)
    val = jnp.log(n_total) - jnp.log(safe)
    if d > 0:
        ent = ml_entropy(safe, logdet_scatter, d)
        val = val + jnp.where(jnp.isnan(ent) | (ent == -jnp.inf), jnp.inf, ent)
    val = safe / n_total * (val + extra)
    return jnp.where(nk > 0, val, 0.0)


# ---------------------------------------------------------------------------------------------
# the cost object
# ---------------------------------------------------------------------------------------------


class CECStats(NamedTuple):
    """Per-slot sufficient statistics of :class:`CECCost` (K slots).

    Parameters
    ----------
    n : array (K,)
        Counts.
    s : array (K, d)
        Sums of the Gaussian part (the last d coordinates).
    scale : array (K, d, d)
        Lower Cholesky factor of its scatter (+ ridge).
    t_mean, t_m2 : arrays (K, J)
        Mean and centred sum of squares of the J decision coordinates.
    counts : array (K, m)
        Label counts :math:`c_{kj}` (m = 0 without the label term).
    n_lab : array (K,)
        Labelled points :math:`L_k`.
    clogc : array (K,)
        :math:`\\sum_j c_{kj}\\ln c_{kj}`.

    Examples
    --------
    >>> import jax.numpy as jnp, numpy as np
    >>> from ppclust.inference import cecib
    >>> x = jnp.asarray(np.random.default_rng(0).normal(size=(6, 2)))
    >>> side = jnp.full(6, -1)  # no labelled point
    >>> stats = cecib.make_cost(x, 0).stats(x, side, jnp.asarray([0, 0, 0, 1, 1, 1]), 2)
    >>> np.asarray(stats.n).tolist(), stats.scale.shape
    ([3.0, 3.0], (2, 2, 2))
    """

    n: Array
    s: Array
    scale: Array
    t_mean: Array
    t_m2: Array
    counts: Array
    n_lab: Array
    clogc: Array


@dataclass(frozen=True)
class CECCost:
    r"""The CEC cost with its optional label and leakage terms (module docstring), a JAX pytree.

    The points passed with it are ``x = (t, r)``: J decision coordinates then d Gaussian coordinates; the
    side information is the (n,) int32 label category of every point (-1 = unlabelled) when
    ``n_labels > 0``, else None.

    Parameters
    ----------
    n_total : array
        n, all points (the weights :math:`n_k / n`).
    beta : array
        Weight of the label term (used when ``n_labels > 0``).
    p : array
        (J,) quantiles :func:`quantile` of the leakage bounds.
    var_floor : array
        (J,) floor on the 1-D MLE variances.
    ridge : array
        Pseudo-scatter :math:`\rho I` added to every slot's scatter (0 = none).
    n_labels : int
        m, label categories (static); 0 = no label term.
    n_dec : int
        J, decision coordinates (static); 0 = no leakage term.
    dim : int
        d, dimension of the Gaussian part (static).
    min_count : float
        A slot with fewer points is degenerate (static).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from ppclust.inference.cec import CECCost
    >>> x = jnp.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [5.0, 5.0], [6.0, 5.0], [5.0, 6.0]])
    >>> cost = CECCost(jnp.asarray(6.0), jnp.asarray(0.0), jnp.zeros(0), jnp.zeros(0), jnp.asarray(0.0),
    ...                n_labels=0, n_dec=0, dim=2, min_count=3.0)
    >>> st = cost.stats(x, None, jnp.array([0, 0, 0, 1, 1, 1]), 2)
    >>> st.n.tolist()
    [3.0, 3.0]
    """

    n_total: Array
    beta: Array
    p: Array
    var_floor: Array
    ridge: Array
    n_labels: int
    n_dec: int
    dim: int
    min_count: float

    def stats(self, x, side, labels, K):
        """Statistics of the partition ``labels`` (n,) int32 in 0..K-1, two-pass (label K: no slot)."""
        J = self.n_dec
        r1 = jax.nn.one_hot(labels, K, dtype=x.dtype)
        n = r1.sum(0)
        if J > 0:
            t = x[:, :J]
            t_mean = (r1.T @ t) / jnp.maximum(n, 1.0)[:, None]
            dev = t[:, None, :] - t_mean[None]  # (n, K, J) two-pass
            t_m2 = jnp.einsum("nk,nkj->kj", r1, dev * dev)
        else:
            t_mean = t_m2 = jnp.zeros((K, 0), x.dtype)
        d = self.dim
        if d > 0:
            xr = x[:, J:]
            s = r1.T @ xr
            xc = xr[:, None, :] - (s / jnp.maximum(n, 1.0)[:, None])[None]  # (n, K, d), two-pass
            scatter = jnp.einsum("nk,nki,nkj->kij", r1, xc, xc) + self.ridge * jnp.eye(d)
            scale = jnp.linalg.cholesky(scatter)
        else:
            s = jnp.zeros((K, 0), x.dtype)
            scale = jnp.zeros((K, 0, 0), x.dtype)
        if self.n_labels > 0:
            counts = r1.T @ jax.nn.one_hot(side, self.n_labels, dtype=x.dtype)  # -1 -> zero row
            n_lab, clogc = counts.sum(1), xlogy(counts, counts).sum(1)
        else:
            counts = jnp.zeros((K, 0), x.dtype)
            n_lab = clogc = jnp.zeros(K, x.dtype)
        return CECStats(n, s, scale, t_mean, t_m2, counts, n_lab, clogc)

    def count(self, stats):
        """(K,) points per slot."""
        return stats.n

    def cost(self, stats):
        """(K,) E(Y_k): 0 for an empty slot, +inf for a singular one."""
        logdet = ml_logdet(stats.scale) if self.dim > 0 else jnp.zeros_like(stats.n)
        return self.slot_cost(stats.n, stats.t_mean, stats.t_m2, logdet, stats.n_lab, stats.clogc)

    def degenerate(self, stats):
        """(K,) bool: too few points or a numerically singular scatter."""
        if self.dim > 0:
            return ml_degenerate(stats.scale, stats.n, self.min_count)
        return stats.n < self.min_count

    def cost_add(self, stats, x_i, side_i):
        """(K,) E(Y_k with x_i) for every slot, O(K d^2) (matrix determinant lemma)."""
        J = self.n_dec
        n = stats.n
        n1 = n + 1.0
        delta = x_i[:J] - stats.t_mean
        mean = stats.t_mean + delta / n1[:, None]
        m2 = stats.t_m2 + (n / n1)[:, None] * delta * delta
        if self.dim > 0:
            logdet = _ML.logdet_after_add(Stats(n, stats.s, stats.scale), x_i[J:])
        else:
            logdet = jnp.zeros_like(n)
        n_lab, clogc = stats.n_lab, stats.clogc
        if self.n_labels > 0:
            lab = side_i >= 0
            c = stats.counts[..., jnp.maximum(side_i, 0)]
            clogc_new = clogc + xlogy(c + 1.0, c + 1.0) - xlogy(c, c)
            n_lab, clogc = jnp.where(lab, n_lab + 1.0, n_lab), jnp.where(lab, clogc_new, clogc)
        return self.slot_cost(n1, mean, m2, logdet, n_lab, clogc)

    def cost_slot(self, stats, k):
        """() E(Y_k) of slot k alone."""
        logdet = ml_logdet(stats.scale[k]) if self.dim > 0 else jnp.zeros_like(stats.n[k])
        return self.slot_cost(
            stats.n[k], stats.t_mean[k], stats.t_m2[k], logdet, stats.n_lab[k], stats.clogc[k]
        )

    def add(self, stats, k, x_i, side_i):
        """Rank-one update of slot k with x_i, O(d^2)."""
        return self._move(stats, k, x_i, side_i, 1.0)

    def remove(self, stats, k, x_i, side_i):
        """Rank-one down-date of slot k without x_i, O(d^2) (NaN factor when it becomes singular)."""
        return self._move(stats, k, x_i, side_i, -1.0)

    def slot_cost(self, nk, t_mean, t_m2, logdet_scatter, n_lab, clogc):
        """E(Y_k) from a slot's statistics (:func:`cluster_cost` with this cost's optional terms)."""
        extra = []
        if self.n_dec > 0:
            s2 = jnp.maximum(t_m2 / jnp.maximum(nk, 1.0)[..., None], self.var_floor)
            extra.append(constrained_cost_1d(t_mean, s2, self.p).sum(-1))
        if self.n_labels > 0:
            extra.append(self.beta * label_entropy(n_lab, clogc))
        extra = sum(extra[1:], extra[0]) if extra else 0.0
        return cluster_cost(self.n_total, self.dim, nk, logdet_scatter, extra)

    def _move(self, stats, k, x_i, side_i, sign):
        J = self.n_dec
        n = stats.n[k]
        n1 = n + sign
        t_mean, t_m2 = stats.t_mean, stats.t_m2
        if J > 0:
            delta = x_i[:J] - t_mean[k]
            if sign > 0:
                mean = t_mean[k] + delta / n1
                m2 = t_m2[k] + n / n1 * delta * delta
            else:
                mean = jnp.where(n1 > 0, t_mean[k] - delta / jnp.maximum(n1, 1.0), 0.0)
                m2 = jnp.maximum(t_m2[k] - n / jnp.maximum(n1, 1.0) * delta * delta, 0.0)
            t_mean, t_m2 = t_mean.at[k].set(mean), t_m2.at[k].set(m2)
        s, scale = stats.s, stats.scale
        if self.dim > 0:
            g = Stats(stats.n, s, scale)
            g = _ML.add(g, k, x_i[J:]) if sign > 0 else _ML.remove(g, k, x_i[J:])
            s, scale = g.s, g.scale
        counts, n_lab, clogc = stats.counts, stats.n_lab, stats.clogc
        if self.n_labels > 0:
            lab = side_i >= 0
            j = jnp.maximum(side_i, 0)
            c = counts[k, j]
            c_new = c + jnp.where(lab, sign, 0.0)
            counts = counts.at[k, j].set(c_new)
            n_lab = n_lab.at[k].add(jnp.where(lab, sign, 0.0))
            clogc = clogc.at[k].add(xlogy(c_new, c_new) - xlogy(c, c))
        return CECStats(stats.n.at[k].add(sign), s, scale, t_mean, t_m2, counts, n_lab, clogc)


jax.tree_util.register_dataclass(
    CECCost,
    data_fields=["n_total", "beta", "p", "var_floor", "ridge"],
    meta_fields=["n_labels", "n_dec", "dim", "min_count"],
)
