"""Defaults that follow the data: the semi-supervised GMM's number of components from the labels, RDP-means'
link weights relative to the data's scale and able to open a cluster, CEC-IB's start choice."""

from __future__ import annotations

import numpy as np
import pytest

from ppclust import BayesianSemiSupervisedGMM, SemiSupervisedGMM
from ppclust.errors import PPClustError
from tests._tiers import fast_first


def _blobs(k, per=15, seed=0):
    rng = np.random.default_rng(seed)
    truth = np.repeat(np.arange(k), per)
    centres = rng.normal(0, 8, size=(k, 2))
    return centres[truth] + rng.normal(size=(k * per, 2)), truth


@pytest.mark.parametrize(
    "make",
    fast_first(
        [
            lambda: SemiSupervisedGMM(
                covariance_type="spherical", max_iter=20, random_state=0, progress_bar=False
            ),
            lambda: BayesianSemiSupervisedGMM(
                covariance_type="spherical",
                n_draws=3,
                n_warmup=3,
                n_chains=1,
                random_state=0,
                progress_bar=False,
            ),
        ]
    ),
)
def test_ssgmm_n_clusters_none_is_the_number_of_labelled_classes(make):
    X, truth = _blobs(4)
    y = np.where(np.arange(len(X)) % 5 == 0, truth + 10, -1)  # 4 classes, coded 10..13
    est = make()
    assert est.n_clusters is None
    est.fit(X, y)
    assert est.means_.shape == (4, 2) and est.component_classes_.tolist() == [0, 1, 2, 3]
    assert est.classes_.tolist() == [10, 11, 12, 13]
    y3 = np.where(truth < 3, y, -1)  # the fourth class unlabelled: three components
    assert make().fit(X, y3).means_.shape == (3, 2)
    with pytest.raises(PPClustError, match=r"n_clusters=None.*labels no point"):
        make().fit(X)
    with pytest.raises(PPClustError, match=r"n_clusters=None.*labels no point"):
        make().fit(X, np.full(len(X), -1))


def test_cecib_auto_start_candidates_run_a_fifth_of_the_restarts(monkeypatch):
    """``init="auto"``: the two candidate starts' plain-CEC fits run ``max(1, n_init // 5)`` restarts each,
    the CEC-IB fit all ``n_init`` (a choice at most 2 / 5 of the fit in restarts); an explicit start runs
    one fit of ``n_init``."""
    from ppclust import CECIB
    from ppclust.estimators import cecib as est_module

    calls = []
    real = est_module._cecib.fit

    def recording(*args, **kw):
        calls.append((kw["beta"], kw["init"], kw["n_init"]))
        return real(*args, **kw)

    monkeypatch.setattr(est_module._cecib, "fit", recording)
    X, truth = _blobs(3, per=20)
    y = np.where(np.arange(len(X)) % 4 == 0, truth, -1)
    CECIB(3, n_init=10, max_iter=10, random_state=0, progress_bar=False).fit(X, y)
    assert sorted(calls[:2]) == [(0.0, "k-means++", 2), (0.0, "labels", 2)]
    assert len(calls) == 3 and calls[2][0] > 0 and calls[2][2] == 10
    calls.clear()
    CECIB(3, n_init=10, max_iter=10, init="k-means++", random_state=0, progress_bar=False).fit(X, y)
    assert [c[1:] for c in calls] == [("k-means++", 10)]
