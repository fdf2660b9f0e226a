"""scikit-learn estimator for CEC-IB (Śmieja & Geiger 2017): clustering with partial, coarse, noisy labels."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.validation import check_is_fitted

from ppclust import _progress, families
from ppclust._jax import as_key, x64
from ppclust.errors import InvalidParameterError, PPClustError
from ppclust.estimators._base import (
    DEVICES,
    NONNEG_REAL,
    POSITIVE_INT,
    RANDOM_STATE,
    Interval,
    Real,
    StrOptions,
    check_partial_labels,
    data_mesh,
    deprecated_name,
    fit_context,
    refit_if_singular,
    renamed_param,
    restart_devices,
    side_labels,
    validate_X,
)
from ppclust.inference import cecib as _cecib
from ppclust.inference import hartigan as _hartigan
from ppclust.models.ssgmm import partition_flip_rate
from ppclust.sideinfo import label_channel_information

__all__ = ["CECIB"]


class CECIB(ClusterMixin, BaseEstimator):
    """Cross-entropy clustering with an information-bottleneck label term (CEC-IB).

    Minimises :math:`E_\\beta = H(Y) + \\sum_i p_i H(N(\\mu_i,\\Sigma_i)) + \\beta \\sum_i p_i
    H(Z\\mid Y_i\\cap X_l)` (nats) by online Hartigan moves, starting from ``n_clusters`` clusters and
    deleting clusters below ``max(eps * n, d + 2)`` points, so the final number of clusters is found
    automatically. Labels may be partial (-1 = unlabelled) and coarser than clusters: several
    clusters may share a category; only mixing categories inside a cluster is penalised.

    Parameters
    ----------
    n_clusters : int, default=10
        Initial number of clusters (the paper uses twice the number of classes); with ``cap_clusters``
        lowered to ``floor(n / max(eps * n, d + 2))`` (``n_clusters_init_`` holds the number used).
    label_noise : float in [0, 1) or "auto", default=0.0
        The rate :math:`\\varepsilon` at which a given label is wrong (uniform over the other categories, the
        model of ``SemiSupervisedGMM(label_noise=...)``). The label term's weight becomes
        ``beta * I(eps)``, :math:`I(\\varepsilon) = C(\\varepsilon)/\\ln m` the share of a label's information
        that survives that flip channel, :math:`C(\\varepsilon) = \\ln m - H_b(\\varepsilon) -
        \\varepsilon\\ln(m-1)` its capacity (:func:`ppclust.sideinfo.label_channel_information`; two
        categories at 20% wrong labels give 0.278, close to the paper's beta0 = 0.27 for noisy labels,
        Example 4.1). ``"auto"``: the rate read off the plain-CEC fit of the chosen start (the share of
        labelled points outside their cluster's majority category,
        :func:`ppclust.models.ssgmm.partition_flip_rate`;
        ``label_noise_`` holds it), then the weighted fit. Default 0 (the paper's E_beta): on the benefit
        panel neither the true rate nor ``"auto"`` made CEC-IB more robust to 20% wrong labels (within 0.02
        of plain CEC on 6 of 8 sets, as with 0; ``results/cec_start_study.md``) -- wrong labels act through
        the start (see ``init``), not through the label term. Session 11 (20 draws of iris, 10% labels, 20%
        wrong; ``benchmarks/study_label_noise_misses.py`` -> ``results/label_noise_misses_study.md``): NMI
        change against plain CEC -0.010 (se 0.019) with 0, +0.002 (0.016) with ``"auto"``, +0.001 (0.016)
        with the true 0.2 -- within the draw-to-draw spread, so the default is kept.
    cap_clusters : bool, default=True
        Start from at most ``floor(n / min_size)`` clusters, ``min_size = max(eps * n, d + 2)`` the deletion
        rule (:func:`ppclust.inference.hartigan.max_start_clusters`), with or without labels. Where it comes
        from: a start with more clusters has an average cluster below the size the model needs for its ML
        covariance; when every initial cluster is too small the fit falls back to one cluster. On the
        benefit panel (n = 200) the paper's 2K start hit this on satimage (d = 36: 12 clusters of ~17
        points against 38 needed; plain CEC NMI 0.084, one cluster in 4 of 5 draws); capped, 0.197, and
        penbased 0.427 -> 0.611 (``benchmarks/study_cec_start.py`` -> ``results/cec_start_study.md``).
        ``False``: the paper's and the authors' program's behaviour (the golden tests' setting). With
        ``init="labels"`` the start still has at least one cluster per label category.
    beta : float or "auto", default="auto"
        Weight of the label term; 0 gives plain CEC. ``ppclust.inference.cecib.BETA0_HALF_NORMAL``
        (0.2698) is the paper's robust choice for noisy labels; see also ``beta0``. ``"auto"`` (set in
        ``beta_``) is ``beta = 1`` at every label budget. Where it comes from: Theorem 4.1 -- for a
        proportional coarsening of the labels any beta >= 1 makes splitting along the labels no worse
        than merging, whatever the labelled share and the number of classes -- and Sec. 5.6, where
        beta = 1 gave the best NMI with correct labels. A larger beta for a smaller budget (session 6's
        ``max(1, 0.1 / f)``, read from Sec. 5.5 / Fig. 6) does not help: with few labels the label term is
        zeroed by moving the labelled points alone (no other point feels it once every cluster's
        labelled points agree), so beta above 1 only pulls labelled points away from their Gaussians.
        On the benefit panel (``benchmarks/study_cecib_beta.py`` -> ``results/cecib_beta_study.md``,
        8 data sets, 5 draws, re-run in session 10 with the capped start; k-means++ start, 2K clusters)
        beta = 1 had the best mean NMI change over plain CEC at 20% wrong labels (+0.013; beta = 2: -0.003,
        beta = 5: -0.030), beta = 2 the best with 10% clean labels (+0.040 vs +0.027; >= 0.05 on 4 against
        2 of 8 sets), level at 5% (+0.009 / +0.008), and beta = 10 or 20 (``1 / f``) lost NMI. With labels
        known to be noisy pass a smaller beta (the paper: beta0, or 0.6). Session 10 checked the paper's
        beta0 rule (``benchmarks/study_label_benefit.py`` -> ``results/label_benefit_study.md``): the
        critical beta0 of Theorem 4.2 (:func:`ppclust.inference.cecib.beta0`) of the panel subsamples' true
        classes is below 1 wherever it is defined (5 of 8 sets, -1.2 to -12.2: their Gaussians already pay for
        the split, Lemma E.1 bounds it by 1), so beta = 1 is never too weak for the label term; beta = 2
        from the label-seeded start gained no more sets (4 of 8 at 10% clean labels) and lost robustness
        (within 0.02 at 20% wrong labels on 6 of 8, mean +0.004 against +0.024).
    eps : float, default=0.05
        Clusters with fewer than ``eps * n`` (or ``d + 2``) points are deleted.
    n_init : int, default=10
        Restarts (vmapped); the lowest final cost wins.
    random_state : None, int, Generator or JAX key
    init : {"auto", "labels", "kmeans++", "random"}, default="auto"
        ``"kmeans++"``: k-means++ seeds + nearest-seed partition (authors' code); ``"random"``: a uniform
        random partition (paper); ``"labels"``: a label-seeded start -- one initial cluster per label
        category at the mean of its labelled points, the other ``n_clusters - m`` seeds by k-means++
        given those centres (drawn per restart), every point to its nearest centre
        (:func:`ppclust.inference.hartigan.seeded_partitions`; ``n_clusters`` is raised to the number of
        categories m if smaller). ``"auto"`` (``init_`` holds the choice): with labels and ``beta > 0``,
        plain CEC (``beta = 0``) is fitted from the label-seeded start and from k-means++ (same seeds), and
        the start whose fit has the lower CEC cost (eq. 2; the labels on a tie) is used for the CEC-IB fit
        (three fits); without labels or with ``beta = 0``, ``"kmeans++"`` (plain CEC, labels unused). Where
        it comes from: with a few labels the IB term only moves the labelled points (see ``beta``), so the
        labels act through the start; wrong labels misplace the labelled means, and the method's own cost,
        which does not read the labels, decides whether to trust them (session 8 took the label-seeded
        start always).
        On the benefit panel (``benchmarks/study_cec_start.py`` -> ``results/cec_start_study.md``: 8 data
        sets, 5 draws, capped 2K start, beta = 1; mean NMI change over plain CEC from the same start) the
        cost-chosen start gave +0.029 with 10% clean labels (>= 0.05 on 4 of 8 sets), +0.015 with 5%, and
        +0.024 with 20% wrong labels (within 0.02 on 7 of 8); the label-seeded start always: +0.051 (4 of
        8), +0.019, +0.021 (6 of 8); k-means++: +0.027 (2 of 8), +0.008, +0.013 (6 of 8). The price is
        clean-label gain where k-means++ reaches the lower cost (wine, 10% clean: +0.059 against +0.181);
        with labels known to be clean pass ``init="labels"``. Session 10 (``results/label_benefit_study.md``,
        5 draws) compared choosing the start by the CEC-IB cost (with its label term: the beta = 1 fits from
        both starts, the lower E_beta kept) with this plain-CEC choice: 4 of 8 sets with a clean gain >= 0.05
        for both (+0.037 against +0.029 mean), 7 of 8 within 0.02 at 20% wrong labels for both, and at
        n = 600 1 of 6 against 3 of 6 clean gains: the plain-CEC choice stays. Where labels gain little the
        start is not the cause: the four sets that miss at n = 200 are those where a class holds about the
        points a cluster needs, n / (K min_size) = 0.88 (satimage: no partition into its 6 classes passes
        the size rule, every fit ends with 1-2 clusters), 1.11, 1.43, 1.67 (penbased, segment, digits),
        against >= 2.5 on the four that gain; with d lowered to 5 by PCA (a diagnostic) plain CEC finds
        about K clusters on all four and 10% labels gain +0.051 on satimage, +0.026 on segment, and nothing
        on digits and penbased (10 classes, two labelled points each: plain CEC already sits where the
        labels would put it).
    reassign : {"lazy", "immediate"}, default="lazy"
        How points of a deleted cluster are reassigned (see ``ppclust.inference.hartigan``).
    max_iter : int, default=100
        Maximum number of Hartigan passes over the points (was ``max_passes``, deprecated).
    reg : float, default=0.0
        Optional ridge ``reg * tr(Sigma_X)/d`` added to every cluster's scatter (off by default;
        breaks exact affine invariance). When the data need one (their covariance is singular --
        constant, collinear or one-hot features -- or every restart ends with singular clusters) and
        ``reg == 0``, the jitter ``reg = 1e-6`` (relative to the data's mean variance) is used with a
        ``UserWarning``; ``reg_`` holds the value used.
    algorithm : {"hartigan", "batch"}, default="hartigan"
        ``"hartigan"``: the paper's online Hartigan moves (exact; replays the authors' program).
        ``"batch"``: Lloyd-type steps (all points reassigned at once from an n x K cost matrix, BLAS-shaped,
        the IB label term kept), then Hartigan passes from the best restart; for large n (>= ~1e4-1e5).
        ``restart_costs_`` then holds the batch restarts' costs.
    devices : "auto" (default), "all", None or int
        The devices the fit may use (one meaning for every estimator, :mod:`ppclust.estimators._base`);
        here the restarts run on them: with several local devices and ``n_init`` a multiple of their
        number, ``"auto"``/``"all"`` spread the restarts over them; ``None``/``1``: one device; an int
        ``m``: the first ``m`` local devices. Results are identical either way. With
        ``algorithm="batch"`` the points are split over the devices instead (``data_mesh``; equal up to the
        order of floating-point sums).

    progress_bar : bool, default=True
        A bar over the (vmapped) restarts,
        shown when someone can see it (Jupyter or a terminal, not ``CI``; ``PPCLUST_PROGRESS``).

    Attributes
    ----------
    labels_ : (n,) int, consecutive cluster ids 0..n_clusters_-1.
    n_clusters_ : int.  cost_ : float, the final E_beta.
    cost_parts_ : dict with ``model_complexity`` (H(Y)), ``accuracy`` (sum p_i H(N_i)) and
        ``side_information`` (beta * sum p_i H(Z|Y_i)); also as scalars ``cost_model_complexity_``,
        ``cost_accuracy_``, ``cost_side_information_``.
    weights_ : (k,), means_ : (k, d), covariances_ : (k, d, d) MLE parameters of the clusters (with the
        ridge: ``(S_k + rho I) / n_k``); precisions_cholesky_ : (k, d, d) (scikit-learn's form).
    n_iter_ : passes of the best restart.  converged_ : bool.  restart_costs_ : (n_init,).
    reg_ : float, the relative covariance regulariser used (``reg`` or the automatic jitter).
    beta_ : float, the beta used (``beta``, or 1 for ``beta="auto"``; times the label channel's
        information when ``label_noise`` is not 0).
    init_ : str, the start used (``init``, or the choice of ``init="auto"``).
    n_clusters_init_ : int, the initial number of clusters used (see ``cap_clusters``).
    label_noise_ : float, the flip rate used (``label_noise``, or the rate read off with ``"auto"``);
        ``beta_`` is then ``beta * label_channel_information(label_noise_, m)``.
    """

    _parameter_constraints: dict = {
        "n_clusters": POSITIVE_INT,
        "cap_clusters": ["boolean"],
        "beta": [StrOptions({"auto"}), *NONNEG_REAL],
        "label_noise": [StrOptions({"auto"}), Interval(Real, 0, 1, closed="left")],
        "eps": [Interval(Real, 0, 1, closed="left")],
        "n_init": POSITIVE_INT,
        "random_state": RANDOM_STATE,
        "init": [StrOptions({"auto", "labels", "kmeans++", "random"})],
        "reassign": [StrOptions({"lazy", "immediate"})],
        "max_iter": POSITIVE_INT,
        "reg": NONNEG_REAL,
        "devices": DEVICES,
        "algorithm": [StrOptions({"hartigan", "batch"})],
        "progress_bar": ["boolean"],
        "max_passes": deprecated_name(POSITIVE_INT),
    }

    def __init__(self, n_clusters=10, *, beta="auto", eps=0.05, n_init=10, random_state=None, init="auto",
                 reassign="lazy", max_iter=100, reg=0.0, devices="auto", algorithm="hartigan",
                 progress_bar=True, max_passes="deprecated", cap_clusters=True, label_noise=0.0):
        self.n_clusters = n_clusters
        self.cap_clusters = cap_clusters
        self.label_noise = label_noise
        self.beta = beta
        self.eps = eps
        self.n_init = n_init
        self.random_state = random_state
        self.init = init
        self.reassign = reassign
        self.max_iter = max_iter
        self.reg = reg
        self.devices = devices
        self.algorithm = algorithm
        self.progress_bar = progress_bar
        self.max_passes = max_passes

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, partial_labels=None):
        """Minimise the CEC-IB cost (Śmieja & Geiger, eq. 10; per cluster eq. 11) by Hartigan moves.

        ``y``: partial labels (-1 = unlabelled; ``partial_labels``, when given, replaces ``y``, which is
        then only a scoring target); categories may be coarser than clusters. Runs
        ``n_init`` vmapped restarts from the start ``init`` and keeps the lowest cost (``init="auto"`` with
        labels: two plain-CEC fits choose the start first; ``label_noise="auto"``: the rate is read off a
        plain-CEC fit first)."""
        max_iter = renamed_param(self, "max_iter", "max_passes")
        X = validate_X(self, X, reset=True)
        n, d = X.shape
        if n < d + 2:
            raise PPClustError(f"CECIB needs at least d + 2 = {d + 2} points for a full covariance, "
                               f"got n_samples = {n}.")
        y = check_partial_labels(side_labels(y, partial_labels), n)
        yc, m = _cecib.encode_labels(y, n)
        beta = self._beta(y, n)
        # "auto": with labels (and beta > 0) the start is chosen by plain CEC's cost below ("choose")
        init = ("choose" if m > 0 and beta > 0 else "kmeans++") if self.init == "auto" else self.init
        if init == "labels" and m == 0:
            raise InvalidParameterError("The 'init' parameter 'labels' needs partial labels (y or "
                                        "partial_labels) with at least one labelled point.", parameter="init")
        n_clusters = int(self.n_clusters)
        if self.cap_clusters:
            n_clusters = _hartigan.max_start_clusters(n_clusters, n, _cecib.min_size(n, d, float(self.eps)))

        def solve(beta, init):
            with _progress.bar(int(self.n_init), "CECIB restarts (vmapped)", "restart",
                               bool(self.progress_bar)) as bar:
                def run(reg):
                    kw = dict(n_clusters=n_clusters, beta=beta, eps=float(self.eps),
                              n_init=int(self.n_init), init=init, max_passes=int(max_iter),
                              reassign=self.reassign, reg=reg)
                    with x64():
                        if self.algorithm == "batch":
                            best, costs, _, _ = _cecib.fit_batch(as_key(self.random_state), _dev(X), yc, m,
                                                                 **kw, mesh=data_mesh(self.devices))
                        else:
                            best, costs, _, _ = _cecib.fit(as_key(self.random_state), _dev(X), yc, m, **kw,
                                                           devices=restart_devices(self.devices, "CECIB"))
                        return float(best.cost), (best, np.asarray(costs))

                # covariance regularisation (hartigan.ridge): the user's reg, or the jitter where data need it
                reg = float(self.reg)
                (best, costs), reg = refit_if_singular(
                    "CECIB", run, reg=reg, singular=reg == 0 and _hartigan.singular_data(X),
                    advice="increase reg, decrease n_clusters or increase eps")
                bar.update(int(self.n_init))
            return best, costs, reg

        # label noise (sideinfo.label_channel_information): beta times the share of a label's information
        # that survives a symmetric flip channel of rate label_noise; "auto": the rate read off a plain CEC
        # fit (beta = 0) from the same start (the label term would move wrong-labelled points to their
        # labels' clusters and hide them), then the fit with the reduced beta
        first = None
        if init == "choose":  # plain CEC (beta = 0) from both starts; the lower cost picks the start
            first, _, _ = solve(0.0, "labels")
            km, _, _ = solve(0.0, "kmeans++")
            init = "labels" if float(first.cost) <= float(km.cost) else "kmeans++"  # a tie: the labels
            first = first if init == "labels" else km
        flip = 0.0 if self.label_noise == "auto" else float(self.label_noise)
        if self.label_noise == "auto" and m >= 2 and beta > 0:
            if first is None:
                first, _, _ = solve(0.0, init)
            flip = partition_flip_rate(np.asarray(first.labels), yc, m)
        beta = beta * label_channel_information(flip, m)
        best, costs, reg = solve(beta, init)
        self.label_noise_ = flip
        labels = np.asarray(best.labels)
        active = np.asarray(best.active)
        total = float(best.cost)
        self.n_iter_ = int(best.n_passes)
        self.converged_ = bool(best.converged)
        self.restart_costs_ = costs
        self.reg_ = reg
        live = np.flatnonzero(active)
        remap = -np.ones(len(active), int)
        remap[live] = np.arange(len(live))
        self.labels_ = remap[labels].astype(np.int64)
        if (self.labels_ < 0).any():  # the engines reassign every point; a -1 here would be a bug
            raise RuntimeError("CECIB: internal error, a point was left without a cluster")
        self.n_features_in_ = X.shape[1]
        self.n_clusters_ = len(live)
        # the clusters' ML Gaussians (with the ridge as a pseudo-scatter rho I: (S_k + rho I) / n_k), written
        # as families.gaussian_map_estimate under an NIW "prior" with kappa0 = 0, psi0 = rho I, nu0 = -(d + 2)
        rho = _hartigan.ridge(X, reg)
        with x64():
            # with n_clusters slots (the live ones first, the rest empty and cut off): the number of clusters
            # found does not change the compiled program; the sums over points are on the host, so a new n
            # compiles nothing either (issue 18)
            k_cap = max(int(self.n_clusters), self.n_clusters_)
            params = _cluster_gaussians(X, self.labels_, rho, k_cap)
            live_k = slice(0, self.n_clusters_)
            self.weights_ = np.asarray(params.weights)[live_k]
            self.means_ = np.asarray(params.means)[live_k]
            self.precisions_cholesky_ = np.asarray(params.prec_chol)[live_k]
            self.covariances_ = np.asarray(_covariances(params.prec_chol))[live_k]
        self.cost_ = total
        self.n_clusters_init_ = max(n_clusters, m) if init == "labels" else n_clusters
        self.beta_ = beta
        self.init_ = init
        parts = _cecib.cecib_cost(X, self.labels_, y if y is not None else None, beta,
                                  ridge=_hartigan.ridge(X, reg))
        self.cost_parts_ = {"model_complexity": float(parts.model_complexity),
                            "accuracy": float(parts.accuracy),
                            "side_information": float(parts.side_information)}
        self.cost_model_complexity_ = self.cost_parts_["model_complexity"]
        self.cost_accuracy_ = self.cost_parts_["accuracy"]
        self.cost_side_information_ = self.cost_parts_["side_information"]
        return self

    def _beta(self, y, n):
        """``beta``, or 1 for ``"auto"`` (Theorem 4.1; see the class docstring)."""
        return 1.0 if self.beta == "auto" else float(self.beta)

    def fit_predict(self, X, y=None, **kw):
        """Fit and return ``labels_``."""
        return self.fit(X, y, **kw).labels_

    def predict(self, X):
        """CEC rule: argmax_i ln p_i + ln N(x; mu_i, Sigma_i)."""
        check_is_fitted(self, "means_")
        X = validate_X(self, X, reset=False)
        with x64():
            score = _log_gaussian_prob(jnp.asarray(X), jnp.asarray(self.means_),
                                       jnp.asarray(self.precisions_cholesky_))
            score = np.asarray(score) + np.log(self.weights_)
        return np.argmax(score, 1).astype(np.int64)


def _cluster_gaussians(x, labels, rho, k, chunk=4096):
    r"""The clusters' ML Gaussians with the ridge as a pseudo-scatter, :math:`(S_k + \rho I) / n_k`: the
    MAP estimate of :func:`ppclust.families.gaussian_map_estimate` under an NIW "prior" with
    :math:`\kappa_0 = 0`, :math:`\Psi_0 = \rho I`, :math:`\nu_0 = -(d + 2)` (weights :math:`n_k / n`,
    means :math:`s_k / n_k`). The moment statistics (:func:`ppclust.families.gaussian_moment_stats`, sums
    over points) are summed on the host in chunks of ``chunk`` points; the estimate is jitted on (k, d)."""
    x = np.asarray(x, np.float64)
    one_hot = np.eye(k)
    parts = [families.gaussian_moment_stats(x[i:i + chunk], one_hot[labels[i:i + chunk]], "full")
             for i in range(0, len(x), chunk)]
    stats = tuple(_dev(sum(p[j] for p in parts)) for j in range(3))
    return _map_estimate(stats, jnp.asarray(rho, jnp.float64))


@jax.jit
def _map_estimate(stats, rho):
    d = stats[1].shape[1]
    dt = stats[1].dtype
    ridge = families.NIWPrior(jnp.ones((), dt), jnp.zeros(d, dt), jnp.zeros((), dt),
                              jnp.asarray(-(d + 2.0), dt), rho * jnp.eye(d, dtype=dt))
    return families.gaussian_map_estimate(stats, "full", 0.0, ridge)


_covariances = jax.jit(partial(families.covariances, cov_type="full"))
_dev = jax.device_put  # a host array onto the device without a program compiled per shape (jnp.asarray's)
_log_gaussian_prob = jax.jit(partial(families.log_gaussian_prob, cov_type="full"))
