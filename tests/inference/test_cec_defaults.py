"""CEC-IB / C3L defaults: the capped start (``cap_clusters``) and the label-noise
weight (``label_noise``: ``cecib.label_channel_information``, the flip rate read off a partition,
``sideinfo.partition_flip_rate``, tested in ``tests/test_sideinfo.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from ppclust import metrics
from ppclust.errors import InvalidParameterError
from ppclust.estimators.c3l import C3L
from ppclust.estimators.cecib import CECIB
from ppclust.inference import c3l, cecib, hartigan
from ppclust.inference.cecib import label_channel_information


def _blobs(seed, n_per=50, d=20, k=3, sep=8.0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, d))
    centres *= sep / np.linalg.norm(centres, axis=1, keepdims=True)
    x = np.concatenate([rng.normal(c, 1.0, (n_per, d)) for c in centres])
    return x, np.repeat(np.arange(k), n_per)


def test_max_start_clusters_is_floor_n_over_min_size():
    assert hartigan.max_start_clusters(12, 200, cecib.min_size(200, 36, 0.05)) == 5  # satimage's panel case
    assert hartigan.max_start_clusters(6, 150, cecib.min_size(150, 4, 0.05)) == 6  # iris: not binding
    assert hartigan.max_start_clusters(4, 10, 38) == 1  # never below one cluster


def test_capped_start_avoids_the_one_cluster_fallback():
    """d = 20, n = 150 (three separated blobs), 12 initial clusters of ~12 points where the size rule needs
    22: uncapped the initial clusters are mostly too small (seed 2: every one, the fit falls back to one
    cluster; seed 0: two clusters for three blobs); the capped start (floor(150 / 22) = 6 clusters) finds
    the blobs."""
    for seed, k_raw in ((0, 2), (2, 1)):
        x, y = _blobs(seed)
        raw = CECIB(12, beta=0.0, cap_clusters=False, n_init=3, random_state=0, progress_bar=False).fit(x)
        cap = CECIB(12, beta=0.0, n_init=3, random_state=0, progress_bar=False).fit(x)
        assert raw.n_clusters_ == k_raw and raw.n_clusters_init_ == 12
        assert metrics.ari(y, raw.labels_) < 0.6
        assert cap.n_clusters_init_ == 6 and cap.n_clusters_ == 3
        assert metrics.ari(y, cap.labels_) > 0.95
    # labelled runs keep one initial cluster per category even above the cap
    lab = np.where(np.arange(len(y)) % 10 == 0, y, -1)
    assert CECIB(2, n_init=1, random_state=0, progress_bar=False).fit(x, lab).n_clusters_init_ == 3
    # C3L: floor(n / min_size), min_size = max(ceil(0.05 n), d_r + 3) with d_r = 19 for two categories
    lab2 = np.where(lab >= 0, lab % 2, -1)
    m = C3L(12, n_init=2, random_state=0, progress_bar=False).fit(x, lab2)
    assert m.n_clusters_init_ == 150 // c3l.min_size(150, 19) == 6
    assert C3L(12, cap_clusters=False, n_init=1, progress_bar=False).fit(x, lab2).n_clusters_init_ == 12


@pytest.mark.parametrize("m", [2, 3, 6, 10])
@pytest.mark.parametrize("eps", [0.0, 0.05, 0.2, 0.45])
def test_label_channel_information_is_the_mutual_information_share(m, eps):
    """Brute force: I(true; observed) of the m-ary symmetric channel with uniform categories, over ln m."""
    joint = np.full((m, m), eps / max(m - 1, 1) / m)
    np.fill_diagonal(joint, (1 - eps) / m)
    pm = joint.sum(1, keepdims=True) @ joint.sum(0, keepdims=True)
    nz = joint > 0
    mi = float(np.sum(joint[nz] * np.log(joint[nz] / pm[nz])))
    want = max(mi, 0.0) / np.log(m)
    assert label_channel_information(eps, m) == pytest.approx(want, abs=1e-12)


def test_label_channel_information_limits():
    assert label_channel_information(0.5, 2) == 0.0  # a coin flip says nothing
    assert label_channel_information(0.9, 3) == 0.0  # beyond (m-1)/m: clipped
    assert label_channel_information(0.3, 1) == 1.0
    # two categories, 20% wrong: close to the paper's beta0 = 0.27 for noisy labels (Example 4.1)
    assert label_channel_information(0.2, 2) == pytest.approx(0.2781, abs=1e-4)


def test_label_noise_scales_beta_and_auto_learns_the_rate():
    x, y = _blobs(2, n_per=60, d=3, sep=10.0)
    rng = np.random.default_rng(2)
    lab = np.where(rng.random(len(y)) < 0.5, y, -1)
    flip = (lab >= 0) & (rng.random(len(y)) < 0.25)
    lab[flip] = (lab[flip] + rng.integers(1, 3, flip.sum())) % 3
    realised = flip.sum() / (lab >= 0).sum()
    given = CECIB(3, label_noise=0.25, n_init=2, random_state=0, progress_bar=False).fit(x, lab)
    assert given.beta_ == pytest.approx(label_channel_information(0.25, 3))
    auto = CECIB(3, label_noise="auto", n_init=2, random_state=0, progress_bar=False).fit(x, lab)
    assert auto.label_noise_ == pytest.approx(realised, abs=0.03)
    assert auto.beta_ == pytest.approx(label_channel_information(auto.label_noise_, 3))
    assert CECIB(3, n_init=1, progress_bar=False).fit(x, lab).beta_ == 1.0  # default: the paper's beta
    with pytest.raises(InvalidParameterError):
        CECIB(label_noise=1.0).fit(x, lab)


def test_auto_start_falls_back_to_kmeanspp_when_wrong_labels_misplace_the_seeds():
    """Three separated blobs, half the points labelled, 30% of those wrong: the labelled means are pulled
    towards each other and the label-seeded start ends in a worse partition; plain CEC's cost (which does
    not read the labels) prefers the k-means++ start, so ``init="auto"`` stays at the no-label result."""
    x, y = _blobs(2, n_per=60, d=3, sep=10.0)
    rng = np.random.default_rng(2)
    lab = np.where(rng.random(len(y)) < 0.5, y, -1)
    flip = (lab >= 0) & (rng.random(len(y)) < 0.25)
    lab[flip] = (lab[flip] + rng.integers(1, 3, flip.sum())) % 3
    kw = dict(n_init=2, random_state=0, progress_bar=False)
    none = metrics.ari(y, CECIB(3, **kw).fit(x).labels_)
    seeded = metrics.ari(y, CECIB(3, init="labels", **kw).fit(x, lab).labels_)
    auto = CECIB(3, **kw).fit(x, lab)
    assert auto.init_ == "k-means++"
    assert metrics.ari(y, auto.labels_) >= none - 0.02
    assert seeded < none - 0.05


@pytest.mark.filterwarnings("ignore")
def test_cli_reaches_label_noise_and_cap_clusters(tmp_path):
    import json

    from ppclust import cli

    x, y = _blobs(3, n_per=30, d=2, sep=8.0)
    rng = np.random.default_rng(3)
    lab = np.where(rng.random(len(y)) < 0.5, y, -1)
    np.savetxt(tmp_path / "x.csv", x, delimiter=",")
    np.savetxt(tmp_path / "y.csv", lab, fmt="%d")

    def run(out, *params):
        argv = [
            "fit",
            "--method",
            "cecib",
            str(tmp_path / "x.csv"),
            "--labels",
            str(tmp_path / "y.csv"),
            "--out",
            str(tmp_path / out),
            "--no-plots",
            "--param",
            "n_clusters=40",
            "--param",
            "n_init=2",
            "--param",
            "random_state=0",
        ]
        for p in params:
            argv += ["--param", p]
        assert cli.main(argv) == 0
        return json.loads((tmp_path / out / "summary.json").read_text())

    s = run("out", 'label_noise="auto"')
    assert s["n_clusters_init_"] == 90 // cecib.min_size(90, 2, 0.05) == 20
    assert s["beta_"] == pytest.approx(label_channel_information(s["label_noise_"], 3))  # read off, applied
    assert 0.0 <= s["label_noise_"] <= 2 / 3
    assert run("raw", "cap_clusters=false")["n_clusters_init_"] == 40
