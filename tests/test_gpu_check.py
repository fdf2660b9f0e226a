"""benchmarks/gpu_check.py in its reduced mode (tiny sizes, CPU), so that the GPU check cannot rot between the
rounds that have a GPU: it runs to the end, writes both files, and the XLA path agrees with the CPU path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "gpu_check.py"


def _run(tmp_path, *extra, timeout=600):
    env = dict(os.environ, JAX_PLATFORMS="cpu", PPCLUST_PROGRESS="0")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, str(SCRIPT), "--reduced", "--out", str(tmp_path), *extra]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((tmp_path / "gpu_check.json").read_text()), (tmp_path / "gpu_check.md").read_text()


def _check(res, md):
    assert res["reduced"] is True and "REDUCED" in md
    for row in res["agreement"]:
        assert "error" not in row, row
        assert row["ari"] == 1.0, row
    assert [r["cov"] for r in res["em"]] == ["diag", "full"]
    assert all(r["ms"] > 0 for r in res["em"])
    assert all(r["point_sweeps_per_s"] > 0 for r in res["subcluster"])
    assert "Flash-GMM" in md


def test_reduced_run_writes_its_sections(tmp_path):
    # the sub-cluster throughput section compiles the sampler twice: it runs in the slow test below
    res, md = _run(tmp_path, "--methods", "ssgmm", "--sections", "agreement,em", timeout=1200)
    assert [r["method"] for r in res["agreement"]] == ["ssgmm"]
    assert res["subcluster"] == []
    _check(res, md)


@pytest.mark.slow
def test_reduced_run_of_every_estimator(tmp_path):
    res, md = _run(tmp_path, timeout=1800)
    assert len(res["agreement"]) >= 9
    _check(res, md)


def test_without_an_accelerator_the_full_run_refuses(tmp_path):
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2 and "--reduced" in done.stderr
