"""Partition point estimates (SALSO) and credible balls: exact enumeration and brute-force pair sums."""

from __future__ import annotations

import numpy as np
import pytest

from ppclust import partition as P
from tests._partitions import set_partitions


def all_partitions(n):
    """Every partition of n items as restricted growth strings (Bell(n) rows)."""
    return set_partitions(n, dtype=np.int64)


def brute_expected_losses(parts, draws, loss, a):
    """Expected loss of every candidate by pair/item sums over n x n co-clustering matrices."""
    n = parts.shape[1]
    same_c = parts[:, :, None] == parts[:, None, :]  # (P, n, n)
    same_z = draws[:, :, None] == draws[:, None, :]  # (S, n, n)
    if loss == "binder":
        iu = np.triu_indices(n, 1)
        c, z = same_c[:, iu[0], iu[1]].astype(float), same_z[:, iu[0], iu[1]].astype(float)
        psm = z.mean(0)
        return (a * ((1 - c) * psm).sum(1) + (2 - a) * (c * (1 - psm)).sum(1)) / len(iu[0])
    # VI_a = (1/n) sum_i [a log(|z_i| / |c_i & z_i|) + (2 - a) log(|c_i| / |c_i & z_i|)]
    size_c = same_c.sum(2)[:, None, :]  # (P, 1, n)
    size_z = same_z.sum(2)[None, :, :]  # (1, S, n)
    both = np.einsum("pij,sij->psi", same_c.astype(float), same_z.astype(float))
    per = a * np.log(size_z / both) + (2 - a) * np.log(size_c / both)
    return per.mean(2).mean(1)


def random_draws(rng, parts, n):
    base = parts[rng.integers(len(parts))]
    S = int(rng.integers(5, 40))
    flip = rng.uniform(0.1, 0.6)
    return np.array([np.where(rng.random(n) < flip, rng.integers(0, 5, n), base) for _ in range(S)])


def test_bell_numbers():
    assert [len(all_partitions(n)) for n in range(1, 9)] == [1, 2, 5, 15, 52, 203, 877, 4140]


@pytest.mark.parametrize("loss", P.LOSSES)
@pytest.mark.parametrize("a", [0.5, 1.0, 1.6])
def test_contingency_losses_equal_brute_force_pair_sums(loss, a):
    rng = np.random.default_rng(1)
    parts = all_partitions(7)
    draws = random_draws(rng, parts, 7)
    pick = rng.choice(len(parts), 60, replace=False)
    brute = brute_expected_losses(parts[pick], draws, loss, a)
    fast = np.array([P.expected_loss(c, draws, loss, a) for c in parts[pick]])
    np.testing.assert_allclose(fast, brute, rtol=0, atol=1e-12)
    # one pair: VI at a = 1 is H + H - 2I (independent formula via scikit-learn's mutual information)
    from scipy.stats import entropy
    from sklearn.metrics import mutual_info_score

    u, v = parts[pick[0]], draws[0]
    h = lambda t: entropy(np.bincount(t))
    assert P.partition_loss(v, u, "vi") == pytest.approx(h(u) + h(v) - 2 * mutual_info_score(u, v), abs=1e-12)


@pytest.mark.parametrize("loss", P.LOSSES)
def test_salso_finds_the_exact_minimiser_over_all_partitions(loss):
    """n = 8: the search returns the minimiser of the expected loss over all 4140 partitions."""
    parts = all_partitions(8)
    misses = []
    for seed in range(12):
        rng = np.random.default_rng(seed)
        draws = random_draws(rng, parts, 8)
        a = float(rng.choice([0.5, 1.0, 1.5]))
        exact = brute_expected_losses(parts, draws, loss, a)
        est = P.salso(draws, loss, a=a, seed=seed)
        assert est.expected_loss == pytest.approx(P.expected_loss(est.labels, draws, loss, a), abs=1e-12)
        if est.expected_loss > exact.min() + 1e-10:
            misses.append((seed, a, est.expected_loss, exact.min()))
        assert est.expected_loss <= est.best_draw_loss + 1e-12
    assert not misses, misses


def test_salso_beats_the_sampled_partitions_and_is_reproducible():
    rng = np.random.default_rng(3)
    truth = np.repeat(np.arange(4), 30)
    draws = np.array([np.where(rng.random(120) < 0.15, rng.integers(0, 6, 120), truth) for _ in range(60)])
    for loss in P.LOSSES:
        est = P.salso(draws, loss, n_runs=4, n_draw_starts=60, seed=0)
        best_draw = min(P.expected_loss(z, draws, loss) for z in draws)
        assert est.expected_loss <= best_draw + 1e-12
        np.testing.assert_array_equal(est.labels, truth)  # noise averages out: the truth is the estimate
        np.testing.assert_array_equal(P.salso(draws, loss, n_runs=4, seed=0).labels, est.labels)
    # a > 1 makes separating costly: fewer clusters
    k_join, k_split = (P.salso(draws, "binder", a=a, seed=0).n_clusters for a in (1.9, 0.2))
    assert k_join <= k_split


def test_free_slot_doubles_full_tables_and_keeps_their_counts():
    """Every slot occupied: the tables double, the old counts copied, the new half zero, the first new slot
    returned; with a free slot, that slot and the same tables."""
    rng = np.random.default_rng(0)
    tab = rng.integers(1, 9, (4, 3, 5)).astype(np.int32)
    size = rng.integers(1, 9, 4).astype(np.int64)
    k, new_tab, new_size = P._free_slot(tab, size)
    assert k == 4 and new_tab.shape == (8, 3, 5) and new_size.shape == (8,)
    np.testing.assert_array_equal(new_tab[:4], tab)
    np.testing.assert_array_equal(new_size[:4], size)
    assert not new_tab[4:].any() and not new_size[4:].any()
    size[2] = 0
    k, same_tab, same_size = P._free_slot(tab, size)
    assert k == 2 and same_tab is tab and same_size is size


@pytest.mark.parametrize("n_labels", [4, 30])  # 30: near-singleton draws open > 8 clusters (tables grow)
def test_numba_search_equals_the_python_function(n_labels):
    rng = np.random.default_rng(5)
    draws = P.compact_labels(rng.integers(0, n_labels, (15, 30)))
    zt = np.ascontiguousarray(draws.T)
    L = draws.max(1).astype(np.int64) + 1
    lg = P._xlogx(np.arange(32, dtype=float))
    order = rng.permutation(30).astype(np.int64)
    for is_vi in (True, False):
        init = np.full(30, -1, np.int32)
        a = P._search(zt, L, init, order, 1.2, is_vi, lg, 50)
        b = P._search_py(zt, L, init.copy(), order, 1.2, is_vi, lg, 50)
        np.testing.assert_array_equal(a, b)
        if n_labels == 30 and is_vi:
            assert len(np.unique(a)) > 8  # the first tables' 8 slots were outgrown


def test_credible_ball_bounds():
    truth = np.repeat([0, 1, 2], 4)
    merged = np.repeat([0, 0, 1], 4)  # 2 clusters
    split = np.array([0, 0, 3, 3, 1, 1, 1, 1, 2, 2, 2, 2])  # 4 clusters
    far = np.arange(12)  # 12 singletons, in the 5% tail
    draws = np.array([truth] * 15 + [merged] * 2 + [split] * 2 + [far])
    ball = P.credible_ball(truth, draws, "vi", prob=0.95)
    d_merged, d_split = P.partition_loss(merged, truth), P.partition_loss(split, truth)
    assert ball.epsilon == pytest.approx(max(d_merged, d_split))
    assert ball.n_clusters["upper_vertical"] == 2 and ball.n_clusters["lower_vertical"] == 4
    assert ball.bound_distances["horizontal"] == pytest.approx(max(d_merged, d_split))
    np.testing.assert_array_equal(ball.upper_vertical, P.canonical_labels(merged))
    assert "credible ball" in str(ball) and ball.distances.shape == (20,)
    full = P.credible_ball(truth, draws, "binder", prob=1.0)
    assert full.n_clusters["lower_vertical"] == 12


def test_bad_arguments():
    draws = np.zeros((3, 4), int)
    with pytest.raises(ValueError, match="`loss` must be one of"):
        P.salso(draws, "rand")
    with pytest.raises(ValueError, match="`a`.*must lie in \\(0, 2\\)"):
        P.expected_loss([0, 0, 1, 1], draws, "vi", a=2.0)
    with pytest.raises(ValueError, match="n=4 items but the estimate has 3"):
        P.expected_loss([0, 0, 1], draws)
    with pytest.raises(ValueError, match="`prob`"):
        P.credible_ball([0, 0, 1, 1], draws, prob=0.0)
    with pytest.raises(ValueError, match=">= 0"):
        P.compact_labels([[0, -1, 1]])
