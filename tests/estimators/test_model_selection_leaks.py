"""Model selection without leaks: a ``y`` that labels every point, read as partial labels, warns and says
how to pass scoring labels and partial labels apart; SMIC under GridSearchCV works when they are."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ppclust import CECIB, SMIC, SemiSupervisedGMM
from ppclust.errors import AllLabelledWarning
from ppclust.estimators._base import side_labels
from ppclust.sideinfo import RowPairs


def _blobs(n_per=20, seed=0):
    rng = np.random.default_rng(seed)
    truth = np.repeat(np.arange(3), n_per)
    X = np.array([[0.0, 0.0], [5.0, 0.0], [0.0, 5.0]])[truth] + rng.normal(size=(len(truth), 2))
    return X, truth


def _recorded(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [w for w in caught if issubclass(w.category, AllLabelledWarning)]


@pytest.mark.parametrize("y", [[0, 1, 1, 2], np.array([2, 0, 1]), np.array([0.0, 1.0, 1.0])])
def test_a_y_that_labels_every_point_warns(y):
    with pytest.warns(AllLabelledWarning, match=r"partial_labels=y_partial.*set_fit_request"):
        assert side_labels(y, None) is y


@pytest.mark.parametrize(
    ("y", "partial"),
    [([0, -1, 1], None), (None, None), ([0, 1, 1], [0, -1, 1]), ([0, 1, 1], [0, 1, 1]), ([7], None)],
)
def test_partial_labels_or_an_unlabelled_point_do_not_warn(y, partial):
    assert _recorded(lambda: side_labels(y, partial)) == []


@pytest.mark.parametrize(
    "make",
    [lambda: SemiSupervisedGMM(n_clusters=3, random_state=0), lambda: CECIB(n_clusters=3, random_state=0)],
)
def test_fit_with_the_ground_truth_as_y_warns_at_the_callers_line(make):
    X, truth = _blobs()
    got = _recorded(lambda: make().fit(X, truth))
    assert len(got) == 1 and got[0].filename == __file__, [(w.filename, w.lineno) for w in got]
    assert _recorded(lambda: make().fit(X, truth, partial_labels=truth)) == []  # fully labelled on purpose
    partial = np.where(np.arange(len(truth)) % 4 == 0, truth, -1)
    assert _recorded(lambda: make().fit(X, partial)) == []


def test_smic_under_grid_search_with_partial_labels_apart():
    import sklearn
    from sklearn.model_selection import GridSearchCV, KFold

    X, truth = _blobs()
    n = len(X)
    rng = np.random.default_rng(0)
    ij = rng.choice(n, size=(80, 2))
    ij = ij[ij[:, 0] != ij[:, 1]]
    same = (truth[ij[:, 0]] == truth[ij[:, 1]]) ^ (rng.random(len(ij)) < 0.1)  # 10% wrong links
    links = dict(must_link=RowPairs(ij[same], n), cannot_link=RowPairs(ij[~same], n))
    cv = KFold(3, shuffle=True, random_state=0)
    with sklearn.config_context(enable_metadata_routing=True):
        est = SMIC(n_clusters=3, n_neighbors=5, random_state=0).set_fit_request(
            must_link=True, cannot_link=True, partial_labels=True
        )
        search = GridSearchCV(
            est, {"eta": [0.5, 1.0]}, scoring="adjusted_rand_score", cv=cv, error_score="raise"
        )
        with warnings.catch_warnings():
            warnings.simplefilter("error", AllLabelledWarning)  # y is the scorer's only
            search.fit(X, truth, partial_labels=np.full(n, -1), **links)
        assert search.best_score_ > 0.9
        # the leak: y read as labels contradicts the noisy links; the error says how to pass them apart
        search = GridSearchCV(est, {"eta": [1.0]}, scoring="adjusted_rand_score", cv=cv, error_score="raise")
        with (
            pytest.warns(AllLabelledWarning),
            pytest.raises(ValueError, match=r"pass the side information apart"),
        ):
            search.fit(X, truth, **links)
