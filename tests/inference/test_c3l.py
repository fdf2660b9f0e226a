"""C3L estimator + Hartigan instance: leakage bound, monotone cost, local optimality, alpha >= 1/2 = CEC."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from ppclust.estimators.c3l import C3L
from ppclust.inference import c3l


def _data(seed=0, n1=90, n2=50):
    rng = np.random.default_rng(seed)
    A = np.c_[rng.normal(-0.6, 1.0, n1), rng.normal(0, 3, n1), rng.normal(0, 1, n1)]
    B = np.c_[rng.normal(2.5, 0.3, n2), rng.normal(0, 0.5, n2), rng.normal(1, 0.5, n2)]
    return np.r_[A, B], np.repeat([0, 1], [n1, n2])


HP = ([1.0, 0.0, 0.0], 0.0)


def _np_cost(Z, labels, alpha, J=1):
    """Cost (8) of a partition from scratch in numpy (spec §1.3-1.5), independent of the JAX code."""
    n, D = Z.shape
    d = D - J
    p = norm.isf(alpha)
    tot = 0.0
    for k in np.unique(labels):
        Y = Z[labels == k]
        nk = len(Y)
        e = 0.0
        for j in range(J):
            mu, s2 = Y[:, j].mean(), Y[:, j].var()
            s = np.sqrt(s2)
            if alpha >= 0.5 or abs(mu) >= p * s:
                e += 0.5 * (1 + np.log(2 * np.pi * s2))
            else:  # brute-force the boundary |m| = p sigma in the direction of mu (1-D golden search)
                sg = 1.0 if mu >= 0 else -1.0
                f = lambda m, mu=mu, s2=s2, sg=sg: (
                    0.5 * np.log(2 * np.pi * (m / p) ** 2) + ((mu - sg * m) ** 2 + s2) / (2 * (m / p) ** 2)
                )
                lo, hi = 1e-9, abs(mu) + s2 / max(abs(mu), 1e-12) + 10 * s + 1.0
                g = (np.sqrt(5) - 1) / 2
                for _ in range(200):
                    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
                    lo, hi = (lo, b) if f(a) < f(b) else (a, hi)
                e += f(0.5 * (lo + hi))
        if d:
            logdet = np.linalg.slogdet(np.cov(Y[:, J:].T, bias=True))[1]
            e += 0.5 * d * np.log(2 * np.pi * np.e) + 0.5 * logdet
        tot += nk / n * (-np.log(nk / n) + e)
    return tot


@pytest.fixture(scope="module")
def fits():
    X, _ = _data()
    return X, {
        a: C3L(n_clusters=4, leakage=a, n_init=4, random_state=1).fit(X, hyperplane=HP)
        for a in (0.01, 0.05, 0.5)
    }


def test_leakage_bounded_and_cost_consistent(fits):
    X, models = fits
    Z = c3l.transform(X, c3l.make_hyperplane(*HP))
    for a, m in models.items():
        assert m.n_clusters_ == len(np.unique(m.labels_)) == len(m.leakage_)
        assert np.all(m.leakage_ <= min(a, 0.5) + 1e-9)
        np.testing.assert_allclose(m.leakage_[m.constraint_active_], a, rtol=1e-9)
        np.testing.assert_allclose(
            m.leakage_, np.minimum(m.natural_leakage_, a) if a < 0.5 else m.natural_leakage_, rtol=1e-9
        )
        # leakage of the X-space Gaussians w.r.t. H (spec §1.2 general formula) is the same number
        np.testing.assert_allclose(c3l.gaussian_leakage(m.means_, m.covariances_, *HP), m.leakage_, rtol=1e-7)
        # the cost after thousands of rank-one updates equals an independent numpy recomputation
        np.testing.assert_allclose(m.objective_, _np_cost(Z, m.labels_, a), rtol=1e-8)
        np.testing.assert_allclose(m.objective_, sum(m.objective_terms_.values()), rtol=1e-10)
        assert m.converged_ and m.n_iter_ < 100


def test_cost_never_increases(fits):
    _, models = fits
    for m in models.values():
        tr, kt = m.objective_trace_, m.n_clusters_trace_
        same = kt[1:] == kt[:-1]  # passes without a deletion are pure descent
        assert np.all(np.diff(tr)[same] <= 1e-12)
        assert m.objective_ <= tr[0]
        assert np.isclose(m.objective_, m.restart_objectives_.min())


def test_local_optimum_no_single_move_improves(fits):
    """Brute force: from the fitted partition, moving any one point to any other cluster costs more."""
    X, models = fits
    Z = c3l.transform(X, c3l.make_hyperplane(*HP))
    m = models[0.05]
    base = _np_cost(Z, m.labels_, 0.05)
    rng = np.random.default_rng(0)
    for i in rng.choice(len(X), 25, replace=False):
        for b in range(m.n_clusters_):
            if b == m.labels_[i] or np.sum(m.labels_ == m.labels_[i]) <= m.min_cluster_size_:
                continue
            lab = m.labels_.copy()
            lab[i] = b
            assert _np_cost(Z, lab, 0.05) >= base - 1e-12


def test_alpha_half_is_plain_cec(fits):
    """alpha >= 1/2 (C4): identical labels and cost for any alpha >= 1/2; parameters are the MLE."""
    X, models = fits
    m = models[0.5]
    m2 = C3L(n_clusters=4, leakage=0.8, n_init=4, random_state=1).fit(X, hyperplane=HP)
    np.testing.assert_array_equal(m.labels_, m2.labels_)
    assert m.objective_ == m2.objective_
    assert not m.constraint_active_.any()
    for k in range(m.n_clusters_):
        Y = X[m.labels_ == k]
        np.testing.assert_allclose(m.means_[k], Y.mean(0), atol=1e-10)
    # and lower alpha can only cost more for the same partition (nested feasible sets)
    Z = c3l.transform(X, c3l.make_hyperplane(*HP))
    assert _np_cost(Z, m.labels_, 0.01) >= m.objective_ - 1e-12


def test_predict_and_partial_labels():
    X, y = _data(seed=2)
    rng = np.random.default_rng(0)
    y_part = np.where(rng.random(len(y)) < 0.3, y, -1)
    m = C3L(n_clusters=4, leakage=0.05, n_init=3, random_state=0).fit(X, y_part)
    h, a = m.hyperplane_
    assert np.mean((X @ h - a > 0) == (y == 1)) > 0.9
    assert np.all(m.leakage_ <= 0.05 + 1e-9)
    pred = m.predict(X)
    assert pred.shape == (len(X),) and np.mean(pred == m.labels_) > 0.9
    assert np.isfinite(m.score_samples(X)).all()


def test_errors_and_extension():
    X, y = _data(seed=3)
    with pytest.raises(ValueError, match="side information"):
        C3L().fit(X)
    with pytest.raises(ValueError, match="leakage"):
        C3L(leakage=0.0).fit(X, hyperplane=HP)
    with pytest.raises(ValueError, match="two categories"):
        C3L().fit(X, np.where(y == 0, 0, -1))
    y3 = np.where(X[:, 1] > 2, 2, y)
    with pytest.warns(UserWarning, match="extension beyond the paper"):
        m = C3L(n_clusters=4, leakage=0.05, n_init=2, random_state=0).fit(X, y3)
    assert m.leakage_.shape == (m.n_clusters_, 3)
    assert np.all(m.leakage_ <= 0.05 + 1e-9)


def test_registry_loads():
    import ppclust

    assert ppclust.C3L is C3L


def test_default_start_is_kmeanspp():
    """The default ``init`` is k-means++ (the CEC package's start; chosen on the benefit panel, see the
    docstring): the default fit is the explicit ``init="k-means++"`` fit, and with one restart it reaches a
    lower cost than the paper's uniform random partition, whose means all start near the global mean."""
    X, y = _data(seed=2)
    y_part = np.where(np.random.default_rng(0).random(len(y)) < 0.1, y, -1)
    kw = dict(n_clusters=6, leakage=0.05, n_init=1, random_state=0)
    default = C3L(**kw).fit(X, y_part)
    explicit = C3L(**kw, init="k-means++").fit(X, y_part)
    np.testing.assert_array_equal(default.labels_, explicit.labels_)
    assert default.objective_ == explicit.objective_
    costs = [C3L(**{**kw, "random_state": s}, init="random").fit(X, y_part).objective_ for s in range(3)]
    assert default.objective_ < min(costs) - 1e-6, (default.objective_, costs)
