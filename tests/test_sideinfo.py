"""SideInfo: canonical form, validation errors, neighbour table, union-find, label -> link conversion."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from ppclust.models.tvclust import link_weight_shares
from ppclust.sideinfo import (
    SideInfo,
    decode_pair_index,
    link_agreement,
    link_folds,
    link_weight_per_point,
    weigh_link_kinds,
)


def _random_links(rng, n, m):
    i = rng.integers(n, size=m)
    j = (i + rng.integers(1, n, size=m)) % n
    return np.stack([i, j], 1), rng.choice([-1, 1], size=m)


# ----------------------------------------------------------------------------- canonical form


def test_canonical_orientation_sort_and_merge():
    si = SideInfo.from_links(6, must_link=[(3, 1), (1, 3), (0, 5)], cannot_link=[(4, 2), (2, 4), (5, 1)])
    assert si.pairs.dtype == np.int32 and si.sign.dtype == np.int8 and si.weight.dtype == np.float64
    np.testing.assert_array_equal(si.pairs, [[0, 5], [1, 3], [1, 5], [2, 4]])
    np.testing.assert_array_equal(si.sign, [1, 1, -1, -1])
    np.testing.assert_array_equal(si.must_link, [[0, 5], [1, 3]])
    np.testing.assert_array_equal(si.cannot_link, [[1, 5], [2, 4]])
    assert si.n_links == 4
    assert repr(si) == "SideInfo(n=6, labelled=0, must_link=2, cannot_link=2)"


def test_duplicate_weights_merge_to_max():
    si = SideInfo.from_pairs(4, [(0, 1), (1, 0), (2, 3)], [1, 1, -1], weight=[0.5, 2.0, 1.5])
    np.testing.assert_array_equal(si.weight, [2.0, 1.5])


def test_conflict_error_names_pair_and_keep_stores_both():
    with pytest.raises(ValueError, match=r"both as may-link.*first: \(1, 2\).*on_conflict='keep'"):
        SideInfo.from_links(4, must_link=[(1, 2)], cannot_link=[(2, 1)])
    si = SideInfo.from_links(4, must_link=[(1, 2), (0, 3)], cannot_link=[(2, 1)], on_conflict="keep")
    np.testing.assert_array_equal(si.pairs, [[0, 3], [1, 2], [1, 2]])
    np.testing.assert_array_equal(si.sign, [1, -1, 1])
    assert si.has_conflicts and si.summary()["n_conflicting_pairs"] == 1
    assert "conflicting=1" in repr(si)


def test_immutable():
    si = SideInfo.from_links(3, must_link=[(0, 1)])
    with pytest.raises(AttributeError):
        si.n = 4
    with pytest.raises(ValueError):
        si.pairs[0, 0] = 2


def test_inputs_not_modified():
    ml = np.array([[2, 0], [1, 2]])
    w = np.array([1.0, 3.0])
    y = np.array([0, -1, 1])
    SideInfo.from_links(3, must_link=ml, weight=w, labels=y)
    np.testing.assert_array_equal(ml, [[2, 0], [1, 2]])
    np.testing.assert_array_equal(w, [1.0, 3.0])


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (
            dict(must_link=[(0, 5)]),
            ValueError,
            r"`must_link` has 1 pair.*outside \[0, n_samples=5\).*\(0, 5\)",
        ),
        (dict(cannot_link=[(-1, 2)]), ValueError, r"`cannot_link`.*first: \(-1, 2\)"),
        (dict(must_link=[(3, 3), (1, 1)]), ValueError, r"`must_link` has 2 self-pair.*first: \(3, 3\)"),
        (dict(must_link=[(0, 1, 2)]), ValueError, r"`must_link` must have shape \(n_pairs, 2\)"),
        (dict(must_link=[(0.0, 1.0)]), TypeError, r"`must_link` must hold integer"),
        (dict(must_link=[(0, 1)], weight=[-1.0]), ValueError, r"`weight` must be finite and > 0"),
        (dict(must_link=[(0, 1)], weight=[1.0, 1.0]), ValueError, r"`weight` must be a scalar or have shape"),
        (dict(must_link=[(0, 1)], on_conflict="drop"), ValueError, r"`on_conflict` must be one of"),
    ],
)
def test_link_errors(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        SideInfo.from_links(5, **kwargs)


def test_constructor_errors():
    with pytest.raises(ValueError, match=r"`sign` must be \+1"):
        SideInfo.from_pairs(3, [(0, 1)], [2])
    with pytest.raises(ValueError, match="without `sign`"):
        SideInfo(3, pairs=[(0, 1)])
    with pytest.raises(ValueError, match=r"`sign` must have shape \(2,\)"):
        SideInfo.from_pairs(3, [(0, 1), (1, 2)], [1, 1, 1])
    with pytest.raises(TypeError, match="`n`"):
        SideInfo(3.0)
    with pytest.raises(ValueError, match="`n`"):
        SideInfo(0)
    with pytest.raises(TypeError, match=r"`y` must hold integers"):
        SideInfo.from_labels([0.5, 1.0])
    with pytest.raises(ValueError, match=r"`labels` must be >= -1.*-2 at index 1"):
        SideInfo(3, labels=[0, -2, 1])
    with pytest.raises(ValueError, match=r"`labels` has length 2 but n_samples=3"):
        SideInfo(3, labels=[0, 1])


# ----------------------------------------------------------------------------- round trips (hypothesis)


@st.composite
def side_infos(draw):
    n = draw(st.integers(2, 12))
    m = draw(st.integers(0, 25))
    idx = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda t: t[0] != t[1])
    pairs = draw(st.lists(idx, min_size=m, max_size=m))
    sign = draw(st.lists(st.sampled_from([-1, 1]), min_size=m, max_size=m))
    weight = draw(st.lists(st.floats(0.1, 5.0), min_size=m, max_size=m))
    labels = draw(st.none() | st.lists(st.integers(-1, 3), min_size=n, max_size=n))
    if m == 0:
        return SideInfo(n, labels=labels), pairs, sign
    return SideInfo.from_pairs(n, pairs, sign, weight, on_conflict="keep", labels=labels), pairs, sign


@settings(max_examples=60, deadline=None)
@given(side_infos())
def test_roundtrip_and_invariants(case):
    si, raw_pairs, raw_sign = case
    again = SideInfo.from_pairs(si.n, si.pairs, si.sign, si.weight, on_conflict="keep", labels=si.labels)
    assert again == si
    if si.n_links:
        assert np.all(si.pairs[:, 0] < si.pairs[:, 1])
        keys = [(int(a), int(b), int(s)) for (a, b), s in zip(si.pairs, si.sign, strict=True)]
        assert keys == sorted(set(keys))  # sorted, unique per (pair, sign)
        # same set of (unordered pair, sign) as the raw input
        raw = {(min(a, b), max(a, b), s) for (a, b), s in zip(raw_pairs, raw_sign, strict=True)}
        assert set(keys) == raw
        # links given in another order and orientation give the same object
        perm = np.random.default_rng(0).permutation(len(si.pairs))
        flipped = si.pairs[perm][:, ::-1]
        assert (
            SideInfo.from_pairs(
                si.n, flipped, si.sign[perm], si.weight[perm], on_conflict="keep", labels=si.labels
            )
            == si
        )
        # must/cannot split round-trips through from_links when there is no conflict
        if not si.has_conflicts:
            w = np.concatenate([si.weight[si.sign > 0], si.weight[si.sign < 0]])
            assert SideInfo.from_links(si.n, si.must_link, si.cannot_link, weight=w, labels=si.labels) == si


# ----------------------------------------------------------------------------- neighbour table


def test_neighbour_table_matches_brute_force():
    rng = np.random.default_rng(1)
    n = 40
    pairs, sign = _random_links(rng, n, 120)
    w = rng.uniform(0.5, 2.0, size=len(pairs))
    si = SideInfo.from_pairs(n, pairs, sign, w, on_conflict="keep")
    nbr, sgn, wgt = si.neighbour_table()
    assert nbr.dtype == np.int32 and nbr.shape == sgn.shape == wgt.shape
    deg = si.degree()
    assert nbr.shape == (n, deg.max())
    z = rng.integers(0, 4, size=n)
    for i in range(n):
        # table entries = the links at i, as a multiset
        got = sorted(
            (int(a), float(s), float(c)) for a, s, c in zip(nbr[i], sgn[i], wgt[i], strict=True) if c
        )
        want = sorted(
            (int(b if a == i else a), float(s), float(c))
            for (a, b), s, c in zip(si.pairs, si.sign, si.weight, strict=True)
            if i in (a, b)
        )
        assert got == want
        # padding is inert: nbr = 0, sgn = wgt = 0
        assert (
            np.all(nbr[i, deg[i] :] == 0) and np.all(sgn[i, deg[i] :] == 0) and np.all(wgt[i, deg[i] :] == 0)
        )
        # O(degree) count of friends minus strangers in each cluster equals the direct sum
        counts = np.zeros(4)
        np.add.at(counts, z[nbr[i]], sgn[i] * wgt[i])
        direct = np.zeros(4)
        for (a, b), s, c in zip(si.pairs, si.sign, si.weight, strict=True):
            if i in (a, b):
                direct[z[b if a == i else a]] += s * c
        np.testing.assert_allclose(counts, direct)


def test_neighbour_table_no_links_is_one_wide():
    nbr, sgn, wgt = SideInfo(5).neighbour_table()
    assert nbr.shape == (5, 1) and not sgn.any() and not wgt.any()


# ----------------------------------------------------------------------------- components / hard check


def test_must_link_components_match_scipy_on_long_chain():
    rng = np.random.default_rng(2)
    n = 3000
    perm = rng.permutation(n)
    chain = np.stack([perm[:-1], perm[1:]], 1)[: n // 2]  # a path of 1500 edges (deep for recursion)
    extra, _ = _random_links(rng, n, 500)
    ml = np.concatenate([chain, extra])
    si = SideInfo.from_links(n, must_link=ml, cannot_link=[(perm[-1], perm[-2])])
    comp = si.must_link_components()
    g = coo_matrix((np.ones(len(ml)), (ml[:, 0], ml[:, 1])), shape=(n, n))
    k, ref = connected_components(g, directed=False)
    assert comp.dtype == np.int32 and comp.max() + 1 == k
    # same partition: bijection between component ids
    pairs = set(zip(comp.tolist(), ref.tolist(), strict=True))
    assert len(pairs) == k
    # ids numbered by smallest member
    first = [np.flatnonzero(comp == c)[0] for c in range(k)]
    assert first == sorted(first)


def test_check_hard():
    ok = SideInfo.from_links(5, must_link=[(0, 1), (1, 2)], cannot_link=[(0, 3)])
    ok.check_hard()
    bad = SideInfo.from_links(5, must_link=[(0, 1), (1, 2)], cannot_link=[(2, 0)])
    with pytest.raises(ValueError, match=r"cannot-link \(0, 2\) contradicts the must-links"):
        bad.check_hard()
    lab = SideInfo.from_links(5, must_link=[(0, 1), (1, 2)], labels=[0, -1, 1, -1, -1])
    with pytest.raises(ValueError, match=r"points 0 and 2 have different labels"):
        lab.check_hard()
    same = SideInfo.from_links(5, cannot_link=[(3, 4)], labels=[-1, -1, -1, 2, 2])
    with pytest.raises(ValueError, match=r"cannot-link \(3, 4\) joins two points with the same label 2"):
        same.check_hard()


# ----------------------------------------------------------------------------- labels -> links


def test_decode_pair_index_is_a_bijection():
    L = 300
    k = np.arange(L * (L - 1) // 2)
    a, b = decode_pair_index(k)
    ta, tb = np.triu_indices(L, 1)
    got = set(zip(a.tolist(), b.tolist(), strict=True))
    assert got == set(zip(ta.tolist(), tb.tolist(), strict=True)) and np.all(a < b)
    # large indices stay exact
    big = np.array([2**40, 2**50 + 12345])
    a, b = decode_pair_index(big)
    np.testing.assert_array_equal(b * (b - 1) // 2 + a, big)
    assert np.all((a >= 0) & (a < b))


def test_links_from_labels_all_pairs():
    y = np.array([0, -1, 0, 1, 1, -1, 2])
    si = SideInfo.from_labels(y).links_from_labels()
    assert si.labels is None
    lab = np.flatnonzero(y >= 0)
    assert si.n_links == len(lab) * (len(lab) - 1) // 2
    for (i, j), s in zip(si.pairs, si.sign, strict=True):
        assert y[i] >= 0 and y[j] >= 0 and s == (1 if y[i] == y[j] else -1)
    assert si.summary()["n_must_link"] == 2  # (0, 2) and (3, 4)
    kept = SideInfo.from_labels(y).links_from_labels(keep_labels=True)
    np.testing.assert_array_equal(kept.labels, y)


def test_links_from_labels_subsample_is_uniform_and_seeded():
    rng = np.random.default_rng(3)
    n = 20000
    y = np.where(rng.random(n) < 0.5, rng.integers(0, 5, size=n), -1)  # ~10^4 labelled -> 5e7 pairs
    base = SideInfo.from_labels(y)
    a = base.links_from_labels(max_pairs=5000, seed=7)
    b = base.links_from_labels(max_pairs=5000, seed=7)
    assert a == b and a.n_links == 5000
    assert np.all(y[a.pairs] >= 0)
    # share of must-links ~ sum_c p_c^2 = 0.2 for 5 balanced classes
    share = a.summary()["n_must_link"] / 5000
    assert abs(share - 0.2) < 0.03
    ok = (a.sign == 1) == (y[a.pairs[:, 0]] == y[a.pairs[:, 1]])
    assert ok.all()


def test_links_from_labels_errors():
    with pytest.raises(ValueError, match="needs partial labels"):
        SideInfo.from_links(3, must_link=[(0, 1)]).links_from_labels()
    with pytest.raises(ValueError, match="`max_pairs` must be >= 0"):
        SideInfo.from_labels([0, 1]).links_from_labels(max_pairs=-1)


def test_summary_is_json_ready():
    import json

    si = SideInfo.from_links(
        6, must_link=[(0, 1), (1, 2)], cannot_link=[(4, 5)], weight=[1, 2, 1], labels=[0, 0, -1, 1, -1, -1]
    )
    s = si.summary()
    json.dumps(s)
    assert s == {
        "n": 6,
        "n_labelled": 3,
        "n_label_classes": 2,
        "n_links": 3,
        "n_must_link": 2,
        "n_cannot_link": 1,
        "n_conflicting_pairs": 0,
        "n_linked_points": 5,
        "max_degree": 2,
        "weighted": True,
    }


def test_link_weight_per_point_counts_each_pair_at_both_ends_with_its_net_weight():
    # 4 points, links (0, 1) weight 1 and (2, 3) weight 2: 2 * (1 + 2) / 4
    side = SideInfo.from_links(4, must_link=[[0, 1]], cannot_link=[[2, 3]], weight=[1.0, 2.0])
    assert link_weight_per_point(side.neighbour_table()) == pytest.approx(1.5, rel=1e-15)
    # a pair stored with both signs acts with its net weight |1 - 3| = 2 (counted at both ends)
    both = SideInfo.from_pairs(3, [[0, 1], [0, 1]], [1, -1], [1.0, 3.0], on_conflict="keep")
    assert link_weight_per_point(both.neighbour_table()) == pytest.approx(2 * 2.0 / 3, rel=1e-15)


def test_link_agreement_is_the_weighted_share_of_satisfied_links_by_brute_force():
    rng = np.random.default_rng(5)
    n, m = 30, 80
    pairs = rng.choice(n, size=(m, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    sign = rng.choice([-1, 1], size=len(pairs))
    w = rng.uniform(0.1, 2.0, len(pairs))
    side = SideInfo.from_pairs(n, pairs, sign, w, on_conflict="keep")
    z = rng.integers(0, 3, n)
    ok = [(z[i] == z[j]) == (s > 0) for (i, j), s in zip(side.pairs, side.sign, strict=True)]
    assert link_agreement(z, side) == pytest.approx(np.sum(side.weight * np.array(ok)) / side.weight.sum())
    # the true labelling satisfies exactly the links whose sign was not flipped
    y = rng.integers(0, 4, n)
    p, _ = _unique_pairs(rng, n, 60)
    a, b = p[:, 0], p[:, 1]
    flip = rng.random(len(a)) < 0.3
    sgn = np.where((y[a] == y[b]) ^ flip, 1, -1)
    noisy = SideInfo.from_pairs(n, p, sgn)
    assert link_agreement(y, noisy) == pytest.approx(1 - flip.mean())
    assert link_agreement(y, SideInfo(n)) == 1.0


def test_link_folds_partition_the_links():
    rng = np.random.default_rng(0)
    side = SideInfo.from_pairs(40, *_unique_pairs(rng, 40, 23))
    splits = link_folds(side, 5, seed=1)
    assert len(splits) == 5
    key = lambda s: {(int(i), int(j), int(g)) for (i, j), g in zip(s.pairs, s.sign, strict=True)}  # noqa: E731
    every = key(side)
    held = [key(h) for _, h in splits]
    assert set().union(*held) == every and sum(len(h) for h in held) == len(every)  # each link held out once
    assert sorted(len(h) for h in held) == [4, 4, 5, 5, 5]
    for (train, _), h in zip(splits, held, strict=True):
        assert key(train) == every - h
    assert link_folds(SideInfo.from_pairs(40, [[0, 1]], [1]), 5) == []  # fewer than 2 links: no split
    assert [key(h) for _, h in link_folds(side, 5, seed=1)] == held  # seeded


def _unique_pairs(rng, n, m):
    iu = np.triu_indices(n, 1)
    pick = rng.permutation(iu[0].size)[:m]
    return np.stack([iu[0][pick], iu[1][pick]], 1), rng.choice([-1, 1], size=m)


def test_weigh_link_kinds_scales_each_kind_of_link():
    """``weigh_link_kinds`` multiplies may-link weights by the first share and may-not-link weights by the
    second (both ends of a pair alike), leaving empty slots at 0; ``link_weight_shares`` at the default
    reference is 1 for both kinds at p = q = 0.9 and ln 4 / ln 9 at p = q = 0.8."""
    side = SideInfo.from_pairs(
        5, np.array([[0, 1], [1, 2], [3, 4]]), np.array([1, -1, 1]), np.array([1.0, 2.0, 0.5])
    )
    table = side.neighbour_table()
    out = weigh_link_kinds(table, (0.25, 0.5))
    sgn, wgt = np.asarray(table.sgn), np.asarray(table.wgt)
    np.testing.assert_allclose(out.wgt, np.where(sgn > 0, 0.25 * wgt, np.where(sgn < 0, 0.5 * wgt, 0.0)))
    assert np.asarray(out.wgt)[sgn == 0].sum() == 0 and np.array_equal(out.nbr, table.nbr)
    assert link_weight_shares(0.9, 0.9) == pytest.approx((1.0, 1.0))
    assert link_weight_shares(0.8, 0.8) == pytest.approx((np.log(4) / np.log(9),) * 2)
