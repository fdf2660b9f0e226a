"""Defaults that follow the data: the semi-supervised GMM's number of components from the labels, RDP-means'
link weights relative to the data's scale and able to open a cluster, CEC-IB's start choice."""

from __future__ import annotations

import numpy as np
import pytest

from ppclust import BayesianSemiSupervisedGMM, SemiSupervisedGMM
from ppclust.errors import PPClustError


def _blobs(k, per=15, seed=0):
    rng = np.random.default_rng(seed)
    truth = np.repeat(np.arange(k), per)
    centres = rng.normal(0, 8, size=(k, 2))
    return centres[truth] + rng.normal(size=(k * per, 2)), truth


@pytest.mark.parametrize(
    "make",
    [
        lambda: SemiSupervisedGMM(covariance_type="spherical", max_iter=20, random_state=0, progress_bar=False),
        lambda: BayesianSemiSupervisedGMM(
            covariance_type="spherical", n_draws=3, n_warmup=3, n_chains=1, random_state=0, progress_bar=False
        ),
    ],
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
