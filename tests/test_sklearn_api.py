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

import numpy as np
import pytest
from sklearn.utils import estimator_checks as ec

from ppclust import RDPMeans
from ppclust._registry import METHODS
from ppclust.sideinfo import SideInfo

# Small constructor parameters: every fit in the checks stays cheap. Three clusters because the
# fitting checks pass a y with three classes (used as partial labels).
SMALL = {
    "tvclust": dict(n_draws=5, n_warmup=5, n_chains=1, k_max=8, random_state=0),
    "dpmeans": dict(lam=50.0, max_iter=10, random_state=0),
    "rdpmeans": dict(lam=50.0, max_iter=10, patience=2, random_state=0),
    "ssgmm": dict(n_clusters=3, covariance_type="diag", max_iter=10, random_state=0),
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


# ---------------------------------------------------------------------------------------------------------
# Cross-validation with side information (issue 16): partial labels as metadata, not y; links re-indexed
# to each fold's rows (RowPairs); pairs crossing a fold dropped.


def _fold_pairs(pairs, rows):
    """Brute force: the pairs with both ends in ``rows``, as positions in ``rows``."""
    where = {int(r): k for k, r in reversed(list(enumerate(rows)))}
    return np.array([(where[i], where[j]) for i, j in pairs if i in where and j in where],
                    dtype=np.int64).reshape(-1, 2)


def test_row_pairs_slice_like_rows():
    from sklearn.utils import _safe_indexing

    from ppclust.sideinfo import RowPairs

    rng = np.random.default_rng(0)
    n = 30
    pairs = rng.choice(n, size=(40, 2), replace=True)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    rp = RowPairs(pairs, n)
    assert len(rp) == n and rp.shape == (n,)
    for rows in (rng.permutation(n)[:17], np.sort(rng.permutation(n)[:12]), np.arange(n)):
        for sub in (rp[rows], rp[rows, ...], _safe_indexing(rp, rows)):
            assert sub.n_samples == len(rows)
            np.testing.assert_array_equal(sub.pairs, _fold_pairs(pairs, rows))
    mask = rng.random(n) < 0.5
    np.testing.assert_array_equal(rp[mask].pairs, _fold_pairs(pairs, np.flatnonzero(mask)))
    np.testing.assert_array_equal(rp[5:20].pairs, _fold_pairs(pairs, np.arange(5, 20)))
    with pytest.raises(ValueError, match="RowPairs for n_samples=30"):
        SideInfo.from_links(29, must_link=rp)


def test_partial_labels_replace_y():
    """With ``partial_labels`` given, ``y`` (the scoring truth) is not read: no leak into the fit."""
    from ppclust import SemiSupervisedGMM

    X, truth = _three_blobs(45)
    kw = dict(n_clusters=3, covariance_type="spherical", max_iter=30, random_state=0)
    none = np.full(len(X), -1)
    blind = SemiSupervisedGMM(**kw).fit(X, truth, partial_labels=none)
    plain = SemiSupervisedGMM(**kw).fit(X)
    told = SemiSupervisedGMM(**kw).fit(X, truth)
    np.testing.assert_array_equal(blind.labels_, plain.labels_)
    np.testing.assert_allclose(blind.means_, plain.means_)
    assert not np.allclose(told.means_, plain.means_)  # y as labels does change the fit


class _Recording(RDPMeans):
    """RDPMeans that records the side information each fit of a search receives."""

    seen: list = []

    def fit(self, X, y=None, *, must_link=None, cannot_link=None, partial_labels=None):
        _Recording.seen.append((np.asarray(X).copy(), must_link, cannot_link, partial_labels, y))
        return super().fit(X, y, must_link=must_link, cannot_link=cannot_link, partial_labels=partial_labels)


def test_grid_search_routes_side_information_per_fold():
    import sklearn
    from sklearn.model_selection import GridSearchCV, KFold

    from ppclust.sideinfo import RowPairs

    X, truth = _three_blobs(45)
    n = len(X)
    rng = np.random.default_rng(1)
    ij = rng.choice(n, size=(60, 2))
    ij = ij[ij[:, 0] != ij[:, 1]]
    same = truth[ij[:, 0]] == truth[ij[:, 1]]
    ml, cl = ij[same], ij[~same]
    partial = np.where(rng.random(n) < 0.2, truth, -1)
    cv = KFold(3, shuffle=True, random_state=0)
    _Recording.seen = []
    with sklearn.config_context(enable_metadata_routing=True):
        est = _Recording(lam=8.0, max_iter=20, patience=2, random_state=0).set_fit_request(
            must_link=True, cannot_link=True, partial_labels=True)
        search = GridSearchCV(est, {"xi0": [1e-3, 1e-1]}, scoring="adjusted_rand_score", cv=cv)
        search.fit(X, truth, must_link=RowPairs(ml, n), cannot_link=RowPairs(cl, n), partial_labels=partial)
    assert np.isfinite(search.best_score_) and search.best_score_ > 0.5
    folds = [train for train, _ in cv.split(X)]
    assert len(_Recording.seen) == 2 * len(folds) + 1  # + the refit on all rows
    for Xf, mlf, clf, pf, yf in _Recording.seen:
        train = next((t for t in folds if len(t) == len(Xf) and np.array_equal(X[t], Xf)), np.arange(n))
        assert isinstance(mlf, RowPairs) and mlf.n_samples == len(train)
        np.testing.assert_array_equal(mlf.pairs, _fold_pairs(ml, train))  # re-indexed, crossing dropped
        np.testing.assert_array_equal(clf.pairs, _fold_pairs(cl, train))
        np.testing.assert_array_equal(pf, partial[train])
        np.testing.assert_array_equal(yf, truth[train])  # y reaches fit, but partial_labels replace it
    assert any(len(s[1].pairs) < len(ml) for s in _Recording.seen[:-1])  # some pairs crossed a fold


def _three_blobs(n):
    rng = np.random.default_rng(0)
    truth = np.repeat(np.arange(3), n // 3)
    X = np.array([[0.0, 0.0], [5.0, 0.0], [0.0, 5.0]])[truth] + rng.normal(size=(len(truth), 2))
    return X, truth
