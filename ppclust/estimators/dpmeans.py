"""scikit-learn estimators for DP-means and RDP-means (Khashabi et al. 2015, Algorithm 1).

The numerics live in :mod:`ppclust.inference.dpmeans`; this module validates, converts links and
labels into a neighbour table, runs ``n_init`` vmapped restarts and keeps the one with the lowest
final objective J (spec Section 3.5).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.validation import check_is_fitted

from ppclust._jax import as_key, x64
from ppclust.errors import KMaxExhaustedError, NonFiniteError, PPClustError
from ppclust.estimators._base import (
    DEVICES,
    NONNEG_REAL,
    POSITIVE_INT,
    POSITIVE_REAL,
    RANDOM_STATE,
    StrOptions,
    data_mesh,
    fit_context,
    link_side_info,
    side_labels,
    validate_X,
)
from ppclust.inference import dpmeans as _dp
from ppclust.models.tvclust import link_reliability_share
from ppclust.sideinfo import link_weight_per_point, pair_counts, weigh_link_kinds

__all__ = ["DPMeans", "RDPMeans"]

_DIVERGENCES = ("sqeuclidean", "euclidean", "kl")


def _side_table(n, y, must_link, cannot_link):
    """Links and their neighbour table from links and/or partial labels (labels -> all pairs among
    labelled points): ``(side, table)``, table None without links.

    Links are soft penalties (``link_model="soft"``): a pair given with both signs keeps both entries,
    whose terms add up in :math:`-\\xi_1 f^i_k + \\xi_2 s^i_k` (with ``xi_ratio=1``: the net weight)."""
    side = link_side_info(n, y, must_link, cannot_link, link_model="soft")
    return side, (side.neighbour_table() if side.n_links else None)


class _Base(ClusterMixin, BaseEstimator):
    _with_links = False

    _parameter_constraints: dict = {
        "lam": [None, *POSITIVE_REAL],
        "lam_k": POSITIVE_INT,
        "lam_method": [StrOptions({"kth_farthest_from_mean", "farthest_first"})],
        "divergence": [StrOptions(set(_DIVERGENCES))],
        "k_max": POSITIVE_INT,
        "n_init": POSITIVE_INT,
        "init": [StrOptions({"bbox_random", "mean"})],
        "order": [StrOptions({"random", "fixed"})],
        "tie": [StrOptions({"first", "last"})],
        "variant": [StrOptions({"sequential", "delayed"})],
        "compat": ["boolean"],
        "patience": POSITIVE_INT,
        "max_iter": POSITIVE_INT,
        "smoothing": NONNEG_REAL,
        "random_state": RANDOM_STATE,
        "devices": DEVICES,
    }

    def _lambda(self, X):
        if self.lam is not None:
            return float(self.lam)
        if self.lam_k > X.shape[0]:
            raise PPClustError(f"`lam_k`={self.lam_k} exceeds n_samples={X.shape[0]}: lam is computed from "
                               "the lam_k-th farthest point, so lam_k must lie in [1, n_samples]; lower "
                               "`lam_k` or pass `lam`.")
        lam = _dp.lambda_from_k(X, int(self.lam_k), self.lam_method, self.divergence)
        if not lam > 0:  # every new point would open a cluster: garbage, not a fit
            what = ("all points are identical" if np.ptp(X, axis=0).max() == 0 else
                    f"the data have too few distinct points for lam_k={self.lam_k}")
            raise PPClustError(f"cannot set lam from the data: {what}, so lam_method={self.lam_method!r} "
                               f"gives lam={lam:g}, but lam must be > 0; pass an explicit lam > 0")
        return lam

    def _xi_cap(self, lam, table, xi0):
        """``xi_max``, or for ``"auto"`` ``max(xi0, lam / max(w, 1))`` with ``w`` the mean total link weight
        of a point (:func:`ppclust.sideinfo.link_weight_per_point`; see :class:`RDPMeans`). A pair given with
        both signs counts with its net weight, as it acts in the cost (``xi_ratio = 1``)."""
        cap = getattr(self, "xi_max", 1e12)
        if cap != "auto":
            return float(cap)
        w = 0.0 if table is None else link_weight_per_point(table)
        return max(float(xi0), lam / max(w, 1.0))

    def _prepare(self, X, *, reset):
        X = validate_X(self, X, reset=reset)
        if self.divergence == "kl":
            if (X < 0).any():
                raise PPClustError("`X` must be non-negative counts for divergence='kl'")
            X = X + self.smoothing
            X = X / X.sum(axis=1, keepdims=True)
        return X

    def _run(self, X, table, xi0, xi_max=None):
        n = X.shape[0]
        lam = self._lambda(X)
        xi_max = self._xi_cap(lam, table, xi0) if xi_max is None else xi_max
        kw = dict(xi0=xi0, xi_rate=getattr(self, "xi_rate", 1.0), xi_ratio=getattr(self, "xi_ratio", 1.0),
                  xi_max=xi_max, k_max=min(int(self.k_max), n), max_iter=self.max_iter,
                  divergence=self.divergence, tie=self.tie, compat=self.compat, variant=self.variant,
                  order=self.order, init=self.init, patience=self.patience,
                  mesh=data_mesh(self.devices, parallel_ok=self.variant == "delayed" and not self.compat))
        with x64():
            res = _dp.fit_restarts(as_key(self.random_state), X, table, lam, int(self.n_init), **kw)
            res = type(res)(*[np.asarray(a) for a in res])
        if res.overflow.any():
            raise KMaxExhaustedError(f"all k_max={kw['k_max']} cluster slots were used and another cluster "
                                     f"was needed (lam={lam:g}); increase `k_max` or `lam`")
        if not np.all(np.isfinite(res.objective)):
            raise NonFiniteError(f"non-finite objective in {int((~np.isfinite(res.objective)).sum())} of "
                                 f"{len(res.objective)} restart(s); check the data and `xi_max`")
        best = int(np.argmin(res.objective))
        k = int(res.n_clusters[best])
        self.lam_ = lam
        if hasattr(self, "xi_max"):  # RDP-means: the cap of the link weight that was used
            self.xi_max_ = xi_max
        self.labels_ = res.labels[best].astype(np.int64)
        self.cluster_centers_ = res.centers[best][:k].copy()
        self.n_clusters_ = k
        self.objective_ = float(res.objective[best])
        self.n_iter_ = int(res.n_iter[best])
        self.converged_ = bool(res.converged[best])
        n_it = self.n_iter_
        self.objective_trace_ = res.objective_trace[best][:n_it].copy()
        self.xi_trace_ = res.xi_trace[best][:n_it].copy()
        return self

    def predict(self, X):
        """Nearest centre under the divergence (links play no part for new points)."""
        check_is_fitted(self, "cluster_centers_")
        X = self._prepare(X, reset=False)
        with x64():
            D = np.asarray(_dp.divergence_matrix(X, self.cluster_centers_, self.divergence))
        return np.argmin(D, axis=1).astype(np.int64)

    def fit_predict(self, X, y=None, **kw):
        """Fit (side information as in ``fit``) and return ``labels_``."""
        return self.fit(X, y, **kw).labels_


class DPMeans(_Base):
    """DP-means (Kulis & Jordan 2012): hard small-variance limit of a DP mixture.

    Parameters
    ----------
    lam : float or None, default=None
        New-cluster penalty in the units of ``divergence``; None computes it with
        ``lambda_from_k(X, lam_k, lam_method, divergence)`` (authors' rule: k-th farthest from the mean).
    lam_k : int, default=3;  lam_method : str, default="kth_farthest_from_mean" (or "farthest_first").
    divergence : "sqeuclidean" (default) | "euclidean" (authors' code) | "kl" (count rows, smoothed).
    k_max : int, default=64 — cluster slot capacity (overflow raises).
    n_init : int, default=1 — vmapped restarts; the lowest final objective wins.
    init : "bbox_random" | "mean";  order : "random" | "fixed";  tie : "first" | "last".
    variant : "sequential" | "delayed" (parallel pass with at most one new cluster per pass).
    compat : bool — the authors' code choices (see ``ppclust.inference.dpmeans``).
    patience, max_iter : stopping rule (partition unchanged for ``patience`` passes).
    devices : None | "all" | "auto" | int | list of devices, default=None — the devices the fit may use
        (one meaning for every estimator, :mod:`ppclust.estimators._base`); here a data-parallel
        delayed pass (needs ``variant="delayed"``, ``compat=False``): points split over a 1-D device mesh,
        per-cluster sums reduced with ``psum``; same result as one device up to summation order. See
        :mod:`ppclust._devices`.

    Attributes
    ----------
    labels_, n_clusters_, cluster_centers_, objective_, n_iter_, converged_, lam_, objective_trace_,
    xi_trace_, n_features_in_.
    """

    def __init__(self, lam=None, *, lam_k=3, lam_method="kth_farthest_from_mean", divergence="sqeuclidean",
                 k_max=64, n_init=1, init="bbox_random", order="random", tie="first", variant="sequential",
                 compat=False, patience=1, max_iter=100, smoothing=0.3, random_state=None, devices=None):
        self.lam = lam
        self.lam_k = lam_k
        self.lam_method = lam_method
        self.divergence = divergence
        self.k_max = k_max
        self.n_init = n_init
        self.init = init
        self.order = order
        self.tie = tie
        self.variant = variant
        self.compat = compat
        self.patience = patience
        self.max_iter = max_iter
        self.smoothing = smoothing
        self.random_state = random_state
        self.devices = devices

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, must_link=None, cannot_link=None, partial_labels=None):
        """Fit on X; side information is ignored by DP-means (accepted for a uniform CLI)."""
        X = self._prepare(X, reset=True)
        return self._run(X, None, 0.0)


class RDPMeans(_Base):
    """RDP-means (Khashabi et al. 2015, Algorithm 1): DP-means with annealed link rewards/penalties.

    Cost of putting point i in cluster k: ``D(x_i, mu_k) - xi1 f_k^i + xi2 s_k^i``, new cluster at
    cost ``lam``; ``xi1 = xi0 * xi_rate**t`` (sweep t >= 1; sweep 0 uses 0, as the authors' code),
    capped at ``xi_max``; ``xi2 = xi_ratio * xi1``. Links come from ``must_link`` / ``cannot_link``
    and from partial labels ``y`` (-1 = unlabelled; every labelled pair becomes a link).

    Parameters are those of :class:`DPMeans` plus ``xi0`` (1e-3, >= 0), ``xi_rate`` (2, > 0),
    ``xi_ratio`` (1, >= 0), ``xi_max`` ("auto" or a float > 0); defaults ``patience=20``,
    ``max_iter=1000``, ``init="mean"``. ``devices`` as in :class:`DPMeans`.

    ``xi_max="auto"`` (default; the value used is ``xi_max_``) stops the annealing at
    ``lam / max(w, 1)``, ``w`` the mean total link weight of a point (``2 * n_links / n`` for unit
    weights), or at ``xi0`` if that is larger (a constant, explicit ``xi0`` with ``xi_rate=1`` is kept).
    Where it comes from: ``lam`` is the price of a new cluster in the cost above, so at the cap all the
    links of an average point together weigh at most one cluster: links keep steering the partition, but
    a share of wrong links can no longer override the geometry as xi doubles towards the authors' 1e12
    (then every link is a hard constraint). On the benefit panel (``benchmarks/study_rdpmeans_defaults.py``
    -> ``results/rdpmeans_defaults_study.md``, 8 standardised data sets, 5 draws) the cap kept RDP-means
    within 0.02 NMI of its no-link result at 20% flipped links on 7 of 8 sets (4 of 8 uncapped) and
    still gained >= 0.05 NMI with clean links on 8 of 8 (mean NMI with clean links 0.619 against 0.669
    uncapped). Pass ``xi_max=1e12`` for the authors' schedule.

    ``link_reliability="auto"`` (default; None: every link at full weight, the session-10 default) weighs
    each kind of link by the evidence the data give it, as TVClust does with its learned link
    sensitivity ``p`` and specificity ``q`` (Khashabi et al. 2015; in the small-variance limit the weight
    of a violated may-link / may-not-link is :math:`2\\sigma^2` times its log-odds
    :math:`\\ln\\frac{p}{1-q}` / :math:`\\ln\\frac{q}{1-p}`, ``models.tvclust.small_variance_hyper``). After
    a first fit, ``p, q`` are read off its partition: posterior means given its pair counts under
    TVClust's "links are mostly right" prior Beta(9.9, 1.1) (``TVClust(link_noise=0.1, link_strength=11)``,
    :func:`ppclust.sideinfo.link_reliability`; held in ``link_reliability_``, a dict with keys ``p``, ``q``).
    Each may-link's weight is multiplied by :math:`r_+ = \\min\\{1, \\max(0, \\ln\\frac{p}{1-q}) / \\ln 9\\}`,
    each may-not-link's by :math:`r_- = \\min\\{1, \\max(0, \\ln\\frac{q}{1-p}) / \\ln 9\\}`
    (:func:`ppclust.sideinfo.link_reliability_share`; held in ``link_weight_share_``, keys ``may_link``,
    ``may_not_link``; both attributes None without links), and the fit is repeated with the same
    ``xi_max_`` (not repeated when both shares are 1). :math:`\\ln 9` is the log-odds of both kinds at the
    prior mean ``p = q = 0.9``: links that the first partition does not contradict (or too few links to
    say) keep the cap above; a kind the partition often violates loses weight in proportion to its
    log-odds, and a kind violated as often as
    kept counts for nothing. Where it comes from: with C classes a random pair is a may-link with
    probability about 1/C, so 20% flipped signs make about 2/3 of the may-links wrong on the 10-class sets
    (``benchmarks/study_rdpmeans_noise.py`` -> ``results/rdpmeans_noise_study.md``, which also gives the
    numbers with and without this default); at full weight they cost RDP-means 0.040 NMI on penbased. One
    estimate, not an iteration to a fixed point: the first partition under-splits the 10-class sets
    (RDP-means' ``lam``), so clean may-not-links inside its clusters look wrong, and a second re-estimate
    lowered the clean gain further in the study.

    ``init``: the default ``"mean"`` starts from one cluster at the global mean (Kulis & Jordan 2012,
    Algorithm 1, the DP-means algorithm); ``"bbox_random"`` is the authors' start (a random point of the
    bounding box; the reproductions pass it). Where the default comes from: in more than a few dimensions
    the bounding-box point is far from every row, so the first pass opens clusters that later passes
    never merge: on standardised wine (3 classes) it gave K = 8 / 6 (seeds 0 / 1), the global-mean start
    K = 5 / 4; over the panel study's 8 sets and 5 draws the mean start found 3.3 clusters without links
    on average against 5.3 (the sets have 5.6 classes on average, so it under-splits the 10-class ones,
    and its mean NMI without links is lower, 0.380 against 0.475: a fixed ``lam`` cannot suit every
    number of classes). Its restarts differ only in the visiting order, and on three separated 2-D blobs
    with links (``lam=8``) it opened 7 clusters where the bounding-box start recovers the blobs.
    """

    _parameter_constraints: dict = {
        **_Base._parameter_constraints,
        "xi0": NONNEG_REAL,
        "xi_rate": POSITIVE_REAL,
        "xi_ratio": NONNEG_REAL,
        "xi_max": [StrOptions({"auto"}), *POSITIVE_REAL],
        "link_reliability": [StrOptions({"auto"}), None],
    }

    def __init__(self, lam=None, *, xi0=1e-3, xi_rate=2.0, xi_ratio=1.0, xi_max="auto",
                 link_reliability="auto", lam_k=3, lam_method="kth_farthest_from_mean",
                 divergence="sqeuclidean", k_max=64, n_init=1,
                 init="mean", order="random", tie="first", variant="sequential", compat=False,
                 patience=20, max_iter=1000, smoothing=0.3, random_state=None, devices=None):
        self.lam = lam
        self.xi0 = xi0
        self.xi_rate = xi_rate
        self.xi_ratio = xi_ratio
        self.xi_max = xi_max
        self.link_reliability = link_reliability
        self.lam_k = lam_k
        self.lam_method = lam_method
        self.divergence = divergence
        self.k_max = k_max
        self.n_init = n_init
        self.init = init
        self.order = order
        self.tie = tie
        self.variant = variant
        self.compat = compat
        self.patience = patience
        self.max_iter = max_iter
        self.smoothing = smoothing
        self.random_state = random_state
        self.devices = devices

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, must_link=None, cannot_link=None, partial_labels=None):
        """RDP-means (Khashabi et al. 2015, Algorithm 1) on X with links from ``must_link`` /
        ``cannot_link`` (pair arrays or :class:`~ppclust.sideinfo.RowPairs`) and from the labelled
        pairs of the partial labels (``partial_labels`` if given, else ``y``; -1 = unlabelled)."""
        X = self._prepare(X, reset=True)
        side, table = _side_table(X.shape[0], side_labels(y, partial_labels), must_link, cannot_link)
        self._run(X, table, float(self.xi0))
        self.link_reliability_ = self.link_weight_share_ = None
        if table is None or self.link_reliability is None:
            return self
        share, (p, q) = link_reliability_share(pair_counts(self.labels_, side, xp=np))
        self.link_reliability_ = {"p": p, "q": q}
        self.link_weight_share_ = {"may_link": share[0], "may_not_link": share[1]}
        if share == (1.0, 1.0):
            return self
        return self._run(X, weigh_link_kinds(table, share), float(self.xi0), xi_max=self.xi_max_)
