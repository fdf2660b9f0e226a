"""CEC-IB paper claims (spec cecib.md §3.5, §5, §6: C6, C10, C12, C13); numbers and the full protocol in
reproduce/cecib.py -> reproduce/results/cecib.md.

One fast test (Example 4.1 on the cost itself, plus the two beta0 remarks); the rest are ``slow`` paper
reproductions on iris and wine (scikit-learn copies, raw features, k_init = 2 x classes, eps = 0.05,
10 restarts), with fewer draws than the benchmark and thresholds that hold with margin there.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ppclust import CECIB, SemiSupervisedGMM
from ppclust.datasets import load, sample_labels
from ppclust.inference import cecib
from ppclust.metrics import nmi

BETA0 = cecib.BETA0_HALF_NORMAL


def test_example_4_1_cost_sign_flip_and_beta0_remarks():
    """Example 4.1 through the cost, not the formula: for N(0,1) split at 0 (complete labels), the merged
    minus split cost E_beta({X}) - E_beta(Y) = H(p)(beta - beta0) changes sign at beta0 = 0.2698 (spec §3.5:
    -0.0155 / -0.0018 / +0.0122 at 0.25 / 0.2698 / 0.29 for one draw; here n = 2e5).
    Fails for bits instead of nats in either entropy (beta0 would be 0.494), a label term weighted by
    anything but p_i, or a biased (n - 1) covariance mixed with the MLE one. Then the two remarks:
    random labels give beta0 -> 1 (Remark 4.1), labels that overlap near the boundary a larger beta0."""
    rng = np.random.default_rng(11)
    n = 200_000
    x = rng.normal(size=(n, 1))
    y = (x[:, 0] >= 0).astype(int)
    one = np.zeros(n, int)
    h = np.log(2.0)  # H(1/2, 1/2) up to the O(1/sqrt(n)) imbalance of the split
    d = {
        b: cecib.cecib_cost(x, one, y, b).total - cecib.cecib_cost(x, y, y, b).total
        for b in (0.25, BETA0, 0.29)
    }
    assert d[0.25] < -0.01 and d[0.29] > 0.01
    assert abs(d[BETA0]) < 2e-3
    assert d[0.29] - d[0.25] == pytest.approx(h * 0.04, rel=1e-3)  # slope H(p) in beta, exactly linear
    # half-normal halves: beta0 of the data agrees with the analytic value
    assert cecib.beta0_from_labels(x, y) == pytest.approx(BETA0, abs=3e-3)
    # Remark 4.1: labels independent of x -> both halves look like X -> beta0 ~ 1
    assert cecib.beta0_from_labels(x, rng.integers(0, 2, n)) == pytest.approx(1.0, abs=2e-3)
    # noisy experts: labels from x + noise overlap at the boundary -> wider halves -> beta0 above 0.27
    b_noisy = cecib.beta0_from_labels(x, (x[:, 0] + 0.3 * rng.normal(size=n) >= 0).astype(int))
    assert BETA0 + 0.05 < b_noisy < 1.0


# ---------------------------------------------------------------------------------------------
# slow: paper reproductions on iris / wine
# ---------------------------------------------------------------------------------------------


def _fit(X, lab, C, beta, seed):
    # the paper's protocol pinned (the library's defaults differ from it: init="auto" takes the
    # label-seeded or cost-chosen start, cap_clusters lowers k_init): the authors' k-means++ start and
    # k_init = 2 x classes as given
    return CECIB(
        n_clusters=2 * C,
        beta=beta,
        min_cluster_fraction=0.05,
        n_init=10,
        random_state=seed,
        init="k-means++",
        cap_clusters=False,
    ).fit(X, lab)


@pytest.fixture(scope="module", params=["iris", "wine"])
def runs(request):
    """Per data set: unsupervised fits (3 seeds), 30 % correct labels (5 draws), 30 % labels of which 30 %
    wrong (5 draws) with CEC-IB_1, CEC-IB_0 and the semi-supervised GMM that trusts every label
    (``label_noise=0``: its default learns the flip rate)."""
    X, y = load(request.param)
    C = int(y.max()) + 1
    out = {"name": request.param, "y": y, "C": C}
    out["unsup"] = [_fit(X, None, C, 1.0, r) for r in range(3)]
    out["clean"] = [_fit(X, sample_labels(y, 0.3, seed=1000 + r), C, 1.0, r) for r in range(5)]
    out["noisy"] = []
    for r in range(5):
        lab = sample_labels(y, 0.3, noise=0.3, seed=2000 + r)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = SemiSupervisedGMM(n_clusters=C, random_state=r, label_noise=0.0, prior=None).fit(X, lab)
        out["noisy"].append((_fit(X, lab, C, 1.0, r), _fit(X, lab, C, BETA0, r), g))
    return out


@pytest.mark.slow
def test_table2_cluster_counts_within_one_of_paper(runs):
    """Table 2 (C10 acceptance): the median final count from k_init = 2 x classes is within +-1 of the paper
    without labels and with 30 % labels (iris 5 / 5, wine 3 / 3; ours: iris 5 / 6, wine 4 / 3-4), and
    clusters are only ever deleted, never fewer than the classes here. A Hartigan engine that never deletes
    would stay at 2 x classes (6, off by 3 on wine); one that over-deletes collapses below the classes."""
    paper = {"iris": 5, "wine": 3}[runs["name"]]
    for key in ("unsup", "clean"):
        ks = [m.n_clusters_ for m in runs[key]]
        assert abs(np.median(ks) - paper) <= 1, (key, ks)
        assert all(runs["C"] <= k <= 2 * runs["C"] for k in ks), (key, ks)


@pytest.mark.slow
def test_noise_free_labels_raise_nmi_on_wine(runs):
    """Fig. 3 (C12) on wine: mean NMI of CEC-IB_1 with 30 % correct labels is clearly above the
    unsupervised NMI (ours 0.84 vs 0.72). Not asserted on iris: there labels keep a 6th cluster alive and
    NMI stays at 0.73-0.74 (the paper too reports CEC-IB below the GMMs on iris for its cluster count)."""
    if runs["name"] != "wine":
        pytest.skip("claim holds on wine only (see reproduce/results/cecib.md)")
    y = runs["y"]
    n0 = np.mean([nmi(y, m.labels_) for m in runs["unsup"]])
    n30 = np.mean([nmi(y, m.labels_) for m in runs["clean"]])
    assert n30 > n0 + 0.05, (n0, n30)


@pytest.mark.slow
def test_wrong_labels_cecib_robust(runs):
    """Sec. 5.4 (C13), 30 % labelled, 30 % of those wrong: CEC-IB_1 (labels only forbid mixing, never force
    a class's component) scores at least the semi-supervised GMM that trusts every label (ours: iris 0.62 vs
    0.44, wine 0.65 vs 0.43), and the robust CEC-IB_0 at least CEC-IB_1 (iris 0.72, wine 0.84)."""
    y = runs["y"]
    c1, c0, g = (np.mean([nmi(y, m.labels_) for m in col]) for col in zip(*runs["noisy"], strict=True))
    assert c1 >= g + 0.05, (c1, g)
    assert c0 >= c1 - 0.02, (c0, c1)
