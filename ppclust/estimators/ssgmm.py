"""scikit-learn estimators for the semi-supervised Gaussian mixture (the CEC-IB / C3L papers' GMM baseline).

One model, two estimators, split as scikit-learn splits ``GaussianMixture`` and ``BayesianGaussianMixture``:
:class:`SemiSupervisedGMM` finds the maximum-likelihood (or MAP) parameters by EM; :class:`BayesianSemi
SupervisedGMM` draws the component assignments from their posterior by collapsed Gibbs sampling. Each takes
only the parameters its algorithm uses. Kept whole (over 700 lines, most of them the two classes' literal
docstrings): both estimators share one base class for label coding, starting centres and prediction.
"""

from __future__ import annotations

import warnings
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from ppclust import _devices, _progress
from ppclust._buckets import bucket_size, pad_rows, rowwise
from ppclust._jax import as_key, x64
from ppclust.errors import NonFiniteError, PPClustError
from ppclust.estimators._base import (
    DEVICES,
    NONNEG_INT,
    NONNEG_REAL,
    POSITIVE_INT,
    POSITIVE_REAL,
    RANDOM_STATE,
    ClusterMixin,
    Interval,
    Real,
    StrOptions,
    check_data_scale,
    check_global_X,
    check_partial_labels,
    data_mesh,
    data_scale,
    data_variance,
    fit_context,
    side_labels,
    validate_X,
    warn_few_distinct_rows,
)
from ppclust.families import GaussianNIW, mixture_niw_prior
from ppclust.inference import em
from ppclust.models.ssgmm import (
    default_component_classes,
    label_allowed,
    label_log_mask,
    label_noise_update,
    label_term,
    ssgmm_log_likelihood,
)

__all__ = ["SemiSupervisedGMM", "BayesianSemiSupervisedGMM"]

#: the components' log densities of new points, one program per row bucket and covariance type
_log_gaussian_prob_rows = rowwise(em.log_gaussian_prob, static_argnames=("cov_type",))

#: the standard deviation below which the default NIW prior's variance floor
#: (:func:`ppclust.families.mixture_niw_prior`) dominates the data: the Gibbs sampler, which fits X in its
#: own units, rejects data smaller than this (EM rescales them, :func:`ppclust.estimators._base.data_scale`)
PRIOR_FLOOR_SD = 1e-6
#: ``label_noise="auto"``: the label-flip rate EM starts from (then learnt, ``label_noise_update``)
LABEL_NOISE_START = 0.1
#: ``label_noise="auto"``: stop when the learnt rate moves by less than this, or after the most rounds
LABEL_NOISE_TOL = 1e-4
LABEL_NOISE_MAX_ROUNDS = 50


class _SemiSupervisedGMMBase(ClusterMixin, BaseEstimator):
    """What both estimators of the model share: label coding, starting centres, prediction, BIC/AIC."""

    def _prepare(self, X, y, partial_labels, K):
        """Validate; code the labels; the label mask, the starting centres; returns the pieces fit uses."""
        X = validate_X(self, X, reset=True)
        n, d = X.shape
        y = check_partial_labels(side_labels(y, partial_labels), n)
        if y is None or not np.any(y >= 0):
            self.classes_ = np.array([], dtype=np.int64)
            codes = np.full(n, -1)
        else:
            self.classes_, inv = np.unique(y[y >= 0], return_inverse=True)
            codes = np.full(n, -1)
            codes[y >= 0] = inv
        C = len(self.classes_)
        if K is None:
            if C == 0:
                raise PPClustError(
                    "n_clusters=None takes one component per labelled class of `y`, and `y` labels no "
                    "point (all -1 or None); set n_clusters, or pass partial labels."
                )
            K = C
        K = int(K)
        self._n_clusters = K
        if n < K:
            raise PPClustError(
                f"`X` has n_samples={n} < n_clusters={K}; need at least one point per component."
            )
        if C > K:
            raise PPClustError(
                f"`y` has {C} classes but n_clusters={K}; need n_clusters >= number of classes."
            )
        if self.component_classes is None:
            g = default_component_classes(K, C)
        else:
            g = np.asarray(self.component_classes, dtype=np.int32)
            if g.shape != (K,) or np.any(g < -1) or np.any(g >= max(C, 1)) and C > 0:
                raise PPClustError(
                    f"`component_classes` must have length n_clusters={K} with entries in "
                    f"[-1, {C}), got {g.tolist()}."
                )
            missing = sorted(set(range(C)) - set(g.tolist()))
            if missing and (self.label_noise == "auto" or self.label_noise == 0):
                raise PPClustError(
                    f"`component_classes` gives no component to classes {missing}; their labelled "
                    "points could not be placed (or set label_noise > 0)."
                )
        self.component_classes_ = g
        eps = LABEL_NOISE_START if self.label_noise == "auto" else float(self.label_noise)
        term = label_term(codes, g, C, eps)
        allowed = label_allowed(codes, g)

        use_labels = C > 0 and self.init in ("auto", "labelled")
        centres = np.zeros((K, d))
        fixed = np.zeros(K, bool)
        if use_labels:
            for c in range(C):
                ks = np.flatnonzero(g == c)
                if len(ks):
                    centres[ks[0]] = X[codes == c].mean(0)
                    fixed[ks[0]] = True
        shift = X.mean(0)  # both fits are translation-equivariant; centring keeps moments well conditioned
        return X, codes, term, allowed, centres, fixed, shift, as_key(self.random_state)

    def _niw_prior(self, xc, K):
        """The model's one default prior (:func:`ppclust.families.mixture_niw_prior`) on centred data
        (numpy), computed on the rows padded to their bucket (no program compiled per n)."""
        xp, w = pad_rows(np.asarray(xc))
        return mixture_niw_prior(xp, float(self.weight_concentration), weight=w)

    # ------------------------------------------------------------------------------------------ predict
    def _log_prob(self, X):
        check_is_fitted(self, "means_")
        X = validate_X(self, X, reset=False)
        with x64():
            lp = _log_gaussian_prob_rows(
                np.asarray(X - self._shift, np.float64),
                np.asarray(self.means_ - self._shift, np.float64),
                np.asarray(self.precisions_cholesky_, np.float64),
                cov_type=self.covariance_type,
            )
            return lp + np.log(self.weights_)[None]

    def predict_proba(self, X):
        """Posterior component probabilities (n, k) for new, unlabelled points."""
        lp = self._log_prob(X)
        lp -= lp.max(1, keepdims=True)
        p = np.exp(lp)
        return p / p.sum(1, keepdims=True)

    def predict(self, X):
        """MAP component of each (unlabelled) point."""
        return self._log_prob(X).argmax(1).astype(np.int64)

    def predict_class(self, X):
        """Class label (in the coding of ``y``) of the MAP component; -1 for free components."""
        check_is_fitted(self, "means_")
        comp = self.predict(X)
        g = self.component_classes_[comp]
        if len(self.classes_) == 0:
            return np.full(len(comp), -1)
        return np.where(g >= 0, self.classes_[np.maximum(g, 0)], -1)

    def score_samples(self, X):
        """log p(x) of each point under the fitted mixture (no labels)."""
        lp = self._log_prob(X)
        m = lp.max(1)
        return m + np.log(np.exp(lp - m[:, None]).sum(1))

    def score(self, X, y=None):
        """Mean log-likelihood per sample of X under the fitted mixture (labels ignored)."""
        return float(self.score_samples(X).mean())

    def _n_parameters(self):
        return em.n_parameters(self.means_.shape[0], self.n_features_in_, self.covariance_type)

    def bic(self, X=None):
        """Bayesian information criterion, ``-2 log L + p log n`` (lower is better).

        Without ``X``: the training (semi-supervised) log-likelihood; with ``X``: the unlabelled likelihood
        of ``X`` (scikit-learn's ``GaussianMixture.bic``). mclust reports the negative of this.
        """
        ll, n = self._ll_n(X)
        return -2 * ll + self._n_parameters() * np.log(n)

    def aic(self, X=None):
        """Akaike information criterion, ``-2 log L + 2 p``."""
        ll, _ = self._ll_n(X)
        return -2 * ll + 2 * self._n_parameters()

    def _ll_n(self, X):
        check_is_fitted(self, "means_")
        if X is None:
            return self.log_likelihood_, self._n_train
        s = self.score_samples(X)
        return float(s.sum()), len(s)


class SemiSupervisedGMM(_SemiSupervisedGMMBase):
    r"""Gaussian mixture fitted by EM on data with partial (optionally noisy) labels.

    Maximises the semi-supervised log-likelihood plus the log prior (MAP; ``prior=None``: maximum
    likelihood),

    .. math::

        \mathcal L(\theta) = \sum_i \log\sum_k p(y_i\mid k)\,\pi_k\,\mathcal N(x_i;\mu_k,\Sigma_k)
            + \log p(\theta),

    where unlabelled points have :math:`p(y_i \mid k) = 1` and a labelled point of class ``c`` has
    ``1 - label_noise`` for the components of class ``c`` and ``label_noise / (C - 1)`` for the others
    (``label_noise = 0``: labelled points are restricted to their class's components, as in Rmixmod /
    ``mclust::MclustSSC``). The model is :mod:`ppclust.models.ssgmm`, the solver
    :mod:`ppclust.inference.em`. The posterior over assignments of the same model, by collapsed Gibbs
    sampling, is :class:`BayesianSemiSupervisedGMM` (as scikit-learn's ``GaussianMixture`` /
    ``BayesianGaussianMixture``).

    Parameters
    ----------
    n_clusters : int or None, default=None
        Number of mixture components ``K``, at least the number of classes in ``y``. ``None``: one
        component per labelled class of ``y`` (an error when ``y`` labels no point).
    covariance_type : {"full", "tied", "diag", "spherical"}, default="full"
        Shape of the component covariances (scikit-learn's meanings).
    n_init : int, default=1
        EM restarts (vmapped, >= 1); the one with the highest objective is kept.
    random_state : None, int, numpy Generator or JAX key, default=None
        Seeds the k-means++ starts.
    init : {"auto", "labelled", "k-means++"}, default="auto"
        ``"labelled"``: the first component of each class starts at the mean of that class's labelled
        points, the others by k-means++; ``"k-means++"``: all by k-means++; ``"auto"``: labelled when
        there are labels. Labelled starts put each class where its labels are.
    max_iter : int, default=100
        Most EM iterations per round (>= 1).
    tol : float, default=1e-3
        Stop when the objective per point changes by less than ``tol`` (>= 0; scikit-learn's
        convention).
    reg_covar : float, default=1e-6
        Added to the covariance diagonals after every M-step, relative to the data's variance: the ridge
        is ``reg_covar * s2`` with ``s2 = mean_j Var(X[:, j])``
        (:func:`ppclust.estimators._base.data_variance`; stored as ``reg_covar_``), so the fit does not
        depend on the units of ``X``. >= 0.
    label_noise : float in [0, 1) or "auto", default="auto"
        Probability ``eps`` that a given label is wrong. ``"auto"`` learns it with the model: from
        ``eps = 0.1`` EM runs to convergence, then eps is set to the expected share of labelled points
        off their observed class (:func:`ppclust.models.ssgmm.label_noise_update`), and EM resumes from
        the fitted parameters until eps moves by less than 1e-4 (at most 50 rounds; a coordinate-ascent
        scheme that never lowers the objective). On clean, separable labels eps goes to 0. ``0`` trusts
        the labels (Rmixmod / MclustSSC). Default "auto" so that wrong labels cost little (see
        docs/decisions/ for the evidence).
    prior : {None, "default"}, default="default"
        ``"default"``: MAP under the model's conjugate prior :func:`ppclust.families.mixture_niw_prior`
        (the prior :class:`BayesianSemiSupervisedGMM` samples under); the M-step's covariance is
        :math:`(S_k + \kappa_0(\mu_k-\mu_0)(\mu_k-\mu_0)^\top + \Psi_0)/(n_k + \nu_0 + d + 2)` (Fraley &
        Raftery 2007). ``None``: maximum likelihood. Default MAP because a full covariance estimated from
        few points per component is poorly determined; the prior adds ``d + 2`` pseudo-points of the
        data's own scale (see docs/decisions/ for the evidence).
    weight_concentration : float, default=1.0
        Dirichlet concentration (>= 1) on the weights when ``prior="default"``; 1 is a flat prior.
    component_classes : array-like of int or None, default=None
        Class index (position in ``classes_``) of each component, ``-1`` for a free component that takes
        no labelled point. Default: component ``k`` belongs to class ``k mod C``.
    devices : None, "all", "auto", int or list of devices, default=None
        The devices the fit may use (one meaning for every estimator, :mod:`ppclust.estimators._base`);
        here data-parallel EM: the points are split over the devices, each computes responsibilities and
        sufficient statistics of its points, reduced with ``psum``. Same result as one device up to
        summation order.
    progress_bar : bool, default=True
        A bar over the EM restarts, shown when someone can see it (Jupyter or a terminal, not ``CI``;
        ``PPCLUST_PROGRESS``).

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,), int64
        MAP component of each training point.
    n_clusters_ : int
        Number of occupied components.
    classes_ : ndarray of shape (C,)
        The distinct labels seen in ``y``.
    component_classes_ : ndarray of shape (n_clusters,), int
        Class index of each component (-1: free).
    weights_, means_, covariances_, precisions_cholesky_ : ndarray
        Fitted parameters (scikit-learn's shapes).
    objective_ : float
        Final :math:`\mathcal L(\theta)`, log-likelihood plus log prior (total, not per point); larger is
        better.
    objective_trace_ : ndarray of shape (n_iter_,)
        The objective at each E-step of the final round (non-decreasing up to ``reg_covar``).
    restart_objectives_ : ndarray of shape (n_init,)
        Final objective of every restart of the first round.
    log_likelihood_ : float
        Final semi-supervised log-likelihood (without the prior).
    n_iter_ : int
        EM iterations of the final round.
    converged_ : bool
        Whether the final round met ``tol`` before ``max_iter``.
    responsibilities_ : ndarray of shape (n_samples, n_clusters)
        Posterior component probabilities of the training points.
    reg_covar_ : float
        The ridge added to the covariance diagonals, in X's units (``reg_covar * s2``).
    label_noise_ : float
        The label-flip rate of the final fit (``label_noise``, or the learnt one of ``"auto"``).
    label_noise_rounds_ : int
        EM rounds run for it (1 unless ``"auto"``).
    n_features_in_ : int
        Number of features seen in ``fit``.

    See Also
    --------
    BayesianSemiSupervisedGMM : the same model, its assignments sampled from their posterior.

    Notes
    -----
    The label model is the semi-supervised mixture of the CEC-IB paper's GMM baseline (Śmieja & Geiger
    2017, section 4.1); with one component per class and ``label_noise=0`` it is the likelihood of
    ``mclust::MclustSSC``. Each EM iteration never lowers :math:`\mathcal L` when ``reg_covar = 0``.

    References
    ----------
    Fraley, C. and Raftery, A. E. (2007). Bayesian regularization for normal mixture estimation and
    model-based clustering. Journal of Classification 24, 155-181.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust import SemiSupervisedGMM
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(0, 1, (20, 2)), rng.normal(6, 1, (20, 2))])
    >>> y = np.full(40, -1)
    >>> y[[0, 20]] = [0, 1]
    >>> gmm = SemiSupervisedGMM(2, random_state=0, progress_bar=False).fit(X, y)
    >>> int(gmm.labels_[0] != gmm.labels_[39])
    1
    >>> isinstance(gmm.objective_, float)
    True
    """

    _parameter_constraints: dict = {
        "n_clusters": [None, *POSITIVE_INT],
        "covariance_type": [StrOptions(set(em.COVARIANCE_TYPES))],
        "n_init": POSITIVE_INT,
        "random_state": RANDOM_STATE,
        "init": [StrOptions({"auto", "labelled", "k-means++"})],
        "max_iter": POSITIVE_INT,
        "tol": NONNEG_REAL,
        "reg_covar": NONNEG_REAL,
        "label_noise": [Interval(Real, 0, 1, closed="left"), StrOptions({"auto"})],
        "prior": [None, StrOptions({"default"})],
        "weight_concentration": [Interval(Real, 1, None, closed="left")],
        "component_classes": [None, "array-like"],
        "devices": DEVICES,
        "progress_bar": ["boolean"],
    }

    def __init__(
        self,
        n_clusters=None,
        *,
        covariance_type="full",
        n_init=1,
        random_state=None,
        init="auto",
        max_iter=100,
        tol=1e-3,
        reg_covar=1e-6,
        label_noise="auto",
        prior="default",
        weight_concentration=1.0,
        component_classes=None,
        devices=None,
        progress_bar=True,
    ):
        self.n_clusters = n_clusters
        self.covariance_type = covariance_type
        self.n_init = n_init
        self.random_state = random_state
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.reg_covar = reg_covar
        self.label_noise = label_noise
        self.prior = prior
        self.weight_concentration = weight_concentration
        self.component_classes = component_classes
        self.devices = devices
        self.progress_bar = progress_bar

    # ------------------------------------------------------------------------------------------ fit
    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, partial_labels=None):
        """Fit on ``X`` (n, d) with partial labels ``y`` (n,) (``-1`` = unlabelled; ``None`` = no labels);
        ``partial_labels``, when given, replaces ``y`` (which is then only a scoring target)."""
        if _devices.is_process_rows(X):
            return self._fit_process_rows(X, side_labels(y, partial_labels))
        prep = self._prepare(X, y, partial_labels, self.n_clusters)
        X, codes, log_mask, allowed, centres, fixed, shift, key = prep
        K, n = self._n_clusters, X.shape[0]
        C = len(self.classes_)
        # EM runs on (X - shift) / scale, scale a power of two (exact): the model is equivariant under
        # scaling, and data far from unit scale would leave float64's range in determinants and floors
        warn_few_distinct_rows(type(self).__name__, X, K)
        scale = data_scale(X)
        reg = float(self.reg_covar) * data_variance(X / scale)
        self.reg_covar_ = reg * scale * scale
        mesh = data_mesh(self.devices)
        with (
            x64(),
            _progress.bar(
                int(self.n_init),
                "SemiSupervisedGMM EM restarts (vmapped)",
                "restart",
                bool(self.progress_bar),
            ) as bar,
        ):
            xc = X - shift
            if scale != 1.0:
                xc /= scale
            prior = None
            if self.prior == "default":
                prior = self._niw_prior(xc, K)
            learn = self.label_noise == "auto" and C > 1
            fixed_eps = 0.0 if self.label_noise == "auto" else float(self.label_noise)
            eps = LABEL_NOISE_START if learn else fixed_eps
            if self.label_noise == "auto" and not learn:  # one class or none: no flip to learn
                log_mask = label_term(codes, self.component_classes_, C, 0.0)
            params, rounds = None, 0
            while True:
                rounds += 1
                res = em.fit(
                    key,
                    xc,
                    log_mask if C > 0 else None,
                    allowed,
                    (centres - shift) / scale,
                    fixed,
                    n_components=K,
                    cov_type=self.covariance_type,
                    max_iter=int(self.max_iter),
                    tol=float(self.tol),
                    reg_covar=reg,
                    n_init=int(self.n_init) if params is None else 1,
                    prior=prior,
                    init_params=params,
                    mesh=mesh,
                )
                if not learn or not bool(res.finite):
                    break
                new_eps = label_noise_update(np.asarray(res.resp), codes, self.component_classes_, C)
                if abs(new_eps - eps) < LABEL_NOISE_TOL or rounds >= LABEL_NOISE_MAX_ROUNDS:
                    break
                eps, params = new_eps, res.params
                log_mask = label_term(codes, self.component_classes_, C, eps)
            self.label_noise_ = float(eps)
            self.label_noise_rounds_ = rounds
            if not bool(res.finite):
                raise NonFiniteError(
                    "EM produced non-finite values in every restart (a collapsed or singular "
                    "component); increase `reg_covar`, use a simpler `covariance_type` or fewer "
                    "components."
                )
            cov = em.covariances(res.params.prec_chol, self.covariance_type)
            # back to X's units: a density of X is that of X / scale times scale**-d per point
            jac = n * X.shape[1] * np.log(scale)
            self.weights_ = np.asarray(res.params.weights)
            self.means_ = np.asarray(res.params.means) * scale + shift
            self.precisions_cholesky_ = np.asarray(res.params.prec_chol) / scale
            self.covariances_ = np.asarray(cov) * (scale * scale)
            self.responsibilities_ = np.asarray(res.resp)
            self.log_likelihood_ = float(res.log_likelihood) - jac
            self.objective_ = float(res.objective) - jac
            self.restart_objectives_ = np.asarray(res.all_objectives, dtype=np.float64) - jac
            self.n_iter_ = int(res.n_iter)
            self.converged_ = bool(res.converged)
            self.objective_trace_ = np.asarray(res.trace)[: self.n_iter_] - jac
            bar.update(int(self.n_init))
        self._shift = shift
        self._n_train = n
        self.labels_ = self.responsibilities_.argmax(1).astype(np.int64)
        self.n_clusters_ = int(len(np.unique(self.labels_)))
        if not self.converged_:
            warnings.warn(
                f"EM did not converge in max_iter={self.max_iter} iterations (tol={self.tol}); "
                "increase max_iter or tol.",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    def _fit_process_rows(self, X, y):
        """``fit`` on rows spread over processes (:mod:`ppclust.distributed`): each process codes the labels
        and builds the label mask of its own rows; class means, the data's mean and variance and the
        label-noise rate are sums over processes; EM runs over every process's devices."""
        K = self.n_clusters
        x_loc, lay, shift, var = check_global_X(self, X, min_samples=1 if K is None else int(K))
        y_loc = None if y is None else check_partial_labels(_devices.local_rows(y), len(x_loc))
        top = int(_devices.process_gather(-1 if y_loc is None or not len(y_loc) else y_loc.max()).max())
        seen = np.bincount(np.maximum(y_loc, 0)[y_loc >= 0], minlength=top + 1) if top >= 0 else np.zeros(0)
        self.classes_ = np.flatnonzero(_devices.process_sum(seen)).astype(np.int64)
        C = len(self.classes_)
        if K is None:  # one component per labelled class, as in _prepare
            if C == 0:
                raise PPClustError(
                    "n_clusters=None takes one component per labelled class of `y`, and `y` labels no "
                    "point (all -1 or None); set n_clusters, or pass partial labels."
                )
            K = C
        K = int(K)
        self._n_clusters = K
        codes = np.full(len(x_loc), -1)
        if C:
            codes[y_loc >= 0] = np.searchsorted(self.classes_, y_loc[y_loc >= 0])
        if C > K:
            raise PPClustError(
                f"`y` has {C} classes but n_clusters={K}; need n_clusters >= number of classes."
            )
        g = default_component_classes(K, C)
        if self.component_classes is not None:
            g = np.asarray(self.component_classes, dtype=np.int32)
        self.component_classes_ = g
        sums = np.zeros((max(C, 1), X.shape[1] + 1))
        for c in range(C):
            sums[c] = np.append(x_loc[codes == c].sum(0), np.sum(codes == c))
        sums = _devices.process_sum(sums)
        centres, fixed = np.zeros((K, X.shape[1])), np.zeros(K, bool)
        if C and self.init in ("auto", "labelled"):
            for c in range(C):
                ks = np.flatnonzero(g == c)
                if len(ks):
                    centres[ks[0]], fixed[ks[0]] = sums[c, :-1] / sums[c, -1], True
        learn = self.label_noise == "auto" and C > 1
        eps = LABEL_NOISE_START if learn else (0.0 if self.label_noise == "auto" else float(self.label_noise))
        self.reg_covar_ = float(self.reg_covar) * var
        with x64():
            xc = _devices.from_process_rows(x_loc - shift, lay)
            w = _devices.layout_weights(lay)
            prior = None
            if self.prior == "default":
                prior = mixture_niw_prior(xc, float(self.weight_concentration), weight=w)
            params, rounds = None, 0
            while True:
                rounds += 1
                lm_loc, allowed_loc = label_log_mask(codes, g, C, eps)
                res = em.fit(
                    as_key(self.random_state),
                    xc,
                    _devices.from_process_rows(lm_loc, lay) if C > 0 else None,
                    _devices.from_process_rows(allowed_loc, lay, True),
                    centres - shift,
                    fixed,
                    n_components=K,
                    cov_type=self.covariance_type,
                    max_iter=int(self.max_iter),
                    tol=float(self.tol),
                    reg_covar=self.reg_covar_,
                    n_init=int(self.n_init) if params is None else 1,
                    prior=prior,
                    init_params=params,
                    weight=w,
                )
                if not learn or not bool(res.finite):
                    break
                resp_loc = _devices.local_rows(res.resp, lay)
                new_eps = label_noise_update(resp_loc, codes, g, C, reduce=_devices.process_sum)
                if abs(new_eps - eps) < LABEL_NOISE_TOL or rounds >= LABEL_NOISE_MAX_ROUNDS:
                    break
                eps, params = new_eps, res.params
            if not bool(res.finite):
                raise NonFiniteError("EM produced non-finite values in every restart; increase `reg_covar`.")
            self.label_noise_, self.label_noise_rounds_ = float(eps), rounds
            self.weights_ = np.asarray(res.params.weights)
            self.means_ = np.asarray(res.params.means) + shift
            self.precisions_cholesky_ = np.asarray(res.params.prec_chol)
            self.covariances_ = np.asarray(em.covariances(res.params.prec_chol, self.covariance_type))
            self.responsibilities_ = _devices.register_layout(res.resp, lay)
            self.labels_ = _devices.register_layout(jnp.argmax(res.resp, axis=1), lay)
        self.log_likelihood_, self.objective_ = float(res.log_likelihood), float(res.objective)
        self.restart_objectives_ = np.asarray(res.all_objectives, dtype=np.float64)
        self.n_iter_, self.converged_ = int(res.n_iter), bool(res.converged)
        self.objective_trace_ = np.asarray(res.trace)[: self.n_iter_]
        self._shift, self._n_train = shift, lay.n
        used = np.bincount(_devices.local_rows(self.labels_, lay), minlength=K)
        self.n_clusters_ = int(np.count_nonzero(_devices.process_sum(used)))
        if not self.converged_:
            warnings.warn(
                f"EM did not converge in max_iter={self.max_iter} iterations.",
                ConvergenceWarning,
                stacklevel=3,
            )
        return self


class BayesianSemiSupervisedGMM(_SemiSupervisedGMMBase):
    r"""The semi-supervised Gaussian mixture, its component assignments drawn from their posterior by
    collapsed Gibbs sampling.

    The Bayesian counterpart of :class:`SemiSupervisedGMM`, as scikit-learn's
    ``BayesianGaussianMixture`` is of ``GaussianMixture``; the sampler words ``n_draws``, ``n_warmup``,
    ``n_chains``, ``thin`` are NumPyro's ``num_samples``, ``num_warmup``, ``num_chains``, ``thinning``.
    Weights and component parameters are integrated out (:func:`ppclust.inference.gibbs.sample`,
    ``partition="finite"``); ``labels_`` is a point estimate of the partition, ``posterior_`` an ArviZ
    DataTree of the draws.

    Parameters
    ----------
    n_clusters : int or None, default=None
        Number of mixture components ``K``, at least the number of classes in ``y``. ``None``: one
        component per labelled class of ``y`` (an error when ``y`` labels no point).
    covariance_type : {"full", "diag", "spherical"}, default="full"
        Shape of the component covariances (the conjugate families of :mod:`ppclust.families`).
    random_state : None, int, numpy Generator or JAX key, default=None
        Seeds the start and the sampler.
    init : {"auto", "labelled", "k-means++"}, default="auto"
        ``"labelled"``: the first component of each class starts at the mean of that class's labelled
        points, the others by k-means++; ``"k-means++"``: all by k-means++; ``"auto"``: labelled when
        there are labels. Every chain starts at the nearest allowed starting centre.
    label_noise : float in [0, 1), default=0.0
        Probability ``eps`` that a given label is wrong; 0 restricts labelled points to their class's
        components.
    weight_concentration : float, default=1.0
        Symmetric Dirichlet concentration ``a > 0`` on the weights (integrated out).
    component_classes : array-like of int or None, default=None
        Class index (position in ``classes_``) of each component, ``-1`` for a free component that takes
        no labelled point. Default: component ``k`` belongs to class ``k mod C``.
    n_draws : int, default=200
        Kept draws per chain (>= 1).
    n_warmup : int, default=200
        Discarded sweeps per chain (>= 0).
    n_chains : int, default=2
        Independent chains (>= 1); several chains show whether they agree.
    thin : int, default=1
        Sweeps per kept draw (>= 1).
    point_estimate : {"binder", "vi", "max_log_joint"}, default="binder"
        The partition reported as ``labels_``: the minimiser of the posterior expected Binder or VI loss,
        or the draw of largest log joint.
    progress_bar : bool, default=True
        Warm-up and sampling bars, shown when someone can see them (Jupyter or a terminal, not ``CI``;
        ``PPCLUST_PROGRESS``).

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,), int64
        Component of each training point in the point estimate.
    n_clusters_ : int
        Number of occupied components.
    classes_, component_classes_ : ndarray
        As :class:`SemiSupervisedGMM`.
    weights_, means_, covariances_, precisions_cholesky_ : ndarray
        Posterior means given ``labels_``.
    objective_ : float
        Collapsed log joint :math:`\log p(z, x, y)` of the point estimate
        (:func:`ppclust.models.ssgmm.ssgmm_log_joint`); larger is more probable.
    objective_trace_ : ndarray of shape (n_chains, n_draws)
        The log joint of every kept draw.
    log_likelihood_ : float
        Semi-supervised log-likelihood at the posterior-mean parameters.
    responsibilities_ : ndarray of shape (n_samples, n_clusters)
        Posterior :math:`P(z_i = k)` over the draws.
    samples_ : draws of :func:`ppclust.inference.gibbs.sample`
        Labels, number of clusters and log joint of every kept draw.
    psm_ : ndarray of shape (n_samples, n_samples) or None
        Posterior similarity matrix.
    posterior_ : DataTree
        The draws and their summaries (:mod:`ppclust.posterior`).
    credible_ball_, expected_loss_ :
        Credible ball of the point estimate and its posterior expected loss.
    n_iter_ : int
        Sweeps per chain (``n_warmup + n_draws * thin``).
    n_features_in_ : int
        Number of features seen in ``fit``.

    See Also
    --------
    SemiSupervisedGMM : the same model fitted by EM.

    Notes
    -----
    Model: :math:`\pi \sim \mathrm{Dir}(a, \dots, a)`, :math:`(\mu_k, \Sigma_k) \sim` the default NIW
    prior :func:`ppclust.families.mixture_niw_prior` (shared with EM's ``prior="default"``),
    :math:`z_i \mid \pi \sim \pi`, :math:`x_i \mid z_i = k \sim \mathcal N(\mu_k, \Sigma_k)` and
    :math:`p(y_i \mid z_i = k)` as in :class:`SemiSupervisedGMM` (the label term is a per-point log prior
    over components).

    References
    ----------
    Neal, R. M. (2000). Markov chain sampling methods for Dirichlet process mixture models. Journal of
    Computational and Graphical Statistics 9, 249-265.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust import BayesianSemiSupervisedGMM
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(0, 1, (20, 2)), rng.normal(6, 1, (20, 2))])
    >>> y = np.full(40, -1)
    >>> y[[0, 20]] = [0, 1]
    >>> gmm = BayesianSemiSupervisedGMM(2, n_draws=10, n_warmup=10, n_chains=1, random_state=0,
    ...                                 progress_bar=False).fit(X, y)
    >>> gmm.objective_trace_.shape
    (1, 10)
    >>> int(gmm.labels_[0] != gmm.labels_[39])
    1
    """

    _parameter_constraints: dict = {
        "n_clusters": [None, *POSITIVE_INT],
        "covariance_type": [StrOptions({"full", "diag", "spherical"})],
        "random_state": RANDOM_STATE,
        "init": [StrOptions({"auto", "labelled", "k-means++"})],
        "label_noise": [Interval(Real, 0, 1, closed="left")],
        "weight_concentration": POSITIVE_REAL,
        "component_classes": [None, "array-like"],
        "n_draws": POSITIVE_INT,
        "n_warmup": NONNEG_INT,
        "n_chains": POSITIVE_INT,
        "thin": POSITIVE_INT,
        "point_estimate": [StrOptions({"binder", "vi", "max_log_joint"})],
        "progress_bar": ["boolean"],
    }

    def __init__(
        self,
        n_clusters=None,
        *,
        covariance_type="full",
        random_state=None,
        init="auto",
        label_noise=0.0,
        weight_concentration=1.0,
        component_classes=None,
        n_draws=200,
        n_warmup=200,
        n_chains=2,
        thin=1,
        point_estimate="binder",
        progress_bar=True,
    ):
        self.n_clusters = n_clusters
        self.covariance_type = covariance_type
        self.random_state = random_state
        self.init = init
        self.label_noise = label_noise
        self.weight_concentration = weight_concentration
        self.component_classes = component_classes
        self.n_draws = n_draws
        self.n_warmup = n_warmup
        self.n_chains = n_chains
        self.thin = thin
        self.point_estimate = point_estimate
        self.progress_bar = progress_bar

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, partial_labels=None):
        """Sample on ``X`` (n, d) with partial labels ``y`` (n,) (``-1`` = unlabelled; ``None`` = no labels);
        ``partial_labels``, when given, replaces ``y`` (which is then only a scoring target).

        NIW prior :func:`ppclust.families.mixture_niw_prior` on the centred data, symmetric
        Dirichlet(``weight_concentration``) on the weights, ``log p(y_i | z_i = k)`` as the per-point log
        prior over components.
        """
        from ppclust import posterior
        from ppclust.inference import gibbs
        from ppclust.models.tvclust import TVClustPrior, make_links

        n_draws = int(self.n_draws)
        prep = self._prepare(X, y, partial_labels, self.n_clusters)
        X, codes, term, allowed, centres, fixed, shift, key = prep
        log_mask = term.rows()
        check_data_scale(X, type(self).__name__, PRIOR_FLOOR_SD)
        warn_few_distinct_rows(type(self).__name__, X, self._n_clusters)
        K, n = self._n_clusters, X.shape[0]
        a = float(self.weight_concentration)
        # the rows padded to their bucket (ppclust._buckets) for every program of the fit: no program is
        # compiled for a new n of a seen bucket; padding rows have weight 0 and label K (no component)
        n_pad = bucket_size(n)
        xc_host = X - shift
        with x64():
            xc, lm_pad, allowed_pad = jax.device_put(
                (pad_rows(xc_host, n_pad)[0], pad_rows(log_mask, n_pad)[0], pad_rows(allowed, n_pad)[0])
            )
            family = GaussianNIW.from_prior(self._niw_prior(xc_host, K), self.covariance_type)
            # start: nearest allowed centre (labelled class means + k-means++), as EM's "labelled" init
            init = np.asarray(self._gibbs_start(key, xc, centres - shift, fixed, allowed_pad, np.int32(n)))[
                :n
            ]
            res = gibbs.sample(
                jax.random.fold_in(key, 1),
                xc_host,
                make_links(n),
                family,
                TVClustPrior(alpha=a * K),
                n_draws=n_draws,
                n_warmup=int(self.n_warmup),
                n_chains=int(self.n_chains),
                thin=int(self.thin),
                k_max=K,
                pq="fixed",
                partition="finite",
                point_logprior=log_mask,
                init_labels=init,
                desc="BayesianSemiSupervisedGMM",
                progress_bar=bool(self.progress_bar),
            )
            draws = res.labels.reshape(-1, n)
            loss = self.point_estimate if self.point_estimate != "max_log_joint" else "vi"
            seed = int(jax.random.randint(jax.random.fold_in(key, 3), (), 0, 2**30))
            point = posterior.point_estimate(
                res.labels, loss=self.point_estimate, log_joint=res.log_joint, seed=seed
            )
            psm = posterior.similarity_matrix(draws, max_n=5000)
            z = _component_labels(draws, point, K)
            z_pad = np.full(n_pad, K, np.int32)  # padding rows: no component
            z_pad[:n] = z
            summary = self._gibbs_summary(
                xc, jax.device_put(z_pad), lm_pad, family, a, np.int32(n), len(self.classes_) > 0
            )
            nk, means, self.covariances_, prec_chol, self.objective_, ll_rows = jax.device_get(summary)
            self.weights_ = (nk + a) / (n + K * a)  # posterior mean of the weights given z
            self.means_ = means + shift
            self.precisions_cholesky_ = np.asarray(prec_chol)
            self.log_likelihood_ = float(np.sum(ll_rows[:n]))
            self.objective_ = float(self.objective_)
        self.responsibilities_ = (draws[:, :, None] == np.arange(K)).mean(0)  # posterior P(z_i = k)
        self.n_iter_ = int(self.n_warmup) + n_draws * int(self.thin)
        self.converged_ = True
        self.objective_trace_ = np.asarray(res.log_joint)
        self.samples_ = res
        self.psm_ = psm
        self.posterior_ = self._gibbs_datatree(
            key, X, xc_host, family, res, z, loss, psm, log_mask, self.component_classes_, a, codes
        )
        self._shift = shift
        self._n_train = n
        self._predictive_family = family
        self.labels_ = z.astype(np.int64)
        self.n_clusters_ = int(len(np.unique(self.labels_)))
        posterior.check_convergence(
            self.posterior_, "BayesianSemiSupervisedGMM", "run more sweeps (n_warmup, n_draws) or more chains"
        )
        return self

    @staticmethod
    @jax.jit
    def _gibbs_start(key, xc, centres, fixed, allowed, n_valid):
        """Starting components of the rows (padded; the first ``n_valid`` are points): the nearest allowed
        centre among the fixed class means and k-means++ centres (``em.kmeanspp_centres``, the same
        centres as on the unpadded rows)."""
        c0 = em.kmeanspp_centres(key, xc, centres, fixed, n_valid)
        return em.nearest_centre(xc, c0, allowed)

    @staticmethod
    @partial(jax.jit, static_argnames=("labelled",))
    def _gibbs_summary(xc, z, log_mask, family, a, n_valid, labelled):
        """The point estimate's summaries, one program per bucket of rows (padding rows: label K, zero
        log mask): component sizes, posterior mean parameters, their precision Cholesky factors, the
        collapsed log joint of ``z`` on the sampler's scale (:func:`ppclust.inference.gibbs.sweep_info`)
        and the per-row marginal log-likelihood of the plug-in mixture (``ssgmm_log_likelihood`` row by
        row; the caller sums the real rows)."""
        from ppclust.inference import gibbs
        from ppclust.models.tvclust import TVClustPrior

        K = log_mask.shape[1]
        stats = family.stats(xc, z, K)
        nk = stats.n
        weights = (nk + a) / (nk.sum() + K * a)
        means = family.posterior_mean(stats)
        cov = family.posterior_mean_covariance(stats)
        cov_type = family.covariance
        prec_chol = em.precision_cholesky(cov, cov_type)
        one = jnp.asarray(0.9, xc.dtype)
        state = gibbs.GibbsState(
            z, stats, jnp.zeros(4, xc.dtype), one, one, jnp.asarray(a * K, xc.dtype), False
        )
        lj = gibbs.sweep_info(state, family, TVClustPrior(alpha=a * K), "fixed", "finite", log_mask).log_joint
        ll_rows = jax.vmap(
            lambda xi, mi: ssgmm_log_likelihood(
                xi[None], weights, means, prec_chol, mi[None] if labelled else None, cov_type
            )
        )(xc, log_mask)
        return nk, means, cov, prec_chol, lj, ll_rows

    # ------------------------------------------------------------------------------------ new points
    def predict_proba(self, X):
        r"""Posterior predictive probability of each component for new, unlabelled points.

        For kept draw :math:`s` a new point joins component :math:`k` with weight
        :math:`\frac{n_k + a}{n + K a}\,t_k(x)`, :math:`t_k` the NIW Student-t predictive of the component's
        points (weights and parameters integrated out); the draws are summed with these weights
        (:func:`ppclust.predictive.cluster_probabilities`; the components are identified by their classes,
        so no relabelling).

        Parameters
        ----------
        X : array-like of shape (m, d)
            New points.

        Returns
        -------
        ndarray of shape (m, n_clusters)
            Rows sum to 1.

        Examples
        --------
        >>> import numpy as np
        >>> from ppclust import BayesianSemiSupervisedGMM
        >>> rng = np.random.default_rng(0)
        >>> X = np.concatenate([rng.normal(0, 1, (20, 2)), rng.normal(6, 1, (20, 2))])
        >>> gmm = BayesianSemiSupervisedGMM(2, n_draws=10, n_warmup=10, n_chains=1, random_state=0,
        ...                                 progress_bar=False).fit(X)
        >>> float(gmm.predict_proba([[0.0, 0.0]]).sum().round(6))
        1.0
        """
        from ppclust import predictive

        return predictive.cluster_probabilities(self._new_point_log_joint(X))

    def predict(self, X):
        """The most probable component of each new point (:meth:`predict_proba`).

        Parameters
        ----------
        X : array-like of shape (m, d)
            New points.

        Returns
        -------
        ndarray of int64 of shape (m,)

        Examples
        --------
        >>> import numpy as np
        >>> from ppclust import BayesianSemiSupervisedGMM
        >>> rng = np.random.default_rng(0)
        >>> X = np.concatenate([rng.normal(0, 1, (20, 2)), rng.normal(6, 1, (20, 2))])
        >>> gmm = BayesianSemiSupervisedGMM(2, n_draws=10, n_warmup=10, n_chains=1, random_state=0,
        ...                                 progress_bar=False).fit(X)
        >>> bool((gmm.predict(X[[0, 30]]) == gmm.labels_[[0, 30]]).all())
        True
        """
        return self.predict_proba(X).argmax(1).astype(np.int64)

    def score_samples(self, X):
        r"""Log posterior predictive density :math:`\log\frac1S\sum_s\sum_k\frac{n_k+a}{n+Ka}t_k(x)` of
        each new point (unlabelled), averaged over the kept draws.

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
        >>> from ppclust import BayesianSemiSupervisedGMM
        >>> rng = np.random.default_rng(0)
        >>> X = np.concatenate([rng.normal(0, 1, (20, 2)), rng.normal(6, 1, (20, 2))])
        >>> gmm = BayesianSemiSupervisedGMM(2, n_draws=10, n_warmup=10, n_chains=1, random_state=0,
        ...                                 progress_bar=False).fit(X)
        >>> s = gmm.score_samples([[0.0, 0.0], [30.0, 30.0]])
        >>> bool(s[0] > s[1])
        True
        """
        from ppclust import predictive

        return predictive.log_density(self._new_point_log_joint(X))

    def sample(self, n_samples=1, *, random_state=None):
        """Points drawn from the posterior predictive: a kept draw, a component by its predictive weight,
        its parameters from their NIW posterior, the point from the Gaussian.

        Parameters
        ----------
        n_samples : int, default=1
            Points to draw.
        random_state : None, int or JAX key, default=None
            Seed.

        Returns
        -------
        X : ndarray of shape (n_samples, d)
        y : ndarray of int64 of shape (n_samples,)
            The component of each point.

        Examples
        --------
        >>> import numpy as np
        >>> from ppclust import BayesianSemiSupervisedGMM
        >>> rng = np.random.default_rng(0)
        >>> X = np.concatenate([rng.normal(0, 1, (20, 2)), rng.normal(6, 1, (20, 2))])
        >>> gmm = BayesianSemiSupervisedGMM(2, n_draws=10, n_warmup=10, n_chains=1, random_state=0,
        ...                                 progress_bar=False).fit(X)
        >>> gmm.sample(3, random_state=0)[0].shape
        (3, 2)
        """
        from ppclust import posterior, predictive

        check_is_fitted(self, "means_")
        K, a = int(self._n_clusters), float(self.weight_concentration)
        xc = self.posterior_["observed_data"]["x"].values - self._shift
        draws = posterior.partition_draws(self.posterior_).reshape(-1, xc.shape[0])
        k_pick, k_pts = jax.random.split(as_key(random_state))
        pick = np.asarray(jax.random.randint(k_pick, (int(n_samples),), 0, draws.shape[0]))
        out, lab = np.empty((int(n_samples), xc.shape[1])), np.empty(int(n_samples), np.int64)
        with x64():
            for s in np.unique(pick):
                rows = np.flatnonzero(pick == s)
                stats = self._predictive_family.stats(jnp.asarray(xc), jnp.asarray(draws[s]), K)
                log_w = jnp.log(stats.n + a)
                x, slot = predictive.sample_points(
                    jax.random.fold_in(k_pts, int(s)), self._predictive_family, stats, log_w, len(rows)
                )
                out[rows], lab[rows] = x + self._shift, slot
        return out, lab

    def compute_log_likelihood(self):
        r"""Pointwise log-likelihood of every point and draw, stored as the ``log_likelihood`` group of
        ``posterior_`` (what ``az.loo`` and ``az.compare`` read).

        ``fit`` does not compute it (O(draws n K d^2), more than the sampling at large n); call this
        method first, then ``az.loo(gmm.posterior_)``. A second call returns the stored group.

        Returns
        -------
        xarray.DataTree
            ``posterior_["log_likelihood"]``, variable ``x`` of shape (chain, draw, n):
            :math:`\log p(x_i, y_i \mid x_{-i}, z^{(s)}_{-i})`, the leave-one-out predictive of the point
            and its label with its own component summed out, :math:`\log\sum_k p(z_i = k \mid z_{-i})\,
            p(y_i \mid k)\, t_k(x_i)` (:func:`ppclust.posterior.loo_log_predictive`, with the label term
            as the point's log prior over components), on the centred features the sampler saw.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        Examples
        --------
        >>> import numpy as np
        >>> from ppclust import BayesianSemiSupervisedGMM
        >>> rng = np.random.default_rng(0)
        >>> X = np.concatenate([rng.normal(0, 1, (20, 2)), rng.normal(6, 1, (20, 2))])
        >>> gmm = BayesianSemiSupervisedGMM(2, n_draws=10, n_warmup=10, n_chains=1, random_state=0,
        ...                                 progress_bar=False).fit(X)
        >>> "log_likelihood" in gmm.posterior_.children
        False
        >>> gmm.compute_log_likelihood()["x"].shape
        (1, 10, 40)
        """
        from ppclust import posterior

        check_is_fitted(self, "means_")
        xc, links, family, prior, kw = self._loglik_inputs
        return posterior.add_log_likelihood(
            self.posterior_, self.samples_.labels, xc, links, family, prior, **kw
        )

    def _new_point_log_joint(self, X):
        """(S, m, K) log joints of new points under every kept draw (:mod:`ppclust.predictive`)."""
        from ppclust import posterior, predictive

        check_is_fitted(self, "means_")
        X = validate_X(self, X, reset=False)
        K = int(self._n_clusters)
        xc = self.posterior_["observed_data"]["x"].values - self._shift
        draws = posterior.partition_draws(self.posterior_).reshape(-1, xc.shape[0])
        with x64():
            return predictive.draws_log_joint(
                self._predictive_family,
                xc,
                draws,
                float(self.weight_concentration) * K,
                X - self._shift,
                partition="finite",
                n_slots=K,
            )

    def _ll_n(self, X):
        # bic / aic: the plug-in mixture at the posterior means (the model's parameter count applies to it)
        check_is_fitted(self, "means_")
        if X is None:
            return self.log_likelihood_, self._n_train
        s = _SemiSupervisedGMMBase.score_samples(self, X)
        return float(s.sum()), len(s)

    def _gibbs_datatree(self, key, X, xc, family, res, z, loss, psm, log_mask, g, a, codes):
        r"""ArviZ DataTree of the Gibbs run: label-invariant draws of this model (:mod:`ppclust.posterior`).

        ``posterior``: ``n_clusters`` (occupied components), ``weights_sorted`` (component weights drawn
        from their conditional :math:`\pi \mid z \sim \mathrm{Dir}(a + n_1, \dots, a + n_K)`, sorted in
        decreasing order) and, when ``label_noise > 0``, ``label_noise_rate`` (the share of labelled points
        whose component belongs to another class); ``sample_stats``: ``lp``; ``observed_data``: ``x``
        and ``y``; ``log_likelihood`` only after :meth:`compute_log_likelihood`.
        """
        from ppclust import partition, posterior
        from ppclust.models.tvclust import TVClustPrior, make_links

        n, K = X.shape[0], int(self._n_clusters)
        lab = np.asarray(res.labels)
        sizes = (lab[..., None] == np.arange(K)).sum(-2).astype(float)  # (chain, draw, K)
        with x64():
            w = jax.random.dirichlet(jax.random.fold_in(key, 0xD1), jnp.asarray(sizes + a))
        # what compute_log_likelihood needs (fit does not compute the pointwise log-likelihood)
        self._loglik_inputs = (
            xc,
            make_links(n),
            family,
            TVClustPrior(alpha=a * K),
            dict(pq="fixed", p=0.9, q=0.9, partition="finite", point_logprior=log_mask),
        )
        post = {"n_clusters": res.n_clusters, "weights_sorted": -np.sort(-np.asarray(w), axis=-1)}
        codes = np.asarray(codes)
        if self.label_noise > 0 and np.any(codes >= 0):
            lab_pts = codes >= 0
            post["label_noise_rate"] = (g[lab[..., lab_pts]] != codes[lab_pts]).mean(-1)
        ball = partition.credible_ball(partition.canonical_labels(z), lab, loss)
        clustering = {"point_estimate": (("obs",), z)}
        for name, bound in ball.bounds().items():
            if name != "estimate":
                clustering[f"ball_{name}"] = (("obs",), bound)
        if psm is not None:
            clustering["psm"] = (("obs", "obs_bis"), psm)
        self.credible_ball_ = ball
        self.expected_loss_ = partition.expected_loss(z, lab, loss)
        attrs = {f"param_{k}": v for k, v in self.get_params().items() if k != "random_state"}
        attrs.update(
            model="semi-supervised Gaussian mixture, K labelled components, Dirichlet weights "
            "integrated out, NIW prior (ppclust.families.mixture_niw_prior on centred data)",
            sampler="collapsed Gibbs over assignments (ppclust.inference.gibbs.sample, finite)",
            weight_concentration=a,
            niw_kappa0=float(family.kappa0),
            niw_nu0=float(family.nu0),
            component_classes=np.asarray(g),
            classes=np.asarray(self.classes_),
            pointwise_log_likelihood="log p(x_i, y_i | x_-i, z_-i): leave-one-out predictive, own "
            "component summed out (ppclust.posterior.loo_log_predictive); "
            "BayesianSemiSupervisedGMM.compute_log_likelihood()",
            point_estimate_loss=loss,
            expected_loss=self.expected_loss_,
            credible_ball_radius=ball.epsilon,
        )
        return posterior.build_datatree(
            post,
            sample_stats={"lp": res.log_joint},
            observed_data={"x": X, "y": codes},
            clustering=clustering,
            attrs=attrs,
            dims={"x": ["obs", "feature"], "y": ["obs"], "weights_sorted": ["rank"]},
            partition_draws=lab,
        )


def _ssgmm_ll(x, params, log_mask, cov_type):
    return ssgmm_log_likelihood(x, params.weights, params.means, params.prec_chol, log_mask, cov_type)


def _component_labels(draws, point, K):
    """Component (slot) of each point for the partition ``point``: its clusters matched one-to-one to the
    components (Hungarian, maximising the posterior co-assignment mass, so labelled points keep their
    class's components), or, when it has more clusters than components, the draw closest to it in VI."""
    from scipy.optimize import linear_sum_assignment

    from ppclust import partition

    k_est = int(point.max()) + 1
    if k_est <= K:
        mass = np.zeros((k_est, K))
        for row in draws:
            np.add.at(mass, (point, row), 1.0)
        r, c = linear_sum_assignment(mass, maximize=True)
        slot = np.empty(k_est, np.int32)
        slot[r] = c
        return slot[point]
    d = partition.losses_to_draws(point, draws, "vi")
    return draws[int(np.argmin(d))].astype(np.int32)
