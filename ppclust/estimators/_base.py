"""The contract every ppclust estimator follows: parameter validation, input checks, shared attributes.

Each helper returns a fresh array (inputs are never modified) and raises a
:class:`~ppclust.errors.InvalidInputError` (a ``PPClustError``, ``ValueError`` and ``TypeError``) whose
message names the argument, says what was expected and what was received.
scikit-learn's private parameter-validation API is wrapped here, in one place. The module is kept whole
because it is the one contract every estimator imports: its length is the documentation of each helper.

Parameter validation (one mechanism for every estimator)
--------------------------------------------------------
Each estimator declares ``_parameter_constraints`` (scikit-learn's vocabulary: :class:`Interval`,
:class:`StrOptions`, ``"random_state"``, ``"boolean"``, ``None``) and decorates ``fit`` with
``@fit_context(prefer_skip_nested_validation=True)``, which checks every constructor parameter
*before* ``fit`` reads the data. A bad value raises
:class:`ppclust.errors.InvalidParameterError` (a :class:`~ppclust.errors.PPClustError`, a ``ValueError``,
a ``TypeError`` and a subclass of scikit-learn's ``InvalidParameterError``; its ``parameter`` attribute
holds the name) that names the parameter, the allowed values and the value received, e.g. "The
'gamma' parameter of SMIC must be a float in the range [0.0, inf) or a str among {'auto'}. Got nan
instead." Intervals on reals exclude NaN, and exclude inf unless the bound is closed at infinity.
Checks that need the data (``n_clusters <= n_samples``) stay in ``fit`` after ``check_X``.

One vocabulary
--------------
Parameters: ``n_clusters`` (fixed K, or the starting/maximum K of methods that prune clusters),
``k_max`` (slot capacity of nonparametric methods), ``n_init`` (restarts), ``max_iter`` (iterations,
passes, sweeps or annealing steps), ``tol``, ``random_state``, ``covariance_type``, ``reg_covar`` (the
regulariser added to covariance diagonals), ``init="k-means++"`` (scikit-learn's spelling); samplers:
``n_draws``, ``n_warmup``, ``n_chains``, ``thin``. Every parameter after the first is keyword-only; an
unknown parameter is a ``TypeError``, as in scikit-learn.

Fitted attributes: ``labels_`` (int64, never -1), ``n_clusters_``, ``objective_`` (a float: the quantity
the method optimises, or for samplers the log joint of the point estimate; each class's docstring says
what it is and whether smaller or larger is better), ``objective_trace_`` (per iteration where the method
iterates; per kept draw, shape (n_chains, n_draws), for samplers), ``n_iter_``, ``restart_objectives_``
(one float per restart where ``n_init`` > 1 is possible), ``objective_terms_`` (a dict of floats, where
the objective has named terms), ``means_`` / ``covariances_`` where the model has them. ``fit_predict``
is :class:`ClusterMixin`'s (``fit(X, y, **kwargs).labels_``: ``y`` is side information here) everywhere.

Stopping a fit: SIGINT (Ctrl-C in a script or a terminal, "interrupt kernel" in Jupyter) raises
``KeyboardInterrupt`` from every ``fit`` within about a second, leaves the estimator unfitted (no fitted
attribute) and the process ready for the next fit (:func:`fit_context`).

``devices`` (one meaning everywhere, constraint :data:`DEVICES`)
---------------------------------------------------------------
The devices a fit may use: ``None`` or ``1``, the default device only; ``"all"`` or ``"auto"``
(synonyms), every device JAX sees; an int ``m``, the first ``m`` devices; a list of devices,
exactly those. How they are used depends on the method: DP-means/RDP-means (delayed pass) and the
semi-supervised GMM's EM split the *rows* over the devices (data parallel, sums reduced with
``psum``); CEC-IB and C3L run their ``n_init`` *restarts* on them (with ``"all"``/``"auto"``,
on one device when ``n_init`` is not a multiple of the device count). ``"all"``/``"auto"`` never
fail: where a configuration cannot use several devices (one device present, DP-means' sequential
sweep, ``n_init`` not a multiple of the device count) the fit runs on one device, with the same
result; an explicit int or list that cannot be honoured raises. Results are the same as on one
device (up to summation order for the data-parallel methods).

Side information in cross-validation (metadata routing)
-------------------------------------------------------
Every ``fit`` takes ``partial_labels=`` besides ``y``: **when ``partial_labels`` is given, ``y`` is not
read as side information** and is free to be the ground truth that a scorer compares with (read as
partial labels, it would leak the truth into every fold). Links given as :class:`~ppclust.sideinfo.
RowPairs` (pair indices tied to the rows of ``X``) are sliced with each fold's rows: pairs are
re-indexed to the fold, pairs crossing it are dropped; ``partial_labels`` (length ``n_samples``) and
row-aligned extras (CCIB's ``background``) are sliced like ``X``. With scikit-learn's metadata
routing::

    sklearn.set_config(enable_metadata_routing=True)
    est = RDPMeans().set_fit_request(must_link=True, cannot_link=True, partial_labels=True)
    search = GridSearchCV(est, {"lam_k": [2, 3, 4]}, scoring="adjusted_rand_score")
    search.fit(X, y_true, must_link=RowPairs(ml, n), cannot_link=RowPairs(cl, n),
               partial_labels=y_partial)   # y_partial: -1 = unlabelled (all -1: links only)

Without routing, scikit-learn passes these fit parameters to the estimator directly and slices them
the same way. A plain ``(n_pairs, 2)`` array cannot be re-indexed (it is not row-aligned), so in
cross-validation always wrap links in ``RowPairs``.
"""

from __future__ import annotations

import functools
import os
import warnings
from numbers import Integral, Real
from pathlib import Path

import jax
import numpy as np
import sklearn
from jax.sharding import Mesh
from sklearn import config_context, get_config
from sklearn.base import ClusterMixin as _SklearnClusterMixin
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils._param_validation import InvalidParameterError as _SklearnInvalidParameterError
from sklearn.utils.validation import _check_feature_names, _check_n_features

from ppclust import _devices, _progress
from ppclust._devices import resolve_mesh
from ppclust.errors import (
    AllLabelledWarning,
    ConflictingLinksError,
    DegenerateDataWarning,
    InvalidInputError,
    InvalidParameterError,
    PPClustError,
)
from ppclust.sideinfo import RowPairs, SideInfo, check_labels

__all__ = [
    "ClusterMixin",
    "check_X",
    "validate_X",
    "check_partial_labels",
    "check_links",
    "check_side_info",
    "fit_context",
    "Interval",
    "StrOptions",
    "Integral",
    "Real",
    "InvalidParameterError",
    "POSITIVE_INT",
    "NONNEG_INT",
    "POSITIVE_REAL",
    "NONNEG_REAL",
    "UNIT_OPEN",
    "DEVICES",
    "RANDOM_STATE",
    "data_mesh",
    "restart_devices",
    "LINK_MODELS",
    "link_side_info",
    "data_variance",
    "data_scale",
    "check_data_scale",
    "side_labels",
    "RowPairs",
    "refit_if_singular",
    "OUTSIDE_CALLER",
    "warn_degenerate_data",
    "warn_few_distinct_rows",
]

#: Files a warning about the caller's input skips (``warnings.warn(..., skip_file_prefixes=...)``), so that it
#: points at the user's line whatever the depth of the call inside ppclust and scikit-learn's wrappers.
OUTSIDE_CALLER = tuple(
    {
        str(folder) + os.sep
        for base in (Path(sklearn.__file__).parent, Path(__file__).parent.parent)
        for folder in (base, base.resolve())
    }
)


class ClusterMixin(_SklearnClusterMixin):
    """scikit-learn's cluster mixin whose ``fit_predict`` hands ``y`` to ``fit``.

    scikit-learn's ``ClusterMixin.fit_predict(X, y)`` calls ``fit(X)`` and drops ``y``; for every ppclust
    estimator ``y`` is side information (partial labels), so it must reach ``fit``.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust import SemiSupervisedGMM
    >>> X = np.r_[np.zeros((5, 2)), np.ones((5, 2))] + 0.01 * np.arange(10)[:, None]
    >>> y = np.array([0, -1, -1, -1, -1, 1, -1, -1, -1, -1])
    >>> SemiSupervisedGMM(n_clusters=2, random_state=0).fit_predict(X, y).tolist()
    [0, 0, 0, 0, 0, 1, 1, 1, 1, 1]
    """

    def fit_predict(self, X, y=None, **kwargs):
        """Fit to ``X`` with side information ``y`` and ``kwargs``, and return ``labels_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The data.
        y : array-like of shape (n_samples,), default=None
            Partial labels (``-1`` unlabelled), read by :meth:`fit` as each estimator documents.
        **kwargs : dict
            Further arguments of :meth:`fit` (``must_link``, ``cannot_link``, ``partial_labels`` ...).

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            ``labels_`` after the fit.
        """
        return self.fit(X, y, **kwargs).labels_


def fit_context(*, prefer_skip_nested_validation: bool):
    r"""scikit-learn's ``_fit_context`` raising ppclust's :class:`~ppclust.errors.InvalidParameterError`.

    Every parameter is validated against the estimator's ``_parameter_constraints`` before ``fit`` reads
    the data; a bad value raises :class:`ppclust.errors.InvalidParameterError` (a ``PPClustError`` naming
    the parameter, and a subclass of scikit-learn's class, so both catch it). A fit never clears JAX's
    caches: compiled programs are the user's to keep (solvers pad data to bucketed sizes, so a long session
    of many data sizes compiles a bounded set of programs).

    A fit can be stopped: SIGINT (Ctrl-C in a script or a terminal, "interrupt kernel" in Jupyter) raises
    ``KeyboardInterrupt`` from ``fit`` within about a second (:func:`ppclust._progress.interruptible`),
    leaves the estimator unfitted (every fitted attribute, such as ``labels_``, removed) and the process
    ready for the next fit.

    Parameters
    ----------
    prefer_skip_nested_validation : bool
        scikit-learn's flag: skip the validation of estimators nested in this one's ``fit``.

    Returns
    -------
    callable
        A decorator for ``fit``.

    Examples
    --------
    >>> from sklearn.base import BaseEstimator
    >>> class Est(BaseEstimator):
    ...     _parameter_constraints = {"k": POSITIVE_INT}
    ...     def __init__(self, k=1):
    ...         self.k = k
    ...     @fit_context(prefer_skip_nested_validation=True)
    ...     def fit(self, X):
    ...         return self
    >>> try:
    ...     Est(k=0).fit(None)
    ... except InvalidParameterError as err:
    ...     print(err.parameter)
    k
    """
    sk = _fit_context(prefer_skip_nested_validation=prefer_skip_nested_validation)

    def decorator(fit_method):
        inner = sk(fit_method)

        @functools.wraps(fit_method)
        def wrapper(estimator, *args, **kwargs):
            try:
                with _progress.interruptible():
                    return validated(estimator, *args, **kwargs)
            except KeyboardInterrupt:
                _unfit(estimator)
                raise

        def validated(estimator, *args, **kwargs):
            if get_config()["skip_parameter_validation"]:
                return inner(estimator, *args, **kwargs)
            try:
                estimator._validate_params()
            except _SklearnInvalidParameterError as err:
                if isinstance(err, InvalidParameterError):
                    raise
                raise InvalidParameterError(str(err)) from None
            # validated once; ``inner`` then skips it (and nested validation, as it would anyway)
            with config_context(skip_parameter_validation=True):
                return inner(estimator, *args, **kwargs)

        return wrapper

    return decorator


def _unfit(estimator):
    """Remove ``estimator``'s fitted attributes (scikit-learn's convention: public names ending in ``_``),
    so that an interrupted fit leaves it unfitted rather than half-fitted."""
    for name in [k for k in vars(estimator) if k.endswith("_") and not k.startswith("_")]:
        delattr(estimator, name)


# Reusable constraints (each a list of alternatives, scikit-learn style).
POSITIVE_INT = [Interval(Integral, 1, None, closed="left")]
NONNEG_INT = [Interval(Integral, 0, None, closed="left")]
POSITIVE_REAL = [Interval(Real, 0, None, closed="neither")]  # (0, inf): excludes 0, inf and NaN
NONNEG_REAL = [Interval(Real, 0, None, closed="left")]  # [0, inf): excludes inf and NaN
UNIT_OPEN = [Interval(Real, 0, 1, closed="neither")]
# ppclust's random_state: None, an int seed >= 0, a numpy RandomState / Generator, or a JAX key.
RANDOM_STATE = [
    None,
    Interval(Integral, 0, None, closed="left"),
    np.random.RandomState,
    np.random.Generator,
    jax.Array,
]
DEVICES = [None, StrOptions({"all", "auto"}), Interval(Integral, 1, None, closed="left"), list, tuple, Mesh]


def data_mesh(devices, *, parallel_ok: bool = True):
    r"""``devices`` (see the module docstring) as a 1-D data mesh for the data-parallel solvers, or None.

    Parameters
    ----------
    devices : None, "all", "auto", int or list of devices
        The estimator's ``devices``.
    parallel_ok : bool, default=True
        Whether the configuration can use several devices (e.g. DP-means' sequential sweep cannot).

    Returns
    -------
    jax.sharding.Mesh or None
        ``"all"``/``"auto"`` give every device when there are several and ``parallel_ok``, else None
        (the single-device path); an explicit int ``m >= 2`` or a list of devices is passed on as it is
        (the solver raises if it cannot honour it).

    Examples
    --------
    >>> data_mesh(None) is None
    True
    >>> data_mesh("all", parallel_ok=False) is None
    True
    """
    if isinstance(devices, str):
        if not parallel_ok or len(jax.devices()) < 2:
            return None
        devices = "all"
    return resolve_mesh(devices)


def restart_devices(devices, who: str):
    r"""``devices`` (see the module docstring) in the form the restart-parallel engine takes.

    Parameters
    ----------
    devices : None, "all", "auto" or int
        The estimator's ``devices``; a list of devices is an error (restarts run on the first ``m``).
    who : str
        The estimator's name, for the error message.

    Returns
    -------
    None, "auto" or int

    Examples
    --------
    >>> restart_devices("all", "CECIB")
    'auto'
    >>> restart_devices(2, "C3L")
    2
    """
    if isinstance(devices, str):
        return "auto"  # "all" and "auto" are synonyms; one device when n_init is not a multiple
    if isinstance(devices, (list, tuple)):
        raise InvalidInputError(
            f"{who} runs its restarts on the first m local devices: pass devices=m (an "
            f"int) or 'all', not a list of {len(devices)} devices."
        )
    if devices is not None and not isinstance(devices, (int, np.integer)):
        raise InvalidInputError(
            f"{who}: `devices` must be None, 'all', 'auto' or an int >= 1, got {devices!r}."
        )
    return devices


#: the estimators and algorithms that fit rows spread over processes (:mod:`ppclust.distributed`)
SCALE_OUT = (
    "TVClust (algorithm='subcluster'), SemiSupervisedGMM (EM), DPMeans and RDPMeans (variant='delayed'), "
    "CECIB and C3L (algorithm='batch')"
)


def check_X(X, *, name="X", min_samples=1, min_features=1, dtype=np.float64) -> np.ndarray:
    """Validate a data matrix: a finite, real, 2-D array of shape (n_samples, n_features).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The data.
    name : str, default="X"
        Argument name used in error messages.
    min_samples, min_features : int, default=1
        Smallest accepted number of rows and columns.
    dtype : numpy dtype, default=float64
        dtype of the copy.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), C-contiguous copy in ``dtype``.

    Examples
    --------
    >>> check_X([[1, 2], [3, 4]]).dtype
    dtype('float64')
    >>> try:
    ...     check_X([1.0, 2.0])
    ... except InvalidInputError as err:
    ...     print(str(err).split(",")[0])
    `X` must be 2-D of shape (n_samples
    """
    if X is None:
        raise InvalidInputError(f"`{name}` must be an array of shape (n_samples, n_features), got None.")
    if _devices.is_process_rows(X):
        raise InvalidInputError(
            f"`{name}` holds rows spread over processes (ppclust.distributed.process_rows); this estimator "
            f"or algorithm needs every row in one process. Methods that scale out over processes: "
            f"{SCALE_OUT}."
        )
    if hasattr(X, "tocsr") or hasattr(X, "toarray"):
        raise InvalidInputError(
            f"`{name}` is a sparse matrix; ppclust needs a dense array: pass {name}.toarray()."
        )
    try:
        arr = np.asarray(X)
    except Exception as err:  # ragged lists and the like
        raise InvalidInputError(f"`{name}` could not be converted to an array: {err}") from err
    if arr.dtype.kind == "c":
        raise InvalidInputError(
            f"`{name}` holds complex numbers (dtype {arr.dtype}): Complex data not "
            f"supported; pass the real part ({name}.real) or split real and imaginary "
            "parts into features."
        )
    if arr.dtype == object:  # an object array of numbers is converted, as scikit-learn does
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as err:
            raise InvalidInputError(
                f"`{name}` must hold real numbers; an element of the object array "
                f"could not be converted ({err}); encode categorical features as "
                "numbers first."
            ) from None
    if arr.dtype.kind not in "biuf":
        raise InvalidInputError(
            f"`{name}` must hold real numbers, got dtype {arr.dtype}; encode categorical "
            "features as numbers first."
        )
    if arr.ndim == 1:
        raise InvalidInputError(
            f"`{name}` must be 2-D of shape (n_samples, n_features), got a 1-D array "
            f"of shape {arr.shape}. Reshape your data with {name}.reshape(-1, 1) for "
            f"one feature or {name}.reshape(1, -1) for one sample."
        )
    if arr.ndim != 2:
        raise InvalidInputError(
            f"`{name}` must be 2-D of shape (n_samples, n_features), got shape {arr.shape}."
        )
    if arr.shape[0] < min_samples:
        raise InvalidInputError(
            f"`{name}` has {arr.shape[0]} sample(s) (shape={arr.shape}) while a "
            f"minimum of {min_samples} is required."
        )
    if arr.shape[1] < min_features:
        raise InvalidInputError(
            f"`{name}` has {arr.shape[1]} feature(s) (shape={arr.shape}) while a "
            f"minimum of {min_features} is required."
        )
    out = np.array(arr, dtype=dtype, order="C", copy=True)
    finite = np.isfinite(out)
    if not finite.all():
        r, c = np.argwhere(~finite)[0]
        raise InvalidInputError(
            f"`{name}` contains {int((~finite).sum())} NaN or inf value(s) (first at "
            f"row {r}, column {c}: {out[r, c]}); remove or impute them."
        )
    big = max(float(out.max()), -float(out.min())) if out.size else 0.0  # max |x|, no temporary array
    if big > np.sqrt(np.finfo(np.float64).max):  # every distance, variance and covariance squares values
        r, c = np.argwhere(np.abs(out) == big)[0]
        raise InvalidInputError(
            f"`{name}` has values as large as {out[r, c]:.3g} (row {r}, column {c}): their squares, in "
            "distances and covariances, overflow float64 (max 1.8e308). Standardise it first (e.g. "
            f"sklearn.preprocessing.StandardScaler, or {name} / {name}.std()); ppclust's parameters are "
            "relative to the data's scale."
        )
    return out


def _check_not_underflowing(X, name="X"):
    """Raise when every squared difference of ``X``'s values underflows float64 (data to fit on)."""
    if X.size:  # max |x - mean| per column from the column extremes: no temporary array
        mean = X.mean(0)
        spread = float(np.max(np.maximum(X.max(0) - mean, mean - X.min(0))))
    else:
        spread = 0.0
    if 0.0 < spread < np.sqrt(np.finfo(np.float64).tiny):
        raise InvalidInputError(
            f"`{name}`'s values differ by at most {spread:.3g}: their squared differences, in distances "
            "and covariances, underflow float64 (min 2.2e-308). Standardise it first (e.g. "
            f"sklearn.preprocessing.StandardScaler, or ({name} - {name}.mean(0)) / {name}.std()); "
            "ppclust's parameters are relative to the data's scale."
        )


def validate_X(est, X, *, reset: bool, **kw) -> np.ndarray:
    r""":func:`check_X` plus scikit-learn's bookkeeping of the columns seen in ``fit``.

    ``reset=True`` (in ``fit``) records ``n_features_in_`` and, for a DataFrame with string column
    names, ``feature_names_in_``; ``reset=False`` (``predict`` and friends) checks ``X`` against them:
    a different number of columns is a ``ValueError`` ("X has 3 features, but DPMeans is expecting 4
    features as input."), and permuted, renamed or missing column names warn or raise exactly as
    scikit-learn's own estimators do (``sklearn.utils.validation.validate_data``). In ``fit``, data whose
    values differ so little that every squared difference underflows float64 are an error naming the fix
    (standardise), as :func:`check_X` does for values whose squares overflow.

    Parameters
    ----------
    est : estimator
        Holds (``reset=True``) or is checked against (``reset=False``) the columns seen in ``fit``.
    X : array-like of shape (n_samples, n_features)
        The data.
    reset : bool
        True in ``fit``, False afterwards.
    **kw
        Passed to :func:`check_X`.

    Returns
    -------
    ndarray of shape (n_samples, n_features)

    Examples
    --------
    >>> from sklearn.base import BaseEstimator
    >>> est = BaseEstimator()
    >>> validate_X(est, [[0.0, 1.0]], reset=True).shape, est.n_features_in_
    ((1, 2), 2)
    """
    _check_feature_names(est, X, reset=reset)  # on the raw input: DataFrames carry the names
    arr = check_X(X, **kw)
    _check_n_features(est, arr, reset=reset)
    if reset:
        _check_not_underflowing(arr, kw.get("name", "X"))
    return arr


def check_global_X(est, X, *, name="X", min_samples=1):
    r"""Validate a global array of rows spread over processes (:mod:`ppclust.distributed`) in ``fit``.

    Each process checks only its own rows (:func:`check_X`: real, 2-D, finite, not overflowing) and the
    verdicts are gathered, so every process raises when any process's rows are invalid; no process
    materialises the whole array. Records ``n_features_in_``.

    Parameters
    ----------
    est : estimator
        Receives ``n_features_in_``.
    X : jax.Array of shape (N, n_features)
        From :func:`ppclust.distributed.process_rows`.
    name : str, default="X"
        Argument name used in error messages.
    min_samples : int, default=1
        Smallest accepted number of real rows over all processes.

    Returns
    -------
    X_local : ndarray of shape (n_local, n_features)
        This process's rows, validated (float64).
    layout : ppclust._devices.RowLayout
        The rows per process.
    mean : ndarray of shape (n_features,)
        The mean of all rows (the same on every process).
    variance : float
        :func:`data_variance` of all rows.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.base import BaseEstimator
    >>> from ppclust.distributed import process_rows
    >>> X_local, layout, mean, var = check_global_X(BaseEstimator(), process_rows([[0.0, 0.0], [2.0, 4.0]]))
    >>> layout.n, mean.tolist(), var
    (2, [1.0, 2.0], 2.5)
    """
    if X.ndim != 2:
        raise InvalidInputError(
            f"`{name}` must be 2-D of shape (n_samples, n_features), got shape {X.shape}."
        )
    layout = _devices.layout_of(X)
    local = _devices.local_rows(X, layout)
    err = None
    try:
        local = check_X(local, name=name, min_samples=0)
    except InvalidInputError as e:
        err = e
    bad = np.flatnonzero(_devices.process_gather(np.int8(err is not None)))
    if err is not None:
        raise InvalidInputError(f"process {jax.process_index()}'s rows: {err}") from None
    if bad.size:
        raise InvalidInputError(f"`{name}`: the rows of process {int(bad[0])} are invalid (see its error).")
    if layout.n < min_samples:
        raise InvalidInputError(
            f"`{name}` has {layout.n} sample(s) over all processes; a minimum of {min_samples} is required."
        )
    est.n_features_in_ = int(X.shape[1])
    n = layout.n
    mean = _devices.process_sum(local.sum(0)) / max(n, 1)
    var = float(np.mean(_devices.process_sum(((local - mean) ** 2).sum(0)) / max(n, 1)))
    return local, layout, mean, var if np.isfinite(var) and var > 0 else 1.0


def refit_if_singular(who: str, run, *, reg: float, singular: bool, advice: str, can_jitter: bool = True):
    r"""Run a CEC-type fit (CEC-IB, C3L), regularising the clusters' covariances only where the data need it.

    With ``reg == 0`` the documented jitter ``hartigan.JITTER`` (``1e-6`` x the data's mean variance) is
    used, with a ``UserWarning``, when the data's own covariance is ``singular`` (constant, collinear or
    one-hot features), or, after one unregularised fit, when every restart ended singular (e.g. binary
    features); well-posed data run unregularised.

    Parameters
    ----------
    who : str
        The estimator's name, for messages.
    run : callable
        ``run(reg) -> (cost, result)`` fits with the relative ridge ``reg``; ``cost`` is the best
        restart's (``inf`` when every restart ended with a singular cluster).
    reg : float
        The estimator's ridge (0: automatic).
    singular : bool
        Whether the data's own covariance is singular.
    advice : str
        Ends the error message of a fit still singular.
    can_jitter : bool, default=True
        False: no jitter (nothing to regularise).

    Returns
    -------
    (result, reg_used)

    Raises
    ------
    PPClustError
        When the fit is still singular.

    Examples
    --------
    >>> refit_if_singular("Demo", lambda reg: (1.0, "fit"), reg=0.0, singular=False, advice="")
    ('fit', 0.0)
    """
    from ppclust.inference.hartigan import JITTER

    auto = can_jitter and reg == 0 and singular
    cost, result = run(JITTER if auto else reg)
    if not np.isfinite(cost) and can_jitter and reg == 0 and not auto:
        auto = True  # every restart ended singular: refit once with the jitter
        cost, result = run(JITTER)
    used = JITTER if auto else reg
    if auto:
        warnings.warn(
            f"{who}: the clusters' covariances are singular (constant, collinear, one-hot or "
            f"binary features?); each cluster's scatter was regularised with reg={used:g} x the "
            "data's mean variance (fitted as `reg_`).",
            UserWarning,
            stacklevel=5,
        )
    if not np.isfinite(cost):
        raise PPClustError(
            f"{who}: every restart ended with a singular cluster even with a regularised "
            f"covariance (reg={used:g}); {advice}"
        )
    return result, used


def warn_degenerate_data(who: str, X, n_clusters: int) -> None:
    r"""Warn (:class:`~ppclust.errors.DegenerateDataWarning`) when ``X`` cannot support ``n_clusters``
    full-covariance Gaussian clusters: a column with only two distinct values (binary, boolean), or fewer
    distinct rows than the :math:`K (d + 1)` that K clusters in d dimensions need for non-singular
    covariances.

    A cluster can then hold a single value of a column (zero variance there: an unbounded density), and
    CEC-type fits degenerate (one cluster, the labels ignored) without any numerical error. A constant
    column is left to :func:`refit_if_singular`.

    Parameters
    ----------
    who : str
        The estimator's name, for messages.
    X : ndarray of shape (n_samples, n_features)
        The data.
    n_clusters : int
        The number of clusters the fit starts with.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_degenerate_data("Demo", np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]] * 5), 2)
    >>> print(str(caught[0].message).split(":")[0])
    Demo
    """
    n, d = X.shape
    values = [np.unique(X[:, j]).size for j in range(d)]
    few = [j for j, v in enumerate(values) if v == 2]
    rows = np.unique(X, axis=0).shape[0]
    need = int(n_clusters) * (d + 1)
    if not few and rows >= need:
        return
    why = []
    if few:
        cols = ", ".join(map(str, few[:5])) + (", ..." if len(few) > 5 else "")
        why.append(f"column(s) {cols} take only two distinct values (binary)")
    if rows < need:
        why.append(
            f"X has {rows} distinct row(s), fewer than the {need} that {n_clusters} clusters with full "
            f"covariances in {d} dimensions need"
        )
    warnings.warn(
        f"{who}: {'; '.join(why)}. A cluster can then hold a single value of a feature (zero variance) "
        "and the fit degenerates (e.g. one cluster, the labels ignored). The model is for continuous "
        "features: drop or one-hot-and-reduce (PCA) the binary/few-valued ones, or decrease n_clusters.",
        DegenerateDataWarning,
        skip_file_prefixes=OUTSIDE_CALLER,
    )


def warn_few_distinct_rows(who: str, X, n_clusters: int) -> None:
    r"""Warn (:class:`~ppclust.errors.DegenerateDataWarning`) when ``X`` has fewer distinct rows than
    ``n_clusters``: some components can only share points (or hold none), so the partition says more
    about the start and the labels than about the data. For models whose covariances are regularised
    (a prior, ``reg_covar``), where :func:`warn_degenerate_data`'s stricter count does not apply.

    Parameters
    ----------
    who : str
        The estimator's name, for messages.
    X : ndarray of shape (n_samples, n_features)
        The data.
    n_clusters : int
        The number of components.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_few_distinct_rows("Demo", np.ones((5, 2)), 2)
    >>> print(str(caught[0].message)[:40])
    Demo: X has 1 distinct row(s), fewer tha
    """
    rows = np.unique(X, axis=0).shape[0]
    if rows >= int(n_clusters):
        return
    warnings.warn(
        f"{who}: X has {rows} distinct row(s), fewer than n_clusters={int(n_clusters)} components: some "
        "components can only share points, and the partition reflects the start and the labels, not the "
        "data. Check X (a constant or duplicated input?) or decrease n_clusters.",
        DegenerateDataWarning,
        skip_file_prefixes=OUTSIDE_CALLER,
    )


def data_variance(X) -> float:
    r"""The data's variance unit for relative regularisers.

    :math:`\bar s^2 = \frac1d\sum_j\mathrm{Var}(X_{:j})`, the mean per-feature (biased) variance of
    the rows of ``X``; 1.0 when every feature is constant (nothing to be relative to). A regulariser
    ``r`` given "relative to the data's variance" acts as ``r * data_variance(X)`` in X's units, so
    fitting ``X * c`` gives the same partition as ``X``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        The data.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> data_variance(np.array([[0.0, 0.0], [2.0, 4.0]]))
    2.5
    """
    s2 = float(np.mean(np.var(X, axis=0))) if X.size else 0.0
    return s2 if np.isfinite(s2) and s2 > 0 else 1.0


#: :func:`data_scale`: data whose standard deviation lies in this range are fitted in their own units
SCALE_RANGE = (2.0**-32, 2.0**32)


def _spread(X) -> float:
    """The root mean per-feature variance of ``X``, computed without squaring tiny or huge values."""
    xc = X - X.mean(0) if X.size else X
    m = float(np.max(np.abs(xc))) if X.size else 0.0
    if not (np.isfinite(m) and m > 0):
        return 0.0
    return m * float(np.sqrt(np.mean(np.var(xc / m, axis=0))))


def data_scale(X) -> float:
    r"""A power of two to divide ``X`` by before a fit whose floating-point range the data's scale would
    leave: 1.0 when the data's standard deviation (root mean per-feature variance) lies in
    ``SCALE_RANGE`` (:math:`2^{-32} \dots 2^{32}`), else the power of two nearest it.

    Dividing by a power of two is exact, so a model that is equivariant under scaling (its parameters
    relative to the data's scale) gives the same partition on ``X`` and ``X * c`` for any ``c`` whose
    products stay in float64: determinants and variance floors of the scaled data stay far from underflow
    and overflow. 1.0 for constant data.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        The data.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 1.0], [2.0, 3.0], [4.0, 7.0]])
    >>> data_scale(X), data_scale(X * 1e-150) == 2.0**-497
    (1.0, True)
    """
    sd = _spread(X)
    if sd == 0.0 or SCALE_RANGE[0] <= sd <= SCALE_RANGE[1]:
        return 1.0
    return float(2.0 ** np.round(np.log2(sd)))


def check_data_scale(X, model: str, low: float) -> None:
    r"""Raise :class:`~ppclust.errors.InvalidInputError` naming the data's scale and the fix when the
    standard deviation of ``X`` (root mean per-feature variance) is below ``low``: a model whose fixed
    floors (of a prior's variance, say) would dominate data that small, and that does not rescale them.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        The data.
    model : str
        The estimator's name, for the message.
    low : float
        The smallest standard deviation the model fits in the data's own units.

    Raises
    ------
    InvalidInputError
        When the data's standard deviation is positive and below ``low``.

    Examples
    --------
    >>> import numpy as np
    >>> check_data_scale(np.array([[0.0], [1.0]]), "M", 1e-6)
    >>> try:
    ...     check_data_scale(np.array([[0.0], [1e-9]]), "M", 1e-6)
    ... except ValueError as err:
    ...     print(str(err).split(":")[0])
    `X` has a standard deviation of 5e-10
    """
    sd = _spread(X)
    if 0.0 < sd < low:
        raise InvalidInputError(
            f"`X` has a standard deviation of {sd:.3g}: {model}'s default prior floors variances at an "
            f"absolute size that dominates data below {low:g}, and every point would fall in one "
            "component. Standardise X first (e.g. sklearn.preprocessing.StandardScaler, or "
            "X / X.std()); the partition does not depend on the data's scale."
        )


def side_labels(y, partial_labels):
    r"""The partial labels a ``fit`` uses: ``partial_labels`` when given, else ``y``.

    When ``partial_labels`` is given, ``y`` is only a scoring target (see "Side information in
    cross-validation" in the module docstring). When it is not and ``y`` labels every point (no ``-1``),
    :class:`~ppclust.errors.AllLabelledWarning` says how to pass scoring labels and partial labels
    apart: a ``y`` that labels everything is most often the ground truth that model selection passes
    to a scorer, which would leak into the fit.

    Parameters
    ----------
    y : array-like or None
        ``fit``'s ``y``.
    partial_labels : array-like or None
        ``fit``'s ``partial_labels``.

    Returns
    -------
    array-like or None

    Examples
    --------
    >>> side_labels([0, -1, 1], None)
    [0, -1, 1]
    >>> side_labels([0, 1], [-1, 1])
    [-1, 1]
    """
    if partial_labels is not None:
        return partial_labels
    if y is not None and _labels_every_point(y):
        warnings.warn(
            "`y` labels every point (no -1) and fit(X, y) reads it as partial labels, so the fit is "
            "supervised by all of them. If `y` is the ground truth for scoring (GridSearchCV, "
            "cross_validate), it leaks into every fold: pass the side information apart, "
            "fit(X, y, partial_labels=y_partial) (-1 = unlabelled; all -1 for none), and `y` is only the "
            "scorer's (with metadata routing: est.set_fit_request(partial_labels=True)). To fit on fully "
            "labelled data on purpose, pass partial_labels=y.",
            AllLabelledWarning,
            skip_file_prefixes=OUTSIDE_CALLER,
        )
    return y


def _labels_every_point(y) -> bool:
    try:
        arr = np.asarray(y)
    except Exception:  # noqa: BLE001 - not array-like: the labels' validation says so
        return False
    if arr.ndim != 1 or arr.size < 2 or arr.dtype.kind not in "iuf":
        return False
    with np.errstate(invalid="ignore"):
        return bool(np.all(np.isfinite(arr)) and np.all(arr >= 0))


def check_partial_labels(y, n, *, name="y", n_classes=None, allow_none=True) -> np.ndarray | None:
    r"""Validate partial labels: integers in ``{-1, 0, 1, ...}`` of length ``n`` (``-1`` = unlabelled).

    Parameters
    ----------
    y : array-like of shape (n,) or None
        The labels.
    n : int
        Number of points.
    name : str, default="y"
        Argument name used in error messages.
    n_classes : int or None, default=None
        If given, labels must also be ``< n_classes``.
    allow_none : bool, default=True
        Whether ``y=None`` is accepted (returned as None).

    Returns
    -------
    ndarray of shape (n,), int32, or None

    Examples
    --------
    >>> check_partial_labels([0, -1, 1], 3).tolist()
    [0, -1, 1]
    """
    if y is None:
        if allow_none:
            return None
        raise InvalidInputError(f"`{name}` is required: an integer array of length {n} (-1 = unlabelled).")
    lab = check_labels(y, n=n, name=name)
    if n_classes is not None and lab.size and lab.max() >= n_classes:
        k = int(np.argmax(lab >= n_classes))
        raise InvalidInputError(
            f"`{name}` has label {int(lab[k])} at index {k}, but labels must lie in "
            f"[0, n_classes={n_classes}) (or be -1 for unlabelled)."
        )
    return lab


def check_links(
    n, must_link=None, cannot_link=None, *, weight=None, on_conflict="error", hard=False
) -> SideInfo:
    r"""Validate must-link / cannot-link lists into a :class:`~ppclust.sideinfo.SideInfo` (links only).

    Parameters
    ----------
    n : int
        Number of points.
    must_link, cannot_link : array-like of shape (m, 2), RowPairs or None
        Pair lists; a ``SideInfo`` may be passed as ``must_link`` (with ``cannot_link=None``), its ``n``
        must match.
    weight : array-like or None, default=None
        Link weights (default 1).
    on_conflict : {"error", "keep"}, default="error"
        What a pair given with both signs is (:class:`~ppclust.sideinfo.SideInfo`).
    hard : bool, default=False
        Require the links to be consistent as hard constraints (:meth:`SideInfo.check_hard`).

    Returns
    -------
    SideInfo

    Examples
    --------
    >>> check_links(4, must_link=[(0, 1)], cannot_link=[(1, 2)]).n_links
    2
    """
    if isinstance(must_link, SideInfo):
        if cannot_link is not None:
            raise InvalidInputError("pass either a SideInfo as `must_link` or pair lists, not both.")
        side = must_link
        if side.n != n:
            raise InvalidInputError(
                f"the SideInfo passed as `must_link` is for n={side.n} points, but X has n_samples={n}."
            )
    else:
        side = SideInfo.from_links(
            n, must_link=must_link, cannot_link=cannot_link, weight=weight, on_conflict=on_conflict
        )
    if hard:
        side.check_hard()
    return side


def check_side_info(
    n,
    y=None,
    must_link=None,
    cannot_link=None,
    *,
    weight=None,
    on_conflict="error",
    n_classes=None,
    hard=False,
) -> SideInfo:
    r"""Partial labels and links together in one validated :class:`~ppclust.sideinfo.SideInfo`.

    Parameters
    ----------
    n : int
        Number of points.
    y : array-like of shape (n,) or None, default=None
        Partial labels (-1 = unlabelled).
    must_link, cannot_link, weight, on_conflict :
        As :func:`check_links`.
    n_classes : int or None, default=None
        If given, labels must be ``< n_classes``.
    hard : bool, default=False
        As :func:`check_links`.

    Returns
    -------
    SideInfo

    Examples
    --------
    >>> side = check_side_info(3, [0, -1, 1], must_link=[(0, 1)])
    >>> side.n_links, side.n_labelled
    (1, 2)
    """
    lab = check_partial_labels(y, n, n_classes=n_classes)
    links = check_links(n, must_link, cannot_link, weight=weight, on_conflict=on_conflict)
    if links.n_links:
        side = SideInfo.from_pairs(n, links.pairs, links.sign, links.weight, on_conflict="keep", labels=lab)
    else:
        side = SideInfo(n, labels=lab)
    if hard:
        side.check_hard()
    return side


#: What a pair given both as may-link and may-not-link means, per kind of link model: the one place
#: ppclust decides it (``SideInfo``'s ``on_conflict`` for each kind).
#:
#: * ``"soft"``: links are noisy evidence or penalties (TVClust's link likelihood, RDP-means'
#:   :math:`-\xi_1 f^i_k + \xi_2 s^i_k`, Khashabi et al. 2015 eq. 12). Both entries are kept and their
#:   terms add up, so in RDP-means (``xi_ratio=1``) a pair given with weights :math:`w_+` and
#:   :math:`w_-` acts as one link of net weight :math:`w_+ - w_-` (sign included).
#: * ``"hard"``: links are constraints (SMIC's binary M and C, COP-style methods); a contradiction is
#:   a :class:`~ppclust.errors.ConflictingLinksError` naming the first pair.
LINK_MODELS = {"soft": "keep", "hard": "error"}


def link_side_info(
    n, y=None, must_link=None, cannot_link=None, *, link_model="hard", max_label_pairs=None, seed=0
) -> SideInfo:
    r"""Links for the link-based methods (TVClust, RDP-means, SMIC): the given links plus the pairs among
    labelled points of ``y`` (all of them, or ``max_label_pairs`` sampled uniformly).

    The labels themselves are dropped afterwards, so they are not counted twice.

    Parameters
    ----------
    n : int
        Number of points.
    y : array-like of shape (n,) or None, default=None
        Partial labels (-1 = unlabelled); every labelled pair becomes a link.
    must_link, cannot_link : array-like of shape (m, 2), RowPairs or None, default=None
        Given links.
    link_model : {"soft", "hard"}, default="hard"
        Whether a pair given with both signs (also a given link that contradicts two labels) is combined
        or an error (:data:`LINK_MODELS`).
    max_label_pairs : int or None, default=None
        Sample this many label pairs uniformly instead of all.
    seed : int, default=0
        Seeds that sample.

    Returns
    -------
    SideInfo
        Links only (no labels).

    Examples
    --------
    >>> link_side_info(3, [0, 0, 1]).n_links
    3
    """
    if link_model not in LINK_MODELS:
        raise InvalidInputError(f"`link_model` must be one of {tuple(LINK_MODELS)}, got {link_model!r}")
    on_conflict = LINK_MODELS[link_model]
    try:
        side = check_side_info(n, y, must_link, cannot_link, on_conflict=on_conflict)
        if side.labels is not None and side.n_labelled > 1:
            return side.links_from_labels(max_pairs=max_label_pairs, seed=seed, on_conflict=on_conflict)
    except ConflictingLinksError as err:  # say it in the estimator's terms (it has no on_conflict)
        via = "" if y is None else ", counting the pairs implied by the labels `y`"
        truth = (
            " If `y` is the ground truth for scoring (GridSearchCV), pass the side information apart: "
            "fit(X, y, partial_labels=...) with -1 for unlabelled points (all -1 for links only)."
            if y is not None and _labels_every_point(y)
            else ""
        )
        raise ConflictingLinksError(
            f"{err.n_pairs} pair(s) are given both as may-link (+1) and may-not-link (-1){via} (first: "
            f"{err.first}); this method treats links as hard constraints. Remove the contradiction, or "
            f"use a method that models noisy links (TVClust, RDPMeans), where both signs combine.{truth}",
            n_pairs=err.n_pairs,
            first=err.first,
        ) from None
    if side.labels is not None and side.n_links:
        side = SideInfo.from_pairs(n, side.pairs, side.sign, side.weight, on_conflict="keep")
    elif side.labels is not None:
        side = SideInfo(n)
    return side
