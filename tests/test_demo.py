"""``ppclust demo --quick`` end to end: every registered method runs, the folder is complete."""

from __future__ import annotations

import json

import pytest

from ppclust import posterior
from ppclust._registry import available
from ppclust.demo import run_demo


@pytest.mark.filterwarnings("ignore")
def test_quick_demo_runs_every_method(tmp_path, capsys):
    out = tmp_path / "demo"
    assert run_demo(out=str(out), quick=True) == 0
    table = json.loads((out / "table.json").read_text())
    assert [r["method"] for r in table] == [
        m
        for m in ["tvclust", "dpmeans", "rdpmeans", "ssgmm", "bayesian-ssgmm", "cecib", "c3l", "ccib", "smic"]
        if m in available()
    ]
    by = {r["method"]: r for r in table}
    # side information must help on wine: methods with links/labels clearly beat chance
    for m in ("tvclust", "ssgmm", "bayesian-ssgmm", "cecib", "smic"):
        assert float(by[m]["NMI"]) > 0.6, by[m]
    for f in (
        "report.md",
        "data_links.png",
        "partitions.png",
        "psm.png",
        "trace_n_clusters.png",
        "tvclust_posterior.nc",
    ):
        assert (out / f).stat().st_size > 0, f
    tree = posterior.load(out / "tvclust_posterior.nc")
    assert tree["posterior"]["n_clusters"].shape[:2] == (2, 120)  # chains x draws of the quick plan
    printed = capsys.readouterr().out
    assert "method" in printed and "NMI" in printed
