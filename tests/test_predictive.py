"""ppclust.predictive: the posterior predictive against brute force on tiny data."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats as sps
from scipy.special import logsumexp

from ppclust import predictive
from ppclust._jax import x64
from ppclust.families import GaussianNIW
from ppclust.models.tvclust import log_crp

X = np.array([[0.0, 0.1], [0.3, -0.2], [2.5, 2.4], [2.8, 2.9]])
NEW = np.array([[0.1, 0.0], [2.6, 2.6], [6.0, -3.0]])
MU0, K0, NU0, PSI0 = np.zeros(2), 0.5, 4.0, np.eye(2)


def _family():
    return GaussianNIW(jnp.asarray(MU0), jnp.asarray(K0), jnp.asarray(NU0), jnp.asarray(PSI0))


def _partitions(n):
    """Every set partition of range(n) as canonical labels."""
    out = []

    def rec(i, lab, k):
        if i == n:
            out.append(list(lab))
            return
        for c in range(k + 1):
            rec(i + 1, lab + [c], max(k, c + 1))

    rec(0, [], 0)
    return np.array(out)


def _student_t(pts, x):
    """Murphy (2007) eq. 232, written out: the NIW posterior predictive of the points ``pts`` at x."""
    n, d = len(pts), X.shape[1]
    kn, nun = K0 + n, NU0 + n
    xbar = pts.mean(0) if n else MU0
    scatter = (pts - xbar).T @ (pts - xbar) if n else 0.0
    psin = PSI0 + scatter + K0 * n / kn * np.outer(xbar - MU0, xbar - MU0)
    mun = (K0 * MU0 + pts.sum(0)) / kn
    df = nun - d + 1
    return sps.multivariate_t(mun, psin * (kn + 1) / (kn * df), df=df).logpdf(x)


def test_draws_log_joint_is_the_crp_weighted_student_t_of_each_draw():
    draws = np.array([[0, 0, 1, 1], [0, 0, 0, 0], [0, 1, 2, 2]])
    alpha = np.array([1.0, 0.5, 2.0])
    with x64():
        lj = predictive.draws_log_joint(_family(), X, draws, alpha, NEW)
    n = len(X)
    for s, z in enumerate(draws):
        k = z.max() + 1
        for b, x in enumerate(NEW):
            want = [np.log(np.sum(z == c) / (n + alpha[s])) + _student_t(X[z == c], x) for c in range(k)]
            want.append(np.log(alpha[s] / (n + alpha[s])) + _student_t(X[:0], x))
            np.testing.assert_allclose(lj[s, b, : k + 1], want, rtol=1e-10)
            assert np.all(np.isneginf(lj[s, b, k + 1 :]))
    dens = predictive.log_density(lj)
    direct = [logsumexp([logsumexp(lj[s, b]) for s in range(3)]) - np.log(3) for b in range(len(NEW))]
    np.testing.assert_allclose(dens, direct, rtol=1e-12)


def test_predictive_over_all_partitions_is_the_exact_marginal_ratio():
    """p(x_new | X) = p(X, x_new) / p(X), both summed over every partition (CRP prior, NIW marginals):
    the draws' predictive weighted by each partition's exact posterior must give the same number."""
    alpha = 0.7
    fam = _family()

    def log_evidence(pts):
        terms = []
        for z in _partitions(len(pts)):
            k = z.max() + 1
            st = fam.stats(jnp.asarray(pts), jnp.asarray(z), k)
            terms.append(float(log_crp(st.n, alpha) + fam.log_marginal(st).sum()))
        return logsumexp(terms), np.array(terms)

    with x64():
        log_px, post = log_evidence(X)
        draws = _partitions(len(X))
        lj = predictive.draws_log_joint(fam, X, draws, alpha, NEW)
        for b, x in enumerate(NEW):
            exact = log_evidence(np.vstack([X, x]))[0] - log_px
            weighted = logsumexp(post - log_px + logsumexp(lj[:, b], axis=1))
            assert weighted == pytest.approx(exact, abs=1e-7)  # Cholesky log-marginals vs Student-t


def test_finite_weights_are_dirichlet_predictive():
    draws = np.array([[0, 0, 1, 1]])
    with x64():
        lj = predictive.draws_log_joint(_family(), X, draws, 3.0, NEW[:1], partition="finite", n_slots=3)
    w = np.exp(lj[0, 0] - [_student_t(X[draws[0] == c], NEW[0]) for c in range(3)])
    np.testing.assert_allclose(w, [(2 + 1) / 7, (2 + 1) / 7, 1 / 7], rtol=1e-10)


def test_probabilities_map_draw_clusters_onto_the_reference_and_sum_to_one():
    draws = np.array([[0, 0, 1, 1], [0, 1, 1, 1]])
    ref = np.array([0, 0, 1, 1])
    with x64():
        lj = predictive.draws_log_joint(_family(), X, draws, 1.0, NEW)
    mapping = predictive.overlap_map(draws, ref, lj.shape[-1])
    np.testing.assert_allclose(mapping.sum(-1), 1.0)
    assert mapping[1, 1].tolist() == pytest.approx([1 / 3, 2 / 3, 0.0])
    prob = predictive.cluster_probabilities(lj, mapping)
    np.testing.assert_allclose(prob.sum(1), 1.0)
    # by hand: sum_s sum_k e^{l_sk} M_skj / sum_s sum_k e^{l_sk}
    w = np.exp(lj)
    want = np.einsum("smk,skc->mc", w, mapping) / w.sum((0, 2))[:, None]
    np.testing.assert_allclose(prob, want, rtol=1e-10)
    assert prob[0].argmax() == 0 and prob[1].argmax() == 1 and prob[2].argmax() == 2  # far point: new


def test_link_tilt_moves_a_point_to_its_linked_cluster():
    draws = np.array([[0, 0, 1, 1]])
    with x64():
        lj = predictive.draws_log_joint(_family(), X, draws, 1.0, np.array([[1.4, 1.3]]))
    base = predictive.cluster_probabilities(lj)
    for j, target in ((0, 0), (3, 1)):
        tilt = predictive.link_log_tilt(draws, 1, lj.shape[-1], ([[0, j]], [1]), 0.95, 0.95)
        got = predictive.cluster_probabilities(lj + tilt)[0]
        factor = np.where(np.arange(len(got)) == target, 0.95, 0.05)  # p on the linked cluster, 1 - q else
        np.testing.assert_allclose(got, base[0] * factor / (base[0] * factor).sum(), rtol=1e-9)
        assert got[target] > base[0, target]
    tilt = predictive.link_log_tilt(draws, 1, lj.shape[-1], ([[0, 0]], [-1]), 0.95, 0.95)
    assert predictive.cluster_probabilities(lj + tilt)[0, 0] < base[0, 0]
    np.testing.assert_allclose(np.exp(tilt[0, 0, :2]), [0.05, 0.95])


def test_sample_points_follow_the_slot_weights_and_locations():
    pts = np.r_[np.zeros((30, 2)), np.full((30, 2), 10.0)] + np.random.default_rng(0).normal(size=(60, 2))
    import jax

    with x64():
        fam = _family()
        st = fam.stats(jnp.asarray(pts), jnp.asarray(np.repeat([0, 1], 30)), 2)
        x, slot = predictive.sample_points(jax.random.key(1), fam, st, jnp.log(jnp.array([0.2, 0.8])), 60)
    assert 0.6 < slot.mean() < 0.95
    assert np.all(np.abs(x[slot == 1].mean(0) - 10.0) < 1.5) and np.all(np.abs(x[slot == 0].mean(0)) < 2.0)


def test_partitions_helper_counts_bell_numbers():
    assert [len(_partitions(n)) for n in range(1, 6)] == [1, 2, 5, 15, 52]
    assert len({tuple(p) for p in _partitions(4)}) == 15
