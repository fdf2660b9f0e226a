"""ppclust.active: the information gain, co-clustering from draws, memberships, batches and warm refits."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest
from sklearn.base import BaseEstimator

from ppclust import TVClust
from ppclust.active import ActiveLearner, coclustering, information_gain, membership, simulated_oracle
from ppclust.errors import PPClustError


def _h(u):
    u = np.asarray(u, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.nan_to_num(-(u * np.log(u) + (1 - u) * np.log(1 - u)))


def test_information_gain_is_the_mutual_information_by_enumeration():
    # I(A; Z) from the joint table of (same?, answer) for every pi, p, q
    rng = np.random.default_rng(0)
    for _ in range(20):
        pi, p, q = rng.random(3)
        joint = np.array([[pi * p, pi * (1 - p)], [(1 - pi) * (1 - q), (1 - pi) * q]])  # rows: same, diff
        marg_s, marg_a = joint.sum(1), joint.sum(0)
        mi = sum(
            joint[a, b] * np.log(joint[a, b] / (marg_s[a] * marg_a[b]))
            for a in range(2)
            for b in range(2)
            if joint[a, b] > 0
        )
        assert information_gain(pi, p, q) == pytest.approx(mi, abs=1e-12)


def test_information_gain_edges():
    assert information_gain([0.0, 1.0], 0.8, 0.7).tolist() == [0.0, 0.0]
    assert float(information_gain(0.5, 0.6, 0.4)) == pytest.approx(0.0, abs=1e-12)  # p = 1 - q: coin flips
    pis = np.linspace(0, 1, 101)
    assert pis[np.argmax(information_gain(pis, 0.9, 0.9))] == pytest.approx(0.5)


def test_coclustering_and_membership_against_brute_force():
    rng = np.random.default_rng(1)
    draws = rng.integers(0, 3, size=(7, 12))
    z = rng.integers(0, 3, size=12)
    z = np.unique(z, return_inverse=True)[1]
    pairs = np.array([(i, j) for i in range(12) for j in range(i + 1, 12)])
    psm = np.mean([(d[:, None] == d[None]).astype(float) for d in draws], 0)
    np.testing.assert_allclose(coclustering(draws, pairs), psm[pairs[:, 0], pairs[:, 1]])
    P = membership(draws, z)
    brute = np.zeros_like(P)
    for d in draws:
        for i in range(12):
            mates = d == d[i]
            for k in range(P.shape[1]):
                brute[i, k] += np.mean(z[mates] == k) / len(draws)
    np.testing.assert_allclose(P, brute)
    np.testing.assert_allclose(P.sum(1), 1.0)


def test_simulated_oracle_noise_rate():
    y = np.repeat([0, 1, 2], 200)
    pairs = np.random.default_rng(0).integers(0, 600, size=(4000, 2))
    truth = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1)
    assert (simulated_oracle(y, 0.0)(pairs) == truth).all()
    wrong = np.mean(simulated_oracle(y, 0.2, random_state=0)(pairs) != truth)
    assert 0.17 < wrong < 0.23
    assert np.mean(simulated_oracle(y, 0.2, random_state=0)(np.arange(600)) != y) == pytest.approx(
        0.2, abs=0.05
    )


class _Chain(NamedTuple):
    labels: np.ndarray


class FakePosterior(BaseEstimator):
    """Draws where points 0-9 are sure (cluster A), 10-19 sure (B) and 20-29 flip between A and B."""

    def __init__(self, init="kmeans++", n_warmup=10, n_draws=40, random_state=None, k_max=64, algorithm=None):
        self.algorithm = algorithm
        self.init = init
        self.k_max = k_max
        self.n_warmup = n_warmup
        self.n_draws = n_draws
        self.random_state = random_state

    def fit(self, X, y=None, *, must_link=None, cannot_link=None, partial_labels=None):
        rng = np.random.default_rng(0)
        n = len(X)
        d = np.zeros((self.n_draws, n), np.int64)
        d[:, 10:20] = 1
        d[:, 20:] = rng.integers(0, 2, size=(self.n_draws, n - 20))
        self.seen_links_ = (0 if must_link is None else len(must_link)) + (
            0 if cannot_link is None else len(cannot_link)
        )
        self.seen_init_ = self.init
        self.seen_algorithm_ = self.algorithm
        self.samples_ = _Chain(d[None])
        self.labels_ = d[0] * 0 + (np.arange(n) >= 10)
        self.p_ = self.q_ = 0.9
        return self


X30 = np.random.default_rng(0).normal(size=(30, 2))


def test_information_batch_picks_uncertain_pairs_without_shared_points():
    al = ActiveLearner(FakePosterior(), batch_size=8, random_state=0).fit(X30)
    pairs = al.suggest()
    assert pairs.shape == (8, 2)
    assert len(np.unique(pairs)) == 16  # a point at most once per batch
    assert (pairs[:, 0] < pairs[:, 1]).all()
    # the sure pairs carry no information: the batch spends (nearly) all ten flipping points first
    assert len(set(pairs.ravel().tolist()) & set(range(20, 30))) >= 8
    assert (pairs[:4] >= 20).any(1).all()
    # random pairs do not
    rand = ActiveLearner(FakePosterior(), strategy="random", batch_size=8, random_state=0).fit(X30).suggest()
    assert rand.shape == (8, 2) and len(set(rand.ravel().tolist()) & set(range(20, 30))) < 8


def test_tell_records_links_skips_and_refits_warm():
    al = ActiveLearner(FakePosterior(), batch_size=4, warm_cells=4, random_state=0).fit(X30)
    pairs = al.suggest()
    al.tell(pairs, [1, -1, 0, 1])
    assert al.n_queries_ == 4
    assert len(al.must_link_) == 2 and len(al.cannot_link_) == 1 and len(al.skipped_) == 1
    assert al.estimator_.seen_links_ == 3  # the skipped pair is no link
    init = np.asarray(al.estimator_.seen_init_)  # warm: the last labels, refined (never merged)
    last = (np.arange(30) >= 10).astype(int)
    assert init.shape == (30,) and len(np.unique(init)) > 2
    assert all(len(np.unique(last[init == c])) == 1 for c in np.unique(init))
    assert al.estimator_.n_warmup == 10 and al.estimator_.n_draws == 20
    again = al.suggest(50)
    asked = {tuple(p) for p in np.sort(pairs, 1).tolist()}
    assert not asked & {tuple(p) for p in again.tolist()}  # never asked twice, skipped ones included
    with pytest.raises(PPClustError, match="answers must be"):
        al.tell(again[:1], [2])


def test_default_warm_start_is_the_last_partition_when_the_answers_agree():
    # warm_cells=1 (default): no Voronoi cells; answers that agree with the last partition leave it as it is
    al = ActiveLearner(FakePosterior(), batch_size=4, random_state=0).fit(X30)
    al.tell([(0, 1), (2, 15), (11, 12)], [1, -1, 1])
    init = np.asarray(al.estimator_.seen_init_)
    last = (np.arange(30) >= 10).astype(int)
    assert len(np.unique(init)) == 2 and (init == init[0]).sum() == 10 and (init[:10] == init[0]).all()
    al.tell([(3, 16)], [1])  # one must-link across: no merge (one answer may be wrong), no split
    assert len(np.unique(al.estimator_.seen_init_)) == 2
    np.testing.assert_array_equal(np.unique(last, return_inverse=True)[1], al.estimator_.seen_init_)


def test_warm_start_splits_a_cluster_along_an_answered_cannot_link():
    # k_max = 6 leaves room for 3 clusters only: no crossing of the 2 clusters with Voronoi cells fits, and
    # the warm start must still separate the two ends of a cannot-link answered inside one cluster
    al = ActiveLearner(FakePosterior(k_max=6), batch_size=4, random_state=0).fit(X30)
    al.tell([(12, 25)], [-1])
    init = np.asarray(al.estimator_.seen_init_)
    assert init[12] != init[25]
    assert len(np.unique(init)) <= 3
    last = (np.arange(30) >= 10).astype(int)  # a refinement of the last partition: no cluster merged
    assert all(len(np.unique(last[init == c])) == 1 for c in np.unique(init))


def test_warm_start_merges_clusters_that_two_net_must_links_join():
    # k_max = 2: one cluster at most, so no Voronoi cell can split the merged start again
    al = ActiveLearner(FakePosterior(k_max=2), batch_size=4, random_state=0).fit(X30)
    al.tell([(0, 15)], [1])  # one answer may be wrong: no merge yet
    assert len(np.unique(al.estimator_.seen_init_)) == 2
    al.tell([(1, 16), (2, 17)], [1, -1])  # net must-links 2 - 1 = 1: still apart
    assert len(np.unique(al.estimator_.seen_init_)) == 2
    al.tell([(3, 18)], [1])  # net 3 - 1 = 2: joined
    assert len(np.unique(al.estimator_.seen_init_)) == 1


def test_warm_algorithm_runs_the_warm_refits_and_the_cold_fit_keeps_the_estimators_own():
    est = FakePosterior(algorithm="collapsed")
    al = ActiveLearner(est, batch_size=4, warm_algorithm="subcluster", random_state=0).fit(X30)
    assert al.estimator_.seen_algorithm_ == "collapsed"
    al.tell([(0, 1)], [1])
    assert al.estimator_.seen_algorithm_ == "subcluster"
    assert al.fit(X30).estimator_.seen_algorithm_ == "collapsed"  # a cold fit: the estimator's own again
    own = ActiveLearner(est, random_state=0).fit(X30)  # default None: the estimator's own for warm refits
    own.tell([(0, 1)], [1])
    assert own.estimator_.seen_algorithm_ == "collapsed"
    for bad in ("variational", "gibbs"):
        with pytest.raises(PPClustError, match="warm_algorithm"):
            ActiveLearner(FakePosterior(), warm_algorithm=bad).fit(X30)


def test_information_needs_a_posterior():
    from ppclust import RDPMeans

    with pytest.raises(PPClustError, match="TVClust"):
        ActiveLearner(RDPMeans(random_state=0), batch_size=4).fit(X30)
    al = ActiveLearner(RDPMeans(random_state=0), strategy="uncertainty", batch_size=4, random_state=0).fit(
        X30
    )
    assert al.suggest().shape == (4, 2) and not al.warm_


def test_label_learner_suggests_rows_and_takes_labels():
    from ppclust import SemiSupervisedGMM

    X = np.r_[np.zeros((10, 2)), np.full((10, 2), 4.0)] + np.random.default_rng(0).normal(size=(20, 2))
    y = np.repeat([0, 1], 10)
    est = SemiSupervisedGMM(n_clusters=2, random_state=0)
    al = ActiveLearner(est, batch_size=3, random_state=0).fit(X, partial_labels=np.r_[0, [-1] * 18, 1])
    rows = al.suggest()
    assert rows.shape == (3,) and not set(rows.tolist()) & {0, 19}
    al.tell(rows, y[rows])
    assert (al.labels_given_[rows] == y[rows]).all() and al.n_queries_ == 3


def test_tvclust_init_labels_reach_the_sampler(monkeypatch):
    from ppclust.estimators import tvclust as mod

    seen = {}

    class Stop(Exception):
        pass

    def fake_sample(*args, **kw):
        seen.update(kw)
        raise Stop

    monkeypatch.setattr(mod.gibbs, "sample", fake_sample)
    X = np.random.default_rng(0).normal(size=(6, 2))
    with pytest.raises(Stop):
        TVClust(init=[5, 5, 7, 7, 9, 9], progress_bar=False).fit(X)
    assert seen["init_labels"].tolist() == [0, 0, 1, 1, 2, 2]
    with pytest.raises(PPClustError, match="6 integers"):
        TVClust(init=[0, 1]).fit(X)
    with pytest.raises(PPClustError, match="k_max"):
        TVClust(init=np.arange(6), k_max=3).fit(X)


@pytest.mark.slow
def test_active_tvclust_end_to_end():
    X = np.r_[np.zeros((10, 2)), np.full((10, 2), 5.0)] + np.random.default_rng(0).normal(size=(20, 2))
    y = np.repeat([0, 1], 10)
    est = TVClust(n_draws=20, n_warmup=20, n_chains=1, progress_bar=False, random_state=0)
    al = ActiveLearner(est, batch_size=5, random_state=0).fit(X)
    al.run(simulated_oracle(y, noise=0.0, random_state=0), 10)
    assert al.n_queries_ == 10 and al.warm_
    assert al.estimator_.n_warmup == 10 and al.estimator_.n_draws == 20
    assert al.estimator_.labels_.shape == (20,)
