"""Every estimator fitted on ``X``, ``X * 1e-6`` and ``X * 1e6`` gives the same partition (ARI 1).

The eight estimators whose models were already relative to the data's scale are fitted at 1e-6 ... 1e6 by
``tests/estimators/test_scale.py`` (its ``CASES``); this file covers what that one leaves out, RDP-means
with links and with partial labels at its default link weights (``xi0`` relative to the data's variance,
``xi_max="auto"`` relative to ``lam``), and checks that the two files together cover every registered
estimator. An absolute link weight (``xi0`` in the data's squared units) fails here: at 1e-6 the links
swamp the distances, at 1e6 they vanish.

Far from unit scale (1e-150, 1e150) the semi-supervised GMM's EM fits X divided by a power of two near
its scale (the same partition), its Gibbs twin says the data's scale and the fix, and data whose squared
differences underflow float64 are an error naming the fix for every estimator.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from ppclust import BayesianSemiSupervisedGMM, RDPMeans, SemiSupervisedGMM
from ppclust._registry import METHODS
from ppclust.errors import InvalidInputError
from ppclust.estimators._base import data_scale, data_variance
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


# --- far from unit scale: 1e-150 and 1e150 -----------------------------------------------------------


def test_data_scale_is_one_in_range_and_the_nearest_power_of_two_outside():
    X, *_ = _data()
    assert data_scale(X) == data_scale(X * 1e-9) == data_scale(X * 1e9) == 1.0
    sd = float(np.sqrt(np.mean(np.var(X, axis=0))))
    for c in (1e-150, 1e150, 2.0**-40):
        s = data_scale(X * c)
        assert s == 2.0 ** np.round(np.log2(sd * c))  # a power of two: dividing by it is exact
        np.testing.assert_array_equal((X * c) / s * s, X * c)
    assert data_scale(np.ones((5, 2)) * 1e-200) == 1.0  # constant data: nothing to scale by


@pytest.mark.parametrize("c", [1e-150, 1e150])
def test_semi_supervised_gmm_em_is_scale_invariant_far_from_unit_scale(c):
    """EM runs on X divided by a power of two near its scale: at 1e-150 the default prior's variance floor
    and the covariances' determinants would otherwise leave float64's range (one component for all)."""
    X, ml, cl, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = SemiSupervisedGMM(n_init=2, random_state=0).fit(X, y)
        est = SemiSupervisedGMM(n_init=2, random_state=0).fit(X * c, y)
    assert ref.n_clusters_ == 4
    np.testing.assert_array_equal(est.labels_, ref.labels_)
    np.testing.assert_allclose(est.means_, ref.means_ * c, rtol=1e-6)
    np.testing.assert_allclose(est.covariances_, ref.covariances_ * c * c, rtol=1e-6)
    np.testing.assert_allclose(est.predict_proba(X * c), ref.predict_proba(X), atol=1e-8)
    np.testing.assert_allclose(est.reg_covar_, ref.reg_covar_ * c * c, rtol=1e-12)
    # a density of X * c is that of X times c**-d per point
    shift = X.size * np.log(c)
    np.testing.assert_allclose(est.log_likelihood_, ref.log_likelihood_ - shift, rtol=1e-9)
    np.testing.assert_allclose(est.score(X * c), ref.score(X) - X.shape[1] * np.log(c), rtol=1e-9)


def test_bayesian_gmm_far_below_unit_scale_is_an_error_naming_the_scale_and_the_fix():
    X, *_ = _data()
    with pytest.raises(InvalidInputError, match=r"standard deviation of .*Standardise X first"):
        BayesianSemiSupervisedGMM(3, n_draws=2, n_warmup=2, n_chains=1).fit(X * 1e-150)


@pytest.mark.parametrize("name", sorted(METHODS))
def test_data_whose_squared_differences_underflow_are_an_error_naming_the_fix(name):
    X, *_ = _data()
    with pytest.raises(InvalidInputError, match=r"differ by at most .*underflow.*Standardise"):
        METHODS[name].load()().fit(X * 1e-300)
