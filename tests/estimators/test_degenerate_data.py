"""No silent result, no unclear error on data CEC-IB and C3L cannot model: binary / few-distinct-valued
features and collinear features warn (``DegenerateDataWarning``), as the semi-supervised GMM does on fewer
distinct rows than components; identical points, more categories than
features and values whose squares overflow are errors that name the data's problem and the fix."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ppclust import C3L, CECIB, DPMeans
from ppclust.errors import DegenerateDataWarning, InvalidInputError, PPClustError

FAST = dict(n_init=1, max_iter=5, random_state=0)


def _two_blobs(n=60, d=3, seed=0):
    rng = np.random.default_rng(seed)
    truth = np.repeat([0, 1], n // 2)
    X = np.array([np.zeros(d), np.full(d, 3.0)])[truth] + rng.normal(size=(n, d))
    y = np.where(rng.random(n) < 0.3, truth, -1)
    return X, y


def _degenerate(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught if issubclass(w.category, DegenerateDataWarning)]


@pytest.mark.parametrize("cls", [CECIB, C3L])
def test_binary_data_warn_and_well_posed_data_do_not(cls):
    X, y = _two_blobs()
    binary = (X > 1.5).astype(float)  # 8 distinct rows in 3 dimensions
    got = _degenerate(lambda: cls(n_clusters=3, **FAST).fit(binary, y))
    assert len(got) == 1 and "take only two distinct values" in got[0] and "8 distinct row(s)" in got[0], got
    assert "decrease n_clusters" in got[0]
    assert _degenerate(lambda: cls(n_clusters=3, **FAST).fit(X, y)) == []


def test_few_distinct_rows_warn_even_without_binary_columns():
    X, y = _two_blobs(d=2)
    few = np.array([[0.0, 0.0], [1.0, 2.0], [2.0, 1.0], [3.0, 3.0], [4.0, 0.5]])[np.arange(60) % 5]
    got = _degenerate(lambda: CECIB(n_clusters=2, **FAST).fit(few, y))
    assert len(got) == 1 and "5 distinct row(s), fewer than the 6 that 2 clusters" in got[0], got


def test_c3l_warns_on_collinear_features_as_cecib_does():
    X, y = _two_blobs()
    collinear = np.c_[X[:, :2], X[:, 0] + X[:, 1]]
    got = _degenerate(lambda: C3L(n_clusters=2, **FAST).fit(collinear, y))
    assert len(got) == 1 and "linear combination of others" in got[0] and "PCA" in got[0], got


def test_c3l_on_identical_points_names_the_data():
    with pytest.raises(PPClustError, match=r"every row of `X` is the same point \(40 copies\)"):
        C3L(n_clusters=2, **FAST).fit(np.ones((40, 3)), partial_labels=np.repeat([0, 1], 20))


def test_c3l_labelled_points_that_coincide_name_the_labels():
    X, _ = _two_blobs(40, 2)
    X[:10] = X[0]
    y = np.full(40, -1)
    y[:5], y[5:10] = 0, 1  # two categories labelled on one and the same point
    with pytest.raises(PPClustError, match=r"labelled points of `y` are all the same point of `X`"):
        C3L(n_clusters=2, **FAST).fit(X, y)


def test_c3l_more_categories_than_features_names_the_counts_and_the_fix():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = np.repeat([0, 1, 2], 20)
    with pytest.raises(
        PPClustError, match=r"`y` has 3 categories but `X` has 2 feature\(s\).*Merge the categories"
    ):
        C3L(n_clusters=3, **FAST).fit(X, partial_labels=y)


@pytest.mark.parametrize("cls", [CECIB, C3L, DPMeans])
def test_values_whose_squares_overflow_name_overflow_and_standardising(cls):
    X, y = _two_blobs()
    with pytest.raises(
        InvalidInputError, match=r"`X` has values as large as .*overflow float64.*Standardise"
    ):
        cls().fit(X * 1e300, y)


def test_semi_supervised_gmm_with_fewer_distinct_rows_than_components_warns():
    """Identical points with labels of two classes: the components can only share the one point, which
    the partition does not show (the labelled points keep their classes); the fit warns, and does not on
    data with enough distinct rows."""
    from ppclust import SemiSupervisedGMM

    X, y = _two_blobs()
    y = np.where(np.arange(len(y)) < 6, np.arange(len(y)) % 2, y)  # both classes labelled
    got = _degenerate(lambda: SemiSupervisedGMM(2, **FAST).fit(np.ones_like(X), partial_labels=y))
    assert len(got) == 1 and "1 distinct row(s), fewer than n_clusters=2" in got[0], got
    assert _degenerate(lambda: SemiSupervisedGMM(2, **FAST).fit(X, partial_labels=y)) == []
