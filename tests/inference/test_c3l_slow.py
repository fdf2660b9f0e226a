"""C3L paper claims on real data (spec c3l.md C4, C5, C9; numbers in reproduce/results/c3l.md).

Protocol of reproduce/c3l.py (Table 3, Wine): standardised features, 15 % of the points labelled
with the two categories Y_- = {class 1, 2}, Y_+ = {class 3}, a linear SVM gives the hyperplane, C3L with
6 initial clusters and 10 restarts. Slow: one compile per alpha plus 5 draws x 3 alphas.
"""

from __future__ import annotations

import numpy as np
import pytest

from ppclust import datasets
from ppclust.estimators.c3l import C3L
from ppclust.inference import c3l
from ppclust.metrics import nmi

pytestmark = pytest.mark.slow

ALPHAS = (0.01, 0.05, 0.5)


def _plain_cec_cost(Z, labels):
    """Cost (8) with no active constraint: H(Y) + sum p_k [1-D Gaussian on t + full Gaussian on r]."""
    n, D = Z.shape
    tot = 0.0
    for k in np.unique(labels):
        Y = Z[labels == k]
        p = len(Y) / n
        e = 0.5 * (1.0 + np.log(2 * np.pi * Y[:, 0].var()))
        logdet = np.linalg.slogdet(np.cov(Y[:, 1:].T, bias=True))[1]
        e += 0.5 * (D - 1) * np.log(2 * np.pi * np.e) + 0.5 * logdet
        tot += p * (-np.log(p) + e)
    return tot


@pytest.fixture(scope="module")
def wine_runs():
    X, y = datasets.load("wine")
    X = (X - X.mean(0)) / X.std(0)
    ypm = (y == 2).astype(int)
    runs = []
    for r in range(5):
        rng = np.random.default_rng(r)
        ypart = np.where(rng.random(len(y)) < 0.15, ypm, -1)
        h, a = c3l.hyperplane_from_labels(X, ypart)
        fits = {
            al: C3L(n_clusters=6, leakage=al, n_init=10, random_state=r).fit(X, hyperplane=(h, a))
            for al in ALPHAS
        }
        runs.append(((h, a), fits))
    return X, y, runs


def test_wine_nmi_of_c3l_above_045(wine_runs):
    """C9 (Wine column of Table 3): paper 0.50 / 0.51 at alpha 0.01 / 0.05 against plain CEC 0.46; ours
    0.53 / 0.54 against 0.48 over 20 draws (reproduce/results/c3l.md). Draw by draw against plain CEC
    (alpha = 0.5, the same hyperplane, restarts and seed): C3L's mean gain over CEC is positive and C3L is
    not worse than CEC by more than 0.02 in at least 3 of the 5 draws; and the mean is above 0.45.
    A C3L that ignored the hyperplane would equal CEC draw by draw (gain 0); one with a broken leakage
    constraint splits clusters across the hyperplane arbitrarily and drops well below."""
    X, y, runs = wine_runs
    cec = np.array([nmi(y, fits[0.5].labels_) for _, fits in runs])
    for al in (0.01, 0.05):
        scores = np.array([nmi(y, fits[al].labels_) for _, fits in runs])
        assert np.mean(scores) > 0.45, (al, scores)
        assert np.mean(scores - cec) > 0, (al, scores, cec)
        assert np.sum(scores >= cec - 0.02) >= 3, (al, scores, cec)


def test_leakage_bounded_and_converged_on_wine(wine_runs):
    """Every fitted cluster model leaks at most alpha across H (C1 on real data); every restart of
    every run converges well within the pass cap (C5)."""
    X, y, runs = wine_runs
    for _, fits in runs:
        for al in (0.01, 0.05):
            m = fits[al]
            assert np.all(m.leakage_ <= al * (1 + 1e-9)), (al, m.leakage_)
            assert m.converged_ and m.restart_n_iter_.max() < m.max_iter
            # a cluster whose constraint is inactive leaks by itself less than alpha
            assert np.all(m.natural_leakage_[~m.constraint_active_] <= al * (1 + 1e-9))


def test_alpha_half_is_plain_cec_on_wine(wine_runs):
    """C4: alpha >= 1/2 switches the constraint off: the same partition for alpha = 0.5 and 0.9, no active
    constraint, and the reported cost equals the unconstrained product-Gaussian CEC cost recomputed here."""
    X, y, runs = wine_runs
    for r, ((h, a), fits) in enumerate(runs[:2]):
        m = fits[0.5]
        m2 = C3L(n_clusters=6, leakage=0.9, n_init=10, random_state=r).fit(X, hyperplane=(h, a))
        np.testing.assert_array_equal(m.labels_, m2.labels_)
        assert not m.constraint_active_.any()
        Z = c3l.transform(X, c3l.make_hyperplane(h, a))
        assert m.objective_ == pytest.approx(_plain_cec_cost(Z, m.labels_), abs=1e-9)
