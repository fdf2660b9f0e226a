"""TVClust and BayesianSemiSupervisedGMM at new points, their convergence check and their pickles."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from scipy import stats as sps
from scipy.special import logsumexp

from ppclust import BayesianSemiSupervisedGMM, TVClust
from ppclust.errors import ConvergenceWarning
from ppclust.partition import compact_labels
from ppclust.posterior import partition_draws

RNG = np.random.default_rng(0)
X = np.r_[RNG.normal(0, 1, (20, 2)), RNG.normal(6, 1, (20, 2))]
NEW = np.array([[0.2, -0.1], [6.1, 5.8], [30.0, -30.0]])
KW = dict(n_draws=40, n_warmup=40, n_chains=2, progress_bar=False, random_state=0, k_max=8)


@pytest.fixture(scope="module")
def fitted():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return TVClust(**KW).fit(X)


def _direct_log_density(est, x):
    """log mean_s p(x | z_s), scipy's Student-t (Murphy 2007 eq. 232), in the original units."""
    z_all = compact_labels(partition_draws(est.posterior_).reshape(-1, len(X)))
    xs = (X - X.mean(0)) / X.std(0)
    u = (x - X.mean(0)) / X.std(0)
    d, k0, nu0, psi0, alpha = 2, 0.01, 4.0, np.eye(2), 1.0
    out = []
    for z in z_all:
        terms = []
        for c in range(z.max() + 2):
            pts = xs[z == c]
            n = len(pts)
            w = (n if n else alpha) / (len(X) + alpha)
            xbar = pts.mean(0) if n else np.zeros(d)
            psin = (
                psi0 + ((pts - xbar).T @ (pts - xbar) if n else 0) + k0 * n / (k0 + n) * np.outer(xbar, xbar)
            )
            kn, df = k0 + n, nu0 + n - d + 1
            mun = pts.sum(0) / kn
            terms.append(np.log(w) + sps.multivariate_t(mun, psin * (kn + 1) / (kn * df), df=df).logpdf(u))
        out.append(logsumexp(terms))
    return logsumexp(out) - np.log(len(z_all)) - np.log(X.std(0)).sum()


def test_score_samples_is_the_draws_averaged_student_t_mixture(fitted):
    got = fitted.score_samples(NEW)
    for b in range(len(NEW)):
        assert got[b] == pytest.approx(_direct_log_density(fitted, NEW[b]), rel=1e-9)
    assert got[2] < got[0] - 5  # 30 sd away


def test_predict_agrees_with_labels_where_the_posterior_is_sure(fitted):
    P = fitted.predict_proba(X)
    assert P.shape == (len(X), fitted.n_clusters_ + 1)
    np.testing.assert_allclose(P.sum(1), 1.0)
    sure = np.array([fitted.psm_[i, fitted.labels_ == fitted.labels_[i]].min() > 0.95 for i in range(len(X))])
    assert sure.sum() > 30
    np.testing.assert_array_equal(fitted.predict(X)[sure], fitted.labels_[sure])
    far = fitted.predict_proba(NEW)
    assert far[2].argmax() == fitted.n_clusters_  # a cluster not seen in training
    assert fitted.predict(NEW)[2] == fitted.n_clusters_


def test_links_of_new_points_tilt_their_cluster(fitted):
    mid = np.array([[3.0, 3.0]])
    base = fitted.predict_proba(mid)[0]
    j0, j1 = 0, 25  # one training point of each blob
    to0 = fitted.predict_proba(mid, must_link=[(0, j0)])[0]
    to1 = fitted.predict_proba(mid, must_link=[(0, j1)], cannot_link=[(0, j0)])[0]
    assert to0[fitted.labels_[j0]] > base[fitted.labels_[j0]]
    assert to1[fitted.labels_[j1]] > max(base[fitted.labels_[j1]], 0.9)
    with pytest.raises(ValueError, match="training row"):
        fitted.predict(mid, must_link=[(0, len(X))])


def test_sample_draws_points_near_the_clusters(fitted):
    Xs, ys = fitted.sample(30, random_state=1)
    assert Xs.shape == (30, 2) and ys.shape == (30,)
    centres = np.array([X[fitted.labels_ == k].mean(0) for k in range(fitted.n_clusters_)])
    near = ys < fitted.n_clusters_
    assert np.median(np.linalg.norm(Xs[near] - centres[ys[near]], axis=1)) < 3.0


def test_pickle_is_small_keeps_predictions_and_recomputes_the_psm(fitted):
    blob = pickle.dumps(fitted)
    assert b"obs_bis" not in blob  # the similarity matrix left the tree
    est = pickle.loads(blob)
    assert "psm_" not in est.__dict__
    np.testing.assert_array_equal(est.psm_, fitted.psm_)
    np.testing.assert_array_equal(est.samples_.labels, fitted.samples_.labels)
    np.testing.assert_allclose(est.predict_proba(NEW), fitted.predict_proba(NEW))
    assert partition_draws(fitted.posterior_).dtype == np.int32
    assert fitted.posterior_["partition_draws"]["z"].dtype == np.uint8
    # the draws as uint8 (2 x 40 x 40) and x: far below the int32 draws plus the n x n matrix
    assert len(blob) < 60_000


def test_derived_quantities_are_outside_the_posterior_group(fitted):
    dt = fitted.posterior_
    assert {"p_cond_mean", "q_cond_mean"} <= set(dt["derived"].ds.data_vars)
    assert not {"p_cond_mean", "q_cond_mean"} & set(dt["posterior"].ds.data_vars)
    assert "K-fold" in dt.attrs["loo_validity"]


def test_variational_predicts_with_its_components():
    est = TVClust(algorithm="variational", random_state=0).fit(X)
    P = est.predict_proba(np.r_[X, NEW])
    np.testing.assert_allclose(P.sum(1), 1.0)
    assert (est.predict(X) == est.labels_).mean() > 0.95
    s = est.score_samples(NEW)
    assert s[0] > s[2] and np.all(np.isfinite(s))
    assert est.sample(5, random_state=0)[0].shape == (5, 2)


def test_an_unconverged_fit_warns_and_a_converged_one_does_not():
    far = np.r_[RNG.normal(0, 1, (20, 2)), RNG.normal(20, 1, (20, 2))]
    kw = {**KW, "n_warmup": 100, "n_draws": 100}
    # from one cluster, single-point moves leave one chain stuck at K = 1: the chains disagree on K
    with pytest.warns(ConvergenceWarning, match=r"n_clusters: r_hat=.*ess_bulk=.*more sweeps"):
        TVClust(**kw, init="one").fit(far)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        TVClust(**kw).fit(far)  # k-means++ start: both chains on the two blobs; p, q independent draws


def test_bayesian_ssgmm_predicts_from_its_draws():
    y = np.full(len(X), -1)
    y[[0, 20]] = [0, 1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        g = BayesianSemiSupervisedGMM(2, n_draws=30, n_warmup=30, random_state=0, progress_bar=False).fit(
            X, y
        )
    P = g.predict_proba(np.r_[X, NEW])
    np.testing.assert_allclose(P.sum(1), 1.0)
    np.testing.assert_array_equal(g.predict(X), g.labels_)
    s = g.score_samples(NEW)
    assert np.all(np.isfinite(s)) and s[2] < s[0]
    # the posterior predictive is heavier-tailed than the plug-in Gaussian mixture far from the data
    from ppclust.estimators.ssgmm import SemiSupervisedGMM

    assert s[2] > SemiSupervisedGMM.score_samples(g, NEW[2:])[0]
    assert pickle.loads(pickle.dumps(g)).predict(NEW[:2]).tolist() == g.predict(NEW[:2]).tolist()
