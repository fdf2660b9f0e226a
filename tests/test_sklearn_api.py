"""scikit-learn API conformance of every estimator in ``ppclust._registry.METHODS``.

Running the full ``check_estimator`` suite costs about 100 s per estimator on 2 cores (each check
fits on new shapes, so every fit recompiles the jitted solver), i.e. far beyond this file's 60 s
budget. We run a documented subset, one test per (estimator, check):

* construction / parameters (no fit): cloneable, repr, no attribute set in ``__init__``,
  ``get_params`` invariance, ``set_params``, default-constructible, mixin order, nothing raised
  in ``__init__``/``set_params``, predict before fit raises ``NotFittedError``;
* input validation (raises before any solver runs): NaN/inf rejected;
* fitting: ``fit`` returns ``self``, ``n_features_in_`` set, ``fit`` is idempotent with a fixed
  ``random_state``, ``fit`` does not change public attributes set in ``__init__``.

``EXPECTED_FAILURES`` lists the checks of this subset that do not apply, with the reason. Checks
left out of the subset and known not to apply (from a full ``check_estimator(on_fail=None)`` run):
``check_dtype_object`` / ``check_complex_data`` (ppclust's shared validator ``check_X`` rejects
object and complex arrays with a ``TypeError`` by design, sklearn expects object arrays of
numbers to be converted and complex ones to raise ``ValueError``), ``check_estimators_dtypes`` on
DPMeans with a fixed small ``lam`` (integer-valued random data needs more than ``k_max`` clusters),
and the exact wording sklearn wants in ``check_estimators_empty_data_messages``,
``check_fit2d_predict1d`` and ``check_n_features_in_after_fitting`` (ppclust's messages name the
argument and the shapes but not sklearn's phrases).
"""

from __future__ import annotations

import warnings

import pytest
from sklearn.utils import estimator_checks as ec

from ppclust._registry import METHODS

# Small constructor parameters: every fit in the checks stays cheap. Three clusters because the
# fitting checks pass a y with three classes (used as partial labels).
SMALL = {
    "tvclust": dict(n_samples=5, n_warmup=5, n_chains=1, random_state=0),
    "dpmeans": dict(lam=50.0, max_iter=10, random_state=0),
    "rdpmeans": dict(lam=50.0, max_iter=10, patience=2, random_state=0),
    "ssgmm": dict(n_components=3, covariance_type="diag", max_iter=10, random_state=0),
    "cecib": dict(n_clusters=3, n_init=1, random_state=0),
    "c3l": dict(n_clusters=3, n_init=1, random_state=0),
    "ccib": dict(n_clusters=3, n_init=1, random_state=0),
    "smic": dict(n_clusters=3, n_neighbors=3, gamma=1.0, eta=1.0, random_state=0),
}

NO_FIT = [
    "check_estimator_cloneable",
    "check_estimator_repr",
    "check_no_attributes_set_in_init",
    "check_get_params_invariance",
    "check_set_params",
    "check_parameters_default_constructible",
    "check_mixin_order",
    "check_do_not_raise_errors_in_init_or_set_params",
    "check_estimators_unfitted",
    "check_estimators_nan_inf",
]
FIT = [
    "check_estimators_fit_returns_self",
    "check_n_features_in",
    "check_fit_idempotent",
    "check_dont_overwrite_parameters",
]

# Fitting checks recompile the jitted solvers for every new data shape (5-26 s per check and estimator
# on 2 busy cores, 280 s for all), so in `make test` they run for DPMeans only; for the others they are
# marked slow (`make reproduce`).
FIT_METHODS = ("dpmeans",)

# (method, check) -> reason: checks of this subset that do not apply (non-strict xfail). Float y of
# integral values is accepted as partial labels, and every predict checks it is fitted.
_Y_AS_TARGET = ("the check passes a y of 3 classes with one cluster/component (sklearn sets n_clusters=1 "
                "for it); y is partial labels here, and more classes than clusters is an input error")
EXPECTED_FAILURES: dict[tuple[str, str], str] = {
    ("ssgmm", "check_dont_overwrite_parameters"): _Y_AS_TARGET,
    ("ccib", "check_dont_overwrite_parameters"): _Y_AS_TARGET,
    ("c3l", "check_estimators_fit_returns_self"): (
        "three categories on the check's random data give linearly dependent one-vs-rest hyperplanes; "
        "C3L reports that as an input error (extension beyond the paper, spec section 8)"),
}


def _cases():
    for name in METHODS:
        for check in NO_FIT + FIT:
            marks = [] if check in NO_FIT or name in FIT_METHODS else [pytest.mark.slow]
            if (name, check) in EXPECTED_FAILURES:
                marks.append(pytest.mark.xfail(reason=EXPECTED_FAILURES[name, check], strict=False))
            yield pytest.param(name, check, id=f"{name}-{check}", marks=marks)


def test_subset_covers_every_registered_method():
    assert set(SMALL) == set(METHODS)


@pytest.mark.parametrize("name, check", list(_cases()))
def test_sklearn_check(name, check):
    est = METHODS[name].load()(**SMALL[name])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        getattr(ec, check)(type(est).__name__, est)
