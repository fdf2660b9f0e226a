"""``ppclust fit`` as a user runs it (``python -m ppclust`` in a subprocess, on real files): every error,
also one raised deep inside a solver, is one line on stderr with exit code 2, no traceback, nothing
written, no temporary folder left; input rows are never dropped silently."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(args, cwd, stdin=None, **env):
    base = {k: v for k, v in os.environ.items() if k != "PPCLUST_DEBUG"}
    env = dict(
        base,
        TQDM_DISABLE="1",
        JAX_PLATFORMS="cpu",
        PYTHONPATH=str(ROOT),
        **env,
        # the tests' persistent compilation cache (conftest.py), so repeated runs skip compiling
        JAX_COMPILATION_CACHE_DIR=str(ROOT / ".jax_cache"),
        JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
    )
    return subprocess.run(
        [sys.executable, "-m", "ppclust", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


def _assert_one_line_error(r, tmp_path, *needles):
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ppclust: error: "), r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    for s in needles:
        assert s in lines[0], lines[0]
    left = [p.name for p in tmp_path.rglob("*") if p.name.startswith(".ppclust-") or p.name == "out"]
    assert left == [], left


@pytest.fixture()
def blobs(tmp_path):
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(size=(10, 2)), rng.normal(size=(10, 2)) + 8]
    np.savetxt(tmp_path / "x.csv", X, delimiter=",")
    return tmp_path / "x.csv"


# errors raised inside the solvers (each was a traceback, or an uncaught exception, before)
SOLVER_ERRORS = {
    # TVClust: KMaxExhaustedError (was a RuntimeError: traceback, exit 1)
    "kmax": (
        [
            "--method",
            "tvclust",
            "--param",
            "k_max=2",
            "--param",
            "alpha=1e9",
            "--param",
            "n_draws=2",
            "--param",
            "n_warmup=0",
            "--param",
            "n_chains=1",
            "--param",
            'init="one"',
        ],
        "k_max=2",
    ),
    # DP-means: J = sum D + lam K overflows (was a bare FloatingPointError: traceback, exit 1)
    "nonfinite": (["--method", "dpmeans", "--param", "lam=1.5e308"], "non-finite objective"),
    # k_max=0: an IndexError from inside jit (or a validation error once parameters are declared)
    "kmax0": (["--method", "dpmeans", "--param", "k_max=0"], "dpmeans: "),
}


@pytest.mark.parametrize("case", list(SOLVER_ERRORS))
def test_solver_errors_are_one_line_exit_2(tmp_path, blobs, case):
    args, needle = SOLVER_ERRORS[case]
    data = blobs
    if case == "nonfinite":
        data = tmp_path / "huge.csv"
        np.savetxt(data, np.array([[0.0], [0.1], [0.2], [1.3e154], [1.3e154], [1.3e154]]))
    r = _run(["fit", str(data), *args, "--out", str(tmp_path / "out"), "--no-plots"], tmp_path)
    _assert_one_line_error(r, tmp_path, needle)


def test_ppclust_debug_reraises_with_the_traceback(tmp_path):
    data = tmp_path / "bad.csv"
    data.write_text("1,2\n3,oops\n")
    r = _run(
        ["fit", str(data), "--method", "dpmeans", "--out", str(tmp_path / "out")], tmp_path, PPCLUST_DEBUG="1"
    )
    assert r.returncode == 1 and "Traceback" in r.stderr and "CLIError: data file" in r.stderr
    assert not (tmp_path / "out").exists()


def test_broken_symlink_output_is_refused_before_fitting(tmp_path, blobs):
    link = tmp_path / "results"
    link.symlink_to(tmp_path / "nowhere" / "deep")
    r = _run(
        ["fit", str(blobs), "--method", "dpmeans", "--param", "lam=20", "--out", str(link), "--no-plots"],
        tmp_path,
    )
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "broken symbolic link" in r.stderr
    assert not (tmp_path / "nowhere").exists() and link.is_symlink()


def test_first_row_with_a_missing_value_is_data_not_a_header(tmp_path):
    data = tmp_path / "na.csv"
    data.write_text("NA,1.0\n0.5,1.5\n8,9\n8.5,9.5\n")
    r = _run(
        [
            "fit",
            str(data),
            "--method",
            "dpmeans",
            "--param",
            "lam=20",
            "--out",
            str(tmp_path / "out"),
            "--no-plots",
        ],
        tmp_path,
    )
    _assert_one_line_error(r, tmp_path, "'NA' at row 0, column 0", "line 1", "--header")


def test_stdin_with_a_header_reports_rows_read(tmp_path):
    text = "a,b\n" + "\n".join(f"{v},{v}" for v in (0, 0.1, 0.2, 9, 9.1, 9.2)) + "\n"
    out = tmp_path / "out"
    r = _run(
        ["fit", "-", "--method", "dpmeans", "--param", "lam=20", "--out", str(out), "--no-plots"],
        tmp_path,
        stdin=text,
    )
    assert r.returncode == 0, r.stderr
    assert "read 6 rows x 2 columns from <stdin> (header 'a,b' skipped)" in r.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_rows_read"] == 6 and summary["inputs"]["data"]["header"] == ["a", "b"]
    labels = np.loadtxt(out / "labels.csv", skiprows=1, dtype=int)
    assert labels.shape == (6,) and len(set(labels[:3])) == 1 and labels[0] != labels[3]
