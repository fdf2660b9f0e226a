"""scikit-learn estimator for C3L (Śmieja, Struski & Tabor 2017): clustering with controlled leakage."""

from __future__ import annotations

import warnings

import jax
import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import ClassifierTags
from sklearn.utils.validation import check_is_fitted

from ppclust import _devices, _progress
from ppclust._buckets import rowwise
from ppclust._jax import as_key, x64
from ppclust.errors import DegenerateDataWarning, InvalidInputError, InvalidParameterError, PPClustError
from ppclust.estimators._base import (
    DEVICES,
    OUTSIDE_CALLER,
    POSITIVE_INT,
    POSITIVE_REAL,
    RANDOM_STATE,
    SCALE_OUT,
    UNIT_OPEN,
    ClusterMixin,
    Interval,
    Real,
    StrOptions,
    check_global_X,
    check_partial_labels,
    data_mesh,
    fit_context,
    refit_if_singular,
    restart_devices,
    side_labels,
    validate_X,
    warn_degenerate_data,
)
from ppclust.inference import c3l as _c3l
from ppclust.inference import cecib as _cecib
from ppclust.inference import hartigan as _hartigan
from ppclust.sideinfo import labelled_means

__all__ = ["C3L"]

#: the CEC rule's log densities of new points, one program per row bucket
_log_density_rows = rowwise(_c3l.log_density, static_argnames=("n_dec",))


class C3L(ClusterMixin, BaseEstimator):
    r"""Semi-supervised CEC whose clusters leak at most ``leakage`` mass across a decision hyperplane.

    The decision hyperplane comes from two categories of partial labels (a linear SVM) or is given; every
    cluster is a product Gaussian in coordinates along and across the hyperplane whose mass on the far
    side of the hyperplane is at most ``leakage``. The number of clusters is found: the fit starts from
    ``n_clusters`` and deletes clusters that become too small.

    Parameters
    ----------
    n_clusters : int, default=10
        Initial number of clusters; with ``cap_clusters`` lowered to ``floor(n / min_size)``
        (``n_clusters_init_`` holds the number used).
    leakage : float in (0, 1), default=0.05
        The bound alpha on every cluster's leakage; ``>= 0.5`` disables the constraint (plain CEC with the
        product family).
    min_cluster_fraction : float in [0, 1), default=0.05
        A cluster with fewer than ``min_size = max(ceil(min_cluster_fraction * n), d + 3)`` points is
        deleted (:func:`ppclust.inference.c3l.min_size`, after the R CEC package's ``card.min = "5%"``).
    cap_clusters : bool, default=True
        Start from at most ``floor(n / min_size)`` clusters
        (:func:`ppclust.inference.hartigan.max_start_clusters`). ``False``: the paper's behaviour. With
        ``init="labels"`` the start still has at least one cluster per label category.
    n_init : int, default=10
        Restarts; the lowest-cost run is kept.
    random_state : None, int, numpy Generator or JAX key, default=None
        Seed of the starts.
    init : {"k-means++", "random", "labels"}, default="k-means++"
        ``"k-means++"``: k-means++ seeds and the nearest-seed partition (the CEC package's start; a random
        partition puts every initial mean near the hyperplane, see docs/decisions/ for the evidence);
        ``"random"``: a uniform random partition (the paper's wording); ``"labels"``: one initial cluster
        per label category at its labelled points' mean, the other seeds by k-means++ given them
        (:func:`ppclust.inference.hartigan.seeded_partitions`); needs partial labels ``y``.
    max_iter : int, default=100
        Maximum number of Hartigan passes (or batch steps).
    standardize : bool, default=False
        Cluster standardised features (the hyperplane and the outputs stay in X's units).
    svm_C : float > 0, default=1.0
        C of the linear SVM that turns partial labels into the hyperplane (spec 5.2).
    algorithm : {"hartigan", "batch"}, default="hartigan"
        ``"hartigan"``: the paper's online moves. ``"batch"``: batch steps (every point reassigned at once
        from an n x K cost matrix) with the constrained models, then Hartigan passes; for large n
        (:func:`ppclust.inference.hartigan.fit_batch`).
    devices : "auto", "all", None or int, default="auto"
        Devices the restarts may use (:mod:`ppclust.estimators._base`); results are identical either way.
        With ``algorithm="batch"`` the points are split over the devices instead.
    progress_bar : bool, default=True
        A bar over the restarts, shown when someone can see it (``PPCLUST_PROGRESS``).

    Attributes
    ----------
    labels_ : ndarray of shape (n,)
        Cluster of every point, 0..n_clusters_-1.
    n_clusters_ : int
        Clusters found.
    objective_ : float
        The cost (8) of the final partition (nats; smaller is better).
    objective_terms_ : dict
        Its parts: ``complexity`` :math:`-\sum p_k\ln p_k`, ``one_d`` :math:`\sum p_k E_1`, ``rest``
        :math:`\sum p_k H(r\text{-part})`.
    objective_trace_ : ndarray
        The cost after the start and after each pass of the best restart.
    n_clusters_trace_ : ndarray
        Live clusters at the same moments.
    restart_objectives_ : ndarray of shape (n_init,)
        Final cost of every restart (inf where a restart failed).
    restart_n_iter_ : ndarray of shape (n_init,)
        Passes of every restart.
    n_iter_ : int
        Passes of the best restart.
    converged_ : bool
        Whether the best restart ended with a pass without a move.
    leakage_, natural_leakage_, constraint_active_ : ndarray of shape (k,)
        Fitted leakage of every cluster's model (<= ``leakage``), leakage of its unconstrained ML fit,
        whether the constraint binds; (k, J) with J > 1 hyperplanes.
    t_loc_, t_scale_ : ndarray of shape (k,)
        The constrained 1-D fits along the hyperplane's normal.
    weights_, means_, covariances_ : ndarray
        The fitted product Gaussians in X space, (k,), (k, N), (k, N, N).
    hyperplane_ : tuple
        ``(normal, offset)`` of the decision hyperplane(s).
    min_cluster_size_ : int
        The deletion threshold used (``min_size``).
    n_clusters_init_ : int
        The initial number of clusters used.
    reg_covar_ : float
        The relative regulariser of the r-covariances used (0, or :data:`ppclust.inference.hartigan.JITTER`
        when the data's covariance is singular; a ``UserWarning`` says so).

    Notes
    -----
    Minimises the cost (8) of Śmieja, Struski & Tabor (2017) over hard partitions,

    .. math:: E = \sum_k p_k\big(-\ln p_k + E_1(\mu_k, s_k^2;\alpha) + \tfrac d2\ln(2\pi e)
              + \tfrac12\ln\det S_k\big),

    with :math:`E_1` the closed-form leakage-constrained 1-D cross-entropy of Theorem 1
    (:func:`ppclust.inference.cec.constrained_fit_1d`), by Hartigan moves
    (:mod:`ppclust.inference.hartigan`). More than two label categories give one one-vs-rest hyperplane
    each (an extension beyond the paper, see :mod:`ppclust.inference.c3l`).

    References
    ----------
    M. Śmieja, Ł. Struski and J. Tabor, "Semi-supervised model-based clustering with controlled clusters
    leakage", Expert Systems with Applications 85 (2017).

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust import C3L
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(size=(40, 2)), rng.normal(size=(40, 2)) + [6.0, 0.0]])
    >>> model = C3L(n_clusters=2, n_init=2, random_state=0, progress_bar=False)
    >>> model = model.fit(X, hyperplane=([1.0, 0.0], 3.0))
    >>> model.n_clusters_, isinstance(model.objective_, float)
    (2, True)
    """

    _parameter_constraints: dict = {
        "n_clusters": POSITIVE_INT,
        "leakage": UNIT_OPEN,
        "min_cluster_fraction": [Interval(Real, 0, 1, closed="left")],
        "cap_clusters": ["boolean"],
        "n_init": POSITIVE_INT,
        "random_state": RANDOM_STATE,
        "init": [StrOptions({"random", "k-means++", "labels"})],
        "max_iter": POSITIVE_INT,
        "standardize": ["boolean"],
        "svm_C": POSITIVE_REAL,
        "algorithm": [StrOptions({"hartigan", "batch"})],
        "devices": DEVICES,
        "progress_bar": ["boolean"],
    }

    def __init__(
        self,
        n_clusters=10,
        *,
        leakage=0.05,
        min_cluster_fraction=0.05,
        cap_clusters=True,
        n_init=10,
        random_state=None,
        init="k-means++",
        max_iter=100,
        standardize=False,
        svm_C=1.0,
        algorithm="hartigan",
        devices="auto",
        progress_bar=True,
    ):
        self.n_clusters = n_clusters
        self.leakage = leakage
        self.min_cluster_fraction = min_cluster_fraction
        self.cap_clusters = cap_clusters
        self.n_init = n_init
        self.random_state = random_state
        self.init = init
        self.max_iter = max_iter
        self.standardize = standardize
        self.svm_C = svm_C
        self.algorithm = algorithm
        self.devices = devices
        self.progress_bar = progress_bar

    def __sklearn_tags__(self):
        """scikit-learn's tags; ``y`` (partial labels) holds two categories, the paper's case, so the
        scikit-learn checks pass a two-category ``y`` (``classifier_tags.multi_class=False``)."""
        tags = super().__sklearn_tags__()
        tags.classifier_tags = ClassifierTags(multi_class=False)
        return tags

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, hyperplane=None, partial_labels=None):
        """Fit C3L on X.

        Parameters
        ----------
        X : array-like of shape (n, N)
            The points.
        y : array-like of shape (n,), default=None
            Partial labels ({0, 1}, -1 = unlabelled; more categories: one-vs-rest hyperplanes), from which
            a linear SVM gives the hyperplane; needed unless ``hyperplane`` is given.
        hyperplane : tuple (normal, offset), default=None
            An explicit hyperplane ``normal^T x = offset`` (the + side is ``normal^T x > offset``).
        partial_labels : array-like of shape (n,), default=None
            When given, the labels used instead of ``y`` (``y`` is then only a scoring target).

        Returns
        -------
        self : C3L
        """
        if _devices.is_process_rows(X):
            return self._fit_process_rows(X, hyperplane)
        X = validate_X(self, X, reset=True)
        n, N = X.shape
        if n < 2:
            raise PPClustError(
                f"C3L needs at least 2 samples (two label categories or two sides of a hyperplane), got "
                f"n_samples = {n}."
            )
        alpha = float(self.leakage)
        if int(self.n_clusters) > n:
            raise PPClustError(f"n_clusters must lie in [1, n_samples={n}], got {self.n_clusters!r}")
        y = side_labels(y, partial_labels)
        if n > 1 and np.all(X == X[0]):
            raise PPClustError(
                f"C3L: every row of `X` is the same point ({n} copies): there is nothing to cluster and no "
                "hyperplane separates the categories of `y`; check the data (a wrong column selection?)"
            )
        if hyperplane is None:
            if y is None:
                raise PPClustError(
                    "C3L needs side information: two categories y or hyperplane=(normal, offset)"
                )
            y = check_partial_labels(y, n).astype(np.int64)
            n_cat = np.unique(y[y >= 0]).size
            if n_cat > 2 and n_cat > N:
                raise PPClustError(
                    f"C3L: `y` has {n_cat} categories but `X` has {N} feature(s): with more than two "
                    "categories C3L uses one one-vs-rest hyperplane per category, and at most as many "
                    "linearly independent hyperplanes as features exist. Merge the categories into two "
                    f"(the paper's case){f' or at most {N}' if N > 2 else ''}, or pass "
                    "hyperplane=(normal, offset)."
                )
            if n_cat > 2:
                warnings.warn(
                    f"C3L with {n_cat} categories uses one one-vs-rest hyperplane per category "
                    "(an extension beyond the paper, which treats two categories only)",
                    UserWarning,
                    skip_file_prefixes=OUTSIDE_CALLER,
                )
            normal, offset = _c3l.hyperplane_from_labels(X, y, C=self.svm_C)
            try:
                hp_x = _c3l.make_hyperplane(normal, offset)
            except ValueError:
                raise PPClustError(_no_hyperplane(X, y, n_cat)) from None
        else:
            normal, offset = hyperplane
            hp_x = _c3l.make_hyperplane(normal, offset)
        if hp_x.normals.shape[1] != N:
            raise PPClustError(f"hyperplane normal has {hp_x.normals.shape[1]} entries, X has {N} features")
        J = hp_x.normals.shape[0]
        self.hyperplane_ = (
            (hp_x.normals[0], float(hp_x.offsets[0])) if J == 1 else (hp_x.normals, hp_x.offsets)
        )
        self.center_, self.scale_ = _c3l.standardization(X, self.standardize)
        self._hp = _c3l.standardized_hyperplane(hp_x, self.center_, self.scale_)
        Z = _c3l.transform((X - self.center_) / self.scale_, self._hp)
        self.n_decision_ = J
        d = N - J
        warn_degenerate_data("C3L", X, int(self.n_clusters))
        if _hartigan.singular_data((X - self.center_) / self.scale_) and not (
            d > 0 and _hartigan.singular_data(Z[:, J:])
        ):
            warnings.warn(
                "C3L: the covariance of `X` is singular (a feature is a linear combination of others, "
                "e.g. the sum of two columns): C3L models the directions along and across the hyperplane "
                "independently, so a redundant feature changes the partition. Drop the redundant "
                "features (or reduce X with PCA) first.",
                DegenerateDataWarning,
                skip_file_prefixes=OUTSIDE_CALLER,
            )
        cm = _c3l.min_size(n, d, float(self.min_cluster_fraction))
        side = np.sign(Z[:, :J])
        if np.all(side >= 0, axis=0).any() or np.all(side <= 0, axis=0).any():
            warnings.warn(
                "all points lie on one side of the hyperplane: only clusters near it are affected",
                UserWarning,
                skip_file_prefixes=OUTSIDE_CALLER,
            )
        K = int(self.n_clusters)
        if self.cap_clusters:
            K = _hartigan.max_start_clusters(K, n, cm)
        centres = None
        if self.init == "labels":
            if y is None or hyperplane is not None or not (y >= 0).any():
                raise InvalidParameterError(
                    "The 'init' parameter 'labels' needs partial labels y with a "
                    "labelled point (not an explicit hyperplane).",
                    parameter="init",
                )
            codes, m = _cecib.encode_labels(y, n)
            centres = labelled_means(Z, codes, m)
            K = max(K, m)
        with x64():
            z = jax.device_put(np.ascontiguousarray(Z))  # a host array onto the device: no program per shape

        def fit_once(reg_covar, options):
            cost = _c3l.make_cost(z, J, alpha, reg_covar=reg_covar)
            kw = dict(options, centres=centres)
            if self.algorithm == "batch":
                return cost, _c3l.fit_batch(
                    as_key(self.random_state), z, cost, **kw, mesh=data_mesh(self.devices)
                )
            return cost, _c3l.fit(
                as_key(self.random_state), z, cost, **kw, devices=restart_devices(self.devices, "C3L")
            )

        self.labels_ = self._solve(fit_once, d > 0 and _hartigan.singular_data(Z[:, J:]), K, cm, J, d)
        return self

    def _solve(self, fit_once, singular: bool, K: int, cm, J: int, d: int) -> np.ndarray:
        """The restarts of both ``fit`` paths, the covariances of the r-part regularised
        (:func:`ppclust.inference.hartigan.ridge`) only where the data need it: a ``singular`` r-covariance
        (constant or collinear features), or every restart ending with singular clusters
        (:func:`ppclust.estimators._base.refit_if_singular`). ``fit_once(reg_covar, options) -> (cost,
        fitted)`` runs the restarts with the solver's keywords ``options`` (slots, restarts, passes ...).
        Sets the fitted attributes (:meth:`_set_model`) and returns the labels of ``fitted.best.labels``'
        rows; ``d``: the r-part's dimension (0: nothing to regularise)."""
        with (
            x64(),
            _progress.bar(int(self.n_init), "C3L restarts", "restart", bool(self.progress_bar)) as bar,
        ):
            options = dict(
                K=K,
                min_size=cm,
                n_init=int(self.n_init),
                init=self.init,
                max_passes=int(self.max_iter),
                reassign="immediate",
            )

            def run(reg_covar):
                cost, out = fit_once(reg_covar, options)
                return float(out[0].cost), (cost, *out)

            (cost, best, all_costs, all_passes, _), self.reg_covar_ = refit_if_singular(
                "C3L",
                run,
                reg=0.0,
                singular=singular,
                can_jitter=d > 0,
                advice="decrease n_clusters or increase min_cluster_fraction",
            )
            bar.update(int(self.n_init))
        return self._set_model(cost, best, all_costs, all_passes, K, cm, J)

    def _set_model(self, cost, best, all_costs, all_passes, K: int, cm, J: int) -> np.ndarray:
        """The fitted attributes from the best run; returns the labels of ``best.labels``' rows."""
        with x64():
            params = _c3l.cluster_params(cost, best.stats)
            parts = _c3l.cost_parts(params, best.active)
        active = np.asarray(best.active)
        params = type(params)(*(np.asarray(v)[active] for v in params))
        self._params = params
        self.objective_ = float(best.cost)
        self.objective_terms_ = {k: float(v) for k, v in parts._asdict().items() if k != "total"}
        self.n_iter_ = int(best.n_passes)
        self.converged_ = bool(best.converged)
        tr = np.asarray(best.trace)
        self.objective_trace_ = tr[np.isfinite(tr)]
        self.n_clusters_trace_ = np.asarray(best.n_clusters_trace)[: self.objective_trace_.size]
        all_costs = np.asarray(all_costs, dtype=float)
        self.restart_objectives_ = np.where(np.isfinite(all_costs), all_costs, np.inf)
        self.restart_n_iter_ = np.asarray(all_passes)
        slot_to_label = -np.ones(K, dtype=np.int64)
        slot_to_label[active] = np.arange(active.sum())
        labels = slot_to_label[np.asarray(best.labels)].astype(np.int64)
        if (labels < 0).any():  # the engines reassign every point; a -1 here would be a bug
            raise RuntimeError("C3L: internal error, a point was left without a cluster")
        self.n_clusters_ = int(active.sum())
        self.min_cluster_size_ = cm
        self.n_clusters_init_ = K
        sq = (lambda a: a[:, 0]) if J == 1 else (lambda a: a)
        self.weights_ = params.weight
        self.leakage_ = sq(params.leakage)
        self.natural_leakage_ = sq(params.natural_leakage)
        self.constraint_active_ = sq(params.active_constraint)
        self.t_loc_ = sq(params.t_loc)
        self.t_scale_ = sq(params.t_scale)
        self.means_, self.covariances_ = _c3l.x_space_gaussians(params, self._hp, self.center_, self.scale_)
        return labels

    def _fit_process_rows(self, X, hyperplane):
        """``fit`` on rows spread over processes (:mod:`ppclust.distributed`): ``algorithm="batch"`` with an
        explicit ``hyperplane``, the solver :func:`ppclust.inference.c3l.fit_batch_rows`."""
        if self.algorithm != "batch":
            raise InvalidInputError(
                "`X` holds rows spread over processes (ppclust.distributed.process_rows); C3L's Hartigan "
                "moves visit the points one after the other: use algorithm='batch'. Methods that scale out "
                f"over processes: {SCALE_OUT}."
            )
        if hyperplane is None:
            raise InvalidInputError(
                "C3L with rows spread over processes needs hyperplane=(normal, offset): the linear SVM that "
                "finds it from `y` standardises the labelled points by the mean and scale of all rows in "
                "one process. Fit it once on the labelled points (ppclust.inference.c3l."
                "hyperplane_from_labels) and pass it on every process."
            )
        if self.init == "labels":
            raise InvalidParameterError(
                "The 'init' parameter 'labels' needs partial labels y with a "
                "labelled point (not an explicit hyperplane).",
                parameter="init",
            )
        x_loc, lay, mean, _ = check_global_X(self, X)
        n, N = lay.n, x_loc.shape[1]
        reduce = _devices.process_sum
        if n < 2:
            raise PPClustError(f"C3L needs at least 2 samples, got n_samples = {n}.")
        if int(self.n_clusters) > n:
            raise PPClustError(f"n_clusters must lie in [1, n_samples={n}], got {self.n_clusters!r}")
        hp_x = _c3l.make_hyperplane(*hyperplane)
        if hp_x.normals.shape[1] != N:
            raise PPClustError(f"hyperplane normal has {hp_x.normals.shape[1]} entries, X has {N} features")
        J = hp_x.normals.shape[0]
        self.hyperplane_ = (
            (hp_x.normals[0], float(hp_x.offsets[0])) if J == 1 else (hp_x.normals, hp_x.offsets)
        )
        self.center_, self.scale_ = np.zeros(N), np.ones(N)
        if self.standardize:
            sd = np.sqrt(reduce(((x_loc - mean) ** 2).sum(0)) / n)
            self.center_, self.scale_ = mean, np.where(sd > 0, sd, 1.0)
        self._hp = _c3l.standardized_hyperplane(hp_x, self.center_, self.scale_)
        Z = _c3l.transform((x_loc - self.center_) / self.scale_, self._hp)
        self.n_decision_ = J
        d = N - J
        cm = _c3l.min_size(n, d, float(self.min_cluster_fraction))
        K = int(self.n_clusters)
        if self.cap_clusters:
            K = _hartigan.max_start_clusters(K, n, cm)
        singular = False
        if d > 0:
            r = Z[:, J:] - reduce(Z[:, J:].sum(0)) / n
            ev = np.linalg.eigvalsh(reduce(r.T @ r) / n)
            from ppclust.families import ML_SING_TOL

            singular = n <= d or bool(ev[0] <= ML_SING_TOL * ev[-1])
        with x64():
            Zg = _devices.from_process_rows(Z, lay)

        def fit_once(reg_covar, options):
            cost = _c3l.make_cost(Z, J, float(self.leakage), reg_covar=reg_covar, reduce=reduce)
            return cost, _c3l.fit_batch_rows(as_key(self.random_state), Zg, cost, lay, **options)

        labels = self._solve(fit_once, singular, K, cm, J, d)
        self.labels_ = _devices.from_process_rows(labels, lay)
        return self

    def _log_density(self, X):
        check_is_fitted(self, "labels_")
        X = validate_X(self, X, reset=False)
        Z = _c3l.transform((X - self.center_) / self.scale_, self._hp)
        with x64():
            return _log_density_rows(np.asarray(Z, np.float64), self._params, n_dec=self.n_decision_)

    def predict(self, X):
        """The CEC rule: the cluster of largest :math:`\\ln p_k + \\ln N(t; m_k, \\sigma_k^2) + \\ln N(r;
        \\bar r_k, S_k)` (spec §1.7).

        Parameters
        ----------
        X : array-like of shape (m, N)

        Returns
        -------
        labels : ndarray of shape (m,)
        """
        return np.argmax(self._log_density(X), axis=1).astype(np.int64)

    def score_samples(self, X):
        """Mixture log-density :math:`\\ln\\sum_k p_k g_k(x)` in X space.

        Parameters
        ----------
        X : array-like of shape (m, N)

        Returns
        -------
        log_density : ndarray of shape (m,)
        """
        from scipy.special import logsumexp

        return logsumexp(self._log_density(X), axis=1) + _c3l.log_jacobian(self._hp, self.scale_)


def _no_hyperplane(X, y, n_cat: int) -> str:
    """Why the linear SVM gave no usable hyperplane, in terms of the data."""
    lab = y >= 0
    if np.unique(X[lab], axis=0).shape[0] == 1:
        return (
            "C3L: the labelled points of `y` are all the same point of `X`: no hyperplane separates their "
            "categories; label points that differ, or pass hyperplane=(normal, offset)"
        )
    return (
        f"C3L: the linear SVM found no hyperplane between the {n_cat} categories of `y` (its normal vectors "
        "are zero or linearly dependent: the categories' labelled points coincide, or lie on a subspace "
        "of `X` too small for one hyperplane per category); label more distinct points, merge the "
        "categories into two, or pass hyperplane=(normal, offset)"
    )
