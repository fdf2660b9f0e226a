"""Metrics: agreement with scikit-learn and brute force, invariances, JAX twins under jit/vmap."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score
from sklearn.metrics.cluster import contingency_matrix

from ppclust import metrics as M
from ppclust._jax import x64

AVERAGES = ("arithmetic", "geometric", "max", "min")

labelings = st.integers(1, 40).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 5), min_size=n, max_size=n),
        st.lists(st.integers(0, 5), min_size=n, max_size=n),
    )
)


def _brute_pairs(a, b):
    """TP, #same-true, #same-pred by enumerating all pairs (the definition)."""
    tp = st_ = sp = 0
    for i, j in itertools.combinations(range(len(a)), 2):
        t, p = a[i] == a[j], b[i] == b[j]
        tp += t and p
        st_ += t
        sp += p
    return tp, st_, sp


def _brute_accuracy(a, b):
    """Best one-to-one map by trying every injective assignment (small label sets)."""
    ua, ub = sorted(set(a)), sorted(set(b))
    best = 0
    small, large = (ub, ua) if len(ub) <= len(ua) else (ua, ub)
    for perm in itertools.permutations(large, len(small)):
        m = dict(zip(small, perm, strict=True))
        if len(ub) <= len(ua):
            best = max(best, sum(m[q] == t for t, q in zip(a, b, strict=True)))
        else:
            best = max(best, sum(m[t] == q for t, q in zip(a, b, strict=True)))
    return best / len(a)


@settings(max_examples=60, deadline=None)
@given(labelings)
def test_host_metrics_match_sklearn_and_brute_force(case):
    a, b = (np.array(v) for v in case)
    for avg in AVERAGES:
        assert abs(M.nmi(a, b, average=avg) - normalized_mutual_info_score(a, b, average_method=avg)) < 1e-9
    assert abs(M.ari(a, b) - adjusted_rand_score(a, b)) < 1e-9
    tp, same_true, same_pred = _brute_pairs(a, b)
    p, r, f = M.pairwise_f1(a, b)
    assert p == (tp / same_pred if same_pred else 1.0)
    assert r == (tp / same_true if same_true else 1.0)
    assert f == (2 * tp / (same_true + same_pred) if same_true + same_pred else 1.0)
    if p + r > 0 and same_pred and same_true:
        assert abs(f - 2 * p * r / (p + r)) < 1e-12
    np.testing.assert_array_equal(M.contingency(a, b), contingency_matrix(a, b))
    c = contingency_matrix(a, b)
    assert M.purity(a, b) == c.max(axis=0).sum() / len(a)
    if len(a) <= 12:
        assert abs(M.accuracy(a, b) - _brute_accuracy(a.tolist(), b.tolist())) < 1e-12


@settings(max_examples=50, deadline=None)
@given(labelings, st.randoms(use_true_random=False))
def test_permutation_invariance(case, rnd):
    a, b = (np.array(v) for v in case)
    relabel_a = np.array(rnd.sample(range(100, 106), 6))  # injective relabelling, new values
    relabel_b = np.array(rnd.sample(range(6), 6))
    order = np.array(rnd.sample(range(len(a)), len(a)))  # permuting points too
    a2, b2 = relabel_a[a][order], relabel_b[b][order]
    for fn in (M.ari, M.accuracy, M.purity, lambda u, v: M.nmi(u, v, "geometric")):
        assert abs(fn(a, b) - fn(a2, b2)) < 1e-12
    np.testing.assert_allclose(M.pairwise_f1(a, b), M.pairwise_f1(a2, b2), atol=1e-12)
    # symmetric metrics; pairwise precision and recall swap with the arguments
    assert abs(M.nmi(a, b) - M.nmi(b, a)) < 1e-12 and abs(M.ari(a, b) - M.ari(b, a)) < 1e-12
    assert abs(M.accuracy(a, b) - M.accuracy(b, a)) < 1e-12
    p, r, f = M.pairwise_f1(a, b)
    np.testing.assert_allclose(M.pairwise_f1(b, a), (r, p, f), atol=1e-12)


def test_hand_values_and_edge_cases():
    a = [0, 0, 0, 1, 1, 1]
    b = [0, 0, 1, 1, 2, 2]
    # TP = 2 ({0,1}, {4,5}), same-true = 6, same-pred = 3
    assert M.pairwise_f1(a, b) == (2 / 3, 2 / 6, 4 / 9)
    assert M.accuracy(a, b) == 4 / 6
    assert M.purity(a, b) == 5 / 6 and M.purity(b, a) == 4 / 6  # cluster {2, 3} is mixed
    assert M.nmi([0, 0], [1, 1]) == 1.0 and M.nmi([0, 1], [0, 0]) == 0.0
    assert M.ari([0, 1, 2], [2, 0, 1]) == 1.0
    assert M.pairwise_f1([0, 1, 2], [0, 1, 2]) == (1.0, 1.0, 1.0)  # no positive pairs at all
    assert M.accuracy(["x", "y", "y"], ["b", "a", "a"]) == 1.0  # any hashable labels
    with pytest.raises(ValueError, match="`average` must be one of"):
        M.nmi(a, b, average="harmonic")
    with pytest.raises(ValueError, match="same length"):
        M.ari([0, 1], [0, 1, 1])
    with pytest.raises(ValueError, match="`labels_true` must be 1-D"):
        M.ari([[0, 1]], [0, 1])


def test_accuracy_matches_scipy_on_large_rectangular_table():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 7, size=5000)
    b = np.where(rng.random(5000) < 0.7, (a * 3) % 11, rng.integers(0, 11, size=5000))
    c = contingency_matrix(a, b)
    r, k = linear_sum_assignment(-c)
    assert M.accuracy(a, b) == c[r, k].sum() / 5000
    assert M.accuracy(a, b) > 0.7


def test_pairwise_f1_scales_without_n_squared():
    rng = np.random.default_rng(1)
    n = 400_000  # an n x n pair matrix would need 1.6e11 entries
    a = rng.integers(0, 10, size=n)
    b = np.where(rng.random(n) < 0.9, a, rng.integers(0, 10, size=n))
    p, r, f = M.pairwise_f1(a, b)
    assert 0.8 < f < 0.85 and abs(p - r) < 0.01
    assert abs(M.ari(a, b) - adjusted_rand_score(a, b)) < 1e-9


# ----------------------------------------------------------------------------- JAX twins

K = 6


def test_jax_metrics_match_host_under_jit_and_x64():
    rng = np.random.default_rng(2)
    with x64():
        for _ in range(12):
            n = 60
            a = rng.integers(0, rng.integers(1, K + 1), size=n)
            b = rng.integers(0, rng.integers(1, K + 1), size=n)
            if rng.random() < 0.3:
                b = a.copy()
            ja, jb = jnp.asarray(a, jnp.int32), jnp.asarray(b, jnp.int32)
            for avg in AVERAGES:
                assert abs(float(M.nmi_jax(ja, jb, K, avg)) - M.nmi(a, b, avg)) < 1e-9
            assert abs(float(M.ari_jax(ja, jb, K)) - M.ari(a, b)) < 1e-9
            np.testing.assert_allclose(
                [float(v) for v in M.pairwise_f1_jax(ja, jb, K)], M.pairwise_f1(a, b), atol=1e-12
            )
            assert abs(float(M.purity_jax(ja, jb, K)) - M.purity(a, b)) < 1e-12


def test_jax_metrics_vmap_over_draws_and_ignore_out_of_range():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, size=80)
    draws = np.where(rng.random((16, 80)) < 0.8, y, rng.integers(0, 5, size=(16, 80)))
    with x64():
        f = jax.jit(jax.vmap(M.nmi_jax, in_axes=(None, 0, None, None)), static_argnums=(2, 3))
        got = np.asarray(f(jnp.asarray(y, jnp.int32), jnp.asarray(draws, jnp.int32), K, "geometric"))
        want = [normalized_mutual_info_score(y, d, average_method="geometric") for d in draws]
        np.testing.assert_allclose(got, want, atol=1e-9)
        aris = np.asarray(jax.vmap(M.ari_jax, in_axes=(None, 0, None))(jnp.asarray(y), jnp.asarray(draws), K))
        np.testing.assert_allclose(aris, [adjusted_rand_score(y, d) for d in draws], atol=1e-9)
        # -1 (unlabelled) points are dropped from both partitions
        y_part = np.where(rng.random(80) < 0.5, y, -1)
        keep = y_part >= 0
        got = float(M.ari_jax(jnp.asarray(y_part), jnp.asarray(draws[0]), K))
        assert abs(got - adjusted_rand_score(y[keep], draws[0][keep])) < 1e-9
    # float32 (no x64) is close, not exact
    got32 = float(M.nmi_jax(jnp.asarray(y), jnp.asarray(draws[0]), K))
    assert abs(got32 - normalized_mutual_info_score(y, draws[0])) < 1e-5
