"""scikit-learn estimator for TVClust (Khashabi et al. 2015): collapsed Gibbs posterior over partitions.

Validates, turns links and partial labels into a neighbour table, runs :func:`ppclust.inference.gibbs.sample`
(Gaussian NIW family; spec 2.8 [R] defaults: standardised features, mu0 = 0, Psi0 = I, nu0 = d + 2;
kappa0 = 0.01 after Fraley & Raftery 2007, see ``kappa0``; p, q ~ Beta(0.9 L, 0.1 L) for L links since
session 10 -- "links are mostly right", see ``link_noise`` -- instead of spec 2.8's Beta(1, 10),
Beta(10, 1)) and
summarises the draws with :mod:`ppclust.posterior`.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin

from ppclust._jax import as_key, x64
from ppclust.errors import PPClustError
from ppclust.estimators._base import (
    DEVICES,
    NONNEG_INT,
    POSITIVE_INT,
    POSITIVE_REAL,
    RANDOM_STATE,
    UNIT_OPEN,
    Integral,
    Interval,
    Real,
    StrOptions,
    data_mesh,
    deprecated_name,
    fit_context,
    link_side_info,
    renamed_param,
    restart_devices,
    side_labels,
    validate_X,
)
from ppclust.families import GaussianNIW
from ppclust.inference import gibbs, hartigan, tvclust_vb
from ppclust.models.tvclust import TVClustPrior, make_links

__all__ = ["TVClust"]


class TVClust(ClusterMixin, BaseEstimator):
    """TVClust: Dirichlet-process Gaussian mixture + noisy link graph, sampled by collapsed Gibbs.

    Parameters
    ----------
    n_draws, n_warmup, n_chains, thin : int, default=500, 500, 2, 1
        Kept draws per chain (>= 1), discarded sweeps (>= 0), chains (>= 1), sweeps per kept draw (>= 1).
    alpha : float, default=1.0
        DP concentration (resampled by Escobar-West when ``sample_alpha``). ``sample_alpha`` stays False
        by default: under a Gamma(1, 1) prior the resampled alpha rises to 2-4 on real data that the DP
        over-splits, which adds clusters (``benchmarks/results/tvclust_prior_study.md``).
    a_p, b_p, a_q, b_q : float
        Beta priors of the link sensitivity p and specificity q when ``link_noise=None`` (default Beta(1, 10),
        Beta(10, 1): spec 2.8's neutral prior, under which a link carries no information until the
        partition agrees with it; also what ``algorithm="variational"`` uses under ``link_noise="auto"``,
        the authors' values).
    link_noise : float in (0, 0.5], "auto" or None, default="auto"
        The user's belief about the share of wrong links (a flipped sign). A float replaces
        ``a_p, b_p, a_q, b_q`` by ``p ~ Beta(s (1 - link_noise), s link_noise)`` and the same for ``q``
        (prior mean of both ``1 - link_noise``; Khashabi et al. 2015, eq. 8: the collapsed p, q enter
        through Beta functions of the four pair counts plus these pseudo-counts), with strength ``s`` from
        ``link_strength``. ``"auto"``: 0.1 for the samplers ("links are mostly right": a link is right
        9 times in 10, about the neutral prior's own mean of q, 10/11) and None for
        ``algorithm="variational"`` (the authors' Beta(1, 10), Beta(10, 1)). None: the explicit
        ``a_p, b_p, a_q, b_q`` (the default before session 10). ``link_noise=0.5`` is uninformative.
        Why not the neutral prior: with it, clean links were explained as noise whenever the Gaussian
        term prefers another partition -- at 3 clean random pairs per point the posterior p fell to
        0.31-0.55 on vehicle, segment, penbased and satimage (a third to two thirds of the may-links
        across clusters) and the links hardly moved NMI. It is the model, not mixing: with clean links
        its own log joint scores the chain's partition 120-910 nats above the class partition there (the
        full-covariance data term at d = 16-36, n = 200 favours it by 190-920 nats, the links favour the
        classes by 90-300), and merging the chain's sub-clusters of each class lowers it
        (``benchmarks/results/tvclust_split_study.md``). A collapsed p near 0.4 also makes a may-not-link
        inside a cluster cheap (about ln(q / (1 - p)) nats instead of ln 9 at p = q = 0.9), so classes merge:
        satimage's 3.4 clusters for 6 classes at 10% link noise (``tvclust_bgmm_study.md``; 4.8 with the
        default). On the benefit panel (``benchmarks/results/benefit.md``, 8 data sets, 5 draws) the
        default gains >= 0.05 NMI at 3 clean pairs per point on 6 of 8 sets (5 under the neutral prior),
        stays within 0.02 of no links at 20% flipped links on 8 of 8 and beats BayesianGaussianMixture at
        10% flipped links on 8 of 8 (7). Say so when the links are known to be clean: on 1500 digits
        (PCA to 6 dimensions) with 1500 clean random pairs, ``link_noise=0.01`` gained +0.061 NMI over no
        links against +0.031 at the default, and +0.194 against +0.154 with 6000 pairs (5 draws,
        ``benchmarks/results/issue_cases_study.md``); with 10% of the signs flipped it gained less than
        the default (+0.018 against +0.030).
    link_strength : "links" or float > 0, default="links"
        Strength ``s`` (pseudo-links) of the ``link_noise`` prior. ``"links"``: ``s = max(11, L)`` with
        ``L`` the number of linked pairs (weights summed), so the user's statement keeps its weight
        against the evidence whatever the budget: p and q are learnt from the same links they judge,
        and with ``s`` fixed at the neutral prior's 11 pseudo-links (the session-9 ``link_noise``) it is
        negligible against hundreds of links. With ``s = L`` each posterior mean lies at least as
        close to ``1 - link_noise`` as to the links' own share (p is informed only by the ~L/K
        may-links, so it stays near ``1 - link_noise``), and wrong links still lower it (satimage with 10%
        flipped links: p, q = 0.79 / 0.90, the study above). A float fixes ``s`` (11: the session-9 prior).
    pq : {"collapse", "sample", "fixed"}, default="collapse"
    p, q : float, default=0.9
        Fixed values (``pq="fixed"``) or starting values.
    covariance_type : {"full", "diag", "spherical"}, default="full"
    kappa0 : float or None, default=None
        Strength of the NIW prior on the cluster means, mu_k ~ N(0, Sigma_k / kappa0). None: 0.01 for the
        samplers -- Fraley & Raftery (2007, J. Classif.), mclust's ``priorControl()`` value, which
        ppclust's EM uses too: the mean prior is worth 1/100 of an observation -- and 1 for
        ``algorithm="variational"`` (the authors' beta0 = 1). Why not 1 (spec 2.8's [R] value, the
        default before session 6): each cluster's NIW log marginal likelihood carries
        (d/2) ln(kappa0 / (kappa0 + n_k)) (Murphy 2007), so kappa0 = 0.01 charges every extra cluster
        (d/2) ln 100 = 2.3 d nats more than kappa0 = 1 (an Occam factor for its mean); with kappa0 = 1
        the DP over-splits standardised real data: wine (3 classes) into 16 clusters without links,
        against 7 with kappa0 = 0.01 (``benchmarks/results/tvclust_prior_study.md``, which also shows
        that sampling alpha and a data-covariance Psi0 do not help). ``kappa0=1.0`` restores it.
    psi_scale : float; nu0 : float or None (d + 2)
    standardize : bool, default=True
    k_max : int, default=64
    point_estimate : {"binder", "vi", "max_log_joint"}, default="binder"
        Loss whose posterior expectation the point estimate ``labels_`` minimises over *all* partitions
        (SALSO search, :func:`ppclust.partition.salso`; Dahl, Johnson & Müller 2022), or the draw with the
        highest log joint.
    loss_a : float in (0, 2), default=1.0
        Unequal-cost parameter of the generalised Binder / VI loss: cost of separating a pair the
        posterior joins (joining a separated pair costs ``2 - loss_a``); ``> 1`` favours fewer clusters.
    max_psm_n : int, default=5000
        ``psm_`` (an n x n array) is computed for n up to this; above, ``psm_`` is None and
        :func:`ppclust.posterior.similarity_matrix` computes it on request. The point estimate never needs it.
    random_state : None, int, Generator or JAX key
    algorithm : {"collapsed", "explicit", "subcluster", "variational"}, default="collapsed"
        Collapsed Gibbs (Neal 2000, Alg. 3) or the paper-literal sampler with explicit cluster parameters
        (Alg. 2); both target the same posterior (:func:`ppclust.inference.gibbs.sample`). "subcluster":
        the parallel sampler of :mod:`ppclust.inference.subcluster` (all points updated at once given
        explicit parameters, link-graph colour classes as blocks, exact sub-cluster split/merge moves after
        Chang & Fisher 2013); same posterior, same outputs; ``progress_bar`` does not apply, ``backend``
        picks where its O(n) passes run (below).
        Best with ``init="one"`` (splits only needed): surplus clusters of a k-means++ start leave only
        by merges, two attempts per sweep at the default ``subcluster_moves=4`` (``benchmarks/results/
        subcluster.md``, "Mixing from a wrong K": 17-28 sweeps to ARI > 0.99 from K = 30 for 12 blobs,
        4-12 with ``subcluster_moves=16``).
        ``"variational"``: the authors' own mean-field VB (``func_TVClust.r``; spec 2.9,
        :mod:`ppclust.inference.tvclust_vb`): truncated stick-breaking with ``vb_truncation`` components,
        their update order and stopping rule. It uses ``alpha``, ``kappa0`` (beta0), ``psi_scale``, ``nu0``
        (None -> d, the authors' value), the Beta priors and ``standardize`` (then with the n - 1 sd, as
        the authors); initial means are N(0, I) draws from ``random_state`` (the authors: R's seed 1).
        Only ``covariance_type="full"``. No draws: ``labels_`` is argmax_k r_ik; ``resp_`` (n, K),
        ``elbo_`` (trace), ``n_iter_``, ``converged_``, ``means_`` (standardised space), ``p_``, ``q_``
        (means of q(p), q(q)), ``alpha_`` and ``psm_`` = r r^T (the probability under q that two points
        share a component; n <= max_psm_n) are set; ``posterior_``, ``point_estimate_``,
        ``credible_ball_``, ``expected_loss_``, ``samples_`` and ``log_joint_`` are None.
    subcluster_moves : int, default=4
        ``algorithm="subcluster"`` only: split/merge proposals per sweep (``n_moves`` of
        :func:`ppclust.inference.subcluster.sample`; each sweep also makes as many peel/absorb proposals). The
        default keeps a sweep's time near its label step's (``benchmarks/results/subcluster.md``,
        throughput sections); from a start with surplus clusters, 16 sheds them in far fewer sweeps
        (section "Mixing from a wrong K"), at about twice the time per sweep at n = 10^6.
    vb_truncation : int >= 2, default=15
        Components of the truncated stick-breaking VB (the authors' K = 15).
    vb_mask : {"symmetric", "as_run"}, default="symmetric"
        Which endpoint a link informs in the VB responsibilities: both (default) or only the first of
        each stored pair ("as_run": the authors' experiments pass the sampled direction only, so each
        constraint informs one point). Each link counts once in the q(p), q(q) updates either way.
    vb_max_iter : int, default=30; vb_tol : float, default=5e-5
        VB stops after ``vb_max_iter`` iterations or when the relative ELBO change
        (L_t - L_{t-1}) / |L_{t-1}| < ``vb_tol``, a decrease included (the authors' rule and values).
    init : {"kmeans++", "one"}, default="kmeans++"
        Starting partition of every chain: a k-means++ Voronoi partition with ``init_clusters`` clusters
        (``hartigan.init_kmeanspp`` seeds), or all points in one cluster (spec 2.8). Single-point moves
        rarely split a big cluster whose cannot-links the collapsed p, q can explain as noise: on
        standardised iris with 5% noise-free links, "one" stayed at K = 1 (NMI 0, p_ = 0.31) while
        "kmeans++" reached the true partition (NMI 1.0) in 300 + 300 sweeps. Surplus clusters empty out.
    init_clusters : int, default=10
        Clusters of the k-means++ start (capped at ``k_max // 2`` and n).
    backend : {"auto", "numba", "xla"}, default="auto"
        Implementation of the point updates (:func:`ppclust.inference.gibbs.resolve_backend`). On CPU
        "auto" runs the collapsed sweep as one compiled numba loop (5-10x the XLA loop; the first call in
        a fresh install compiles it for ~15 s, then it is cached on disk); "xla" keeps everything in one
        jitted JAX program (GPU, ``algorithm="explicit"``). Same random numbers, same draws.
        ``algorithm="subcluster"``: "auto" runs the O(n) passes of its split/merge moves (and the
        statistics for d > 4) as compiled multi-threaded loops on CPU without ``devices`` (float64
        Gaussian families; :func:`ppclust.inference.subcluster.resolve_backend`), "xla" in the jitted
        program; the same chain either way.
    progress_bar : bool, default=True
        Two progress bars, warm-up then sampling (sweeps), when someone can see them (Jupyter or a
        terminal, never with ``CI`` set; ``PPCLUST_PROGRESS=1``/``0`` forces them on/off).
        The draws do not depend on it.
    devices : None, "all", "auto", int or list, default=None
        The devices a fit may use (one meaning for every estimator, :mod:`ppclust.estimators._base`).
        ``algorithm="subcluster"`` splits the points over them (``data_mesh``): each device draws its rows
        of the unlinked block, counts reduced with ``psum``; same chain and draws as on one device
        (:func:`ppclust.inference.subcluster.sample`). ``"collapsed"``/``"explicit"`` spread the chains
        over the first ``m`` local devices instead (None: :func:`ppclust.inference.gibbs.sample`'s
        ``"auto"``; same draws either way); ``"variational"`` runs on one device (an explicit int >= 2
        or a list raises).
    n_samples, covariance : deprecated
        Old names of ``n_draws`` and ``covariance_type`` (``n_samples`` means data rows everywhere else);
        still accepted with a ``FutureWarning`` until ppclust 0.3.

    Attributes
    ----------
    labels_ : ndarray (n,) point estimate (canonical labels); n_clusters_ : int;
    point_estimate_ : :class:`ppclust.partition.PartitionEstimate` (expected loss, search summary);
    expected_loss_ : float, its posterior expected loss;
    credible_ball_ : :class:`ppclust.partition.CredibleBall` (95%, same loss; ``print`` / ``.plot()``);
    posterior_ : arviz DataTree (groups posterior, sample_stats, log_likelihood, observed_data, clustering;
    settings and prior as attributes; see :mod:`ppclust.posterior`);
    psm_ : ndarray (n, n) or None when n > max_psm_n; p_, q_, alpha_ : posterior means;
    log_joint_ : ndarray (chain, draw); samples_ : ChainResult (raw draws, resumable state).
    """

    _parameter_constraints: dict = {
        "n_draws": POSITIVE_INT,
        "n_warmup": NONNEG_INT,
        "n_chains": POSITIVE_INT,
        "thin": POSITIVE_INT,
        "alpha": POSITIVE_REAL,
        "a_p": POSITIVE_REAL,
        "b_p": POSITIVE_REAL,
        "a_q": POSITIVE_REAL,
        "b_q": POSITIVE_REAL,
        "link_noise": [None, StrOptions({"auto"}), Interval(Real, 0, 0.5, closed="right")],
        "link_strength": [StrOptions({"links"}), Interval(Real, 0, None, closed="neither")],
        "pq": [StrOptions(set(gibbs.PQ_MODES))],
        "p": UNIT_OPEN,  # log p and log(1 - p) enter the link likelihood
        "q": UNIT_OPEN,
        "sample_alpha": ["boolean"],
        "covariance_type": [StrOptions({"full", "diag", "spherical"})],
        "kappa0": [None, *POSITIVE_REAL],
        "nu0": [None, *POSITIVE_REAL],
        "psi_scale": POSITIVE_REAL,
        "standardize": ["boolean"],
        "k_max": POSITIVE_INT,
        "point_estimate": [StrOptions({"binder", "vi", "max_log_joint"})],
        "max_psm_n": NONNEG_INT,
        "random_state": RANDOM_STATE,
        "algorithm": [StrOptions(set(gibbs.ALGORITHMS) | {"subcluster", "variational"})],
        "vb_truncation": [Interval(Integral, 2, None, closed="left")],
        "subcluster_moves": POSITIVE_INT,
        "vb_mask": [StrOptions(set(tvclust_vb.MASKS))],
        "vb_max_iter": POSITIVE_INT,
        "vb_tol": POSITIVE_REAL,
        "devices": DEVICES,
        "init": [StrOptions({"kmeans++", "one"})],
        "init_clusters": POSITIVE_INT,
        "loss_a": [Interval(Real, 0, 2, closed="neither")],
        "progress_bar": ["boolean"],
        "backend": [StrOptions(set(gibbs.BACKENDS))],
        "n_samples": deprecated_name(POSITIVE_INT),
        "covariance": deprecated_name([StrOptions({"full", "diag", "spherical"})]),
    }

    def __init__(self, n_draws=500, *, n_warmup=500, n_chains=2, thin=1, alpha=1.0, a_p=1.0, b_p=10.0,
                 a_q=10.0, b_q=1.0, link_noise="auto", link_strength="links", pq="collapse", p=0.9, q=0.9,
                 sample_alpha=False, covariance_type="full", kappa0=None, nu0=None, psi_scale=1.0,
                 standardize=True, k_max=64, point_estimate="binder", loss_a=1.0, max_psm_n=5000,
                 random_state=None, algorithm="collapsed", init="kmeans++", init_clusters=10, backend="auto",
                 progress_bar=True, n_samples="deprecated", covariance="deprecated", vb_truncation=15,
                 vb_mask="symmetric", vb_max_iter=30, vb_tol=5e-5, devices=None, subcluster_moves=4):
        self.n_draws = n_draws
        self.subcluster_moves = subcluster_moves
        self.devices = devices
        self.n_samples = n_samples
        self.n_warmup = n_warmup
        self.n_chains = n_chains
        self.thin = thin
        self.alpha = alpha
        self.a_p = a_p
        self.b_p = b_p
        self.a_q = a_q
        self.b_q = b_q
        self.link_noise = link_noise
        self.link_strength = link_strength
        self.pq = pq
        self.p = p
        self.q = q
        self.sample_alpha = sample_alpha
        self.covariance_type = covariance_type
        self.covariance = covariance
        self.kappa0 = kappa0
        self.nu0 = nu0
        self.psi_scale = psi_scale
        self.standardize = standardize
        self.k_max = k_max
        self.point_estimate = point_estimate
        self.loss_a = loss_a
        self.max_psm_n = max_psm_n
        self.random_state = random_state
        self.algorithm = algorithm
        self.init = init
        self.init_clusters = init_clusters
        self.backend = backend
        self.progress_bar = progress_bar
        self.vb_truncation = vb_truncation
        self.vb_mask = vb_mask
        self.vb_max_iter = vb_max_iter
        self.vb_tol = vb_tol

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, must_link=None, cannot_link=None, partial_labels=None):
        """Sample the TVClust posterior (Khashabi et al. 2015: DP mixture, eq. 1, and the noisy-link
        view with sensitivity p and specificity q) by collapsed Gibbs; links from ``must_link`` /
        ``cannot_link`` and from the labelled pairs of ``y``. Sets the point estimate ``labels_``, the
        PSM ``psm_`` and the ArviZ ``posterior_``."""
        n_draws = renamed_param(self, "n_draws", "n_samples")
        covariance_type = renamed_param(self, "covariance_type", "covariance")
        X = validate_X(self, X, reset=True)
        n, d = X.shape
        if covariance_type == "full" and self.nu0 is not None and self.nu0 <= d - 1:
            raise PPClustError(f"`nu0`={self.nu0} must be > n_features - 1 = {d - 1} (inverse-Wishart "
                               "degrees of freedom); raise it or leave nu0=None (d + 2).")
        side = link_side_info(n, side_labels(y, partial_labels), must_link, cannot_link,
                              link_model="soft")  # noisy links combine
        if self.algorithm == "variational" and data_mesh(self.devices, parallel_ok=False) is not None:
            raise PPClustError(f"TVClust(algorithm='variational') runs on one device; "
                               f"devices={self.devices!r} cannot be honoured.")
        if self.algorithm == "variational":
            return self._fit_variational(X, side)
        if self.standardize:
            sd = X.std(0)
            X = (X - X.mean(0)) / np.where(sd > 0, sd, 1.0)
        prior = TVClustPrior(float(self.alpha), *self._link_prior(_link_mass(side)))
        with x64():
            xj = jnp.asarray(X)
            links = make_links(n, side=side) if side.n_links else make_links(n)
            nu0 = float(d + 2) if self.nu0 is None else float(self.nu0)
            psi0 = np.eye(d) * float(self.psi_scale) * max(nu0 - d - 1.0, 1.0)
            kappa0 = 0.01 if self.kappa0 is None else float(self.kappa0)  # see the docstring
            # host arrays put on the device: no program compiled per shape (issue 18)
            family = GaussianNIW(*jax.device_put((np.zeros(d), np.float64(kappa0), np.float64(nu0), psi0)),
                                 covariance_type)
            key, key_init = jax.random.split(as_key(self.random_state))
            k_max = min(int(self.k_max), n)
            init_labels = None
            if self.init == "kmeans++":
                k0 = max(1, min(int(self.init_clusters), k_max // 2, n))
                init_labels = hartigan.kmeanspp_partition(key_init, X, k0)
            sample, extra = gibbs.sample, {}
            if self.algorithm == "subcluster":
                sample, extra = _subcluster_sample, dict(mesh=data_mesh(self.devices),
                                                         n_moves=int(self.subcluster_moves))
            elif self.devices is not None:  # the chains over devices (else gibbs.sample's own "auto")
                extra = dict(devices=restart_devices(self.devices, "TVClust"))
            res = sample(key, xj, links, family, prior, init_labels=init_labels, **extra,
                               n_draws=int(n_draws), n_warmup=int(self.n_warmup),
                               n_chains=int(self.n_chains), thin=int(self.thin),
                               k_max=k_max, pq=self.pq, p=float(self.p), q=float(self.q),
                               sample_alpha=bool(self.sample_alpha), algorithm=self.algorithm,
                               backend=self.backend, progress_bar=bool(self.progress_bar),
                               desc="TVClust")
        self.samples_ = res
        self.n_features_in_ = X.shape[1]
        self._set_posterior(key, X, side, links, family, prior, res)
        return self

    def _link_prior(self, n_links=0.0):
        """(a_p, b_p, a_q, b_q): the explicit Beta parameters, or those implied by ``link_noise`` and
        ``link_strength`` for ``n_links`` linked pairs (weights summed)."""
        eps = self.link_noise
        if eps == "auto":
            eps = None if self.algorithm == "variational" else 0.1  # see the docstring
        if eps is None:
            return float(self.a_p), float(self.b_p), float(self.a_q), float(self.b_q)
        # 11 = strength of spec 2.8's Beta(1, 10); "links": at least the links' own number (docstring)
        s = max(11.0, float(n_links)) if self.link_strength == "links" else float(self.link_strength)
        eps = float(eps)
        return s * (1 - eps), s * eps, s * (1 - eps), s * eps

    def _set_posterior(self, key, X, side, links, family, prior, res):
        """Point estimate, credible ball, PSM (small n) and the ArviZ ``posterior_`` from the draws."""
        from ppclust import partition, posterior

        key_pq, key_seed = jax.random.split(jax.random.fold_in(key, 0x5A150))
        seed = int(jax.random.randint(key_seed, (), 0, 2**31 - 1))
        loss = self.point_estimate if self.point_estimate in partition.LOSSES else "vi"
        if self.point_estimate == "max_log_joint":
            point = posterior.point_estimate(res.labels, loss="max_log_joint", log_joint=res.log_joint)
            est = partition.PartitionEstimate(point.astype(np.int64), loss, float(self.loss_a),
                                              partition.expected_loss(point, res.labels, loss, self.loss_a),
                                              float("nan"), 0, 0.0)
        else:
            est = partition.salso(res.labels, loss, a=float(self.loss_a), log_joint=res.log_joint, seed=seed)
        ball = partition.credible_ball(est.labels, res.labels, loss, a=float(self.loss_a))
        psm = posterior.similarity_matrix(res.labels, max_n=int(self.max_psm_n))
        with x64():
            xj = jnp.asarray(X)
            post = {"n_clusters": res.n_clusters}
            kw = dict(pq=self.pq, p=None, q=None, alpha=res.alpha if self.sample_alpha else None)
            if self.pq != "fixed":
                draws = posterior.link_parameter_draws(key_pq, res.labels, links, prior)
                if self.pq == "sample":  # the sampler's own draws of p, q given each partition
                    draws.update(p=np.asarray(res.p), q=np.asarray(res.q))
                    kw.update(p=res.p, q=res.q)
                post.update(draws)
            else:
                kw.update(p=float(self.p), q=float(self.q))
            if self.sample_alpha:
                post["alpha"] = res.alpha
            loglik = None
            if res.labels[..., 0].size * X.shape[0] <= posterior.MAX_LOGLIK_ENTRIES:
                loglik = {"x": posterior.loo_log_predictive(res.labels, xj, links, family, prior, **kw)}
            else:
                warnings.warn(f"n x draws = {res.labels.size} > ppclust.posterior.MAX_LOGLIK_ENTRIES="
                              f"{posterior.MAX_LOGLIK_ENTRIES:.0e}: posterior_ has no log_likelihood group "
                              "(az.loo unavailable); thin the draws or call ppclust.posterior."
                              "loo_log_predictive on a subset", stacklevel=3)
        self.p_ = float(np.mean(post["p"])) if "p" in post else float(self.p)
        self.q_ = float(np.mean(post["q"])) if "q" in post else float(self.q)
        self.alpha_ = float(np.mean(res.alpha))
        observed = {"x": X}
        dims = {"x": ["obs", "feature"]}
        if side.n_links:
            observed.update(link_pairs=np.asarray(side.pairs).reshape(-1, 2), link_sign=np.asarray(side.sign))
            dims.update(link_pairs=["link", "pair_end"], link_sign=["link"])
        clustering = {"point_estimate": (("obs",), est.labels)}
        for name, lab in ball.bounds().items():
            if name != "estimate":
                clustering[f"ball_{name}"] = (("obs",), lab)
        if psm is not None:
            clustering["psm"] = (("obs", "obs_bis"), psm)
        attrs = {f"param_{k}": v for k, v in self.get_params().items() if k != "random_state"}
        attrs.update(
            model="TVClust (Khashabi et al. 2015): DP Gaussian mixture (NIW prior) + noisy links",
            sampler="sub-cluster split/merge, ppclust.inference.subcluster.sample"
                    if self.algorithm == "subcluster" else
                    f"collapsed Gibbs ({self.algorithm}), ppclust.inference.gibbs.sample",
            prior_alpha=prior.alpha, prior_a_p=prior.a_p, prior_b_p=prior.b_p, prior_a_q=prior.a_q,
            prior_b_q=prior.b_q, niw_kappa0=float(family.kappa0), niw_nu0=float(family.nu0),
            niw_psi0=np.asarray(family.psi0), covariance=family.covariance,
            observed_x="features after standardisation" if self.standardize else "features as given",
            log_likelihood="log p(x_i | x_-i, z_-i, E): collapsed leave-one-out predictive, own label summed "
                           "out (ppclust.posterior.loo_log_predictive)",
            p_q="draws from Beta(a + N, b + N) given each partition; p_cond_mean, q_cond_mean = E[. | z, E]"
                if self.pq == "collapse" else f"pq={self.pq}",
            point_estimate_loss=loss, point_estimate_a=float(self.loss_a),
            expected_loss=est.expected_loss, credible_ball_prob=ball.prob, credible_ball_radius=ball.epsilon,
        )
        self.point_estimate_ = est
        self.credible_ball_ = ball
        self.expected_loss_ = est.expected_loss
        self.psm_ = psm
        self.labels_ = est.labels.astype(np.int64)
        self.n_clusters_ = int(len(np.unique(self.labels_)))
        self.log_joint_ = res.log_joint
        self.posterior_ = posterior.build_datatree(
            post, sample_stats={"lp": res.log_joint}, log_likelihood=loglik, observed_data=observed,
            clustering=clustering, attrs=attrs, dims=dims)

    def _fit_variational(self, X, side):
        """``algorithm="variational"``: :func:`ppclust.inference.tvclust_vb.fit` (see the class docstring)."""
        n, d = X.shape
        if self.covariance_type != "full":
            raise PPClustError("algorithm='variational' supports covariance_type='full' only (the authors' "
                               f"Normal-Wishart components), got {self.covariance_type!r}")
        if self.standardize:  # the authors' code: centre, divide by the sd with n - 1
            sd = X.std(0, ddof=1) if n > 1 else np.ones(d)
            X = (X - X.mean(0)) / np.where(sd > 0, sd, 1.0)
        pairs = np.asarray(side.pairs).reshape(-1, 2) if side.n_links else np.zeros((0, 2), np.int64)
        signs = np.asarray(side.sign).reshape(-1) if side.n_links else np.zeros(0)
        src, dst, e = tvclust_vb.directed_entries(pairs, signs, self.vb_mask)
        nbr, ev, valid = tvclust_vb.neighbour_arrays(n, src, dst, e)
        K = int(self.vb_truncation)
        with x64():
            nu0 = float(d) if self.nu0 is None else float(self.nu0)
            psi0 = jnp.eye(d) * float(self.psi_scale) * max(nu0 - d - 1.0, 1.0)  # = I at the defaults
            kappa0 = 1.0 if self.kappa0 is None else float(self.kappa0)  # the authors' beta0
            family = GaussianNIW(jnp.zeros(d), jnp.asarray(kappa0), jnp.asarray(nu0), psi0, "full")
            means0 = jax.random.normal(as_key(self.random_state), (K, d), jnp.float64)
            res = tvclust_vb.fit(jnp.asarray(X), means0, family, nbr, ev, valid, src, dst, e,
                                 tuple(float(v) for v in self._link_prior(_link_mass(side))),
                                 float(self.alpha), max_iter=int(self.vb_max_iter), tol=float(self.vb_tol))
            res = jax.tree_util.tree_map(np.asarray, res)
        it = int(res.n_iter)
        self.n_features_in_ = d
        self.labels_ = np.unique(res.labels, return_inverse=True)[1].astype(np.int64)
        self.n_clusters_ = int(self.labels_.max()) + 1
        self.resp_ = res.resp
        self.elbo_ = res.elbo[:it]
        self.n_iter_ = it
        self.converged_ = bool(res.converged)
        self.means_ = res.means
        ap, bp, aq, bq = (float(v) for v in res.pq_params)
        self.p_, self.q_, self.alpha_ = ap / (ap + bp), aq / (aq + bq), float(self.alpha)
        self.psm_ = res.resp @ res.resp.T if n <= int(self.max_psm_n) else None
        self.posterior_ = self.point_estimate_ = self.credible_ball_ = self.expected_loss_ = None
        self.samples_ = self.log_joint_ = None
        return self

    def fit_predict(self, X, y=None, **kw):
        """Fit (side information as in ``fit``) and return ``labels_``."""
        return self.fit(X, y, **kw).labels_


def _link_mass(side):
    """Number of linked pairs, weights summed (``link_strength="links"``; unit weights by default)."""
    return float(np.sum(side.weight)) if side.n_links else 0.0


def _subcluster_sample(key, x, links, family, prior, *, algorithm, backend, desc, **kw):
    """``algorithm="subcluster"``: :func:`ppclust.inference.subcluster.sample` (same ChainResult; its own
    ``backend``, :func:`ppclust.inference.subcluster.resolve_backend`)."""
    from ppclust.inference import subcluster

    return subcluster.sample(key, x, links, family, prior, backend=backend, **kw)
