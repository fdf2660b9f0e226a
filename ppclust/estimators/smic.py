"""scikit-learn estimator for SMIC / 3SMIC (Calandriello, Niu & Sugiyama 2014)."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin

from ppclust.inference import smic as _smic

__all__ = ["SMIC"]


class SMIC(ClusterMixin, BaseEstimator):
    """Squared-loss mutual information clustering, semi-supervised by must/cannot links (3SMIC).

    Parameters
    ----------
    n_clusters : int
        Number of clusters c (known, as in the paper).
    n_neighbors : int or "auto"
        Kernel neighbourhood size t. ``"auto"`` searches t in 1..10 (LSMI without links, eq. (9)
        with links).
    gamma, eta : float or "auto"
        Must-link and cannot-link weights of 3SMIC (eq. 8). ``"auto"`` searches
        {0, 0.1, 0.3, 1, 3, 10}; ``eta`` is forced to 0 when ``n_clusters > 2`` (paper).
    random_state : None, int or Generator
        Seeds LSMI's centres and folds (the only randomness).
    assign : {"model", "eigvec"}
        3SMIC post-processing (spec A1): clip the model output K' phi (default) or phi itself.
    dense_max : int
        Largest n solved with a dense JAX eigendecomposition; above it a matrix-free Lanczos solver.

    Attributes
    ----------
    labels_, n_clusters_ (non-empty clusters), smi_ (LSMI of the chosen labelling), selection_
    (list of dicts t/gamma/eta/lsmi/violations/score, one per grid point), n_neighbors_, gamma_,
    eta_, eigenvalues_.
    """

    def __init__(self, n_clusters=2, n_neighbors="auto", gamma="auto", eta="auto", random_state=None,
                 assign="model", dense_max=_smic.DENSE_MAX):
        self.n_clusters = n_clusters
        self.n_neighbors = n_neighbors
        self.gamma = gamma
        self.eta = eta
        self.random_state = random_state
        self.assign = assign
        self.dense_max = dense_max

    def fit(self, X, y=None, *, must_link=None, cannot_link=None):
        X = _check_X(X)
        n = X.shape[0]
        c = int(self.n_clusters)
        if c < 1 or c > n:
            raise ValueError(f"n_clusters must be in [1, n={n}], got {self.n_clusters}")
        must = _smic._as_pairs(must_link, n, "must_link")
        cannot = _smic._as_pairs(cannot_link, n, "cannot_link")
        if y is not None:
            y = _check_partial_labels(y, n)
            m2, c2 = _smic.labels_to_links(y)
            must = np.concatenate([must, m2]) if must.size else m2
            cannot = np.concatenate([cannot, c2]) if cannot.size else c2
        links = _smic.make_links(n, must, cannot)
        ts = _smic.DEFAULT_TS if self.n_neighbors == "auto" else (int(self.n_neighbors),)
        gammas = _smic.DEFAULT_GAMMAS if _is_auto(self.gamma) else (float(self.gamma),)
        etas = _smic.DEFAULT_ETAS if _is_auto(self.eta) else (float(self.eta),)
        seed = _seed(self.random_state)
        sel = _smic.select(X, c, links, ts=ts, gammas=gammas, etas=etas, seed=seed, assign=self.assign,
                           dense_max=int(self.dense_max))
        row = sel.rows[sel.best]
        self.X_fit_ = X
        self.links_ = links
        self.kernel_ = sel.kernel
        self.Kp_ = sel.Kp
        self.result_ = sel.fit
        self.labels_ = sel.fit.labels
        self.n_clusters_ = sel.fit.n_nonempty
        self.smi_ = float(row["lsmi"])
        self.selection_ = sel.rows
        self.n_neighbors_ = int(row["t"])
        self.gamma_ = float(row["gamma"])
        self.eta_ = float(row["eta"])
        self.n_violations_ = int(row["violations"])
        self.eigenvalues_ = sel.fit.eigenvalues
        return self

    def _scores(self, X):
        X = _check_X(X)
        if X.shape[1] != self.X_fit_.shape[1]:
            raise ValueError(f"X has {X.shape[1]} features, the model was fitted with {self.X_fit_.shape[1]}")
        rows = _smic.kernel_rows(self.kernel_, self.X_fit_, X)
        return _smic.predict_scores(rows, self.result_.phi, self.result_.norms, self.X_fit_.shape[0])

    def decision_function(self, X):
        """The paper's out-of-sample soft output (n/c) max(0, k(x') phi_y) / 1^T max(0, K' phi_y).

        Its mean over the training points is 1/c per cluster; rows need not sum to 1.
        """
        return self._scores(X)[0]

    def predict(self, X):
        """Out-of-sample labels, eq. (7) with the general normaliser (spec E6)."""
        p, raw = self._scores(X)
        labels = np.argmax(p, axis=1)
        zero = ~(p > 0).any(axis=1)
        labels[zero] = np.argmax(raw[zero], axis=1)
        return labels.astype(np.int32)

    def predict_proba(self, X):
        """Row-renormalised ``decision_function`` (not in the paper); uniform for all-zero rows."""
        p = self._scores(X)[0]
        s = p.sum(1, keepdims=True)
        c = p.shape[1]
        return np.where(s > 0, p / np.where(s > 0, s, 1.0), 1.0 / c)


# --- helpers (private validators until ppclust.estimators._base / SideInfo land) ---


def _is_auto(v):
    return isinstance(v, str) and v == "auto"


def _seed(random_state):
    if random_state is None:
        return int(np.random.default_rng().integers(0, 2**31 - 1))
    if isinstance(random_state, (int, np.integer)):
        return int(random_state)
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**31 - 1))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2**31 - 1))
    raise TypeError("random_state must be None, an int or a numpy Generator")


def _check_X(X):
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array (n_samples, n_features), got {X.ndim}-D")
    if X.shape[0] < 2:
        raise ValueError("X must contain at least 2 samples")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or infinite values")
    return X


def _check_partial_labels(y, n):
    y = np.asarray(y)
    if y.shape != (n,):
        raise ValueError(f"y must have shape ({n},), got {y.shape}")
    if not np.issubdtype(y.dtype, np.integer):
        if not np.all(np.equal(np.mod(y, 1), 0)):
            raise ValueError("y must contain integer labels (-1 = unlabelled)")
        y = y.astype(np.int64)
    if np.any(y < -1):
        raise ValueError("y labels must be >= -1 (-1 = unlabelled)")
    return y
