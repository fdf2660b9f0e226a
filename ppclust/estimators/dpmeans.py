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
from ppclust.inference import dpmeans as _dp

__all__ = ["DPMeans", "RDPMeans"]

_DIVERGENCES = ("sqeuclidean", "euclidean", "kl")


def _check_X(X, name="X"):
    # private fallback for ppclust.estimators._base.check_X (owner: helper "data")
    try:
        X = np.array(X, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as err:
        raise ValueError(f"`{name}` must be a numeric 2-D array: {err}") from err
    if X.ndim != 2:
        raise ValueError(f"`{name}` must be 2-D (n_samples, n_features), got shape {X.shape}")
    if X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"`{name}` must have at least one sample and one feature, got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"`{name}` contains NaN or infinity; remove or impute those values")
    return X


def _check_pairs(p, n, name):
    if p is None:
        return np.zeros((0, 2), np.int64)
    p = np.asarray(p)
    if p.size == 0:
        return np.zeros((0, 2), np.int64)
    if p.ndim != 2 or p.shape[1] != 2 or not np.issubdtype(p.dtype, np.integer):
        raise ValueError(f"`{name}` must be an integer array of shape (n_pairs, 2), got {p.dtype} {p.shape}")
    if p.min() < 0 or p.max() >= n:
        bad = p[(p < 0).any(1) | (p >= n).any(1)][0]
        raise ValueError(f"`{name}` has an index outside [0, n_samples={n}) (first: {tuple(bad)})")
    if (p[:, 0] == p[:, 1]).any():
        raise ValueError(f"`{name}` contains a self-pair (i, i) (first: {tuple(p[p[:, 0] == p[:, 1]][0])})")
    return np.sort(p.astype(np.int64), axis=1)


def _side_table(n, y, must_link, cannot_link):
    """Neighbour table from links and/or partial labels (labels -> all pairs among labelled points)."""
    ml = _check_pairs(must_link, n, "must_link")
    cl = _check_pairs(cannot_link, n, "cannot_link")
    pairs = [ml, cl]
    signs = [np.ones(len(ml)), -np.ones(len(cl))]
    if y is not None:
        y = np.asarray(y)
        if y.shape != (n,) or not np.issubdtype(y.dtype, np.integer):
            raise ValueError(f"`y` must be an integer array of shape ({n},) with -1 = unlabelled")
        idx = np.flatnonzero(y >= 0)
        i, j = np.triu_indices(len(idx), 1)
        pairs.append(np.stack([idx[i], idx[j]], 1))
        signs.append(np.where(y[idx[i]] == y[idx[j]], 1.0, -1.0))
    pairs = np.concatenate(pairs).astype(np.int64)
    signs = np.concatenate(signs)
    if len(pairs) == 0:
        return None
    key = pairs[:, 0] * n + pairs[:, 1]
    uniq, first = np.unique(key, return_index=True)
    if len(uniq) < len(key):
        for k in uniq:
            s = signs[key == k]
            if (s != s[0]).any():
                i, j = divmod(int(k), n)
                raise ValueError(f"pair ({i}, {j}) is given both as a must-link and a cannot-link")
    return _dp.neighbour_table(n, pairs[first], signs[first])


class _Base(ClusterMixin, BaseEstimator):
    _with_links = False

    def _lambda(self, X):
        if self.lam is not None:
            if not self.lam > 0:
                raise ValueError(f"`lam` must be > 0, got {self.lam}")
            return float(self.lam)
        return _dp.lambda_from_k(X, int(self.lam_k), self.lam_method, self.divergence)

    def _prepare(self, X):
        X = _check_X(X)
        if self.divergence not in _DIVERGENCES:
            raise ValueError(f"`divergence` must be one of {_DIVERGENCES}, got {self.divergence!r}")
        if self.divergence == "kl":
            if (X < 0).any():
                raise ValueError("`X` must be non-negative counts for divergence='kl'")
            X = X + self.smoothing
            X = X / X.sum(axis=1, keepdims=True)
        return X

    def _run(self, X, table, xi0):
        n = X.shape[0]
        lam = self._lambda(X)
        kw = dict(xi0=xi0, xi_rate=getattr(self, "xi_rate", 1.0), xi_ratio=getattr(self, "xi_ratio", 1.0),
                  xi_max=getattr(self, "xi_max", 1e12), k_max=min(int(self.k_max), n), max_iter=self.max_iter,
                  divergence=self.divergence, tie=self.tie, compat=self.compat, variant=self.variant,
                  order=self.order, init=self.init, patience=self.patience)
        with x64():
            res = _dp.fit_restarts(as_key(self.random_state), X, table, lam, int(self.n_init), **kw)
            res = type(res)(*[np.asarray(a) for a in res])
        if res.overflow.any():
            raise ValueError(f"k_max={self.k_max} cluster slots were exhausted (lam={lam:g} is too small "
                             "for this data); increase `k_max` or `lam`")
        if not np.all(np.isfinite(res.objective)):
            raise FloatingPointError("non-finite objective; check the data (and xi_max)")
        best = int(np.argmin(res.objective))
        k = int(res.n_clusters[best])
        self.lam_ = lam
        self.labels_ = res.labels[best].astype(np.int64)
        self.cluster_centers_ = res.centers[best][:k].copy()
        self.n_clusters_ = k
        self.objective_ = float(res.objective[best])
        self.n_iter_ = int(res.n_iter[best])
        self.converged_ = bool(res.converged[best])
        n_it = self.n_iter_
        self.objective_trace_ = res.objective_trace[best][:n_it].copy()
        self.xi_trace_ = res.xi_trace[best][:n_it].copy()
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X):
        """Nearest centre under the divergence (links play no part for new points)."""
        check_is_fitted(self, "cluster_centers_")
        X = self._prepare(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"`X` has {X.shape[1]} features, the estimator was fitted with "
                             f"{self.n_features_in_}")
        with x64():
            D = np.asarray(_dp.divergence_matrix(X, self.cluster_centers_, self.divergence))
        return np.argmin(D, axis=1).astype(np.int64)

    def fit_predict(self, X, y=None, **kw):
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

    Attributes
    ----------
    labels_, n_clusters_, cluster_centers_, objective_, n_iter_, converged_, lam_, objective_trace_,
    xi_trace_, n_features_in_.
    """

    def __init__(self, lam=None, *, lam_k=3, lam_method="kth_farthest_from_mean", divergence="sqeuclidean",
                 k_max=64, n_init=1, init="bbox_random", order="random", tie="first", variant="sequential",
                 compat=False, patience=1, max_iter=100, smoothing=0.3, random_state=None):
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

    def fit(self, X, y=None, *, must_link=None, cannot_link=None):
        """Fit on X; side information is ignored by DP-means (accepted for a uniform CLI)."""
        X = self._prepare(X)
        return self._run(X, None, 0.0)


class RDPMeans(_Base):
    """RDP-means (Khashabi et al. 2015, Algorithm 1): DP-means with annealed link rewards/penalties.

    Cost of putting point i in cluster k: ``D(x_i, mu_k) - xi1 f_k^i + xi2 s_k^i``, new cluster at
    cost ``lam``; ``xi1 = xi0 * xi_rate**t`` (sweep t >= 1; sweep 0 uses 0, as the authors' code),
    capped at ``xi_max``; ``xi2 = xi_ratio * xi1``. Links come from ``must_link`` / ``cannot_link``
    and from partial labels ``y`` (-1 = unlabelled; every labelled pair becomes a link).

    Parameters are those of :class:`DPMeans` plus ``xi0`` (1e-3), ``xi_rate`` (2), ``xi_ratio`` (1),
    ``xi_max`` (1e12); defaults ``patience=20``, ``max_iter=1000``.
    """

    def __init__(self, lam=None, *, xi0=1e-3, xi_rate=2.0, xi_ratio=1.0, xi_max=1e12, lam_k=3,
                 lam_method="kth_farthest_from_mean", divergence="sqeuclidean", k_max=64, n_init=1,
                 init="bbox_random", order="random", tie="first", variant="sequential", compat=False,
                 patience=20, max_iter=1000, smoothing=0.3, random_state=None):
        self.lam = lam
        self.xi0 = xi0
        self.xi_rate = xi_rate
        self.xi_ratio = xi_ratio
        self.xi_max = xi_max
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

    def fit(self, X, y=None, *, must_link=None, cannot_link=None):
        X = self._prepare(X)
        if self.xi0 < 0 or self.xi_rate <= 0 or self.xi_ratio < 0:
            raise ValueError("`xi0` and `xi_ratio` must be >= 0 and `xi_rate` > 0")
        table = _side_table(X.shape[0], y, must_link, cannot_link)
        return self._run(X, table, float(self.xi0))
