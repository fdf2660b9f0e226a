"""scikit-learn estimator for CCIB (Gondek & Hofmann 2004): clusters that avoid a known background."""

from __future__ import annotations

import warnings

import jax.numpy as jnp
import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ppclust import _progress
from ppclust._buckets import bucket_size, pad_rows, pad_vector, rowwise
from ppclust._jax import as_key, x64
from ppclust.errors import InvalidInputError, NonFiniteError, PPClustError
from ppclust.estimators._base import (
    NONNEG_INT,
    NONNEG_REAL,
    POSITIVE_INT,
    POSITIVE_REAL,
    RANDOM_STATE,
    UNIT_OPEN,
    ClusterMixin,
    StrOptions,
    check_partial_labels,
    data_variance,
    fit_context,
    side_labels,
    validate_X,
)
from ppclust.inference import ccib as _solver

__all__ = ["CCIB"]


_FEATURE_MODELS = ("auto",) + _solver.FEATURES
_BACKGROUND_TYPES = ("auto", "categorical", "continuous")
_X_WEIGHTS = ("paper", "length", "uniform")


@rowwise(static_argnames=("static",))
def _log_assignment_rows(rows, cond_mask, params, hyper, rho, static):
    """Log assignment probabilities of new objects (``rows``: the per-object fields of
    :class:`~ppclust.inference.ccib.CCIBData` and the mask of background values unseen in fit, whose
    conditional term is dropped), one program per row bucket."""
    *fields, unseen = rows
    data = _solver.CCIBData(*fields, cond_mask)
    a, b = _solver.log_likelihoods(params, data, hyper, static)
    b = jnp.where(unseen[:, None], 0.0, b)
    return _solver.log_assignment(params, a, b, rho, hyper.lam)


def _bucketed(data):
    """The objects padded to their bucket (:mod:`ppclust._buckets`), so that every n of a bucket runs one
    compiled program: padding rows have weight 0 in every sum (``w_x``, ``w_fit``) and a clamped, fixed
    assignment, so they take no part in the assignments, the convergence test or the objective. The
    perturbations are drawn per (object, cluster) entry, the same for the first n rows whatever the
    padding."""
    n = data.y.shape[0]
    size = bucket_size(n)
    rows = lambda a: pad_rows(np.asarray(a), size)[0]  # noqa: E731
    clamp_q = rows(data.clamp_q)
    clamp_q[n:, 0] = 1.0
    return _solver.CCIBData(
        y=rows(data.y),
        z=rows(data.z),
        design=rows(data.design),
        w_x=rows(data.w_x),
        w_fit=rows(data.w_fit),
        clamp=pad_vector(np.asarray(data.clamp), size, True),
        clamp_q=clamp_q,
        cond_mask=np.asarray(data.cond_mask),
    )


class CCIB(ClusterMixin, BaseEstimator):
    r"""Coordinated Conditional Information Bottleneck (Gondek & Hofmann 2004): a clustering informative
    about the features ``X`` beyond what a known background ``Z`` already explains.

    Maximises :math:`I(C;Y\mid Z)-\rho\, I(C;X)+\lambda I(C;Y)` over soft assignments
    :math:`q(c \mid x)` by deterministic annealing of the temperature :math:`\rho` (solver:
    :mod:`ppclust.inference.ccib`; spec ``ccib.md``).

    Parameters
    ----------
    n_clusters : int, default=2
        Number of clusters ``k`` (>= 1).
    lam : float, default=0.3
        :math:`\lambda`, weight of the coordination term :math:`I(C;Y)` (>= 0); 0 gives the CIB.
    feature_model : {"auto", "multinomial", "bernoulli", "gaussian", "poisson"}, default="auto"
        Model of the features. ``"auto"``: 0/1 data -> bernoulli, non-negative integers -> multinomial
        (counts, text), otherwise gaussian.
    background_type : {"auto", "categorical", "continuous"}, default="auto"
        ``"auto"``: a 1-D background (or one integer column) is categorical, a 2-D float one continuous.
    x_weight : {"paper", "length", "uniform"}, default="paper"
        Object weighting :math:`P(x)` for multinomial features (spec 5.1); ``"paper"`` is eqs. (9a)-(9c).
    rho0 : float or None, default=None
        Start temperature (> 0); None finds it by doubling from 1 (spec 6.2).
    anneal_rate : float, default=0.9
        ``b`` in :math:`\rho \leftarrow b\rho`, in (0, 1); closer to 1 anneals more slowly.
    perturb_eps : float, default=1e-2
        Symmetry-breaking perturbation of the assignments at each temperature (>= 0).
    smoothing : float, default=1e-10
        Additive smoothing of the probability tables (> 0: avoids log 0).
    variance : float, default=1.0
        Shared isotropic variance :math:`s^2` of the gaussian feature model relative to the data's
        variance, :math:`s^2 = \text{variance}\cdot\frac1D\sum_j \mathrm{Var}(X_{:j})` (stored as
        ``variance_``), so the clustering does not depend on the units of ``X`` (> 0).
    ridge : float, default=1e-2
        L2 penalty on the slopes of the per-cluster GLM (continuous background), times the cluster mass
        (>= 0).
    n_newton : int, default=3
        GLM Newton steps per M-step, warm started (>= 0).
    drop_features_in_z : bool, default=False
        With a continuous background, leave features identical to a background column out of the
        conditional term (they stay in the coordination term).
    c_max : float or None, default=None
        Stop annealing when :math:`I(C;X)` reaches this many nats (>= 0); None: anneal to hard
        assignments.
    n_init : int, default=10
        Restarts (>= 1), run one after the other; the one with the largest final objective is kept
        (``docs/decisions/0059-ccib-restarts-in-fixed-width-batches.md``).
    max_iter : int, default=300
        Most temperature (annealing) steps (>= 1).
    max_inner : int, default=500
        Most fixed-point iterations per temperature (>= 1).
    tol : float, default=1e-6
        Inner-loop tolerance on :math:`\max |q_{new} - q_{old}|` (>= 0).
    random_state : None, int, numpy Generator or JAX key, default=None
        Seeds the perturbations.
    progress_bar : bool, default=True
        A bar over the annealing restarts (advancing batch by batch), shown when someone can see it
        (Jupyter or a terminal, not ``CI``; ``PPCLUST_PROGRESS``).

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,), int64
        Hard assignments (argmax of ``responsibilities_``).
    n_clusters_ : int
        Number of non-empty clusters among ``labels_``.
    responsibilities_ : ndarray of shape (n_samples, n_clusters)
        Soft assignments :math:`q(c \mid x_i)` at the final temperature.
    objective_ : float
        Final annealed objective :math:`I(C;Y\mid Z)-\rho I(C;X)+\lambda I(C;Y)` in nats; larger is
        better.
    objective_terms_ : dict of float
        Its terms: ``i_cx``, ``i_cy_given_z``, ``i_cy`` (nats) and the final ``rho``.
    objective_trace_ : ndarray of shape (n_iter_,)
        The objective at each temperature step of the kept restart.
    annealing_trace_ : dict of ndarray
        Per temperature step: ``rho``, ``objective``, ``i_cx``, ``i_cy_given_z``, ``i_cy``, ``k_eff``,
        ``n_inner``.
    restart_labels_ : ndarray of shape (n_init, n_samples)
        Labels of every restart.
    restart_objectives_ : ndarray of shape (n_init,)
        Final objective of every restart.
    best_restart_ : int
        Index of the kept restart.
    rho0_, rho_ : float
        Start and final temperature.
    k_eff_, n_dead_ : int
        Clusters with distinct parameters, and dead clusters.
    n_iter_ : int
        Annealing steps run (<= ``max_iter``).
    variance_ : float
        The gaussian model's :math:`s^2` in X's units.
    n_features_in_ : int
        Number of features seen in ``fit``.

    Notes
    -----
    The assignment update at temperature :math:`\rho` is
    :math:`\log q_{ic}=\log\pi_c+\tfrac{\lambda}{\rho}A_{ic}+\tfrac1\rho B_{ic}-\mathrm{logsumexp}`
    (Gondek & Hofmann 2004, eq. 5), :math:`A` the coordination and :math:`B` the conditional
    log-likelihoods of object :math:`i` under cluster :math:`c`.

    References
    ----------
    Gondek, D. and Hofmann, T. (2004). Non-redundant data clustering. ICDM.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust import CCIB
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(0, 1, (15, 2)), rng.normal(5, 1, (15, 2))])
    >>> est = CCIB(2, n_init=1, max_iter=30, random_state=0, progress_bar=False).fit(X)
    >>> est.responsibilities_.shape, isinstance(est.objective_, float)
    ((30, 2), True)
    """

    _parameter_constraints: dict = {
        "n_clusters": POSITIVE_INT,
        "lam": NONNEG_REAL,
        "feature_model": [StrOptions(set(_FEATURE_MODELS))],
        "background_type": [StrOptions(set(_BACKGROUND_TYPES))],
        "x_weight": [StrOptions(set(_X_WEIGHTS))],
        "rho0": [None, *POSITIVE_REAL],
        "anneal_rate": UNIT_OPEN,
        "perturb_eps": NONNEG_REAL,
        "smoothing": POSITIVE_REAL,  # > 0: log 0 otherwise
        "variance": POSITIVE_REAL,
        "ridge": NONNEG_REAL,
        "n_newton": NONNEG_INT,
        "drop_features_in_z": ["boolean"],
        "c_max": [None, *NONNEG_REAL],
        "n_init": POSITIVE_INT,
        "max_iter": POSITIVE_INT,
        "max_inner": POSITIVE_INT,
        "tol": NONNEG_REAL,
        "progress_bar": ["boolean"],
        "random_state": RANDOM_STATE,
    }

    def __init__(
        self,
        n_clusters=2,
        *,
        lam=0.3,
        feature_model="auto",
        background_type="auto",
        x_weight="paper",
        rho0=None,
        anneal_rate=0.9,
        perturb_eps=1e-2,
        smoothing=1e-10,
        variance=1.0,
        ridge=1e-2,
        n_newton=3,
        drop_features_in_z=False,
        c_max=None,
        n_init=10,
        max_iter=300,
        max_inner=500,
        tol=1e-6,
        random_state=None,
        progress_bar=True,
    ):
        self.n_clusters = n_clusters
        self.lam = lam
        self.feature_model = feature_model
        self.background_type = background_type
        self.x_weight = x_weight
        self.rho0 = rho0
        self.anneal_rate = anneal_rate
        self.perturb_eps = perturb_eps
        self.smoothing = smoothing
        self.variance = variance
        self.ridge = ridge
        self.n_newton = n_newton
        self.drop_features_in_z = drop_features_in_z
        self.c_max = c_max
        self.n_init = n_init
        self.max_iter = max_iter
        self.max_inner = max_inner
        self.tol = tol
        self.random_state = random_state
        self.progress_bar = progress_bar

    # ---------------------------------------------------------------------------------------------
    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, background=None, partial_labels=None):
        """Fit on features ``X`` (n, D); ``background`` Z to factor out; ``y`` partial labels (-1 = none)
        whose assignments are held fixed (semi-supervised CCIB, spec section 7); ``partial_labels``, when
        given, replaces ``y`` (which is then only a scoring target)."""
        X = validate_X(self, X, reset=True)
        n = X.shape[0]
        k = int(self.n_clusters)
        if k > n:
            raise PPClustError(f"n_clusters={k} exceeds the number of objects n={n}")
        labels_in = _partial_labels(side_labels(y, partial_labels), n, k)
        feature = self._feature_model(X)
        self.feature_model_ = feature
        bg_kind, z_codes, design = self._encode_background(background, n, fitting=True)
        self.background_type_ = bg_kind

        if feature == "multinomial":
            self.feature_mask_ = X.sum(0) > 0  # never-occurring terms are dropped (E3)
            if not self.feature_mask_.any():
                raise PPClustError("X has no non-zero count: nothing to cluster")
        else:
            self.feature_mask_ = np.ones(X.shape[1], bool)
        # s^2 relative to the data's variance for the gaussian model (the others have no variance)
        self.variance_ = float(self.variance) * (data_variance(X) if feature == "gaussian" else 1.0)
        data = self._data(X, z_codes, design, labels_in, k)

        if k == 1:  # E1
            self._set_trivial(n)
            return self
        static = _solver.Static(
            n_clusters=k,
            n_groups=max(1, len(getattr(self, "background_categories_", [0]))),
            feature=feature,
            background=bg_kind,
            n_newton=int(self.n_newton),
            max_iter=int(self.max_iter),
            max_inner=int(self.max_inner),
        )
        hyper = self._hyper()
        with (
            x64(),
            _progress.bar(
                int(self.n_init), "CCIB annealing restarts", "restart", bool(self.progress_bar)
            ) as bar,
        ):
            keys = _solver.restart_keys(as_key(self.random_state), int(self.n_init))
            res = _solver.fit_restarts(keys, _bucketed(data), hyper, static, progress=bar.update)
            res = res._replace(q=res.q[:, :n], labels=res.labels[:, :n])
        if not np.all(np.isfinite(res.objective)):
            bad = int((~np.isfinite(res.objective)).sum())
            raise NonFiniteError(
                f"CCIB produced a non-finite objective in {bad} of {len(res.objective)} "
                "restart(s); check the data and `smoothing`"
            )
        best = int(np.argmax(res.objective))  # A5: largest final F~
        self._static, self._hyper_used = static, hyper
        self.params_ = _solver.Params(*[np.asarray(p[best]) for p in res.params])
        self.responsibilities_ = res.q[best]
        self.labels_ = res.labels[best].astype(np.int64)
        self.n_clusters_ = int(len(np.unique(self.labels_)))
        self.restart_labels_ = res.labels.astype(np.int64)
        self.restart_objectives_ = res.objective
        self.best_restart_ = best
        self.rho0_ = float(res.rho0[best])
        self.rho_ = float(res.rho[best])
        self.k_eff_ = int(res.k_eff[best])
        self.n_dead_ = int(res.n_dead[best])
        self.n_iter_ = int(res.n_steps[best])
        self.objective_ = float(res.objective[best])
        self.objective_terms_ = {m: float(getattr(res, m)[best]) for m in ("i_cx", "i_cy_given_z", "i_cy")}
        self.objective_terms_["rho"] = self.rho_
        steps = self.n_iter_
        self.annealing_trace_ = {m: np.asarray(v[best][:steps]) for m, v in res.trace.items()}
        self.objective_trace_ = np.asarray(self.annealing_trace_.get("objective", np.zeros(0)), np.float64)
        if int(res.inner_capped[best]) > 0:
            warnings.warn(
                f"CCIB: the inner loop hit max_inner={self.max_inner} at "
                f"{int(res.inner_capped[best])} temperatures",
                RuntimeWarning,
                stacklevel=2,
            )
        if self.k_eff_ < k:
            warnings.warn(
                f"CCIB: only {self.k_eff_} of {k} clusters have distinct parameters (E9)",
                RuntimeWarning,
                stacklevel=2,
            )
        return self

    def predict_proba(self, X, *, background=None):
        """Soft assignments of (new) objects by eq. (5) at the final rho.  Objects whose categorical
        background value was not seen in fit get only the coordination term (E6)."""
        check_is_fitted(self, "labels_")
        X = validate_X(self, X, reset=False)
        n = X.shape[0]
        if self._static is None:
            return np.ones((n, 1))
        _, z_codes, design = self._encode_background(background, n, fitting=False)
        unseen = z_codes < 0
        if unseen.any():
            warnings.warn(
                f"{int(unseen.sum())} objects have a background value unseen in fit: "
                "only the coordination term assigns them",
                RuntimeWarning,
                stacklevel=2,
            )
        data = self._data(X, np.maximum(z_codes, 0), design, np.full(n, -1), self._static.n_clusters)
        rows = (*data[:-1], unseen)  # every field but the feature mask is per object
        with x64():
            params = _solver.Params(*[np.asarray(p) for p in self.params_])
            logq = _log_assignment_rows(
                rows, data.cond_mask, params, self._hyper_used, np.float64(self.rho_), static=self._static
            )
            return np.exp(logq)

    def predict(self, X, *, background=None):
        """Hard assignments of new objects under the fitted cluster models (argmax of ``predict_proba``)."""
        return np.argmax(self.predict_proba(X, background=background), axis=1).astype(np.int64)

    # --- helpers ---------------------------------------------------------------------------------
    def _hyper(self):
        return _solver.Hyper(
            lam=float(self.lam),
            rate=float(self.anneal_rate),
            eps=float(self.perturb_eps),
            smoothing=float(self.smoothing),
            variance=self.variance_,
            ridge=float(self.ridge),
            c_max=float("inf") if self.c_max is None else float(self.c_max),
            rho0=0.0 if self.rho0 is None else float(self.rho0),
            tol=float(self.tol),
        )

    def _feature_model(self, X):
        fm = self.feature_model
        is01 = bool(np.all((X == 0) | (X == 1)))
        isint = bool(np.all(X >= 0) and np.all(X == np.round(X)))
        if fm == "auto":
            fm = "bernoulli" if is01 else ("multinomial" if isint else "gaussian")
        if fm == "bernoulli" and not is01:
            raise PPClustError("X must be 0/1 for feature_model='bernoulli'")
        if fm in ("multinomial", "poisson") and not np.all(X >= 0):
            raise PPClustError(f"X must be non-negative counts for feature_model={fm!r}")
        return fm

    def _encode_background(self, background, n, *, fitting):
        if fitting:
            if background is None:
                kind = "none"
            else:
                z = np.asarray(background)
                if (
                    z.ndim == 2
                    and z.shape[1] == 1
                    and (z.dtype.kind in "iub" or self.background_type == "categorical")
                ):
                    z = z[:, 0]
                kind = self.background_type
                if kind == "auto":
                    kind = "categorical" if z.ndim == 1 else "continuous"
            self._bg_kind = kind
        kind = self._bg_kind
        z_codes = np.zeros(n, np.int32)
        design = np.ones((n, 1))
        if kind == "none":
            return kind, z_codes, design
        if background is None:
            raise PPClustError("background is required: the model was fitted with one")
        z = np.asarray(background)
        if z.shape[0] != n:
            raise PPClustError(f"background has {z.shape[0]} rows, X has {n}")
        if kind == "categorical":
            z = z.reshape(n, -1)
            if z.shape[1] != 1:
                raise PPClustError("a categorical background must be 1-D (combine attributes first)")
            z = z[:, 0]
            if fitting:
                self.background_categories_, codes = np.unique(z, return_inverse=True)
                return kind, codes.astype(np.int32), design
            cats = self.background_categories_
            pos = np.searchsorted(cats, z)
            pos = np.clip(pos, 0, len(cats) - 1)
            codes = np.where(cats[pos] == z, pos, -1).astype(np.int32)
            return kind, codes, design
        z = np.asarray(z, dtype=np.float64).reshape(n, -1)
        if not np.all(np.isfinite(z)):
            raise PPClustError("background contains NaN or inf")
        if fitting:
            self.background_categories_ = np.zeros(1)
            self._z_width = z.shape[1]
        elif z.shape[1] != self._z_width:
            raise PPClustError(
                f"background has {z.shape[1]} columns, the model was fitted with {self._z_width}"
            )
        self._z_cont = z if fitting else getattr(self, "_z_cont", None)
        return kind, z_codes, np.concatenate([np.ones((n, 1)), z], axis=1)

    def _data(self, X, z_codes, design, labels_in, k):
        n = X.shape[0]
        feature = self.feature_model_
        X = X[:, self.feature_mask_]
        w_fit = np.ones(n)
        valid = np.ones(n, bool)
        if feature == "multinomial":
            lengths = X.sum(1)
            valid = lengths > 0  # empty documents: excluded from fitting, q = pi (spec section 9)
            y = X / np.where(valid, lengths, 1.0)[:, None]
            w_fit = lengths if self.x_weight in ("paper", "length") else valid.astype(float)
            w_x = lengths if self.x_weight == "length" else valid.astype(float)
        else:
            y = X
            w_x = np.ones(n)
        w_x = w_x / w_x.sum()
        clamp = labels_in >= 0
        clamp_q = np.zeros((n, k))
        clamp_q[clamp, labels_in[clamp]] = 1.0
        cond_mask = np.ones(X.shape[1])
        if self.drop_features_in_z and self._bg_kind == "continuous":
            zc = design[:, 1:]
            same = np.array(
                [
                    any(np.array_equal(X[:, j], zc[:, m]) for m in range(zc.shape[1]))
                    for j in range(X.shape[1])
                ]
            )
            cond_mask = (~same).astype(float)
        return _solver.CCIBData(
            y=y,
            z=z_codes.astype(np.int32),
            design=design,
            w_x=w_x,
            w_fit=w_fit * 1.0,
            clamp=clamp,
            clamp_q=clamp_q,
            cond_mask=cond_mask,
        )

    def _set_trivial(self, n):
        self._static = None
        self.responsibilities_ = np.ones((n, 1))
        self.labels_ = np.zeros(n, np.int64)
        self.n_clusters_ = 1
        self.restart_labels_ = self.labels_[None]
        self.restart_objectives_ = np.zeros(1)
        self.best_restart_ = 0
        self.rho0_ = self.rho_ = 0.0
        self.k_eff_, self.n_dead_ = 1, 0
        self.n_iter_ = 0
        self.objective_ = 0.0
        self.objective_terms_ = {"i_cx": 0.0, "i_cy_given_z": 0.0, "i_cy": 0.0, "rho": 0.0}
        self.annealing_trace_ = {}
        self.objective_trace_ = np.zeros(0)


def _partial_labels(y, n, k):
    """Partial labels in {-1, 0..k-1} (the class of a labelled object is its cluster index)."""
    y = check_partial_labels(y, n)
    if y is not None and y.size and y.max() >= k:
        i = int(np.argmax(y >= k))
        raise InvalidInputError(
            f"`y` has label {int(y[i])} at index {i}, but CCIB's labels are cluster indices: they must lie "
            f"in [0, n_clusters={k}) (or be -1 for unlabelled); raise n_clusters to {int(y.max()) + 1} or "
            "recode the labels."
        )
    return np.full(n, -1, np.int64) if y is None else y.astype(np.int64)
