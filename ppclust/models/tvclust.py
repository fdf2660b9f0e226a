r"""TVClust: a Dirichlet-process mixture and a noisy random graph of links, two views of one partition.

Khashabi, Wieting, Liu & Liang (2015), "Clustering With Side Information: From a Probabilistic Model to a
Deterministic Algorithm", Section 3 (spec ``tvclust-rdpmeans.md`` Section 1). The module is kept whole:
the log joint, the link prior and the Escobar-West step share the notation of that one section.

.. math::

    z &\sim \mathrm{CRP}(\alpha), \qquad \theta^*_k \sim G_0, \qquad x_i \sim p(\cdot \mid \theta^*_{z_i}), \\
    E_{ij} \mid z &\sim \begin{cases} +1 \text{ w.p. } p, & z_i = z_j \\
                                       +1 \text{ w.p. } 1-q, & z_i \ne z_j \end{cases}
    \quad (i, j) \in \mathcal C, \\
    p &\sim \mathrm{Beta}(a_p, b_p), \qquad q \sim \mathrm{Beta}(a_q, b_q).

Only the observed pairs enter, through four (weighted) pair counts :math:`N_{11}` (may-links inside
clusters), :math:`N_{01}` (may-not-links inside), :math:`N_{10}` (may-links across) and :math:`N_{00}`
(may-not-links across), eq. (8) and spec Section 1.3.

This module holds the *model*: the log joint (collapsed over cluster parameters and optionally over
``p`` and ``q``), an ancestral sampler, and a NumPyro version
(truncated stick-breaking) for inspection with NumPyro tools. Samplers live in
:mod:`ppclust.inference.gibbs`. The link arrays (:class:`~ppclust.sideinfo.Links`, ``make_links``,
``pair_counts``) live in :mod:`ppclust.sideinfo` and are re-exported here.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import betaln, gammaln

from ppclust.sideinfo import Links, make_links, pair_counts  # re-exported: the model's link view

__all__ = [
    "Links",
    "TVClustPrior",
    "make_links",
    "pair_counts",
    "log_crp",
    "log_link_likelihood",
    "log_joint",
    "log_joint_from_stats",
    "link_beta_params",
    "link_reliability",
    "link_log_odds",
    "link_reliability_share",
    "link_weight_shares",
    "escobar_west",
    "link_noise_beta",
    "sample_prior",
    "numpyro_model",
    "collapsed_numpyro_model",
    "SmallVarianceHyper",
    "small_variance_hyper",
]


class TVClustPrior(NamedTuple):
    """Hyperparameters of the partition and link views (all traced; none set shapes).

    ``alpha`` is the DP concentration (eq. 1); ``a_p, b_p`` and ``a_q, b_q`` the Beta priors of the
    sensitivity ``p`` and specificity ``q`` (spec Section 2.8: Beta(1, 10) and Beta(10, 1), a prior
    under which links carry no information a priori).

    Attributes
    ----------
    alpha : float, default=1.0
        DP concentration (eq. 1), > 0.
    a_p, b_p : float, default=1.0, 10.0
        Beta prior of the link sensitivity ``p``, both > 0.
    a_q, b_q : float, default=10.0, 1.0
        Beta prior of the link specificity ``q``, both > 0. The defaults are spec 2.8's neutral prior; the
        estimator sets its own through ``link_noise`` and ``link_strength``
        (``docs/decisions/0002-tvclust-link-prior.md``).

    Examples
    --------
    >>> TVClustPrior(alpha=2.0).b_p
    10.0
    """

    alpha: float = 1.0
    a_p: float = 1.0
    b_p: float = 10.0
    a_q: float = 10.0
    b_q: float = 1.0


def log_crp(sizes, alpha) -> jax.Array:
    r"""Log EPPF of the CRP.

    :math:`K\log\alpha + \log\Gamma(\alpha) - \log\Gamma(\alpha+n) + \sum_k \log\Gamma(n_k)`.

    Parameters
    ----------
    sizes : array of float of shape (K,)
        Cluster sizes; empty slots (size 0) are ignored.
    alpha : float
        DP concentration, > 0.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> round(float(log_crp(jnp.array([2.0, 1.0, 0.0]), 1.0)), 4)
    -1.7918
    """
    sizes = jnp.asarray(sizes)
    active = sizes > 0
    n = sizes.sum()
    return (
        active.sum() * jnp.log(alpha)
        + gammaln(alpha)
        - gammaln(alpha + n)
        + jnp.where(active, gammaln(jnp.where(active, sizes, 1.0)), 0.0).sum()
    )


def log_link_likelihood(counts, prior: TVClustPrior, p=None, q=None) -> jax.Array:
    r"""Log likelihood of the observed links given the partition, through its pair counts.

    With ``p, q`` given: :math:`N_{11}\ln p + N_{01}\ln(1-p) + N_{00}\ln q + N_{10}\ln(1-q)`.
    With ``p = q = None``, ``p`` and ``q`` are integrated out against their Beta priors (spec 2.6):
    :math:`\ln B(a_p+N_{11}, b_p+N_{01}) + \ln B(a_q+N_{00}, b_q+N_{10}) - \ln B(a_p,b_p) - \ln B(a_q,b_q)`.

    Parameters
    ----------
    counts : array of float of shape (4,)
        Pair counts ``[N11, N01, N10, N00]`` (:func:`pair_counts`).
    prior : TVClustPrior
        Beta priors of ``p`` and ``q`` (used when they are integrated out).
    p, q : float or None, default=None
        Link sensitivity and specificity in (0, 1); None integrates both out.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> counts = jnp.array([3.0, 0.0, 0.0, 2.0])  # N11, N01, N10, N00
    >>> bool(log_link_likelihood(counts, TVClustPrior(), 0.9, 0.9) < 0)
    True
    """
    n11, n01, n10, n00 = counts[0], counts[1], counts[2], counts[3]
    if p is None:
        return (
            betaln(prior.a_p + n11, prior.b_p + n01)
            + betaln(prior.a_q + n00, prior.b_q + n10)
            - betaln(prior.a_p, prior.b_p)
            - betaln(prior.a_q, prior.b_q)
        )
    return _xlogy(n11, p) + _xlogy(n01, 1 - p) + _xlogy(n00, q) + _xlogy(n10, 1 - q)


def link_beta_params(counts, a_p=1.0, b_p=1.0, a_q=None, b_q=None):
    r"""The Beta posteriors of TVClust's link sensitivity and specificity given a partition's pair counts:
    ``(a_p + N11, b_p + N01, a_q + N00, b_q + N10)``.

    TVClust (Khashabi et al. 2015, Section 3; spec 2.5): a pair in one cluster is observed as a may-link
    with probability :math:`p`, a pair across clusters as a may-not-link with probability :math:`q`. With
    ``counts`` :math:`[N_{11}, N_{01}, N_{10}, N_{00}]` (:func:`pair_counts`, last axis) and priors
    :math:`p \sim \mathrm{Beta}(a_p, b_p)`, :math:`q \sim \mathrm{Beta}(a_q, b_q)` (``a_q``, ``b_q``
    default to ``a_p``, ``b_p``), :math:`p \mid z \sim \mathrm{Beta}(a_p + N_{11}, b_p + N_{01})` and
    :math:`q \mid z \sim \mathrm{Beta}(a_q + N_{00}, b_q + N_{10})`. Arrays of any namespace (traced in
    the samplers' sweeps, NumPy in ``posterior``).

    Parameters
    ----------
    counts : array of float of shape (..., 4)
        Pair counts ``[N11, N01, N10, N00]`` on the last axis.
    a_p, b_p : float, default=1.0
        Beta prior of the sensitivity ``p``, > 0.
    a_q, b_q : float or None, default=None
        Beta prior of the specificity ``q``; None takes ``a_p``, ``b_p``.

    Examples
    --------
    >>> import numpy as np
    >>> [float(v) for v in link_beta_params(np.array([5.0, 1.0, 0.0, 4.0]), 1.0, 1.0)]
    [6.0, 2.0, 5.0, 1.0]
    """
    a_q = a_p if a_q is None else a_q
    b_q = b_p if b_q is None else b_q
    n11, n01, n10, n00 = counts[..., 0], counts[..., 1], counts[..., 2], counts[..., 3]
    return a_p + n11, b_p + n01, a_q + n00, b_q + n10


def link_reliability(counts, a=1.0, b=1.0, *, a_q=None, b_q=None, xp=np):
    r"""Posterior means of TVClust's link sensitivity and specificity given a partition's pair counts:
    :math:`\hat p = (N_{11} + a) / (N_{11} + N_{01} + a + b)`, :math:`\hat q = (N_{00} + a_q) / (N_{10} +
    N_{00} + a_q + b_q)` of :func:`link_beta_params` (Beta(``a``, ``b``) on p; on q too unless ``a_q``,
    ``b_q`` are given). The collapsed samplers report these each sweep (``xp=jax.numpy``, traced;
    ``posterior.link_parameter_draws``' ``p_cond_mean`` / ``q_cond_mean``); with the default
    ``xp=numpy``, host floats.

    Parameters
    ----------
    counts : array-like of float of shape (..., 4)
        Pair counts ``[N11, N01, N10, N00]``.
    a, b : float, default=1.0
        Beta prior of ``p`` (and of ``q`` unless ``a_q``, ``b_q`` are given), > 0.
    a_q, b_q : float or None, default=None
        Beta prior of ``q``; None takes ``a``, ``b``.
    xp : module, default=numpy
        Array namespace; with NumPy the result is a pair of host floats.

    Examples
    --------
    >>> link_reliability([8, 0, 0, 8], 1.0, 1.0)
    (0.9, 0.9)
    """
    if xp is np:
        counts = np.asarray(counts, np.float64)
    ap, bp, aq, bq = link_beta_params(counts, a, b, a_q, b_q)
    p, q = ap / (ap + bp), aq / (aq + bq)
    return (float(p), float(q)) if xp is np else (p, q)


def link_log_odds(p, q, xp=np):
    r"""The log-likelihood ratios of a may-link and of a may-not-link for "same cluster" against "different
    clusters" under TVClust's link model (sensitivity ``p``, specificity ``q``, :func:`link_reliability`):
    :math:`\ell_+ = \ln\frac{p}{1-q}`, :math:`\ell_- = \ln\frac{q}{1-p}`. They are the link weights of
    TVClust's Gibbs conditionals (``xp=jax.numpy`` there, traced) and, times :math:`2\sigma^2`, RDP-means'
    :math:`\xi_1, \xi_2` in the small-variance limit (:func:`small_variance_hyper`). With the
    default ``xp=numpy``: host floats.

    Parameters
    ----------
    p : float or array
        Link sensitivity in (0, 1).
    q : float or array
        Link specificity in (0, 1).
    xp : module, default=numpy
        Array namespace; with NumPy the result is a pair of host floats.

    Examples
    --------
    >>> [round(v, 3) for v in link_log_odds(0.9, 0.9)]
    [2.197, 2.197]
    """
    l_plus, l_minus = xp.log(p) - xp.log1p(-q), xp.log(q) - xp.log1p(-p)
    return (float(l_plus), float(l_minus)) if xp is np else (l_plus, l_minus)


def link_reliability_share(counts, reference=0.9, strength=11.0):
    r"""The weight share of may-links and of may-not-links that a partition's pair counts support, and the
    link reliability it is read from: ``((r_plus, r_minus), (p, q))``.

    ``p, q``: :func:`link_reliability` under Beta(``strength * reference``, ``strength * (1 - reference)``)
    priors on both -- by default Beta(9.9, 1.1), TVClust's prior for "links are mostly right"
    (``TVClust(link_noise=0.1, link_strength=11)``: prior mean 0.9, the 11 pseudo-links of spec 2.8's
    neutral prior). :math:`r_\pm = \min\{1, \max(0, \ell_\pm) / \ell_{\rm ref}\}`, with :math:`\ell_\pm`
    their :func:`link_log_odds` and :math:`\ell_{\rm ref} = \ln\frac{r}{1-r}` (``r = reference``) the
    log-odds of both kinds at the prior mean, ``ln 9``. So links the counts do not contradict keep their
    full weight (1; also with no counts at all, where ``p = q = reference``); a kind the partition often
    violates loses weight in proportion to its log-odds, and a kind with no evidence (:math:`\ell \le 0`:
    violated as often as kept) gets 0. RDP-means' ``link_reliability="auto"``. Host scalars.

    Parameters
    ----------
    counts : array-like of float of shape (4,)
        Pair counts ``[N11, N01, N10, N00]`` of a partition.
    reference : float, default=0.9
        Prior mean of ``p`` and ``q`` in (0.5, 1): the reliability at which a link kind keeps its full
        weight (``docs/decisions/0010-rdpmeans-link-reliability.md``).
    strength : float, default=11.0
        Pseudo-links of the Beta prior, > 0.

    Examples
    --------
    >>> link_reliability_share([0, 0, 0, 0])[0]
    (1.0, 1.0)
    """
    p, q = link_reliability(counts, strength * reference, strength * (1.0 - reference))
    return link_weight_shares(p, q, reference), (p, q)


def link_weight_shares(p, q, reference=0.9) -> tuple[float, float]:
    r"""The weight shares :math:`r_\pm = \min\{1, \max(0, \ell_\pm) / \ell_{\rm ref}\}` of may-links and
    may-not-links for link sensitivity ``p`` and specificity ``q``: :math:`\ell_\pm` their
    :func:`link_log_odds`, :math:`\ell_{\rm ref} = \ln\frac{r}{1-r}` (``r = reference``; ``ln 9`` at the
    default 0.9). :func:`link_reliability_share` reads ``p, q`` off a partition's pair counts and calls it.
    Host scalars.

    Parameters
    ----------
    p : float
        Link sensitivity in (0, 1).
    q : float
        Link specificity in (0, 1).
    reference : float, default=0.9
        Reliability in (0.5, 1) whose log-odds give a share of 1.

    Examples
    --------
    >>> link_weight_shares(0.9, 0.9)
    (1.0, 1.0)
    """
    ref = float(np.log(reference) - np.log1p(-reference))
    l_plus, l_minus = link_log_odds(p, q)
    return min(1.0, max(0.0, l_plus) / ref), min(1.0, max(0.0, l_minus) / ref)


def escobar_west(key, alpha, k, n, a, b):
    r"""One draw of the DP concentration alpha given K clusters of n points (Escobar & West 1995, Section 6).

    Under a Gamma(``a``, ``b``) prior (shape, rate) the auxiliary-variable update draws
    :math:`\eta \sim \mathrm{Beta}(\alpha + 1, n)`, then :math:`\alpha` from the two-component mixture
    :math:`\pi_\eta \mathrm{Gamma}(a + K, b - \ln\eta) + (1 - \pi_\eta) \mathrm{Gamma}(a + K - 1,
    b - \ln\eta)` with :math:`\pi_\eta / (1 - \pi_\eta) = (a + K - 1) / (n (b - \ln\eta))` (their eq. 13);
    ``alpha`` carries the dtype. Traced (the samplers call it after each sweep when ``sample_alpha``).

    Parameters
    ----------
    key : jax.random key
        PRNG key.
    alpha : jax scalar of float
        Current concentration, > 0; sets the dtype.
    k : int or int scalar
        Number of clusters.
    n : int
        Number of points.
    a : float
        Shape of the Gamma prior on alpha, > 0.
    b : float
        Rate of the Gamma prior on alpha, > 0.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> a = escobar_west(jax.random.key(0), jnp.float32(1.0), 3, 100, 1.0, 1.0)
    >>> bool(a > 0)
    True
    """
    k1, k2, k3 = jax.random.split(key, 3)
    eta = jax.random.beta(k1, alpha + 1.0, n, dtype=alpha.dtype)
    rate = b - jnp.log(eta)
    odds = (a + k - 1.0) / (n * rate)
    shape = jnp.where(jax.random.uniform(k2, dtype=alpha.dtype) < odds / (1.0 + odds), a + k, a + k - 1.0)
    return jax.random.gamma(k3, shape, dtype=alpha.dtype) / rate


def log_joint_from_stats(stats, counts, family, prior: TVClustPrior, p=None, q=None) -> jax.Array:
    """Log joint from per-slot statistics and pair counts (what a sampler carries), O(K).

    Parameters
    ----------
    stats : family statistics
        Per-slot sufficient statistics (``family.stats``), with counts ``stats.n``.
    counts : array of float of shape (4,)
        Pair counts ``[N11, N01, N10, N00]``.
    family : a conjugate family from :mod:`ppclust.families`
        The data view's cluster model.
    prior : TVClustPrior
        alpha and the Beta priors of p and q.
    p, q : float or None, default=None
        None integrates p and q out; values condition on them.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> x = jnp.array([[0.0, 0.0], [0.1, 0.0], [3.0, 3.0]])
    >>> fam = GaussianNIW.default(x)
    >>> stats = fam.stats(x, jnp.array([0, 0, 1]), 3)
    >>> bool(jnp.isfinite(log_joint_from_stats(stats, jnp.zeros(4), fam, TVClustPrior())))
    True
    """
    return (
        log_crp(stats.n, prior.alpha)
        + family.log_marginal(stats).sum()
        + log_link_likelihood(counts, prior, p, q)
    )


def log_joint(
    labels, x, links: Links, family, prior: TVClustPrior, p=None, q=None, *, k_max=None
) -> jax.Array:
    r"""Log joint :math:`\log p(z, x, E \mid \alpha[, p, q])`, cluster parameters integrated out.

    Parameters
    ----------
    labels : int array of shape (n,)
        Any labelling of the partition, values in ``[0, k_max)``.
    x : array of shape (n, d)
        The points.
    links : :class:`Links`
        The observed pairs.
    family : a conjugate family from :mod:`ppclust.families`
        The data view's cluster model.
    prior : :class:`TVClustPrior`
        alpha and the Beta priors of p and q.
    p, q : float or None, default=None
        None integrates p and q out (spec 2.6); values condition on them.
    k_max : int or None, default=None
        Slots of the statistics (static); None: n, which holds any labelling.

    Returns
    -------
    jax.Array
        The scalar log joint (eqs. 1 and 8).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> x = jnp.array([[0.0, 0.0], [0.1, 0.0], [3.0, 3.0]])
    >>> fam = GaussianNIW.default(x)
    >>> links = make_links(3, [[0, 1]], [1])
    >>> bool(log_joint(jnp.array([0, 0, 1]), x, links, fam, TVClustPrior())
    ...      > log_joint(jnp.array([0, 1, 1]), x, links, fam, TVClustPrior()))
    True
    """
    labels = jnp.asarray(labels, dtype=jnp.int32)
    stats = family.stats(x, labels, x.shape[0] if k_max is None else int(k_max))
    return log_joint_from_stats(stats, pair_counts(labels, links), family, prior, p, q)


def link_noise_beta(link_noise, strength):
    r"""Beta parameters ``(a_p, b_p, a_q, b_q)`` of the prior "a share ``link_noise`` of the links is wrong".

    :math:`p, q \sim \mathrm{Beta}(s (1 - \epsilon), s \epsilon)` with :math:`\epsilon` = ``link_noise``
    in (0, 0.5] and :math:`s` = ``strength`` > 0 pseudo-links: prior mean :math:`1 - \epsilon` for both.

    Parameters
    ----------
    link_noise : float
        Prior share of wrong links, in (0, 0.5] (``docs/decisions/0002-tvclust-link-prior.md``).
    strength : float
        Pseudo-links of the prior, > 0.

    Examples
    --------
    >>> [round(v, 2) for v in link_noise_beta(0.1, 11.0)]
    [9.9, 1.1, 9.9, 1.1]
    """
    s, eps = float(strength), float(link_noise)
    return s * (1 - eps), s * eps, s * (1 - eps), s * eps


def sample_prior(key, n, *, alpha=1.0, p=0.9, q=0.9, link_fraction=0.01, dim=2, mean_scale=5.0, labels=None):
    """Ancestral sampler (spec Section 1.4) for synthetic tests, Gaussian data view.

    1. ``z ~ CRP(alpha)`` (or the given ``labels``); 2. cluster means ``N(0, mean_scale^2 I)``, unit
    covariance, ``x_i ~ N(mu_{z_i}, I)``; 3. a uniform random set of ``round(link_fraction * n)`` distinct
    pairs; 4. each observed pair is a may-link with probability ``p`` (same cluster) or ``1 - q``.

    Returns ``(x, labels, pairs, sign)`` as NumPy arrays (sign +1 / -1).

    Parameters
    ----------
    key : jax.random key
        Seeds the NumPy generator used for every draw.
    n : int
        Number of points.
    alpha : float, default=1.0
        CRP concentration (ignored when ``labels`` is given).
    p : float, default=0.9
        Probability that a same-cluster pair is a may-link.
    q : float, default=0.9
        Probability that a cross-cluster pair is a may-not-link.
    link_fraction : float, default=0.01
        Number of observed pairs as a share of ``n``.
    dim : int, default=2
        Data dimension.
    mean_scale : float, default=5.0
        Standard deviation of the cluster means.
    labels : array-like of int of shape (n,), default=None
        A partition to use instead of a CRP draw.

    Examples
    --------
    >>> import jax
    >>> x, labels, pairs, sign = sample_prior(jax.random.key(0), 20, link_fraction=0.5)
    >>> x.shape, pairs.shape
    ((20, 2), (10, 2))
    """
    rng = np.random.default_rng(np.asarray(jax.random.key_data(key)).ravel()[-1].item())
    if labels is None:
        labels = np.zeros(n, np.int32)
        sizes = [1]
        for i in range(1, n):
            w = np.array(sizes + [alpha], dtype=float)
            k = rng.choice(len(w), p=w / w.sum())
            if k == len(sizes):
                sizes.append(0)
            sizes[k] += 1
            labels[i] = k
    labels = np.asarray(labels, np.int32)
    k = labels.max() + 1
    means = rng.normal(scale=mean_scale, size=(k, dim))
    x = means[labels] + rng.normal(size=(n, dim))
    m = min(int(round(link_fraction * n)), n * (n - 1) // 2)
    chosen = set()
    while len(chosen) < m:
        i, j = rng.integers(0, n, 2)
        if i != j:
            chosen.add((min(i, j), max(i, j)))
    pairs = np.array(sorted(chosen), dtype=np.int32).reshape(-1, 2)
    same = labels[pairs[:, 0]] == labels[pairs[:, 1]]
    u = rng.random(m)
    plus = np.where(same, u < p, u < 1 - q)
    sign = np.where(plus, 1, -1).astype(np.int8)
    return x, labels, pairs, sign


def numpyro_model(
    x=None,
    pairs=None,
    sign=None,
    *,
    n=None,
    d=None,
    k_trunc=15,
    alpha=1.0,
    mu0=None,
    kappa0=1.0,
    nu0=None,
    psi0=None,
    prior: TVClustPrior | None = None,
):
    """TVClust in NumPyro: truncated stick-breaking DP (T = ``k_trunc``), NIW Gaussian components.

    Sites: ``v`` (sticks), ``Sigma``, ``mu``, ``p``, ``q``, ``z`` (discrete), ``x`` and ``E`` (``E = 1`` for a
    may-link, one per pair of ``pairs``). ``x`` and ``sign`` are observed when given; with ``x=None`` (then
    ``n`` and ``d`` are required) and ``sign=None`` the model is generative:
    ``numpyro.infer.Predictive(numpyro_model, num_samples=...)(key, n=100, d=2, pairs=pairs)`` simulates
    data and links from the prior. Defaults equal :class:`ppclust.TVClust`'s (spec 2.8 [R]):
    ``mu0 = 0``, ``kappa0 = 1``, ``nu0 = d + 2``, ``psi0 = (nu0 - d - 1) I = I``, Beta(1, 10) and Beta(10, 1)
    for ``p`` and ``q``. The custom kernel :class:`ppclust.inference.TVClustKernel` samples the collapsed
    version.

    Parameters
    ----------
    x : array-like of shape (n, d), default=None
        Observed points; None simulates them (then ``n`` and ``d`` are required).
    pairs : array-like of int of shape (m, 2), default=None
        The observed pairs.
    sign : array-like of shape (m,), default=None
        Observed link signs (+1 / -1); None simulates them.
    n, d : int, default=None
        Number of points and dimension when ``x`` is None.
    k_trunc : int, default=15
        Truncation of the stick-breaking DP.
    alpha : float, default=1.0
        DP concentration (when ``prior`` is None).
    mu0 : array-like of shape (d,), default=None
        NIW prior mean; None is 0.
    kappa0 : float, default=1.0
        NIW mean pseudo-count (``docs/decisions/0001-tvclust-kappa0.md``).
    nu0 : float, default=None
        NIW degrees of freedom; None is ``d + 2``.
    psi0 : array-like of shape (d, d), default=None
        NIW scale matrix; None is ``(nu0 - d - 1) I``.
    prior : TVClustPrior, default=None
        alpha and the Beta priors of p and q; None is ``TVClustPrior(alpha=alpha)``.

    Examples
    --------
    >>> import jax
    >>> from numpyro.infer import Predictive
    >>> sim = Predictive(numpyro_model, num_samples=1)(jax.random.key(0), n=4, d=2, pairs=[[0, 1]])
    >>> sim["x"].shape
    (1, 4, 2)
    """
    import numpyro
    import numpyro.distributions as dist

    prior = TVClustPrior(alpha=alpha) if prior is None else prior
    if x is not None:
        x = jnp.asarray(x)
        n, d = x.shape
    elif n is None or d is None:
        raise ValueError("numpyro_model needs `x`, or `n` and `d` to simulate data (x=None)")
    mu0 = jnp.zeros(d) if mu0 is None else jnp.asarray(mu0)
    nu0 = float(d + 2) if nu0 is None else float(nu0)
    psi0 = jnp.eye(d) * max(nu0 - d - 1.0, 1.0) if psi0 is None else jnp.asarray(psi0)
    with numpyro.plate("sticks", k_trunc - 1):
        v = numpyro.sample("v", dist.Beta(1.0, prior.alpha))
    weights = jnp.concatenate([v, jnp.ones(1)]) * jnp.concatenate([jnp.ones(1), jnp.cumprod(1 - v)])
    with numpyro.plate("components", k_trunc):
        sigma = numpyro.sample("Sigma", dist.InverseWishart(nu0, psi0))
        mu = numpyro.sample("mu", dist.MultivariateNormal(mu0, sigma / kappa0))
    p = numpyro.sample("p", dist.Beta(prior.a_p, prior.b_p))
    q = numpyro.sample("q", dist.Beta(prior.a_q, prior.b_q))
    with numpyro.plate("data", n):
        z = numpyro.sample("z", dist.Categorical(weights))
        numpyro.sample("x", dist.MultivariateNormal(mu[z], sigma[z]), obs=x)
    if pairs is not None and len(pairs):
        pairs = jnp.asarray(pairs)
        same = z[pairs[:, 0]] == z[pairs[:, 1]]
        obs = None if sign is None else (jnp.asarray(sign) > 0).astype(jnp.int32)
        with numpyro.plate("links", pairs.shape[0]):
            numpyro.sample("E", dist.Bernoulli(probs=jnp.where(same, p, 1 - q)), obs=obs)


def collapsed_numpyro_model(x, links: Links, family, prior: TVClustPrior, *, k_trunc=None, p=None, q=None):
    """Collapsed TVClust over labelled partitions, as a NumPyro model (checks against generic kernels).

    ``z`` takes ``T = k_trunc >= n`` labels with a uniform site prior; a ``factor`` turns that into the
    collapsed posterior of the *partition*: a partition with ``K`` blocks has ``T!/(T-K)!`` labellings,
    so ``factor = log_joint - log(T!/(T-K)!) + n log T``. ``numpyro.infer.DiscreteGibbs`` on this model
    targets the same partition posterior as :func:`ppclust.inference.gibbs.sample`.

    Parameters
    ----------
    x : array of shape (n, d)
        The points.
    links : Links
        The observed pairs.
    family : a conjugate family from :mod:`ppclust.families`
        The data view's cluster model.
    prior : TVClustPrior
        alpha and the Beta priors of p and q.
    k_trunc : int, default=None
        Number of labels ``T >= n``; None is ``n``.
    p, q : float or None, default=None
        None integrates p and q out; values condition on them.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from numpyro.infer.util import log_density
    >>> from ppclust.families import GaussianNIW
    >>> x = jnp.array([[0.0, 0.0], [0.1, 0.0], [3.0, 3.0]])
    >>> args = (x, make_links(3, [[0, 1]], [1]), GaussianNIW.default(x), TVClustPrior())
    >>> lp, _ = log_density(collapsed_numpyro_model, args, {}, {"z": jnp.array([0, 0, 1])})
    >>> bool(jnp.isfinite(lp))
    True
    """
    import numpyro
    import numpyro.distributions as dist

    n = x.shape[0]
    t = n if k_trunc is None else k_trunc
    with numpyro.plate("data", n):
        z = numpyro.sample("z", dist.Categorical(logits=jnp.zeros(t)))
    sizes = jnp.zeros(t).at[z].add(1.0)
    k = (sizes > 0).sum()
    log_labellings = gammaln(t + 1.0) - gammaln(t - k + 1.0)
    numpyro.factor("tvclust", log_joint(z, x, links, family, prior, p, q) - log_labellings + n * jnp.log(t))


class SmallVarianceHyper(NamedTuple):
    """TVClust hyperparameters whose ``sigma2 -> 0`` limit is RDP-means (see :func:`small_variance_hyper`).

    Attributes
    ----------
    alpha : float
        DP concentration.
    log_alpha : float
        Its logarithm (exact where ``alpha`` underflows).
    p : float
        Link sensitivity (fixed).
    q : float
        Link specificity (fixed).
    link_weight : float
        Weight of every observed pair.
    sigma2 : float
        Likelihood variance.
    tau2 : float
        Prior variance of the cluster means.
    mu0 : ndarray of shape (d,)
        Prior mean of the cluster means.

    Examples
    --------
    >>> h = small_variance_hyper(0.5, 4.0, 1.0, d=2)
    >>> h.prior().alpha == h.alpha
    True
    """

    alpha: float  # DP concentration
    log_alpha: float
    p: float  # link sensitivity (fixed)
    q: float  # link specificity (fixed)
    link_weight: float  # weight of every observed pair
    sigma2: float
    tau2: float
    mu0: np.ndarray  # (d,)

    def family(self):
        """The scaled family ``SphericalGaussian(sigma2, mu0, tau2)`` (known variance, N(mu0, tau2 I))."""
        from ppclust.families import SphericalGaussian

        return SphericalGaussian(jnp.asarray(self.sigma2), jnp.asarray(self.mu0), jnp.asarray(self.tau2))

    def prior(self) -> TVClustPrior:
        """``TVClustPrior`` with this ``alpha`` (the Beta priors are unused: sample with ``pq="fixed"``)."""
        return TVClustPrior(alpha=self.alpha)


def small_variance_hyper(sigma2, lam, xi1, xi2=None, *, d, tau2=1.0, mu0=None, scale_links="weight"):
    r"""Map ``(sigma2, lambda, xi1, xi2)`` to TVClust hyperparameters whose small-variance limit is RDP-means.

    Spec ``tvclust-rdpmeans.md`` Sections 3.2-3.3 (Kulis & Jordan 2012; Khashabi et al. 2015, Lemma 3,
    eqs. 17-19 with the sign of :math:`\lambda` corrected). Likelihood :math:`N(x;\mu,\sigma^2 I)`, prior
    :math:`\mu\sim N(\mu_0,\tau^2 I)`, :math:`\gamma = 1/(2\sigma^2)`:

    .. math::

        \alpha = (1+\tau^2/\sigma^2)^{d/2}\exp\!\big(-\tfrac{\lambda}{2\sigma^2}\big), \qquad
        \ln\tfrac{p}{1-q} = \tfrac{\xi_1}{2\sigma^2}, \qquad \ln\tfrac{q}{1-p} = \tfrac{\xi_2}{2\sigma^2}.

    The Gibbs weights then become :math:`w_k \propto n_{-i,k}\exp\{-\gamma[D_k - \xi_1 f^i_k + \xi_2 s^i_k]\}`
    and :math:`w_{\rm new}\propto \nu\,e^{-\gamma\lambda}` with :math:`D=\|x-\mu\|^2`, so as
    :math:`\sigma^2\to0` a sweep becomes the RDP-means rule
    :math:`\arg\min\{D_k-\xi_1f_k+\xi_2s_k,\ \lambda\}`
    and the log joint becomes :math:`-\gamma J + O(\log\sigma^2)` with
    :math:`J=\sum_i\|x_i-\mu_{z_i}\|^2+\lambda K-\xi_1N_{11}+\xi_2N_{01}` (spec 3.5). In the collapsed
    sampler :math:`D_k` is :math:`\tfrac{n_k}{n_k+1}\|x_i-\bar x_k\|^2`, the exact change of the
    within-cluster sum of squares, so the limiting sweep is a coordinate descent on :math:`J`.

    Parameters
    ----------
    sigma2 : float
        The likelihood variance, > 0.
    lam : float
        RDP-means' cost of a cluster, > 0.
    xi1 : float
        RDP-means' weight of a may-link, > 0.
    xi2 : float or None, default=None
        RDP-means' weight of a may-not-link, > 0; None is ``xi1``.
    d : int
        Data dimension.
    tau2 : float, default=1.0
        Prior variance of the cluster means, > 0.
    mu0 : array-like of shape (d,), default=None
        Prior mean of the cluster means; None is 0.
    scale_links : {"weight", "pq"}, default="weight"
        ``"weight"`` puts the factor :math:`1/(2\sigma^2)` into ``link_weight`` and
        returns the :math:`\sigma`-free ``p, q`` with :math:`\ln\frac{p}{1-q}=\xi_1`,
        :math:`\ln\frac{q}{1-p}=\xi_2`; ``"pq"`` returns the spec's :math:`\sigma`-dependent ``p, q``
        (``link_weight = 1``), which round to 1 in float64 once :math:`\xi/(2\sigma^2)\gtrsim 36`
        (then a ValueError). Both give the same Gibbs conditionals and the same log joint up to a
        partition-free constant, because links enter only through weighted pair counts (spec 1.3).

    Returns
    -------
    :class:`SmallVarianceHyper` (``.family()``, ``.prior()``; pass ``p, q`` with ``pq="fixed"`` and
    ``link_weight`` as the weight of every pair, e.g. ``make_links(n, pairs, sign, weight)``).

    Examples
    --------
    >>> h = small_variance_hyper(0.5, 4.0, 1.0, d=2)
    >>> [round(v, 3) for v in link_log_odds(h.p, h.q)]
    [1.0, 1.0]
    """
    sigma2, lam, xi1 = float(sigma2), float(lam), float(xi1)
    xi2 = xi1 if xi2 is None else float(xi2)
    if not (sigma2 > 0 and lam > 0 and xi1 > 0 and xi2 > 0 and tau2 > 0):
        raise ValueError("sigma2, lam, xi1, xi2 and tau2 must be > 0")
    gamma = 0.5 / sigma2
    log_alpha = 0.5 * d * np.log1p(tau2 / sigma2) - gamma * lam
    if log_alpha < -700:
        raise ValueError(f"alpha = exp({log_alpha:.0f}) underflows; use a larger sigma2 or a smaller lam")
    if scale_links == "weight":
        a1, a2, weight = xi1, xi2, gamma
    elif scale_links == "pq":
        a1, a2, weight = gamma * xi1, gamma * xi2, 1.0
    else:
        raise ValueError(f"scale_links must be 'weight' or 'pq', got {scale_links!r}")
    # p = a(b-1)/(ab-1) = (1 - 1/b)/(1 - 1/(ab)), q = b(a-1)/(ab-1), with a = e^{a1}, b = e^{a2}
    den = -np.expm1(-(a1 + a2))
    p, q = float(-np.expm1(-a2) / den), float(-np.expm1(-a1) / den)
    if not (p < 1.0 and q < 1.0):
        raise ValueError(f"p, q round to 1 at xi/(2 sigma2) = {max(a1, a2):.0f}; use scale_links='weight'")
    mu0 = np.zeros(d) if mu0 is None else np.asarray(mu0, np.float64)
    return SmallVarianceHyper(
        float(np.exp(log_alpha)), float(log_alpha), p, q, float(weight), sigma2, float(tau2), mu0
    )


# --- helpers ---


def _xlogy(a, b):
    return jnp.where(a == 0, 0.0, a * jnp.log(jnp.where(a == 0, 1.0, b)))
