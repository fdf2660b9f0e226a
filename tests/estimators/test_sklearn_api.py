"""scikit-learn API conformance of every estimator in ``ppclust._registry.METHODS``.

Every check of ``sklearn.utils.estimator_checks`` runs on all eight estimators through
``parametrize_with_checks`` (one test per estimator and check), with small settings (``SMALL``: few
draws, one restart, few iterations). The checks that fit (each at data shapes and dtypes of its own, so
each compiles programs no other test uses) are ``slow`` (``make reproduce``); the fast suite keeps the
checks that raise before any solver runs (``CHEAP``) and ``test_fitted_estimator_contract``, the fitted
contract (fit returns self, params untouched, ``fit_predict`` == ``labels_``, ``n_features_in_``, clone,
pickling, wrong feature count) on one fit per estimator at the shape of ``blobs``, which
``tests/test_architecture.py`` shares. ``EXPECTED_FAILED`` is the documented skip list:
each entry names the check and the reason it does not apply (they run as non-strict xfails).

The recurring reason: ppclust reads ``y`` in ``fit`` as *partial labels* (DESIGN: ``-1`` = unlabelled),
while several checks set ``n_clusters=1`` (or 2) and pass a ``y`` with three classes. For the estimators
whose labels must fit in ``n_clusters`` (semi-supervised GMM: one component per class at least; CCIB:
labels are cluster indices) that is an input error, raised as a ``ValueError`` naming ``y`` and
``n_clusters``. The property those checks test (``predict`` invariant to sample order and subsets) is
tested directly below (``test_predict_sample_order_and_subset_invariance``).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from ppclust import RDPMeans
from ppclust._registry import METHODS
from ppclust.sideinfo import SideInfo

# Small constructor parameters: every fit in the checks stays cheap. Three clusters because the
# fitting checks pass a y with three classes (used as partial labels).
SMALL = {
    "tvclust": dict(n_draws=3, n_warmup=3, n_chains=1, init_clusters=3, random_state=0),
    "dpmeans": dict(lam_k=3, max_iter=10, random_state=0),
    "rdpmeans": dict(lam_k=3, max_iter=10, patience=2, random_state=0),
    "ssgmm": dict(n_clusters=3, covariance_type="diag", max_iter=10, random_state=0),
    "bayesian-ssgmm": dict(
        n_clusters=3, covariance_type="diag", n_draws=3, n_warmup=3, n_chains=1, random_state=0
    ),
    "cecib": dict(n_clusters=3, n_init=1, max_iter=5, random_state=0),
    "c3l": dict(n_clusters=3, n_init=1, max_iter=5, random_state=0),
    "ccib": dict(n_clusters=3, n_init=1, max_iter=10, max_inner=20, random_state=0),
    "smic": dict(n_clusters=3, n_neighbors=3, gamma=1.0, eta=1.0, random_state=0),
}

_Y_CLASSES = (
    "y is partial labels here: the check sets n_clusters={k} and passes a y with more classes, an "
    "input error (ValueError naming y and n_clusters); predict's invariance is tested below"
)
_Y_SUBSETS = {
    "check_dont_overwrite_parameters": _Y_CLASSES.format(k=1),
    "check_methods_sample_order_invariance": _Y_CLASSES.format(k=2),
    "check_methods_subset_invariance": _Y_CLASSES.format(k=1),
    "check_fit2d_1sample": _Y_CLASSES.format(k=1),
    "check_fit2d_1feature": _Y_CLASSES.format(k=1),
    "check_fit2d_predict1d": _Y_CLASSES.format(k=1),
    "check_dtype_object": _Y_CLASSES.format(k=3),  # its y has four classes
}
_C3L_NO_Y = (
    "C3L's model is defined by side information (a decision hyperplane from two label categories y, or "
    "hyperplane=); the check fits without any, which is an input error (PPClustError naming both ways to "
    "give it), not a clustering to score"
)
# method -> {check: reason}: the documented skip list (non-strict xfail).
EXPECTED_FAILED: dict[str, dict[str, str]] = {
    "ssgmm": {k: v for k, v in _Y_SUBSETS.items() if k != "check_fit2d_1sample"},
    "bayesian-ssgmm": {k: v for k, v in _Y_SUBSETS.items() if k != "check_fit2d_1sample"},
    "ccib": dict(_Y_SUBSETS),
    "c3l": {"check_clustering": _C3L_NO_Y},  # both variants (readonly_memmap=True too)
}


def _expected_failed(estimator):
    name = next(n for n, info in METHODS.items() if info.load() is type(estimator))
    return EXPECTED_FAILED.get(name, {})


def test_small_settings_cover_every_registered_method():
    assert set(SMALL) == set(METHODS)
    assert set(EXPECTED_FAILED) <= set(METHODS)


# Cost. A fit on a new data shape compiles the jitted solver for that shape (a repeat fit on the same shape
# takes milliseconds); each fitting check fits on its own shapes and dtypes, so the checks cost what the
# compiles cost: about a minute per check and estimator on the loaded 2-core machine with a cold cache. So
# the fitting checks are ``slow`` (make reproduce runs them all); the fast suite runs CHEAP (the checks that
# raise before any solver runs) and test_fitted_estimator_contract below. The fitting checks of the five
# heavier estimators sit in tests/estimators/test_sklearn_checks_samplers.py (TVClust, CCIB),
# tests/estimators/test_sklearn_checks_hartigan.py (CECIB, C3L) and
# tests/estimators/test_sklearn_checks_bayesian_ssgmm.py, so that pytest-xdist spreads them over workers.
HEAVY_METHODS = ("tvclust", "cecib", "c3l", "ccib", "bayesian-ssgmm")
CHEAP = {
    "check_estimator_tags_renamed",
    "check_valid_tag_types",
    "check_estimator_repr",
    "check_no_attributes_set_in_init",
    "check_estimators_unfitted",
    "check_do_not_raise_errors_in_init_or_set_params",
    "check_mixin_order",
    "check_estimator_sparse_tag",
    "check_estimator_sparse_array",
    "check_estimator_sparse_matrix",
    "check_complex_data",
    "check_estimators_empty_data_messages",
    "check_parameters_default_constructible",
    "check_get_params_invariance",
    "check_set_params",
    "check_fit1d",
    "check_array_api_input",
    "check_estimators_partial_fit_n_features",
}


def checks_for(names, heavy_fitting: bool):
    """``parametrize_with_checks`` over the estimators ``names``, with the documented skip list; for
    HEAVY_METHODS only their CHEAP checks (``heavy_fitting=False``) or only their fitting checks (True)."""
    from sklearn.utils.estimator_checks import _check_name

    parametrize = parametrize_with_checks(
        [METHODS[name].load()(**SMALL[name]) for name in names], expected_failed_checks=_expected_failed
    )
    mark = parametrize.mark
    cases = []
    for case in mark.args[1]:
        values, marks = (case.values, list(case.marks)) if hasattr(case, "values") else (case, [])
        estimator, check = values
        name = next(n for n, info in METHODS.items() if info.load() is type(estimator))
        if name in HEAVY_METHODS and (_check_name(check) in CHEAP) == heavy_fitting:
            continue
        if _check_name(check) not in CHEAP:
            marks.append(pytest.mark.slow)
        cases.append(pytest.param(estimator, check, marks=marks))
    return pytest.mark.parametrize(mark.args[0], cases, **mark.kwargs)


def run_check(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


@checks_for(list(METHODS), heavy_fitting=False)
def test_sklearn_estimator_checks(estimator, check):
    run_check(estimator, check)


# One fit per estimator at the shape of the ``blobs`` fixture with the SMALL settings, shared by
# test_fitted_estimator_contract and tests/test_architecture.py (a worker that runs both fits once).
_SMALL_FITS: dict = {}


def small_fit(method, blobs):
    """``(estimator, returned, X, y, kw)``: ``METHODS[method]`` with ``SMALL[method]`` fitted once per process
    on ``blobs`` (partial labels; C3L's two categories, CCIB's background), and what ``fit`` returned. Read
    only: callers must not refit or mutate it."""
    if method not in _SMALL_FITS:
        X, y, kw = blobs.X.copy(), blobs.partial_labels.copy(), {}
        if method == "c3l":
            y = np.where(y == 2, 1, y)  # two categories
        if method == "ccib":
            kw["background"] = blobs.labels % 2
        est = METHODS[method].load()(**SMALL[method])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            returned = est.fit(X, y, **kw)
        _SMALL_FITS[method] = (est, returned, X, y, kw)
    return _SMALL_FITS[method]


@pytest.mark.parametrize("method", sorted(SMALL))
def test_fitted_estimator_contract(method, blobs):
    """The scikit-learn contract of a fitted estimator, at a shape the suite compiles anyway: what
    check_estimators_fit_returns_self, check_dont_overwrite_parameters / check_estimators_overwrite_params,
    check_fit_idempotent / check_clustering (fit_predict == labels_), check_n_features_in_after_fitting,
    check_fit_check_is_fitted, check_estimators_pickle and the feature-count errors of check_fit2d_predict1d
    test (those run in full under ``slow``)."""
    import pickle

    from sklearn.base import clone
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    est, returned, X, y, kw = small_fit(method, blobs)
    assert returned is est
    np.testing.assert_array_equal(X, blobs.X)  # fit does not write into X
    fresh = METHODS[method].load()(**SMALL[method])
    assert est.get_params() == fresh.get_params()  # fit leaves the parameters alone
    check_is_fitted(est)
    assert est.n_features_in_ == X.shape[1]
    labels = np.asarray(est.labels_)
    assert labels.shape == (len(X),) and np.issubdtype(labels.dtype, np.integer)
    unfitted = clone(est)
    assert unfitted.get_params() == est.get_params()
    with pytest.raises(NotFittedError):
        check_is_fitted(unfitted)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(unfitted.fit_predict(X, y, **kw), labels)  # same seed, same labels
    back = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(back.labels_, labels)
    if hasattr(est, "predict"):
        np.testing.assert_array_equal(back.predict(X, **kw), est.predict(X, **kw))
        with pytest.raises(ValueError, match="features"):
            est.predict(np.hstack([X, X[:, :1]]), **kw)


@pytest.mark.parametrize("name", ["ssgmm", "bayesian-ssgmm", "ccib"])
def test_predict_sample_order_and_subset_invariance(name, blobs):
    """What check_methods_sample_order/subset_invariance test, with partial labels that fit n_clusters (the
    shared fit of ``small_fit``)."""
    est, *_, kw = small_fit(name, blobs)
    Xt = np.random.default_rng(3).uniform(-2, 10, size=(20, 2))
    background = np.arange(20) % 2  # CCIB's fit had a background: predict reads one per row

    def call(method, rows):
        extra = {"background": background[rows]} if "background" in kw else {}
        return getattr(est, method)(Xt[rows], **extra)

    idx = np.random.default_rng(4).permutation(20)
    for method in ("predict", "predict_proba", "score_samples"):
        if hasattr(est, method):
            full = call(method, np.arange(20))
            np.testing.assert_allclose(full[idx], call(method, idx), atol=1e-9, err_msg=method)
            for part in np.array_split(np.arange(20), 3):
                np.testing.assert_allclose(full[part], call(method, part), atol=1e-9, err_msg=method)


def test_feature_names_in_and_permuted_columns_warn(blobs):
    pd = pytest.importorskip("pandas")
    from ppclust import DPMeans

    X = blobs.X  # the shared fit's data and settings: no programs of its own
    df = pd.DataFrame(X, columns=["a", "b"])
    est = DPMeans(**SMALL["dpmeans"]).fit(df)
    assert list(est.feature_names_in_) == ["a", "b"] and est.n_features_in_ == 2
    np.testing.assert_array_equal(est.predict(df), est.labels_)
    with pytest.raises(ValueError, match="feature names should match"):
        est.predict(df[["b", "a"]])
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        est.predict(X)
    with pytest.raises(ValueError, match="X has 3 features, but DPMeans is expecting 2 features"):
        est.predict(np.hstack([X, X[:, :1]]))


# ---------------------------------------------------------------------------------------------------------
# Cross-validation with side information: partial labels as metadata, not y; links re-indexed
# to each fold's rows (RowPairs); pairs crossing a fold dropped.


def _fold_pairs(pairs, rows):
    """Brute force: the pairs with both ends in ``rows``, as positions in ``rows``."""
    where = {int(r): k for k, r in reversed(list(enumerate(rows)))}
    return np.array(
        [(where[i], where[j]) for i, j in pairs if i in where and j in where], dtype=np.int64
    ).reshape(-1, 2)


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
    kw = SMALL["ssgmm"]  # the shared fit's settings (diag covariances): the routing, not the model, is tested
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
            must_link=True, cannot_link=True, partial_labels=True
        )
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
