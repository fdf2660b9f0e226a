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
    assert [(r["dtype"], r["cov"]) for r in res["em"]] == [
        ("float64", "diag"),
        ("float64", "full"),
        ("float32", "diag"),
        ("float32", "full"),
    ]
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
    assert len(res["agreement"]) >= 14  # nine estimators and five non-default algorithms
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


def test_combine_keeps_the_measured_rows_of_later_runs(tmp_path):
    """Runs cut short by --deadline merge: a later measured row replaces a skipped one, a skipped row never
    replaces a measured one, and the markdown lists every run."""

    def run(machine, agreement, em, peak):
        return {
            "machine": machine,
            "device": "cuda:0",
            "reduced": False,
            "sizes": {},
            "agreement": agreement,
            "subcluster": [],
            "em": em,
            "peak_bytes": peak,
            "seconds": 10.0,
        }

    em_row = {"N": 4, "K": 2, "D": 1, "cov": "full", "dtype": "float64"}
    first = run(
        "m1",
        [{"method": "a", "ari": 1.0}, {"method": "b", "error": "skipped: deadline"}],
        [{**em_row, "ms": 9.0}],
        2**30,
    )
    second = run(
        "m2",
        [{"method": "a", "error": "skipped: deadline"}, {"method": "b", "ari": 0.5}],
        [{**em_row, "ms": 4.0}],
        2**29,
    )
    paths = []
    for i, r in enumerate((first, second)):
        paths.append(tmp_path / f"run{i}.json")
        paths[-1].write_text(json.dumps(r))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--combine", *map(str, paths), "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    res = json.loads((out / "gpu_check.json").read_text())
    assert {r["method"]: r.get("ari") for r in res["agreement"]} == {"a": 1.0, "b": 0.5}
    assert [r["ms"] for r in res["em"]] == [4.0]
    assert res["peak_bytes"] == 2**30 and res["seconds"] == 20.0
    md = (out / "gpu_check.md").read_text()
    assert "Combined from 2 runs" in md and "- m1" in md and "- m2" in md
