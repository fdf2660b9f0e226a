"""The stability report: runs of one setting agree or are flagged, prior settings are told apart."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import AgglomerativeClustering

from ppclust import DPMeans, TVClust
from ppclust.partition import partition_loss
from ppclust.stability import stability_report

RNG = np.random.default_rng(0)
X = np.r_[RNG.normal(0, 1, (14, 2)), RNG.normal((8, 0), 1, (13, 2)), RNG.normal((0, 8), 1, (13, 2))]
TRUTH = np.repeat([0, 1, 2], [14, 13, 13])
KW = dict(n_draws=40, n_warmup=40, n_chains=2, progress_bar=False, k_max=8)  # as test_tvclust_predict
TWO = np.r_[np.zeros((10, 2)), np.full((10, 2), 6.0)] + np.random.default_rng(0).normal(size=(20, 2))


@pytest.fixture(scope="module")
def converged():
    return stability_report(TVClust(**KW), X, seeds=(0, 1))


def test_two_seeds_of_well_separated_blobs_agree(converged):
    rep = converged
    assert rep.n_clusters.tolist() == [3, 3]
    assert np.allclose(rep.ari, 1.0)
    assert rep.in_ball.all()
    assert rep.stable and rep.verdict.startswith("stable"), rep.verdict
    assert rep.r_hat <= 1.1 and rep.r_hat == rep.r_hat_setting[0]
    for i, est in enumerate(rep.estimators):
        k = est.posterior_["posterior"]["n_clusters"].values
        assert rep.k_mean[i] == pytest.approx(k.mean())
        assert rep.k_low[i] <= 3 <= rep.k_high[i]
        assert est.random_state == i  # one clone per seed
        assert np.array_equal(rep.ball_distance[i, i], 0.0)
    from ppclust.metrics import ari

    assert ari(TRUTH, rep.estimators[0].labels_) == 1.0


def test_an_unconverged_fit_is_flagged():
    # one cluster to start, no warm-up: single-point moves split the blobs off at different sweeps
    rep = stability_report(TVClust(**{**KW, "n_warmup": 0}, init="one"), X, seeds=(0, 1, 2))
    assert not rep.stable and rep.verdict.startswith("unstable"), rep.verdict
    assert len(set(rep.n_clusters.tolist())) > 1
    assert rep.ari[~np.eye(3, dtype=bool)].min() < 0.9
    assert "R-hat" in rep.verdict or "ARI" in rep.verdict
    assert any(rep.convergence_warnings)  # recorded, not raised


def test_ball_distances_are_the_balls_own_loss(converged):
    rep = converged
    ball = rep.estimators[1].credible_ball_
    for i, est in enumerate(rep.estimators):
        want = partition_loss(est.labels_, ball.estimate, ball.loss, ball.a)
        assert rep.ball_distance[i, 1] == pytest.approx(want, abs=1e-12)
    assert rep.ball_radius[1] == ball.epsilon and rep.ball_prob == ball.prob


def test_deterministic_runs_disagree_and_have_no_posterior():
    rep = stability_report(DPMeans(lam=8.0), TWO, seeds=(0, 1, 2, 3))
    assert len(set(rep.n_clusters.tolist())) > 1
    assert not rep.stable and "ARI" in rep.verdict
    assert np.isnan(rep.k_mean).all() and np.isnan(rep.ball_radius).all() and np.isnan(rep.r_hat)
    assert not rep.in_ball.any()


def test_prior_settings_are_compared_apart_from_seeds():
    rep = stability_report(DPMeans(), TWO, seeds=(0, 1), priors=[{"lam": None}, {"lam": 200.0}])
    assert rep.setting_index.tolist() == [0, 0, 1, 1]
    assert rep.n_clusters.tolist() == [2, 2, 1, 1]
    assert rep.stable and rep.verdict.startswith("prior-sensitive"), rep.verdict
    frame = rep.to_frame()
    assert {len(v) for v in frame.values()} == {4}
    assert frame["min_ari"].tolist() == [1.0, 1.0, 1.0, 1.0]
    assert frame["run"][2] == "setting 1, seed 0" and '"lam": 200.0' in frame["setting"][2]


class _Recorder(ClusterMixin, BaseEstimator):
    """Records what ``fit`` received; two clusters whose split depends on the seed."""

    def __init__(self, random_state=None):
        self.random_state = random_state

    def fit(self, X, y=None, *, must_link=None):
        self.seen_ = (y, must_link)
        self.labels_ = (np.arange(len(X)) >= 2 + self.random_state).astype(int)
        return self


def test_side_information_reaches_every_fit_and_the_table_prints():
    y, ml = np.zeros(6, int), [(0, 1)]
    rep = stability_report(_Recorder(), np.zeros((6, 1)), y, seeds=(0, 1), must_link=ml)
    assert all(e.seen_[0] is y and e.seen_[1] is ml for e in rep.estimators)
    assert rep.ari[0, 1] < 1 and not rep.stable
    assert "seed 1" in str(rep)


def test_bad_calls_are_refused():
    with pytest.raises(ValueError, match="random_state"):
        stability_report(AgglomerativeClustering(2), TWO)
    with pytest.raises(ValueError, match="two runs"):
        stability_report(DPMeans(), TWO, seeds=(0,))


def test_plot_labels_its_axes(converged):
    fig = Figure()
    k_ax, a_ax = converged.plot(ax=fig.subplots(1, 2))
    assert k_ax.get_ylabel() == "number of clusters K" and k_ax.get_xlabel() == "run"
    assert a_ax.get_title() == "ARI between point estimates" and len(fig.axes) == 3  # with the colour bar
    assert [t.get_text() for t in k_ax.get_xticklabels()] == ["seed 0", "seed 1"]
    one = Figure().add_subplot()
    assert converged.plot(ax=one) is one


@pytest.mark.slow  # its own sampler programs; the TVClust tests above cover the same report path
def test_the_bayesian_semi_supervised_gmm_reports_its_posterior():
    from ppclust import BayesianSemiSupervisedGMM

    rng = np.random.default_rng(0)
    two = np.r_[rng.normal(0, 1, (20, 2)), rng.normal(6, 1, (20, 2))]  # as tests/estimators' predict tests
    y = np.full(40, -1)
    y[[0, 20]] = [0, 1]
    gmm = BayesianSemiSupervisedGMM(2, n_draws=30, n_warmup=30, progress_bar=False)
    rep = stability_report(gmm, two, y, seeds=(0, 1))
    assert rep.stable and rep.n_clusters.tolist() == [2, 2] and rep.in_ball.all()
    assert rep.k_mean.tolist() == [2.0, 2.0] and rep.r_hat == 1.0  # K constant over every draw
    assert all(e.labels_[0] != e.labels_[39] for e in rep.estimators)  # the labels reached fit
