"""TVClust as a scikit-learn estimator: the posterior over partitions of a DP mixture with noisy links.

Validates, turns links and partial labels into a neighbour table, runs a sampler of :mod:`ppclust.inference`
(:func:`~ppclust.inference.gibbs.sample`, :func:`~ppclust.inference.subcluster.sample`) or the variational
algorithm (:func:`~ppclust.inference.tvclust_vb.fit`) on the Gaussian NIW family, and summarises the draws
with :mod:`ppclust.posterior` and :mod:`ppclust.partition`. The module is kept whole: it is one class, and
its length is the documentation of the model's parameters and attributes.
"""

from __future__ import annotations

import inspect
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from sklearn.base import BaseEstimator

from ppclust import _devices
from ppclust._buckets import bucket_size, pad_rows, rowwise
from ppclust._jax import as_key, x64
from ppclust.errors import InvalidInputError, PPClustError
from ppclust.estimators._base import (
    DEVICES,
    NONNEG_INT,
    POSITIVE_INT,
    POSITIVE_REAL,
    RANDOM_STATE,
    SCALE_OUT,
    UNIT_OPEN,
    ClusterMixin,
    Integral,
    Interval,
    InvalidParameterError,
    Real,
    StrOptions,
    check_global_X,
    data_mesh,
    fit_context,
    link_side_info,
    restart_devices,
    side_labels,
    validate_X,
)
from ppclust.families import GaussianNIW
from ppclust.inference import gibbs, hartigan, subcluster, tvclust_vb
from ppclust.inference.backend import BACKENDS
from ppclust.inference.sampler_config import ALGORITHMS, PQ_MODES
from ppclust.models.tvclust import TVClustPrior, link_noise_beta, log_joint_from_stats, make_links
from ppclust.sideinfo import pair_counts

__all__ = ["TVClust"]

#: parameters that only the samplers read, only the variational algorithm, only the sub-cluster sampler
_SAMPLER_ONLY = (
    "n_draws",
    "n_warmup",
    "n_chains",
    "thin",
    "pq",
    "p",
    "q",
    "sample_alpha",
    "k_max",
    "point_estimate",
    "loss_a",
    "init",
    "init_clusters",
    "backend",
)
_VB_ONLY = ("vb_truncation", "vb_mask", "vb_max_iter", "vb_tol")
_SUBCLUSTER_ONLY = ("subcluster_moves",)


class TVClust(ClusterMixin, BaseEstimator):
    r"""TVClust: a Dirichlet-process Gaussian mixture whose partition also explains a graph of noisy links.

    The posterior over partitions is sampled (collapsed Gibbs, the explicit-parameter Gibbs sampler or the
    parallel sub-cluster sampler, all exact) or approximated by the authors' mean-field variational
    algorithm. ``labels_`` is a point estimate of the partition (a Bayes estimate under a partition loss).

    Parameters
    ----------
    n_draws : int >= 1, default=500
        Kept draws per chain (samplers).
    n_warmup : int >= 0, default=500
        Sweeps discarded before the first kept draw (samplers).
    n_chains : int >= 1, default=2
        Independent chains (samplers).
    thin : int >= 1, default=1
        Sweeps per kept draw (samplers).
    alpha : float > 0, default=1.0
        DP concentration (eq. 1). With ``sample_alpha`` the starting value.
    a_p, b_p, a_q, b_q : float > 0, default=1.0, 10.0, 10.0, 1.0
        Beta priors of the link sensitivity p and specificity q (eq. 8), used when ``link_noise`` is None
        (and by ``algorithm="variational"`` under ``link_noise="auto"``). Default: spec 2.8's neutral prior,
        the authors' values.
    link_noise : float in (0, 0.5], "auto" or None, default="auto"
        Prior share of wrong links: p, q ~ Beta(s (1 - link_noise), s link_noise), prior mean
        ``1 - link_noise``, strength s from ``link_strength``. "auto": 0.1 for the samplers ("links are
        mostly right"), None for ``algorithm="variational"``. None: the explicit ``a_p, b_p, a_q, b_q``.
        0.5 is uninformative. Lower it when the links are known to be clean (see docs/decisions/).
    link_strength : "links" or float > 0, default="links"
        Strength s (pseudo-links) of the ``link_noise`` prior. "links": s = max(11, L), L the number of
        linked pairs (weights summed), so the prior keeps its weight against the evidence at any budget.
    pq : {"collapse", "sample", "fixed"}, default="collapse"
        p and q integrated out, sampled from their Beta conditionals, or fixed at ``p``, ``q`` (samplers).
    p, q : float in (0, 1), default=0.9
        Fixed values (``pq="fixed"``) or starting values (samplers).
    sample_alpha : bool, default=False
        Resample alpha after each sweep under a Gamma(1, 1) prior (Escobar & West 1995; samplers).
    covariance_type : {"full", "diag", "spherical"}, default="full"
        Cluster covariance structure (``algorithm="variational"``: "full" only).
    kappa0 : float > 0 or None, default=None
        Strength of the NIW prior on the cluster means, mu_k ~ N(0, Sigma_k / kappa0). None: 0.01 for the
        samplers (Fraley & Raftery 2007: each extra cluster pays an Occam factor for its mean) and 1 for
        ``algorithm="variational"`` (the authors' beta0).
    nu0 : float or None, default=None
        Inverse-Wishart degrees of freedom (> d - 1). None: d + 2 (samplers), d (variational, the authors').
    psi_scale : float > 0, default=1.0
        Inverse-Wishart scale Psi0 = psi_scale (nu0 - d - 1) I (the identity at the defaults).
    standardize : bool, default=True
        Centre and scale every feature to unit variance before fitting (the priors assume it).
    k_max : int >= 1, default=64
        Cluster slots per chain (capped at n); a chain that needs more raises ``KMaxExhaustedError``.
    point_estimate : {"binder", "vi", "max_log_joint"}, default="binder"
        Loss whose posterior expectation ``labels_`` minimises over all partitions (SALSO search, Dahl,
        Johnson & Müller 2022), or the kept draw with the highest log joint. Above
        ``ppclust.partition.SALSO_MAX_N`` points the loss is minimised over the four most probable
        distinct draws instead (:func:`ppclust.partition.best_draw`, linear in n: the search's moves
        cost O(draws x clusters) each and the clusters of a Binder estimate grow with n).
    loss_a : float in (0, 2), default=1.0
        Unequal-cost parameter of the Binder / VI loss: the cost of separating a pair the posterior joins
        (joining costs ``2 - loss_a``); above 1 favours fewer clusters.
    max_psm_n : int >= 0, default=5000
        ``psm_`` (n x n) is computed for n up to this, else None.
    random_state : None, int, numpy Generator or JAX key, default=None
        Seed of every random draw; the same seed gives the same labels.
    algorithm : {"collapsed", "explicit", "subcluster", "variational"}, default="collapsed"
        "collapsed": Gibbs with cluster parameters integrated out (Neal 2000, Algorithm 3). "explicit":
        the paper-literal Gibbs sampler with cluster parameters (Algorithm 2). "subcluster": the parallel
        sampler of :mod:`ppclust.inference.subcluster` (restricted block Gibbs plus exact split/merge
        moves; best with ``init="one"``). All three target the same posterior. On a CPU with a few
        thousand points the collapsed sampler is the faster per sweep: each sub-cluster sweep carries a
        fixed cost, and its loops split the points over threads only in blocks of thousands of rows
        (``docs/decisions/0018-tvclust-algorithm-auto.md``); at equal sweeps the sub-cluster sampler's
        split/merge moves can reach a better partition. "variational": the authors' truncated
        stick-breaking mean-field algorithm (:mod:`ppclust.inference.tvclust_vb`); no draws.
    init : {"kmeans++", "one"} or array-like of shape (n,), default="kmeans++"
        Starting partition of every chain: a k-means++ Voronoi partition with ``init_clusters`` clusters,
        all points in one cluster, or the given labels (any integers, at most ``k_max`` distinct; a warm
        start from an earlier fit's ``labels_``, as :class:`ppclust.active.ActiveLearner` does). Single-point
        moves rarely split a big cluster, so "kmeans++" mixes faster for the Gibbs samplers; surplus
        clusters empty out.
    init_clusters : int >= 1, default=10
        Clusters of the k-means++ start (capped at ``k_max // 2`` and n).
    backend : {"auto", "numba", "xla"}, default="auto"
        Where the samplers' inner loops run (:func:`ppclust.inference.backend.resolve_backend`): compiled
        CPU loops ("numba", the CPU default for the Gaussian families; the sub-cluster sampler keeps the
        jitted program up to :data:`ppclust.inference.subcluster.XLA_UP_TO` points, where it is the
        faster) or the jitted program ("xla"). The same draws either way.
    progress_bar : bool, default=True
        Progress bars of the Gibbs samplers when someone can see them; the draws do not depend on it.
    vb_truncation : int >= 2, default=15
        Components of the variational algorithm's truncated stick-breaking (the authors' K).
    vb_mask : {"symmetric", "as_run"}, default="symmetric"
        Which endpoint a link informs in the variational responsibilities: both, or only the first of each
        stored pair (the authors' experiments).
    vb_max_iter : int >= 1, default=30
        Iterations of the variational algorithm.
    vb_tol : float > 0, default=5e-5
        The variational algorithm stops when the relative ELBO change falls below this (the authors' rule).
    devices : None, "all", "auto", int or list, default=None
        Devices a fit may use: "subcluster" splits the points over them, "collapsed" / "explicit" spread
        the chains; the same draws either way. "variational" runs on one device.
    subcluster_moves : int >= 1, default=4
        Split/merge proposals per sweep of ``algorithm="subcluster"`` (as many peel/absorb proposals too).

    Parameters that the chosen ``algorithm`` does not read (marked above) raise
    :class:`~ppclust.errors.InvalidParameterError` when set to a non-default value.

    Attributes
    ----------
    labels_ : ndarray of shape (n,)
        Point estimate of the partition (canonical labels 0, 1, ...).
    n_clusters_ : int
        Clusters in ``labels_``.
    objective_ : float
        Samplers: the log joint log p(z, x, E | alpha) of ``labels_`` (cluster parameters integrated out;
        p and q integrated out too unless ``pq="fixed"``). Variational: the final ELBO. Larger is better.
    objective_trace_ : ndarray
        Samplers: the log joint of every kept draw, shape (n_chains, n_draws). Variational: the ELBO per
        iteration, shape (n_iter_,).
    p_, q_ : float
        Posterior means of the link sensitivity and specificity (variational: means of q(p), q(q)).
    alpha_ : float
        Posterior mean of alpha (its fixed value unless ``sample_alpha``).
    psm_ : ndarray of shape (n, n) or None
        Posterior similarity matrix (variational: r r^T); None when n > ``max_psm_n``.
    point_estimate_ : PartitionEstimate or None
        The search behind ``labels_`` (:func:`ppclust.partition.salso`); None for "variational".
    expected_loss_ : float or None
        Posterior expected loss of ``labels_``.
    credible_ball_ : CredibleBall or None
        95% credible ball around ``labels_`` under the same loss.
    posterior_ : arviz DataTree or None
        Draws, sample stats, observed data and the clustering (:mod:`ppclust.posterior`); the pointwise
        log-likelihood group is added by :meth:`compute_log_likelihood`.
    samples_ : ChainResult or None
        The raw draws and the final sampler state (resumable).
    responsibilities_ : ndarray of shape (n, vb_truncation)
        Variational only: the responsibilities r_ik.
    means_ : ndarray of shape (vb_truncation, d)
        Variational only: the component means (standardised space).
    n_iter_ : int
        Variational only: iterations run.
    converged_ : bool
        Variational only: whether the ELBO rule stopped it.

    Notes
    -----
    The model (Khashabi, Wieting, Liu & Liang 2015, Section 3; spec ``tvclust-rdpmeans.md`` Section 1):
    z ~ CRP(alpha) and x_i ~ N(mu_{z_i}, Sigma_{z_i}) with a NIW(0, kappa0, nu0, Psi0) prior (eq. 1); each
    observed pair (i, j) is a may-link with probability p when z_i = z_j and 1 - q otherwise, with
    p ~ Beta(a_p, b_p), q ~ Beta(a_q, b_q) (eq. 8). Given the partition, the links enter only through four
    pair counts N11, N01, N10, N00, and a point's Gibbs conditional through its friends and strangers per
    cluster (eqs. 11-13). The model's functions are :mod:`ppclust.models.tvclust`.

    New points: :meth:`predict`, :meth:`predict_proba` (a last column for a cluster not seen in training),
    :meth:`score_samples` (the log posterior predictive density averaged over the kept draws) and
    :meth:`sample` (:mod:`ppclust.predictive`). With two chains or more, ``fit`` ends with a convergence
    check (:func:`ppclust.posterior.check_convergence`: split R-hat and bulk ESS of the number of
    clusters, the log joint, p and q) that warns with :class:`~ppclust.errors.ConvergenceWarning`.

    Rows spread over processes (``X`` from :func:`ppclust.distributed.process_rows`):
    ``algorithm="subcluster"`` with ``init="one"`` and ``point_estimate="max_log_joint"`` only (other
    settings raise :class:`~ppclust.errors.InvalidInputError`), run by
    :func:`ppclust.inference.subcluster.sample_process_rows` (XLA; the draws of a one-process fit with
    ``backend="xla"``). ``labels_`` and ``samples_.labels`` are global arrays with ``X``'s row sharding;
    ``n_clusters_``, ``objective_`` (the sampler's log joint of the chosen draw, at that draw's alpha),
    ``objective_trace_``, ``p_``, ``q_`` (means over the draws of the sampler's ``p``, ``q``: conditional
    means under ``pq="collapse"``), ``alpha_`` and the traces of ``samples_`` are identical on every process;
    ``posterior_``, ``psm_``, ``point_estimate_``, ``credible_ball_`` and ``expected_loss_`` are None, and
    the methods on new points raise.

    Saving: ``pickle.dump(est, f)`` / ``joblib.dump(est, path)`` store the fitted estimator without its
    n x n caches (``psm_``, recomputed from the partition draws on first access after loading) and with the
    partition draws once, as ``posterior_["partition_draws"]`` (uint8 below 256 slots); ``samples_.labels``
    is rebuilt from them on load. ``ppclust.posterior.save(est.posterior_, path)`` writes the tree,
    partition draws included, as netCDF. Load pickles only from sources you trust.

    Model comparison: ``posterior_.attrs["loo_validity"]`` states when PSIS-LOO on
    :meth:`compute_log_likelihood` is valid; held-out :meth:`score_samples` over K folds is the
    alternative when it is not.

    References
    ----------
    .. [1] D. Khashabi, J. Wieting, J. Y. Liu, F. Liang, "Clustering with side information: from a
       probabilistic model to a deterministic algorithm", arXiv:1508.06235, 2015.
    .. [2] R. M. Neal, "Markov chain sampling methods for Dirichlet process mixture models", JCGS, 2000.
    .. [3] J. Chang, J. W. Fisher III, "Parallel sampling of DP mixture models using sub-cluster splits",
       NIPS, 2013.
    .. [4] D. B. Dahl, D. J. Johnson, P. Müller, "Search algorithms and loss functions for Bayesian
       clustering", JCGS, 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust import TVClust
    >>> X = np.r_[np.zeros((10, 2)), np.full((10, 2), 5.0)] + np.random.default_rng(0).normal(size=(20, 2))
    >>> est = TVClust(n_draws=20, n_warmup=20, n_chains=1, progress_bar=False, random_state=0)
    >>> est.fit(X, must_link=[(0, 1)], cannot_link=[(0, 15)]).n_clusters_
    2
    >>> est.objective_trace_.shape
    (1, 20)
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
        "pq": [StrOptions(set(PQ_MODES))],
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
        "algorithm": [StrOptions(set(ALGORITHMS) | {"subcluster", "variational"})],
        "vb_truncation": [Interval(Integral, 2, None, closed="left")],
        "subcluster_moves": POSITIVE_INT,
        "vb_mask": [StrOptions(set(tvclust_vb.MASKS))],
        "vb_max_iter": POSITIVE_INT,
        "vb_tol": POSITIVE_REAL,
        "devices": DEVICES,
        "init": [StrOptions({"kmeans++", "one"}), "array-like"],
        "init_clusters": POSITIVE_INT,
        "loss_a": [Interval(Real, 0, 2, closed="neither")],
        "progress_bar": ["boolean"],
        "backend": [StrOptions(set(BACKENDS))],
    }

    def __init__(
        self,
        n_draws=500,
        *,
        n_warmup=500,
        n_chains=2,
        thin=1,
        alpha=1.0,
        a_p=1.0,
        b_p=10.0,
        a_q=10.0,
        b_q=1.0,
        link_noise="auto",
        link_strength="links",
        pq="collapse",
        p=0.9,
        q=0.9,
        sample_alpha=False,
        covariance_type="full",
        kappa0=None,
        nu0=None,
        psi_scale=1.0,
        standardize=True,
        k_max=64,
        point_estimate="binder",
        loss_a=1.0,
        max_psm_n=5000,
        random_state=None,
        algorithm="collapsed",
        init="kmeans++",
        init_clusters=10,
        backend="auto",
        progress_bar=True,
        vb_truncation=15,
        vb_mask="symmetric",
        vb_max_iter=30,
        vb_tol=5e-5,
        devices=None,
        subcluster_moves=4,
    ):
        self.n_draws = n_draws
        self.subcluster_moves = subcluster_moves
        self.devices = devices
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
        """Sample (or approximate) the posterior over partitions and set its summaries.

        Parameters
        ----------
        X : array-like of shape (n, d)
            The points.
        y : array-like of shape (n,) or None, default=None
            Partial labels (-1 = unlabelled): every pair of labelled points becomes a link.
        must_link, cannot_link : array-like of shape (m, 2) or None, default=None
            Pairs of row indices believed to share a cluster / to lie in different clusters.
        partial_labels : array-like of shape (n,) or None, default=None
            Another way to pass ``y``.

        Returns
        -------
        self : TVClust
            The fitted estimator (attributes in the class docstring).
        """
        self._check_unused_parameters()
        if _devices.is_process_rows(X):
            return self._fit_process_rows(X, side_labels(y, partial_labels), must_link, cannot_link)
        covariance_type = self.covariance_type
        X = validate_X(self, X, reset=True)
        n, d = X.shape
        if covariance_type == "full" and self.nu0 is not None and self.nu0 <= d - 1:
            raise PPClustError(
                f"`nu0`={self.nu0} must be > n_features - 1 = {d - 1} (inverse-Wishart "
                "degrees of freedom); raise it or leave nu0=None (d + 2)."
            )
        side = link_side_info(
            n, side_labels(y, partial_labels), must_link, cannot_link, link_model="soft"
        )  # noisy links combine
        if self.algorithm == "variational" and data_mesh(self.devices, parallel_ok=False) is not None:
            raise PPClustError(
                f"TVClust(algorithm='variational') runs on one device; "
                f"devices={self.devices!r} cannot be honoured."
            )
        if self.algorithm == "variational":
            return self._fit_variational(X, side)
        self._x_shift, self._x_scale = np.zeros(d), np.ones(d)
        if self.standardize:
            sd = X.std(0)
            self._x_shift, self._x_scale = X.mean(0), np.where(sd > 0, sd, 1.0)
            X = (X - self._x_shift) / self._x_scale
        prior = TVClustPrior(float(self.alpha), *self._link_prior(_link_mass(side)))
        with x64():
            xj = jax.device_put(X)  # a transfer, not a program per shape
            links = make_links(n, side=side) if side.n_links else make_links(n)
            family = self._niw_family(d)
            key, key_init = jax.random.split(as_key(self.random_state))
            k_max = min(int(self.k_max), n)
            init_labels = None
            if not isinstance(self.init, str):  # given labels, relabelled 0 .. K-1
                given = np.asarray(self.init).reshape(-1)
                if given.shape != (n,) or given.dtype.kind not in "iub":
                    raise PPClustError(
                        f"init labels must be {n} integers, one per row; got shape {given.shape}, "
                        f"dtype {given.dtype}"
                    )
                init_labels = np.unique(given, return_inverse=True)[1].astype(np.int32)
                if init_labels.max(initial=0) >= k_max:
                    raise PPClustError(
                        f"init labels have {init_labels.max() + 1} clusters, more than k_max={k_max}; "
                        "raise k_max"
                    )
            elif self.init == "kmeans++":
                k0 = max(1, min(int(self.init_clusters), k_max // 2, n))
                init_labels = hartigan.kmeanspp_partition(key_init, X, k0)
            kw = dict(init_labels=init_labels, **self._sampler_options(k_max))
            if self.algorithm == "subcluster":
                res = subcluster.sample(
                    key,
                    xj,
                    links,
                    family,
                    prior,
                    mesh=data_mesh(self.devices),
                    n_moves=int(self.subcluster_moves),
                    **kw,
                )
            else:
                if self.devices is not None:  # the chains over devices (else gibbs.sample's own "auto")
                    kw["devices"] = restart_devices(self.devices, "TVClust")
                res = gibbs.sample(
                    key,
                    xj,
                    links,
                    family,
                    prior,
                    algorithm=self.algorithm,
                    progress_bar=bool(self.progress_bar),
                    desc="TVClust",
                    **kw,
                )
        self.samples_ = res
        self.n_features_in_ = X.shape[1]
        self._set_posterior(key, X, side, links, family, prior, res)
        from ppclust import posterior

        posterior.check_convergence(self.posterior_, "TVClust", _ADVICE)
        return self

    def _niw_family(self, d):
        """The NIW cluster model of ``d`` features from ``nu0``, ``kappa0``, ``psi_scale`` (see the class
        docstring); host arrays put on the device, so no program is compiled per shape."""
        nu0 = float(d + 2) if self.nu0 is None else float(self.nu0)
        psi0 = np.eye(d) * float(self.psi_scale) * max(nu0 - d - 1.0, 1.0)
        kappa0 = 0.01 if self.kappa0 is None else float(self.kappa0)
        return GaussianNIW(
            *jax.device_put((np.zeros(d), np.float64(kappa0), np.float64(nu0), psi0)), self.covariance_type
        )

    def _sampler_options(self, k_max):
        """The sampler options both fit paths pass (draws, chains, p/q handling, backend)."""
        return dict(
            n_draws=int(self.n_draws),
            n_warmup=int(self.n_warmup),
            n_chains=int(self.n_chains),
            thin=int(self.thin),
            k_max=k_max,
            pq=self.pq,
            p=float(self.p),
            q=float(self.q),
            sample_alpha=bool(self.sample_alpha),
            backend=self.backend,
        )

    def _fit_process_rows(self, X, y, must_link, cannot_link):
        """``fit`` on rows spread over processes (:mod:`ppclust.distributed`): ``algorithm="subcluster"``
        (:func:`ppclust.inference.subcluster.sample_process_rows`) from one cluster, ``labels_`` the kept
        draw of highest log joint. Links by global row; partial labels gathered as (row, label) pairs."""
        if self.algorithm != "subcluster":
            raise InvalidInputError(
                "`X` holds rows spread over processes (ppclust.distributed.process_rows); TVClust's "
                f"algorithm={self.algorithm!r} needs every row in one process: use algorithm='subcluster'. "
                f"Methods that scale out over processes: {SCALE_OUT}."
            )
        if self.point_estimate != "max_log_joint" or not (isinstance(self.init, str) and self.init == "one"):
            raise InvalidInputError(
                "TVClust on rows spread over processes takes point_estimate='max_log_joint' (labels_ is the "
                "kept draw of highest log joint: the partition searches need every row) and init='one'; "
                f"got point_estimate={self.point_estimate!r}, init={self.init!r}."
            )
        x_loc, lay, shift, _ = check_global_X(self, X)
        n, d = lay.n, x_loc.shape[1]
        if self.covariance_type == "full" and self.nu0 is not None and self.nu0 <= d - 1:
            raise PPClustError(f"`nu0`={self.nu0} must be > n_features - 1 = {d - 1}.")
        self._x_shift, self._x_scale = np.zeros(d), np.ones(d)
        if self.standardize:  # the mean and sd of all rows (sums over processes)
            sd = np.sqrt(_devices.process_sum(((x_loc - shift) ** 2).sum(0)) / n)
            self._x_shift, self._x_scale = shift, np.where(sd > 0, sd, 1.0)
        xg = _devices.from_process_rows((x_loc - self._x_shift) / self._x_scale, lay)
        y_all = None
        if y is not None:  # every process's labelled rows, as (global row, label)
            y_loc = np.asarray(_devices.local_rows(y)).reshape(-1)
            mine = np.flatnonzero(y_loc >= 0)
            pairs = np.stack([mine + lay.offsets[jax.process_index()], y_loc[mine]], 1).astype(np.int64)
            top = int(_devices.process_gather(np.int64(len(mine))).max())
            every = _devices.process_gather(np.pad(pairs, ((0, top - len(mine)), (0, 0)), constant_values=-1))
            every = every.reshape(-1, 2)
            every = every[every[:, 0] >= 0]
            y_all = np.full(n, -1, np.int64)
            y_all[every[:, 0]] = every[:, 1]
        side = link_side_info(n, y_all, must_link, cannot_link, link_model="soft")
        prior = TVClustPrior(float(self.alpha), *self._link_prior(_link_mass(side)))
        with x64():
            links = make_links(n, side=side) if side.n_links else make_links(n)
            family = self._niw_family(d)
            key, _ = jax.random.split(as_key(self.random_state))
            k_max = min(int(self.k_max), n)
            res = subcluster.sample_process_rows(
                key,
                xg,
                links,
                family,
                prior,
                n_moves=int(self.subcluster_moves),
                **self._sampler_options(k_max),
            )
        best = int(np.argmax(res.log_joint.ravel()))
        draws = _devices.local_rows(res.labels, lay)  # (n_i, n_chains, n_draws): this process's rows
        mine = draws.reshape(len(draws), -1)[:, best]
        # canonical labels 0, 1, ... in order of first appearance over all rows (as one process would)
        # (int32 with n for "nowhere": what process_gather carries without 64-bit JAX types)
        first = np.full(k_max + 1, n, np.int32)
        np.minimum.at(first, mine, np.arange(len(mine), dtype=np.int32) + lay.offsets[jax.process_index()])
        first = _devices.process_gather(first).min(0)[:k_max]
        used = np.flatnonzero(first < n)
        relabel = np.zeros(k_max + 1, np.int64)
        relabel[used[np.argsort(first[used], kind="stable")]] = np.arange(len(used))
        self.labels_ = _devices.from_process_rows(relabel[mine], lay)
        self.n_clusters_ = len(used)
        self.samples_ = res
        self.objective_trace_ = np.asarray(res.log_joint)
        self.objective_ = float(res.log_joint.ravel()[best])
        self.p_ = float(np.mean(res.p)) if self.pq != "fixed" else float(self.p)
        self.q_ = float(np.mean(res.q)) if self.pq != "fixed" else float(self.q)
        self.alpha_ = float(np.mean(res.alpha))
        self.posterior_ = self.point_estimate_ = self.credible_ball_ = self.expected_loss_ = None
        self.psm_ = None
        return self

    def compute_log_likelihood(self):
        r"""Pointwise log-likelihood of every point and draw, stored as the ``log_likelihood`` group of
        ``posterior_`` (what ``az.loo`` and ``az.compare`` read).

        ``fit`` does not compute it (it costs O(draws n K d^2), more than the sampling at large n); call this
        method first, then ``az.loo(est.posterior_)``. Before the call ``posterior_`` has no
        ``log_likelihood`` group and ``az.loo`` raises ArviZ's ``TypeError`` ("log likelihood not found").
        A second call returns the stored group.

        Returns
        -------
        xarray.DataTree
            ``posterior_["log_likelihood"]``, variable ``x`` of shape (chain, draw, n):
            :math:`\log p(x_i \mid x_{-i}, z^{(s)}_{-i}, E)`, the collapsed leave-one-out predictive with the
            point's own label summed out (:func:`ppclust.posterior.loo_log_predictive`), for the features as
            the sampler saw them (``posterior_["observed_data"]["x"]``).

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before ``fit``.
        PPClustError
            For ``algorithm="variational"`` (no draws, no ``posterior_``).

        Examples
        --------
        >>> import numpy as np
        >>> from ppclust import TVClust
        >>> X = np.r_[np.zeros((6, 2)), np.full((6, 2), 5.0)] + np.random.default_rng(0).normal(size=(12, 2))
        >>> est = TVClust(n_draws=10, n_warmup=10, n_chains=1, progress_bar=False, random_state=0).fit(X)
        >>> "log_likelihood" in est.posterior_.children
        False
        >>> est.compute_log_likelihood()["x"].shape
        (1, 10, 12)
        >>> "log_likelihood" in est.posterior_.children
        True
        """
        from sklearn.utils.validation import check_is_fitted

        from ppclust import posterior

        check_is_fitted(self, "labels_")
        _no_rows_posterior(self)
        if self.posterior_ is None:
            raise PPClustError(
                "TVClust(algorithm='variational') has no posterior draws: no pointwise log-likelihood."
            )
        links, family, prior, kw = self._loglik_inputs
        x = self.posterior_["observed_data"]["x"].values
        return posterior.add_log_likelihood(
            self.posterior_, self.samples_.labels, x, links, family, prior, **kw
        )

    # ------------------------------------------------------------------------------------ new points
    def predict_proba(self, X, *, must_link=None, cannot_link=None):
        r"""Posterior probability that each new point belongs to each cluster of ``labels_``, or to a new one.

        For kept draw :math:`s` (its partition :math:`z^{(s)}` of the training points, cluster parameters
        integrated out) a new point joins cluster :math:`k` with weight
        :math:`\frac{n_k}{n+\alpha}\,t_k(x)` and a new cluster with :math:`\frac{\alpha}{n+\alpha}\,t_0(x)`
        (:math:`t_k` the NIW Student-t predictive of the cluster's points, :math:`t_0` the prior
        predictive); each draw's cluster is spread over the clusters of ``labels_`` by the share of its
        points in each, and the draws are summed with these weights (:mod:`ppclust.predictive`). Variational:
        the same with the components' Normal-Wishart posteriors and the expected stick-breaking weights,
        components that hold no point of ``labels_`` counting as "new".

        Parameters
        ----------
        X : array-like of shape (m, d)
            New points, in the units of the features given to ``fit``.
        must_link, cannot_link : array-like of shape (L, 2) or None, default=None
            Pairs (new row, training row) believed to share a cluster / to differ: each multiplies a
            draw's cluster weights by its likelihood under the link noise model (:math:`p` or
            :math:`1-q`; :math:`1-p` or :math:`q`, with the draw's p, q; samplers only).

        Returns
        -------
        ndarray of shape (m, n_clusters_ + 1)
            Rows sum to 1; the last column is "a cluster not seen in training".

        Examples
        --------
        >>> import numpy as np
        >>> from ppclust import TVClust
        >>> noise = np.random.default_rng(0).normal(size=(20, 2))
        >>> X = np.r_[np.zeros((10, 2)), np.full((10, 2), 5.0)] + noise
        >>> est = TVClust(n_draws=20, n_warmup=20, n_chains=1, progress_bar=False, random_state=0).fit(X)
        >>> P = est.predict_proba([[0.0, 0.0], [5.0, 5.0]])
        >>> P.shape, P.sum(1).round(6).tolist()
        ((2, 3), [1.0, 1.0])
        """
        from ppclust import predictive

        lj, mapping = self._new_point_log_joint(X, must_link, cannot_link)
        return predictive.cluster_probabilities(lj, mapping)

    def predict(self, X, *, must_link=None, cannot_link=None):
        """The most probable cluster of ``labels_`` for each new point (:meth:`predict_proba`).

        Parameters
        ----------
        X : array-like of shape (m, d)
            New points.
        must_link, cannot_link : array-like of shape (L, 2) or None, default=None
            Pairs (new row, training row), as in :meth:`predict_proba`.

        Returns
        -------
        ndarray of int64 of shape (m,)
            Labels of ``labels_``; ``n_clusters_`` where a cluster not seen in training is the most probable.

        Examples
        --------
        >>> import numpy as np
        >>> from ppclust import TVClust
        >>> noise = np.random.default_rng(0).normal(size=(20, 2))
        >>> X = np.r_[np.zeros((10, 2)), np.full((10, 2), 5.0)] + noise
        >>> est = TVClust(n_draws=20, n_warmup=20, n_chains=1, progress_bar=False, random_state=0).fit(X)
        >>> bool((est.predict(X[[0, 15]]) == est.labels_[[0, 15]]).all())
        True
        """
        return self.predict_proba(X, must_link=must_link, cannot_link=cannot_link).argmax(1).astype(np.int64)

    def score_samples(self, X):
        r"""Log posterior predictive density of each new point: :math:`\log \frac1S\sum_s p(x \mid z^{(s)})`.

        :math:`p(x \mid z^{(s)}) = \sum_k \frac{n_k}{n+\alpha} t_k(x) + \frac{\alpha}{n+\alpha} t_0(x)`, the
        collapsed NIW predictive of draw :math:`s` (variational: one term, the variational posterior's),
        in the units of ``X`` (the standardisation's Jacobian included). Held-out rows give the K-fold
        alternative to PSIS-LOO (``posterior_.attrs["loo_validity"]``).

        Parameters
        ----------
        X : array-like of shape (m, d)
            New points.

        Returns
        -------
        ndarray of shape (m,)

        Examples
        --------
        >>> import numpy as np
        >>> from ppclust import TVClust
        >>> noise = np.random.default_rng(0).normal(size=(20, 2))
        >>> X = np.r_[np.zeros((10, 2)), np.full((10, 2), 5.0)] + noise
        >>> est = TVClust(n_draws=20, n_warmup=20, n_chains=1, progress_bar=False, random_state=0).fit(X)
        >>> s = est.score_samples([[0.0, 0.0], [20.0, -20.0]])
        >>> bool(s[0] > s[1])
        True
        """
        from ppclust import predictive

        lj, _ = self._new_point_log_joint(X, None, None)
        return predictive.log_density(lj) - float(np.sum(np.log(self._x_scale)))

    def score(self, X, y=None):
        """Mean :meth:`score_samples` of ``X`` (the held-out log predictive density per point).

        Parameters
        ----------
        X : array-like of shape (m, d)
            New points.
        y : ignored
            For scikit-learn's API.

        Returns
        -------
        float

        Examples
        --------
        >>> import numpy as np
        >>> from ppclust import TVClust
        >>> X = np.random.default_rng(0).normal(size=(12, 2))
        >>> est = TVClust(n_draws=10, n_warmup=10, n_chains=1, progress_bar=False, random_state=0).fit(X)
        >>> bool(np.isfinite(est.score(X)))
        True
        """
        return float(np.mean(self.score_samples(X)))

    def sample(self, n_samples=1, *, random_state=None):
        """Points drawn from the posterior predictive: a kept draw, a cluster by its predictive weight, the
        cluster's parameters from their NIW posterior, the point from the Gaussian.

        Parameters
        ----------
        n_samples : int, default=1
            Points to draw.
        random_state : None, int or JAX key, default=None
            Seed.

        Returns
        -------
        X : ndarray of shape (n_samples, d)
            In the units of the training features.
        y : ndarray of int64 of shape (n_samples,)
            The cluster of ``labels_`` that holds most of the chosen cluster's points; ``n_clusters_`` for a
            new cluster.

        Examples
        --------
        >>> import numpy as np
        >>> from ppclust import TVClust
        >>> noise = np.random.default_rng(0).normal(size=(20, 2))
        >>> X = np.r_[np.zeros((10, 2)), np.full((10, 2), 5.0)] + noise
        >>> est = TVClust(n_draws=20, n_warmup=20, n_chains=1, progress_bar=False, random_state=0).fit(X)
        >>> Xs, ys = est.sample(4, random_state=0)
        >>> Xs.shape, ys.shape
        ((4, 2), (4,))
        """
        from sklearn.utils.validation import check_is_fitted

        from ppclust import predictive

        check_is_fitted(self, "labels_")
        _no_rows_posterior(self)
        n_samples = int(n_samples)
        key = as_key(random_state)
        family, x_train, draws, alpha, _, _ = self._draw_view()
        k_pick, k_pts = jax.random.split(key)
        pick = np.asarray(jax.random.randint(k_pick, (n_samples,), 0, draws.shape[0]))
        out, lab = np.empty((n_samples, self.n_features_in_)), np.empty(n_samples, np.int64)
        with x64():
            for s in np.unique(pick):
                rows = np.flatnonzero(pick == s)
                if self.posterior_ is None:
                    stats, log_w, mapping = self._vb_predictive
                else:
                    z = draws[s]
                    k = int(z.max()) + 2
                    stats = family.stats(jnp.asarray(x_train), jnp.asarray(z), k)
                    nk = np.asarray(stats.n)
                    log_w = np.where(nk > 0, np.log(np.maximum(nk, 1e-300)), -np.inf)
                    log_w[-1] = np.log(alpha[s])
                    mapping = predictive.overlap_map(z[None], self.labels_, k)[0]
                x, slot = predictive.sample_points(
                    jax.random.fold_in(k_pts, int(s)), family, stats, jnp.asarray(log_w), len(rows)
                )
                out[rows] = x
                lab[rows] = np.asarray(mapping)[slot].argmax(1)
        return out * self._x_scale + self._x_shift, lab

    def _draw_view(self):
        """(family, standardised training x, compact partition draws (S, n), alpha, p, q per draw)."""
        from ppclust import partition, posterior

        if self.posterior_ is None:  # variational: one "draw", the variational posterior
            return self._vb_family, None, np.zeros((1, 0), np.int32), np.ones(1), None, None
        links, family, prior, kw = self._loglik_inputs
        x_train = self.posterior_["observed_data"]["x"].values
        draws = posterior.partition_draws(self.posterior_)
        S = draws.shape[0] * draws.shape[1]
        draws = partition.compact_labels(draws.reshape(S, -1))

        def per(v, dflt):  # one value per draw (the draws' own, or a constant)
            v = np.asarray(dflt if v is None else v, np.float64)
            return np.broadcast_to(v.reshape(-1) if v.size == S else v, (S,))

        if self.pq == "fixed":
            p, q = float(self.p), float(self.q)
        else:
            post = self.posterior_["posterior"]
            p, q = post["p"].values.reshape(S), post["q"].values.reshape(S)
        return family, x_train, draws, per(kw["alpha"], prior.alpha), per(p, 0.5), per(q, 0.5)

    def _new_point_log_joint(self, X, must_link, cannot_link):
        """(S, m, slots) log joints of new points (tilted by their links) and the slots' map onto labels_."""
        from sklearn.utils.validation import check_is_fitted

        from ppclust import predictive

        check_is_fitted(self, "labels_")
        _no_rows_posterior(self)
        Z = (validate_X(self, X, reset=False) - self._x_shift) / self._x_scale
        with x64():
            if self.posterior_ is None:
                stats, log_w, mapping = self._vb_predictive
                lj = _vb_slot_log_joint(np.asarray(Z, np.float64), self._vb_family, stats, log_w)[None]
                if must_link is not None or cannot_link is not None:
                    raise PPClustError(
                        "links of new points need a sampler (algorithm='variational' has none)"
                    )
                return lj, mapping[None]
            family, x_train, draws, alpha, p, q = self._draw_view()
            lj = predictive.draws_log_joint(family, x_train, draws, alpha, Z)
        n_slots = lj.shape[-1]
        pairs, sign = _new_links(must_link, cannot_link, Z.shape[0], x_train.shape[0])
        if len(pairs):
            lj = lj + predictive.link_log_tilt(draws, Z.shape[0], n_slots, (pairs, sign), p, q)
        return lj, predictive.overlap_map(draws, self.labels_, n_slots)

    def __getstate__(self):
        """Pickle without the caches that grow as n^2 or duplicate the draws: ``psm_`` (recomputed from the
        draws on first access), the similarity matrix in ``posterior_`` and ``samples_.labels`` (restored
        from ``posterior_``'s partition draws on load)."""
        state = dict(super().__getstate__())  # a copy: the live object keeps its caches
        if state.get("posterior_") is not None:
            state.pop("psm_", None)
            dt = state["posterior_"].copy()
            if "clustering" in dt.children and "psm" in dt["clustering"].ds:
                dt["clustering"] = dt["clustering"].ds.drop_vars("psm")
            state["posterior_"] = dt
        if state.get("samples_") is not None and "partition_draws" in getattr(
            state.get("posterior_"), "children", {}
        ):
            state["samples_"] = state["samples_"]._replace(labels=None)
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        dt = state.get("posterior_")
        if state.get("samples_") is not None and state["samples_"].labels is None and dt is not None:
            from ppclust import posterior

            self.samples_ = state["samples_"]._replace(labels=posterior.partition_draws(dt))

    def __getattr__(self, name):
        # psm_ dropped by __getstate__: recomputed from the partition draws on first access
        if name == "psm_" and self.__dict__.get("posterior_") is not None:
            from ppclust import posterior

            psm = posterior.similarity_matrix(
                posterior.partition_draws(self.posterior_), max_n=int(self.max_psm_n)
            )
            self.psm_ = psm
            return psm
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

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
        return link_noise_beta(float(eps), s)

    def _check_unused_parameters(self):
        """:class:`InvalidParameterError` for a parameter set away from its default that ``algorithm``
        does not read."""
        unused = _SAMPLER_ONLY if self.algorithm == "variational" else _VB_ONLY
        if self.algorithm != "subcluster":
            unused = unused + _SUBCLUSTER_ONLY
        defaults = inspect.signature(type(self).__init__).parameters
        for name in unused:
            default = defaults[name].default
            if getattr(self, name) != default:
                raise InvalidParameterError(
                    f"The '{name}' parameter of TVClust is not used by algorithm={self.algorithm!r}; "
                    f"leave it at its default ({default!r}).",
                    parameter=name,
                )

    def _set_posterior(self, key, X, side, links, family, prior, res):
        """Point estimate, credible ball, PSM (small n) and the ArviZ ``posterior_`` from the draws."""
        from ppclust import partition, posterior

        key_pq, key_seed = jax.random.split(jax.random.fold_in(key, 0x5A150))
        seed = int(jax.random.randint(key_seed, (), 0, 2**31 - 1))
        loss = self.point_estimate if self.point_estimate in partition.LOSSES else "vi"
        if self.point_estimate == "max_log_joint":
            point = posterior.point_estimate(res.labels, loss="max_log_joint", log_joint=res.log_joint)
            est = partition.PartitionEstimate(
                point.astype(np.int64),
                loss,
                float(self.loss_a),
                partition.expected_loss(point, res.labels, loss, self.loss_a),
                float("nan"),
                0,
                0.0,
            )
        elif X.shape[0] <= partition.SALSO_MAX_N:
            est = partition.salso(res.labels, loss, a=float(self.loss_a), log_joint=res.log_joint, seed=seed)
        else:  # large n: the best of the most probable draws (linear time; see the class docstring)
            est = partition.best_draw(res.labels, loss, a=float(self.loss_a), log_joint=res.log_joint)
        ball = partition.credible_ball(est.labels, res.labels, loss, a=float(self.loss_a))
        psm = posterior.similarity_matrix(res.labels, max_n=int(self.max_psm_n))
        with x64():
            post = {"n_clusters": res.n_clusters}
            kw = dict(pq=self.pq, p=None, q=None, alpha=res.alpha if self.sample_alpha else None)
            derived = {}
            if self.pq != "fixed":
                draws = posterior.link_parameter_draws(key_pq, res.labels, links, prior)
                if self.pq == "sample":  # the sampler's own draws of p, q given each partition
                    draws.update(p=np.asarray(res.p), q=np.asarray(res.q))
                    kw.update(p=res.p, q=res.q)
                # conditional means E[p | z, E] are functions of the draws, not draws of p: not in posterior
                derived = {k: draws.pop(k) for k in ("p_cond_mean", "q_cond_mean")}
                post.update(draws)
            else:
                kw.update(p=float(self.p), q=float(self.q))
            if self.sample_alpha:
                post["alpha"] = res.alpha
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
            if self.algorithm == "subcluster"
            else f"collapsed Gibbs ({self.algorithm}), ppclust.inference.gibbs.sample",
            prior_alpha=prior.alpha,
            prior_a_p=prior.a_p,
            prior_b_p=prior.b_p,
            prior_a_q=prior.a_q,
            prior_b_q=prior.b_q,
            niw_kappa0=float(family.kappa0),
            niw_nu0=float(family.nu0),
            niw_psi0=np.asarray(family.psi0),
            covariance=family.covariance,
            observed_x="features after standardisation" if self.standardize else "features as given",
            pointwise_log_likelihood="log p(x_i | x_-i, z_-i, E): collapsed leave-one-out predictive, own "
            "label summed out (ppclust.posterior.loo_log_predictive); TVClust.compute_log_likelihood()",
            loo_validity=posterior.LOO_VALIDITY,
            p_q="draws from Beta(a + N, b + N) given each partition; derived group: E[p | z, E], E[q | z, E]"
            if self.pq == "collapse"
            else f"pq={self.pq}",
            point_estimate_loss=loss,
            point_estimate_a=float(self.loss_a),
            expected_loss=est.expected_loss,
            credible_ball_prob=ball.prob,
            credible_ball_radius=ball.epsilon,
        )
        self._loglik_inputs = (links, family, prior, kw)
        self.point_estimate_ = est
        self.credible_ball_ = ball
        self.expected_loss_ = est.expected_loss
        self.psm_ = psm
        self.labels_ = est.labels.astype(np.int64)
        self.n_clusters_ = int(len(np.unique(self.labels_)))
        self.objective_trace_ = np.asarray(res.log_joint)
        with x64():
            point_prior = prior._replace(alpha=self.alpha_)
            pq_fixed = (float(self.p), float(self.q)) if self.pq == "fixed" else ()
            self.objective_ = _bucketed_log_joint(self.labels_, X, links, family, point_prior, pq_fixed)
        self.posterior_ = posterior.build_datatree(
            post,
            sample_stats={"lp": res.log_joint},
            observed_data=observed,
            clustering=clustering,
            attrs=attrs,
            dims=dims,
            derived=derived,
            partition_draws=res.labels,
        )

    def _fit_variational(self, X, side):
        """``algorithm="variational"``: :func:`ppclust.inference.tvclust_vb.fit` (see the class docstring)."""
        n, d = X.shape
        if self.covariance_type != "full":
            raise PPClustError(
                "algorithm='variational' supports covariance_type='full' only (the authors' "
                f"Normal-Wishart components), got {self.covariance_type!r}"
            )
        self._x_shift, self._x_scale = np.zeros(d), np.ones(d)
        if self.standardize:  # the authors' code: centre, divide by the sd with n - 1
            sd = X.std(0, ddof=1) if n > 1 else np.ones(d)
            self._x_shift, self._x_scale = X.mean(0), np.where(sd > 0, sd, 1.0)
            X = (X - self._x_shift) / self._x_scale
        pairs = np.asarray(side.pairs).reshape(-1, 2) if side.n_links else np.zeros((0, 2), np.int64)
        signs = np.asarray(side.sign).reshape(-1) if side.n_links else np.zeros(0)
        src, dst, e = tvclust_vb.directed_entries(pairs, signs, self.vb_mask)
        # rows, entries and the table's width padded to buckets (weight 0): a new size inside a seen
        # bucket reuses the compiled program
        X_pad, row_weight = pad_rows(X)
        degree = int(np.bincount(src, minlength=n).max()) if len(src) else 1
        nbr, ev, valid = tvclust_vb.neighbour_arrays(len(X_pad), src, dst, e, width=bucket_size(degree, 4))
        (src, entry_weight), (dst, _), (e, _) = (pad_rows(a, minimum=8) for a in (src, dst, e))
        K = int(self.vb_truncation)
        with x64():
            nu0 = float(d) if self.nu0 is None else float(self.nu0)
            psi0 = np.eye(d) * float(self.psi_scale) * max(nu0 - d - 1.0, 1.0)  # = I at the defaults
            kappa0 = 1.0 if self.kappa0 is None else float(self.kappa0)  # the authors' beta0
            # built on the host and moved once: no program compiled per operation
            family = GaussianNIW(
                *jax.device_put((np.zeros(d), np.float64(kappa0), np.float64(nu0), psi0)), "full"
            )
            means0 = jax.random.normal(as_key(self.random_state), (K, d), jnp.float64)
            res = tvclust_vb.fit(
                jnp.asarray(X_pad),
                means0,
                family,
                (nbr, ev, valid),
                (src, dst, e),
                tuple(float(v) for v in self._link_prior(_link_mass(side))),
                float(self.alpha),
                max_iter=int(self.vb_max_iter),
                tol=float(self.vb_tol),
                entry_weight=jnp.asarray(entry_weight),
                row_weight=jnp.asarray(row_weight),
            )
            res = jax.tree_util.tree_map(np.asarray, res)
        resp_pad = res.resp  # padding rows 0: the predictive's statistics on the padded data
        res = res._replace(labels=res.labels[:n], resp=res.resp[:n])
        it = int(res.n_iter)
        self.n_features_in_ = d
        self.labels_ = np.unique(res.labels, return_inverse=True)[1].astype(np.int64)
        self.n_clusters_ = int(self.labels_.max()) + 1
        self.responsibilities_ = res.resp
        self.objective_trace_ = res.elbo[:it]
        self.objective_ = float(res.elbo[it - 1]) if it else float("nan")
        self.n_iter_ = it
        self.converged_ = bool(res.converged)
        self.means_ = res.means
        ap, bp, aq, bq = (float(v) for v in res.pq_params)
        self.p_, self.q_, self.alpha_ = ap / (ap + bp), aq / (aq + bq), float(self.alpha)
        self.psm_ = res.resp @ res.resp.T if n <= int(self.max_psm_n) else None
        self._set_vb_predictive(family, X_pad, resp_pad, res)
        self.posterior_ = self.point_estimate_ = self.credible_ball_ = self.expected_loss_ = None
        self.samples_ = None
        return self

    def _set_vb_predictive(self, family, X, resp, res):
        """The variational posterior's predictive pieces: the components' statistics from the final
        responsibilities ``resp`` of the rows ``X`` (padding rows: zeros and responsibility 0, which adds
        nothing), log expected stick-breaking weights, components mapped onto ``labels_``."""
        with x64():
            stats = _soft_stats(family, jnp.asarray(X), jnp.asarray(resp))
        stats = jax.tree_util.tree_map(np.asarray, stats)
        g = np.asarray(res.gamma, np.float64)  # (K-1, 2) Beta(g1, g2) sticks
        ev = g[:, 0] / g.sum(1)
        log_rest = np.concatenate([[0.0], np.cumsum(np.log1p(-ev))])
        log_w = np.concatenate([np.log(ev), [0.0]]) + log_rest
        K = len(log_w)
        slot_ids, lab = np.unique(np.asarray(res.labels), return_inverse=True)
        mapping = np.zeros((K, len(slot_ids) + 1))
        mapping[:, -1] = 1.0
        mapping[slot_ids] = 0.0
        mapping[slot_ids, np.arange(len(slot_ids))] = 1.0
        self._vb_family = family
        self._vb_predictive = (stats, log_w, mapping)


def _new_links(must_link, cannot_link, n_new, n_train):
    """(pairs (L, 2), sign (L,)) of links between new rows and training rows, checked."""
    from ppclust.errors import InvalidInputError

    parts, signs = [], []
    for pairs, sgn in ((must_link, 1), (cannot_link, -1)):
        if pairs is None:
            continue
        a = np.asarray(pairs, np.int64).reshape(-1, 2)
        if len(a) and (
            a[:, 0].min() < 0 or a[:, 0].max() >= n_new or a[:, 1].min() < 0 or a[:, 1].max() >= n_train
        ):
            raise InvalidInputError(
                f"links of new points are (new row, training row) pairs with new rows in [0, {n_new}) "
                f"and training rows in [0, {n_train})"
            )
        parts.append(a)
        signs.append(np.full(len(a), sgn))
    if not parts:
        return np.zeros((0, 2), np.int64), np.zeros(0)
    return np.concatenate(parts), np.concatenate(signs)


_ADVICE = (
    "run more sweeps (n_warmup, n_draws), more chains, or algorithm='subcluster' (its split/merge moves "
    "change the number of clusters in one step)"
)


def _bucketed_log_joint(labels, X, links, family, prior, pq_fixed):
    """:func:`ppclust.models.tvclust.log_joint` of canonical ``labels`` as one program per bucket: the rows
    padded to :func:`ppclust._buckets.bucket_size` (padding labelled with the slot count, so counted in no
    slot), the slots to a bucket of the number of clusters (empty slots add 0), the pair counts from the
    host (:func:`ppclust.sideinfo.pair_counts` in NumPy)."""
    n = X.shape[0]
    n_pad = bucket_size(n)
    k_pad = bucket_size(int(labels.max()) + 1, minimum=8)
    lab = np.full(n_pad, k_pad, np.int32)
    lab[:n] = labels
    host_links = jax.tree.map(np.asarray, links)
    counts = pair_counts(np.asarray(labels), host_links, xp=np)
    args = jax.device_put((lab, pad_rows(np.asarray(X), n_pad)[0], counts))
    return float(_log_joint_program(*args, family, prior, pq_fixed, k_max=k_pad))


@rowwise
def _vb_slot_log_joint(x, family, stats, log_w):
    """The variational posterior's ``predictive.slot_log_joint`` of new rows, one program per row bucket."""
    from ppclust import predictive

    return predictive.slot_log_joint(family, stats, log_w, x)


@jax.jit
def _soft_stats(family, x, resp):
    """``family.soft_stats(x, resp)`` as one program."""
    return family.soft_stats(x, resp)


@partial(jax.jit, static_argnames=("k_max",))
def _log_joint_program(labels, x, counts, family, prior, pq_fixed, *, k_max):
    stats = family.stats(x, labels, k_max)
    return log_joint_from_stats(stats, counts, family, prior, *pq_fixed)


def _no_rows_posterior(est):
    """:class:`~ppclust.errors.PPClustError` after a fit on rows spread over processes (no ``posterior_``)."""
    if est.posterior_ is None and est.samples_ is not None:
        raise PPClustError(
            "TVClust fitted on rows spread over processes keeps no posterior over all rows: "
            "predict, predict_proba, score_samples and sample need a one-process fit"
        )


def _link_mass(side):
    """Number of linked pairs, weights summed (``link_strength="links"``; unit weights by default)."""
    return float(np.sum(side.weight)) if side.n_links else 0.0
