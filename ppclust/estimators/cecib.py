"""scikit-learn estimator for CEC-IB (Śmieja & Geiger 2017): clustering with partial, coarse, noisy labels."""

from __future__ import annotations

import warnings

import jax
import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ppclust import _devices, _progress
from ppclust._jax import as_key, x64
from ppclust.errors import InvalidInputError, InvalidParameterError, PPClustError
from ppclust.estimators._base import (
    DEVICES,
    NONNEG_REAL,
    OUTSIDE_CALLER,
    POSITIVE_INT,
    RANDOM_STATE,
    SCALE_OUT,
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
from ppclust.inference import cecib as _cecib
from ppclust.inference import hartigan as _hartigan

__all__ = ["CECIB"]

#: ``init="auto"``: each candidate start's plain-CEC fit runs ``max(1, n_init // CANDIDATE_RESTART_SHARE)``
#: restarts (the choice then costs at most 2 / CANDIDATE_RESTART_SHARE of the fit in restarts)
CANDIDATE_RESTART_SHARE = 5


class CECIB(ClusterMixin, BaseEstimator):
    r"""Cross-entropy clustering with an information-bottleneck label term (CEC-IB).

    Clusters points into Gaussians with partial labels (-1 = unlabelled) that may be coarser than the
    clusters: several clusters may share a category; only mixing categories inside a cluster costs. The
    number of clusters is found: the fit starts from ``n_clusters`` and deletes clusters that become too
    small.

    Parameters
    ----------
    n_clusters : int, default=10
        Initial number of clusters (the paper uses twice the number of classes); with ``cap_clusters``
        lowered to ``floor(n / min_size)`` (``n_clusters_init_`` holds the number used). Labels with more
        categories than ``n_clusters`` warn (``UserWarning``): each category needs a cluster, see ``init``.
    beta : float >= 0 or "auto", default="auto"
        Weight of the label term; 0 gives plain CEC. ``"auto"`` is 1 (Theorem 4.1: for a proportional
        coarsening of the labels any beta >= 1 makes splitting along the labels no worse than merging;
        see docs/decisions/ for the evidence). With labels known to be noisy pass a smaller beta, e.g.
        :data:`ppclust.inference.cecib.BETA0_HALF_NORMAL` or :func:`ppclust.inference.cecib.beta0`.
    label_noise : float in [0, 1) or "auto", default=0.0
        Rate :math:`\varepsilon` at which a given label is wrong (uniform over the other categories). The
        label term's weight becomes ``beta * label_channel_information(eps, m)``
        (:func:`ppclust.inference.cecib.label_channel_information`). ``"auto"``: the rate read off a
        plain-CEC fit from the chosen start (:func:`ppclust.models.ssgmm.partition_flip_rate`). Default 0, the
        paper's :math:`E_\beta`.
    min_cluster_fraction : float in [0, 1), default=0.05
        A cluster with fewer than ``min_size = max(min_cluster_fraction * n, d + 2)`` points is deleted
        (the rule of the authors' program).
    cap_clusters : bool, default=True
        Start from at most ``floor(n / min_size)`` clusters
        (:func:`ppclust.inference.hartigan.max_start_clusters`): a start with more has an average cluster
        below the size the model needs. ``False``: the paper's behaviour. With ``init="labels"`` the start
        still has at least one cluster per label category.
    n_init : int, default=10
        Restarts; the lowest final cost wins.
    random_state : None, int, numpy Generator or JAX key, default=None
        Seed of the starts.
    init : {"auto", "labels", "k-means++", "random"}, default="auto"
        ``"k-means++"``: k-means++ seeds and the nearest-seed partition (the authors' program);
        ``"random"``: a uniform random partition (the paper's wording); ``"labels"``: one initial cluster
        per label category at the mean of its labelled points, the other seeds by k-means++ given them
        (:func:`ppclust.inference.hartigan.seeded_partitions`; ``n_clusters`` is raised to the number of
        categories if smaller, with a warning). ``"auto"``: with labels and ``beta > 0`` the start whose
        plain-CEC fit has the lower cost (:func:`ppclust.inference.cecib.choose_start`; the labels on a
        tie), else ``"k-means++"``; each candidate's plain-CEC fit runs ``max(1, n_init // 5)`` restarts
        (``CANDIDATE_RESTART_SHARE``), so the choice costs a fraction of the fit (see docs/decisions/
        for the evidence). ``init_`` holds the start used.
    reassign : {"lazy", "immediate"}, default="lazy"
        How the points of a deleted cluster are reassigned (:mod:`ppclust.inference.hartigan`); ``"lazy"``
        is the authors' program.
    max_iter : int, default=100
        Maximum number of Hartigan passes (or batch steps) over the points.
    reg_covar : float >= 0, default=0.0
        Relative covariance regulariser: ``reg_covar * tr(Sigma_X) / d`` is added to every cluster's
        scatter (:func:`ppclust.inference.hartigan.ridge`; breaks exact affine invariance). With 0 and data
        whose covariance is singular (constant, collinear or one-hot features) or fits that end singular,
        the jitter :data:`ppclust.inference.hartigan.JITTER` is used with a ``UserWarning``;
        ``reg_covar_`` holds the value used.
    algorithm : {"hartigan", "batch"}, default="hartigan"
        ``"hartigan"``: the paper's online Hartigan moves. ``"batch"``: batch steps (every point reassigned
        at once from an n x K cost matrix), then Hartigan passes from the best restart; for large n
        (:func:`ppclust.inference.hartigan.fit_batch`). ``restart_objectives_`` then holds the batch
        restarts' costs.
    devices : "auto", "all", None or int, default="auto"
        Devices the restarts may use (:mod:`ppclust.estimators._base`): with several local devices and
        ``n_init`` a multiple of their number the restarts are spread over them; ``None``/``1``: one
        device; an int ``m``: the first ``m``. Results are identical either way. With
        ``algorithm="batch"`` the points are split over the devices instead.
    progress_bar : bool, default=True
        A bar over the restarts, shown when someone can see it (``PPCLUST_PROGRESS``).

    Attributes
    ----------
    labels_ : ndarray of shape (n,)
        Cluster of every point, 0..n_clusters_-1.
    n_clusters_ : int
        Clusters found.
    objective_ : float
        The final :math:`E_\beta` (nats; smaller is better).
    objective_terms_ : dict
        ``model_complexity`` :math:`H(Y)`, ``accuracy`` :math:`\sum_i p_i H(N_i)`, ``side_information``
        :math:`\beta\sum_i p_i H(Z\mid Y_i\cap X_l)`.
    objective_trace_ : ndarray
        :math:`E_\beta` after the start and after each pass of the best restart.
    restart_objectives_ : ndarray of shape (n_init,)
        Final cost of every restart (inf where a restart failed).
    n_iter_ : int
        Passes of the best restart.
    converged_ : bool
        Whether the best restart ended with a pass without a move.
    weights_, means_, covariances_, precisions_cholesky_ : ndarray
        The clusters' ML Gaussians, (k,), (k, d), (k, d, d), (k, d, d); with a regulariser the covariance
        is :math:`(S_k + \rho I) / n_k`.
    min_cluster_size_ : float
        The deletion threshold used (``min_size``).
    reg_covar_ : float
        The relative covariance regulariser used.
    beta_ : float
        The label term's weight used.
    init_ : str
        The start used.
    n_clusters_init_ : int
        The initial number of clusters used.
    label_noise_ : float
        The flip rate used.

    Notes
    -----
    Minimises (Śmieja & Geiger 2017, eqs. 10 and 11; natural logs)

    .. math:: E_\beta(Y) = \sum_i p_i\Big[-\ln p_i + H(\mathcal N(\mu_i,\Sigma_i))
              + \beta\,H(Z\mid Y_i\cap X_l)\Big],\qquad p_i = n_i / n,

    with :math:`\Sigma_i` the ML covariance of cluster :math:`Y_i` and :math:`H(Z\mid Y_i\cap X_l)` the
    entropy of the labels of its labelled members, by the modified Hartigan algorithm of Sec. 3.4
    (:mod:`ppclust.inference.hartigan`). ``beta = 0`` or no labels give plain CEC (eq. 2); complete
    labels give eq. (4).

    References
    ----------
    M. Śmieja and B. C. Geiger, "Semi-supervised cross-entropy clustering with information bottleneck
    constraint", Information Sciences 421 (2017).

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust import CECIB
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(size=(30, 2)), rng.normal(size=(30, 2)) + 6.0])
    >>> y = np.full(60, -1)
    >>> y[[0, 1, 30, 31]] = [0, 0, 1, 1]
    >>> model = CECIB(n_clusters=2, n_init=2, random_state=0, progress_bar=False).fit(X, y)
    >>> model.n_clusters_, isinstance(model.objective_, float)
    (2, True)
    """

    _parameter_constraints: dict = {
        "n_clusters": POSITIVE_INT,
        "beta": [StrOptions({"auto"}), *NONNEG_REAL],
        "label_noise": [StrOptions({"auto"}), Interval(Real, 0, 1, closed="left")],
        "min_cluster_fraction": [Interval(Real, 0, 1, closed="left")],
        "cap_clusters": ["boolean"],
        "n_init": POSITIVE_INT,
        "random_state": RANDOM_STATE,
        "init": [StrOptions({"auto", "labels", "k-means++", "random"})],
        "reassign": [StrOptions({"lazy", "immediate"})],
        "max_iter": POSITIVE_INT,
        "reg_covar": NONNEG_REAL,
        "algorithm": [StrOptions({"hartigan", "batch"})],
        "devices": DEVICES,
        "progress_bar": ["boolean"],
    }

    def __init__(
        self,
        n_clusters=10,
        *,
        beta="auto",
        label_noise=0.0,
        min_cluster_fraction=0.05,
        cap_clusters=True,
        n_init=10,
        random_state=None,
        init="auto",
        reassign="lazy",
        max_iter=100,
        reg_covar=0.0,
        algorithm="hartigan",
        devices="auto",
        progress_bar=True,
    ):
        self.n_clusters = n_clusters
        self.beta = beta
        self.label_noise = label_noise
        self.min_cluster_fraction = min_cluster_fraction
        self.cap_clusters = cap_clusters
        self.n_init = n_init
        self.random_state = random_state
        self.init = init
        self.reassign = reassign
        self.max_iter = max_iter
        self.reg_covar = reg_covar
        self.algorithm = algorithm
        self.devices = devices
        self.progress_bar = progress_bar

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, partial_labels=None):
        """Fit CEC-IB on X.

        Parameters
        ----------
        X : array-like of shape (n, d)
            The points; n >= d + 2.
        y : array-like of shape (n,), default=None
            Partial labels (any ints, -1 = unlabelled), or None for plain CEC.
        partial_labels : array-like of shape (n,), default=None
            When given, the labels used instead of ``y`` (``y`` is then only a scoring target).

        Returns
        -------
        self : CECIB
        """
        if _devices.is_process_rows(X):
            return self._fit_process_rows(X, side_labels(y, partial_labels))
        X = validate_X(self, X, reset=True)
        n, d = X.shape
        if n < d + 2:
            raise PPClustError(
                f"CECIB needs at least d + 2 = {d + 2} points for a full covariance, got n_samples = {n}."
            )
        y = check_partial_labels(side_labels(y, partial_labels), n)
        yc, m = _cecib.encode_labels(y, n)
        beta, min_size, n_clusters = self._sizes(n, d, m)
        warn_degenerate_data("CECIB", X, n_clusters)

        devices = restart_devices(self.devices, "CECIB")

        # a candidate start's fewer restarts may not split over the devices: "auto" (one device then)
        def fit_once(beta, init, n_init, reg_covar):
            kw = dict(
                n_clusters=n_clusters,
                beta=beta,
                min_cluster_fraction=float(self.min_cluster_fraction),
                n_init=n_init,
                init=init,
                max_passes=int(self.max_iter),
                reassign=self.reassign,
                reg_covar=reg_covar,
            )
            with x64():
                if self.algorithm == "batch":
                    best, costs, _, _ = _cecib.fit_batch(
                        as_key(self.random_state), _dev(X), yc, m, **kw, mesh=data_mesh(self.devices)
                    )
                else:
                    best, costs, _, _ = _cecib.fit(
                        as_key(self.random_state),
                        _dev(X),
                        yc,
                        m,
                        **kw,
                        devices=devices if n_init == int(self.n_init) or devices in (None, 1) else "auto",
                    )
            return best, costs

        best, costs, reg, (init, beta, flip), self.labels_, n_live = self._solve_and_relabel(
            fit_once, lambda: _hartigan.singular_data(X), yc, m, beta
        )
        self.n_clusters_ = n_live
        rho = _hartigan.ridge(X, reg)
        # with max(n_clusters, found) slots: the number of clusters found does not change the compiled program
        with x64():
            g = _cecib.cluster_gaussians(X, self.labels_, rho, max(int(self.n_clusters), self.n_clusters_))
            self.weights_, self.means_, self.covariances_, self.precisions_cholesky_ = (
                np.asarray(v)[: self.n_clusters_] for v in g
            )
        self._set_fit_summary(best, costs, min_size, reg, beta, init, flip, n_clusters, m)
        parts = _cecib.cecib_cost(X, self.labels_, y, beta, ridge=rho)
        self.objective_terms_ = {
            "model_complexity": float(parts.model_complexity),
            "accuracy": float(parts.accuracy),
            "side_information": float(parts.side_information),
        }
        return self

    def _fit_process_rows(self, X, y):
        """``fit`` on rows spread over processes (:mod:`ppclust.distributed`): ``algorithm="batch"``, the
        solver :func:`ppclust.inference.cecib.fit_batch_rows`; every statistic reduced over processes."""
        if self.algorithm != "batch":
            raise InvalidInputError(
                "`X` holds rows spread over processes (ppclust.distributed.process_rows); CECIB's Hartigan "
                "moves visit the points one after the other: use algorithm='batch'. Methods that scale out "
                f"over processes: {SCALE_OUT}."
            )
        if self.label_noise == "auto":
            raise InvalidParameterError(
                "label_noise='auto' is not available with rows spread over processes; pass a rate.",
                parameter="label_noise",
            )
        x_loc, lay, mean, var = check_global_X(self, X)
        n, d = lay.n, x_loc.shape[1]
        if n < d + 2:
            raise PPClustError(
                f"CECIB needs at least d + 2 = {d + 2} points for a full covariance, got n_samples = {n}."
            )
        if X.dtype != np.float64:  # e.g. integer rows: the solver sums in float64
            X = _devices.from_process_rows(x_loc, lay)
        yc, m = _process_codes(y, lay, len(x_loc))
        beta, min_size, n_clusters = self._sizes(n, d, m)
        side = _devices.from_process_rows(yc, lay, -1)
        centres = None
        if m > 0:  # the labelled categories' means over all rows (init="labels")
            lab = yc >= 0
            sums = np.zeros((m, d))
            np.add.at(sums, yc[lab], x_loc[lab])
            counts = _devices.process_sum(np.bincount(yc[lab], minlength=m).astype(float))
            centres = _devices.process_sum(sums) / counts[:, None]
        xc = x_loc - mean
        cov = _devices.process_sum(xc.T @ xc) / n
        ev = np.linalg.eigvalsh(cov)
        from ppclust.families import ML_SING_TOL

        singular = n <= d or bool(ev[0] <= ML_SING_TOL * ev[-1])

        def fit_once(beta, init, n_init, reg_covar):
            with x64():
                best, costs, _, _ = _cecib.fit_batch_rows(
                    as_key(self.random_state),
                    X,
                    side,
                    m,
                    lay,
                    n_clusters=n_clusters,
                    beta=beta,
                    min_cluster_fraction=float(self.min_cluster_fraction),
                    ridge=float(reg_covar) * var if reg_covar > 0 else 0.0,
                    centres=centres if init == "labels" else None,
                    n_init=n_init,
                    init=init,
                    max_passes=int(self.max_iter),
                    reassign=self.reassign,
                )
            return best, costs

        best, costs, reg, (init, beta, flip), mine, n_live = self._solve_and_relabel(
            fit_once, lambda: singular, yc, m, beta
        )
        self.labels_ = _devices.from_process_rows(mine, lay)
        self.n_clusters_ = n_live
        rho = float(reg) * var if reg > 0 else 0.0
        k = max(int(self.n_clusters), self.n_clusters_)
        with x64():
            g = _cecib.cluster_gaussians(x_loc, mine, rho, k, reduce=_devices.process_sum)
            self.weights_, self.means_, self.covariances_, self.precisions_cholesky_ = (
                np.asarray(v)[: self.n_clusters_] for v in g
            )
        self._set_fit_summary(best, costs, min_size, reg, beta, init, flip, n_clusters, m)
        parts = _cecib.cecib_cost_rows(x_loc, mine, yc, m, self.n_clusters_, beta, rho, _devices.process_sum)
        self.objective_terms_ = {
            "model_complexity": float(parts.model_complexity),
            "accuracy": float(parts.accuracy),
            "side_information": float(parts.side_information),
        }
        return self

    def _sizes(self, n: int, d: int, m: int):
        """``(beta, min_size, n_clusters)`` of a fit on ``n`` points in ``d`` dimensions with ``m`` label
        categories (``init="labels"`` needs ``m > 0``)."""
        beta = 1.0 if self.beta == "auto" else float(self.beta)
        if self.init == "labels" and m == 0:
            raise InvalidParameterError(
                "The 'init' parameter 'labels' needs partial labels (y or "
                "partial_labels) with at least one labelled point.",
                parameter="init",
            )
        min_size = _cecib.min_size(n, d, float(self.min_cluster_fraction))
        n_clusters = int(self.n_clusters)
        if self.cap_clusters:
            n_clusters = _hartigan.max_start_clusters(n_clusters, n, min_size)
        return beta, min_size, n_clusters

    def _solve_and_relabel(self, fit_once, singular, yc, m: int, beta: float):
        """The restarts of both ``fit`` paths: the start (``init="auto"``: the candidate starts' fits run a
        share of the restarts), then ``n_init`` restarts from it, each regularised only where the data need
        it (:func:`ppclust.estimators._base.refit_if_singular`); ``fit_once(beta, init, n_init, reg_covar)
        -> (best, costs)`` runs one set of restarts and ``singular()`` says whether the data's covariance
        is singular. Returns ``(best, costs, reg, (init, beta, flip), labels, n_live)``: ``labels`` of
        ``best.labels``' rows numbered over the live slots in slot order, ``n_live`` of them."""

        def solve(beta, init, n_init=int(self.n_init)):
            with _progress.bar(n_init, "CECIB restarts", "restart", bool(self.progress_bar)) as bar:

                def run(reg_covar):
                    best, costs = fit_once(beta, init, n_init, reg_covar)
                    return float(best.cost), (best, np.asarray(costs))

                reg = float(self.reg_covar)
                (best, costs), reg = refit_if_singular(
                    "CECIB",
                    run,
                    reg=reg,
                    singular=reg == 0 and singular(),
                    advice="increase reg_covar, decrease n_clusters or increase min_cluster_fraction",
                )
                bar.update(n_init)
            return best, costs, reg

        n_pre = (
            max(1, int(self.n_init) // CANDIDATE_RESTART_SHARE) if self.init == "auto" else int(self.n_init)
        )
        init, beta, flip = _cecib.choose_start(
            lambda b, i: solve(b, i, n_pre)[0], self.init, yc, m, beta, self.label_noise
        )
        _warn_more_categories(m, int(self.n_clusters), init, beta)
        best, costs, reg = solve(beta, init)
        active = np.asarray(best.active)
        live = np.flatnonzero(active)
        remap = -np.ones(len(active), int)
        remap[live] = np.arange(len(live))
        labels = remap[np.asarray(best.labels)].astype(np.int64)
        if (labels < 0).any():  # the engines reassign every point; a -1 here would be a bug
            raise RuntimeError("CECIB: internal error, a point was left without a cluster")
        return best, costs, reg, (init, beta, flip), labels, len(live)

    def _set_fit_summary(self, best, costs, min_size, reg, beta, init, flip, n_clusters, m):
        self.objective_ = float(best.cost)
        tr = np.asarray(best.trace)
        self.objective_trace_ = tr[np.isfinite(tr)]
        self.restart_objectives_ = costs
        self.n_iter_ = int(best.n_passes)
        self.converged_ = bool(best.converged)
        self.min_cluster_size_ = float(min_size)
        self.reg_covar_ = reg
        self.beta_ = beta
        self.init_ = init
        self.n_clusters_init_ = max(n_clusters, m) if init == "labels" else n_clusters
        self.label_noise_ = flip

    def predict(self, X):
        """The CEC rule: the cluster of largest :math:`\\ln p_k + \\ln N(x; \\mu_k, \\Sigma_k)`.

        Parameters
        ----------
        X : array-like of shape (m, d)

        Returns
        -------
        labels : ndarray of shape (m,)
        """
        check_is_fitted(self, "means_")
        X = validate_X(self, X, reset=False)
        with x64():
            score = _cecib.log_weighted_densities(X, self.weights_, self.means_, self.precisions_cholesky_)
        return np.argmax(score, 1).astype(np.int64)


def _warn_more_categories(m: int, n_clusters: int, init: str, beta: float) -> None:
    """Warn when the labels have more categories ``m`` than the ``n_clusters`` asked for: each category
    needs a cluster of its own, so the label-seeded start raises the number of clusters to ``m``, and any
    other start makes categories share clusters."""
    if m <= n_clusters or (beta == 0 and init != "labels"):
        return
    fix = (
        f"Set n_clusters >= {m} (the paper starts from twice the number of categories, {2 * m}) or merge "
        "label categories."
    )
    if init == "labels":
        what = (
            f"the start has one cluster per category (init='labels'), so n_clusters was raised to {m} "
            "(n_clusters_init_)."
        )
    else:
        what = (
            f"the fit starts from {n_clusters} clusters (init={init!r}), so at least two categories share "
            "a cluster and the label term cannot vanish."
        )
    warnings.warn(
        f"CECIB: `y` has {m} label categories but n_clusters={n_clusters}: {what} {fix}",
        UserWarning,
        skip_file_prefixes=OUTSIDE_CALLER,
    )


def _process_codes(y, lay, n_local: int):
    """This process's label codes (int32, -1 unlabelled) with categories shared by every process, and m."""
    if y is None:
        return np.full(n_local, -1, np.int32), 0
    y_loc = check_partial_labels(_devices.local_rows(y), n_local)
    top = int(_devices.process_gather(-1 if not len(y_loc) else y_loc.max()).max())
    seen = np.bincount(y_loc[y_loc >= 0], minlength=top + 1) > 0
    cats = np.flatnonzero(_devices.process_sum(seen.astype(np.int64)))
    codes = np.full(n_local, -1, np.int32)
    lab = y_loc >= 0
    codes[lab] = np.searchsorted(cats, y_loc[lab])
    return codes, len(cats)


_dev = jax.device_put  # a host array onto the device without a program compiled per shape
