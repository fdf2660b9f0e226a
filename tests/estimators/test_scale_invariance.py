"""Every estimator fitted on ``X``, ``X * 1e-6`` and ``X * 1e6`` gives the same partition (ARI 1).

The eight estimators whose models were already relative to the data's scale are fitted at 1e-6 ... 1e6 by
``tests/estimators/test_scale.py`` (its ``CASES``); this file covers what that one leaves out, RDP-means
with links and with partial labels at its default link weights (``xi0`` relative to the data's variance,
``xi_max="auto"`` relative to ``lam``), and checks that the two files together cover every registered
estimator. An absolute link weight (``xi0`` in the data's squared units) fails here: at 1e-6 the links
swamp the distances, at 1e6 they vanish.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from ppclust import RDPMeans
from ppclust._registry import METHODS
from ppclust.estimators._base import data_variance
from tests.estimators.test_scale import CASES
from tests.estimators.test_scale import SCALES as SCALES_THERE

SCALES = (1e-6, 1e6)


def _data():
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0], [4.0, 4.0]])
    truth = np.repeat(np.arange(4), 15)
    X = centres[truth] + rng.normal(size=(60, 2))
    pairs = rng.choice(60, size=(90, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    same = truth[pairs[:, 0]] == truth[pairs[:, 1]]
    y = np.where(rng.random(60) < 0.3, truth, -1)
    return X, pairs[same], pairs[~same], y


def test_every_estimator_is_checked_at_every_scale():
    assert set(CASES) | {"rdpmeans"} == set(METHODS)
    assert {1e-6, 1e6} <= set(SCALES_THERE)


@pytest.mark.parametrize("side", ["links", "labels"])
def test_rdpmeans_default_link_weights_are_relative_to_the_data(side):
    X, ml, cl, y = _data()
    kw = dict(must_link=ml, cannot_link=cl) if side == "links" else dict(y=y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = RDPMeans(random_state=0, max_iter=200).fit(X, **kw)
        assert ref.n_clusters_ >= 2
        for c in SCALES:
            est = RDPMeans(random_state=0, max_iter=200).fit(X * c, **kw)
            assert adjusted_rand_score(ref.labels_, est.labels_) == 1.0, (side, c, est.n_clusters_)
            np.testing.assert_allclose(est.xi0_, 1e-3 * data_variance(X * c), rtol=1e-12)
            np.testing.assert_allclose(est.xi_max_, ref.xi_max_ * c * c, rtol=1e-9)
