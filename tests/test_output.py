"""The CLI never deletes or overwrites what it did not write (run as a user runs it: a subprocess)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

CMD = [sys.executable, "-m", "ppclust"]


def _run(args, cwd):
    env = dict(os.environ, TQDM_DISABLE="1", JAX_PLATFORMS="cpu")
    return subprocess.run([*CMD, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=600)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("data")
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(size=(15, 2)), rng.normal(size=(15, 2)) + 8]
    np.savetxt(d / "x.csv", X, delimiter=",")
    return d / "x.csv"


def _user_folder(path):
    path.mkdir()
    (path / "thesis.txt").write_text("years of work")
    (path / "labels.csv").write_text("the user's own labels")
    (path / "sub").mkdir()
    (path / "sub" / "keep.dat").write_text("x")


def _snapshot(path):
    return {str(p.relative_to(path)): p.read_bytes() for p in path.rglob("*") if p.is_file()}


def _no_temp_left(parent):
    return not [p for p in parent.iterdir() if p.name.startswith(".ppclust-")]


@pytest.mark.core
def test_fit_refuses_non_empty_folder_and_touches_nothing(tmp_path, data):
    out = tmp_path / "results"
    _user_folder(out)
    before = _snapshot(out)
    r = _run(
        ["fit", str(data), "--method", "dpmeans", "--param", "lam=20", "--out", str(out), "--no-plots"],
        tmp_path,
    )
    assert r.returncode == 2, r.stderr
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and "not empty" in err[0] and "--overwrite" in err[0]
    assert _snapshot(out) == before
    assert _no_temp_left(tmp_path)


def test_fit_out_dot_never_wipes_the_current_folder(tmp_path, data):
    work = tmp_path / "work"
    _user_folder(work)
    before = _snapshot(work)
    r = _run(["fit", str(data), "--method", "dpmeans", "--param", "lam=20", "--out", ".", "--no-plots"], work)
    assert r.returncode == 2 and "not empty" in r.stderr
    assert _snapshot(work) == before


def test_overwrite_replaces_only_what_ppclust_writes(tmp_path, data):
    out = tmp_path / "results"
    _user_folder(out)
    r = _run(
        [
            "fit",
            str(data),
            "--method",
            "dpmeans",
            "--param",
            "lam=20",
            "--out",
            str(out),
            "--no-plots",
            "--overwrite",
        ],
        tmp_path,
    )
    assert r.returncode == 0, r.stderr
    after = _snapshot(out)
    assert after["thesis.txt"] == b"years of work" and after["sub/keep.dat"] == b"x"
    labels = np.loadtxt(out / "labels.csv", skiprows=1, dtype=int)  # replaced by ppclust's file
    assert labels.shape == (30,) and not set(labels[:15]) & set(labels[15:])  # the two blobs apart
    assert "summary.json" in after
    assert _no_temp_left(tmp_path)


def test_out_is_a_file_or_under_a_file(tmp_path, data):
    f = tmp_path / "report.txt"
    f.write_text("mine")
    for out in (f, f / "sub"):
        r = _run(["fit", str(data), "--method", "dpmeans", "--out", str(out), "--no-plots"], tmp_path)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "Traceback" not in r.stderr
    assert f.read_text() == "mine"


def test_empty_or_new_folder_is_fine(tmp_path, data):
    (tmp_path / "empty").mkdir()
    for out in (tmp_path / "empty", tmp_path / "new" / "deeper"):
        args = ["fit", str(data), "--method", "dpmeans", "--param", "lam=20", "--out", str(out), "--no-plots"]
        r = _run(args, tmp_path)
        assert r.returncode == 0, r.stderr
        assert sorted(p.name for p in out.iterdir()) == ["labels.csv", "summary.json"]


def test_demo_refuses_non_empty_folder_before_running(tmp_path):
    out = tmp_path / "ppclust-demo"
    _user_folder(out)
    before = _snapshot(out)
    r = _run(["demo", "--quick", "--out", str(out)], tmp_path)
    assert r.returncode == 2 and "not empty" in r.stderr
    assert "running" not in r.stderr  # refused before any method ran
    assert _snapshot(out) == before


def test_failed_staging_leaves_nothing_it_created_and_keeps_what_it_did_not(tmp_path):
    from ppclust._output import OutputDir

    new = OutputDir(tmp_path / "a" / "b" / "out")
    with pytest.raises(RuntimeError, match="figure failed"), new.staging() as tmp:
        (tmp / "labels.csv").write_text("label\n0\n")
        raise RuntimeError("figure failed")
    assert list(tmp_path.iterdir()) == []  # no temporary folder, no a/ or a/b/ left behind
    mine = tmp_path / "empty"
    mine.mkdir()
    with pytest.raises(RuntimeError), OutputDir(mine).staging():
        raise RuntimeError("x")
    assert mine.is_dir() and list(tmp_path.iterdir()) == [mine]  # the user's empty folder stays
