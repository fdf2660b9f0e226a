"""``ppclust fit --method NAME`` for every registered method: CSV in, labels + JSON summary out."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ppclust import cli
from ppclust._registry import METHODS, available
from ppclust.metrics import ari

# small, fast settings per method and the side information each gets from the command line
PLAN = {
    "tvclust": (["n_draws=30", "n_warmup=30", "n_chains=1", "random_state=0"], "links"),
    "dpmeans": (["lam=8.0", "random_state=0"], None),
    # the authors' bounding-box start: at lam = 8 on these 2-D blobs the default global-mean start opens
    # 7 clusters (RDPMeans docstring); the test checks the CLI's plumbing, not the start
    "rdpmeans": (["lam=8.0", "init=bbox_random", "random_state=0"], "links"),
    "ssgmm": (["n_clusters=3", "n_init=2", "random_state=0"], "labels"),
    "bayesian-ssgmm": (
        ["n_clusters=3", "n_draws=10", "n_warmup=10", "n_chains=1", "random_state=0"],
        "labels",
    ),
    "cecib": (["n_clusters=3", "n_init=2", "random_state=0"], "labels"),
    "c3l": (["n_clusters=3", "n_init=2", 'init="k-means++"', "random_state=0"], "labels2"),
    "ccib": (["n_clusters=2", "n_init=2", "random_state=0"], "background"),
    "smic": (["n_clusters=3", "n_neighbors=5", "gamma=1.0", "eta=0.0", "random_state=0"], "links"),
}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    rng = np.random.default_rng(0)
    z = np.repeat(np.arange(3), 20)
    X = np.array([[0, 0], [6, 0], [0, 6]], float)[z] + rng.normal(size=(60, 2))
    np.savetxt(d / "x.csv", X, delimiter=",", header="a,b", comments="")
    i, j = rng.integers(0, 60, (2, 80))
    keep = i != j
    i, j = i[keep], j[keep]
    np.savetxt(d / "links.csv", np.c_[i, j, np.where(z[i] == z[j], 1, -1)], fmt="%d", delimiter=",")
    y = np.where(rng.random(60) < 0.3, z, -1)
    np.savetxt(d / "labels.csv", y, fmt="%d")
    np.savetxt(d / "labels2.csv", np.where(y < 0, -1, (y > 0).astype(int)), fmt="%d")
    np.savetxt(d / "background.csv", (z == 0).astype(int), fmt="%d")
    return d, z


def test_plan_covers_every_method():
    assert set(PLAN) == set(METHODS)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("method", list(PLAN))
def test_fit_writes_labels_and_summary(files, method, capsys):
    if method not in available():
        pytest.skip(f"{method} not available in this build")
    d, z = files
    params, side = PLAN[method]
    signs = np.loadtxt(d / "links.csv", delimiter=",")[:, 2]
    ml, cl = (signs > 0).sum(), (signs < 0).sum()
    out = d / f"out-{method}"
    argv = ["fit", "--method", method, str(d / "x.csv"), "--out", str(out), "--no-plots"]
    for p in params:
        argv += ["--param", p]
    if side == "links":
        argv += ["--links", str(d / "links.csv")]
    elif side in ("labels", "labels2"):
        argv += ["--labels", str(d / f"{side}.csv")]
    elif side == "background":
        argv += ["--background", str(d / "background.csv")]
    assert cli.main(argv) == 0
    labels = np.loadtxt(out / "labels.csv", skiprows=1, dtype=int)
    summary = json.loads((out / "summary.json").read_text())
    assert labels.shape == (60,) and summary["method"] == method and summary["n_samples"] == 60
    assert summary["n_rows_read"] == 60 and summary["inputs"]["data"]["header"] == ["a", "b"]
    if side == "links":
        assert summary["inputs"]["links"] == {
            "path": str(d / "links.csv"),
            "n_must_link": int(ml),
            "n_cannot_link": int(cl),
        }
    elif side in ("labels", "labels2"):
        assert summary["inputs"]["labels"]["n_labelled"] == int((np.loadtxt(d / f"{side}.csv") >= 0).sum())
    if method == "ccib":  # given the split {0} vs {1, 2}, the non-redundant partition separates 1 from 2
        assert ari(z[z > 0], labels[z > 0]) > 0.8
    else:
        assert ari(z, labels) > 0.8, (method, summary)
    assert method in capsys.readouterr().out


@pytest.mark.filterwarnings("ignore")
def test_tvclust_link_prior_reaches_the_cli(files):
    """``--param link_noise=... --param link_strength=...`` reach TVClust (the default link prior
    and the neutral one), and a non-positive strength is a CLI error naming the parameter."""
    d, _ = files
    base = [
        "fit",
        "--method",
        "tvclust",
        str(d / "x.csv"),
        "--links",
        str(d / "links.csv"),
        "--no-plots",
        *(a for v in ("n_draws=5", "n_warmup=5", "n_chains=1", "random_state=0") for a in ("--param", v)),
    ]
    p = {}
    for name, extra in (
        ("neutral", ["link_noise=null"]),
        ("strong", ["link_noise=0.2", "link_strength=1000"]),
    ):
        argv = base + ["--out", str(d / f"out-prior-{name}")] + [a for e in extra for a in ("--param", e)]
        assert cli.main(argv) == 0
        summary = json.loads((d / f"out-prior-{name}" / "summary.json").read_text())
        p[name] = summary["p_"]
    assert summary["params"]["link_strength"] == 1000 and summary["params"]["link_noise"] == 0.2
    # Beta(800, 200) holds p near its prior mean 0.8 whatever the partition
    assert abs(p["strong"] - 0.8) < 0.03 and abs(p["neutral"] - 0.8) > 0.03, p
    bad = base + ["--out", str(d / "out-prior-bad"), "--param", "link_strength=-1"]
    assert cli.main(bad) != 0


@pytest.mark.filterwarnings("ignore")
def test_rdpmeans_link_reliability_reaches_the_cli(files):
    """``--param link_reliability=...`` reaches RDPMeans: the default reads p, q off the first fit (in the
    summary, clean links: shares <= 1 and p, q high), ``null`` weighs every link fully (no estimate); a bad
    value is a CLI error."""
    d, _ = files
    base = [
        "fit",
        "--method",
        "rdpmeans",
        str(d / "x.csv"),
        "--links",
        str(d / "links.csv"),
        "--no-plots",
        "--param",
        "lam=8.0",
        "--param",
        "random_state=0",
    ]
    out = {}
    for name, extra in (("auto", []), ("off", ["--param", "link_reliability=null"])):
        assert cli.main(base + ["--out", str(d / f"out-rel-{name}"), *extra]) == 0
        out[name] = json.loads((d / f"out-rel-{name}" / "summary.json").read_text())
    rel = out["auto"]["link_reliability_"]
    assert set(rel) == {"p", "q"} and min(rel.values()) > 0.8, rel
    assert set(out["auto"]["link_weight_share_"]) == {"may_link", "may_not_link"}
    assert out["off"]["link_reliability_"] is None and out["off"]["params"]["link_reliability"] is None
    assert cli.main(base + ["--out", str(d / "out-rel-bad"), "--param", 'link_reliability="yes"']) != 0


@pytest.mark.filterwarnings("ignore")
def test_ssgmm_prior_reaches_the_cli(files):
    """``SemiSupervisedGMM(prior=...)`` from the command line: the default is the MAP fit (objective = log
    likelihood + log prior), ``--param prior=null`` the ML fit (objective = log likelihood)."""
    d, _ = files
    objective = {}
    for extra in ([], ["--param", "prior=null"]):
        out = d / f"out-prior-{len(extra)}"
        argv = [
            "fit",
            "--method",
            "ssgmm",
            str(d / "x.csv"),
            "--out",
            str(out),
            "--no-plots",
            "--labels",
            str(d / "labels.csv"),
            *extra,
        ]
        for p in PLAN["ssgmm"][0]:  # the settings of the plan's ssgmm run (its compiled programs)
            argv += ["--param", p]
        assert cli.main(argv) == 0
        s = json.loads((out / "summary.json").read_text())
        objective[len(extra)] = s["objective_"] - s["log_likelihood_"]
    assert objective[2] == 0.0 and objective[0] != 0.0
