"""scikit-learn estimator for CEC-IB (Śmieja & Geiger 2017): clustering with partial, coarse, noisy labels."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.validation import check_is_fitted

from ppclust._jax import as_key, x64
from ppclust.estimators._base import (
    DEVICES,
    NONNEG_REAL,
    POSITIVE_INT,
    RANDOM_STATE,
    Interval,
    Real,
    StrOptions,
    check_partial_labels,
    deprecated_name,
    fit_context,
    renamed_param,
    restart_devices,
    side_labels,
    validate_X,
)
from ppclust.inference import cecib as _cecib

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
        Initial number of clusters (the paper uses twice the number of classes).
    beta : float, default=1.0
        Weight of the label term; 0 gives plain CEC. ``ppclust.inference.cecib.BETA0_HALF_NORMAL``
        (0.2698) is the paper's robust choice for noisy labels; see also ``beta0``.
    eps : float, default=0.05
        Clusters with fewer than ``eps * n`` (or ``d + 2``) points are deleted.
    n_init : int, default=10
        Restarts (vmapped); the lowest final cost wins.
    random_state : None, int, Generator or JAX key
    init : {"kmeans++", "random"}, default="kmeans++"
        k-means++ seeds + nearest-seed partition (authors' code) or a uniform random partition (paper).
    reassign : {"lazy", "immediate"}, default="lazy"
        How points of a deleted cluster are reassigned (see ``ppclust.inference.hartigan``).
    max_iter : int, default=100
        Maximum number of Hartigan passes over the points (was ``max_passes``, deprecated).
    reg : float, default=0.0
        Optional ridge ``reg * tr(Sigma_X)/d`` added to every cluster's scatter (off by default;
        breaks exact affine invariance).
    devices : "auto" (default), "all", None or int
        The devices the fit may use (one meaning for every estimator, :mod:`ppclust.estimators._base`);
        here the restarts run on them: with several local devices and ``n_init`` a multiple of their
        number, ``"auto"``/``"all"`` spread the restarts over them; ``None``/``1``: one device; an int
        ``m``: the first ``m`` local devices. Results are identical either way.

    Attributes
    ----------
    labels_ : (n,) int, consecutive cluster ids 0..n_clusters_-1.
    n_clusters_ : int.  cost_ : float, the final E_beta.
    cost_parts_ : dict with ``model_complexity`` (H(Y)), ``accuracy`` (sum p_i H(N_i)) and
        ``side_information`` (beta * sum p_i H(Z|Y_i)); also as scalars ``cost_model_complexity_``,
        ``cost_accuracy_``, ``cost_side_information_``.
    weights_ : (k,), means_ : (k, d), covariances_ : (k, d, d) MLE parameters of the clusters.
    n_iter_ : passes of the best restart.  converged_ : bool.  restart_costs_ : (n_init,).
    """

    _parameter_constraints: dict = {
        "n_clusters": POSITIVE_INT,
        "beta": NONNEG_REAL,
        "eps": [Interval(Real, 0, 1, closed="left")],
        "n_init": POSITIVE_INT,
        "random_state": RANDOM_STATE,
        "init": [StrOptions({"kmeans++", "random"})],
        "reassign": [StrOptions({"lazy", "immediate"})],
        "max_iter": POSITIVE_INT,
        "reg": NONNEG_REAL,
        "devices": DEVICES,
        "max_passes": deprecated_name(POSITIVE_INT),
    }

    def __init__(self, n_clusters=10, *, beta=1.0, eps=0.05, n_init=10, random_state=None, init="kmeans++",
                 reassign="lazy", max_iter=100, reg=0.0, devices="auto", max_passes="deprecated"):
        self.n_clusters = n_clusters
        self.beta = beta
        self.eps = eps
        self.n_init = n_init
        self.random_state = random_state
        self.init = init
        self.reassign = reassign
        self.max_iter = max_iter
        self.reg = reg
        self.devices = devices
        self.max_passes = max_passes

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, partial_labels=None):
        """Minimise the CEC-IB cost (Śmieja & Geiger, eq. 10; per cluster eq. 11) by Hartigan moves.

        ``y``: partial labels (-1 = unlabelled; ``partial_labels``, when given, replaces ``y``, which is
        then only a scoring target); categories may be coarser than clusters. Runs
        ``n_init`` vmapped restarts from k-means++ seeds and keeps the lowest cost."""
        max_iter = renamed_param(self, "max_iter", "max_passes")
        X = validate_X(self, X, reset=True)
        n, d = X.shape
        if n < d + 2:
            raise ValueError(f"CECIB needs at least d + 2 = {d + 2} points for a full covariance, "
                             f"got n_samples = {n}.")
        y = check_partial_labels(side_labels(y, partial_labels), n)
        yc, m = _cecib.encode_labels(y, n)
        import jax.numpy as jnp

        with x64():
            best, costs, _, _ = _cecib.fit(as_key(self.random_state), jnp.asarray(X), yc, m,
                                           n_clusters=int(self.n_clusters), beta=float(self.beta),
                                           eps=float(self.eps), n_init=int(self.n_init), init=self.init,
                                           max_passes=int(max_iter), reassign=self.reassign,
                                           reg=float(self.reg),
                                           devices=restart_devices(self.devices, "CECIB"))
            labels = np.asarray(best.labels)
            active = np.asarray(best.active)
            total = float(best.cost)
            self.n_iter_ = int(best.n_passes)
            self.converged_ = bool(best.converged)
            self.restart_costs_ = np.asarray(costs)
        if not np.isfinite(total):
            raise ValueError("CECIB: every restart ended with a singular cluster; decrease n_clusters, "
                             "increase eps, or set reg > 0")
        orphan = ~active[labels]
        if orphan.any():  # only when max_iter stopped a run right after a deletion
            labels = labels.copy()
            labels[orphan] = -1
        live = np.flatnonzero(active)
        remap = -np.ones(len(active), int)
        remap[live] = np.arange(len(live))
        self.labels_ = np.where(labels >= 0, remap[np.maximum(labels, 0)], -1).astype(np.int64)
        self.n_clusters_ = len(live)
        self.weights_ = np.array([(self.labels_ == k).sum() / n for k in range(self.n_clusters_)])
        self.means_ = np.stack([X[self.labels_ == k].mean(0) for k in range(self.n_clusters_)])
        self.covariances_ = np.stack([np.atleast_2d(np.cov(X[self.labels_ == k].T, bias=True))
                                      for k in range(self.n_clusters_)])
        if self.reg > 0:
            ridge = float(self.reg) * np.trace(np.atleast_2d(np.cov(X.T, bias=True))) / d
            self.covariances_ = self.covariances_ + ridge / (self.weights_ * n)[:, None, None] * np.eye(d)
        self.cost_ = total
        parts = _cecib.cecib_cost(X, self.labels_, y if y is not None else None, float(self.beta))
        self.cost_parts_ = {"model_complexity": float(parts.model_complexity),
                            "accuracy": float(parts.accuracy),
                            "side_information": float(parts.side_information)}
        self.cost_model_complexity_ = self.cost_parts_["model_complexity"]
        self.cost_accuracy_ = self.cost_parts_["accuracy"]
        self.cost_side_information_ = self.cost_parts_["side_information"]
        return self

    def fit_predict(self, X, y=None, **kw):
        """Fit and return ``labels_``."""
        return self.fit(X, y, **kw).labels_

    def predict(self, X):
        """CEC rule: argmax_i ln p_i + ln N(x; mu_i, Sigma_i)."""
        check_is_fitted(self, "means_")
        X = validate_X(self, X, reset=False)
        score = np.empty((X.shape[0], self.n_clusters_))
        for k in range(self.n_clusters_):
            L = np.linalg.cholesky(self.covariances_[k])
            r = np.linalg.solve(L, (X - self.means_[k]).T)
            score[:, k] = (np.log(self.weights_[k]) - np.log(np.diag(L)).sum() - 0.5 * (r * r).sum(0))
        return np.argmax(score, 1).astype(np.int64)
