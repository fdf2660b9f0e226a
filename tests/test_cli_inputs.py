"""``ppclust fit`` on the inputs users really have, run as a user runs it (a subprocess on real files):
an interrupted run (SIGINT, SIGTERM) leaves no staging folder, a killed run's staging folder is removed
by the next run, ``.npy`` files are never unpickled, and a labels file keeps its empty cells and may give
classes by name. Nothing the user had is deleted."""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ppclust import cli

ROOT = Path(__file__).resolve().parent.parent
CMD = [sys.executable, "-m", "ppclust"]


def _env():
    base = {k: v for k, v in os.environ.items() if k != "PPCLUST_DEBUG"}
    return dict(
        base,
        TQDM_DISABLE="1",
        JAX_PLATFORMS="cpu",
        PYTHONPATH=str(ROOT),
        JAX_COMPILATION_CACHE_DIR=str(ROOT / ".jax_cache"),
        JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
    )


def _run(args, cwd):
    return subprocess.run([*CMD, *args], cwd=cwd, capture_output=True, text=True, env=_env(), timeout=600)


def _snapshot(path):
    return {str(p.relative_to(path)): p.read_bytes() for p in path.rglob("*") if p.is_file()}


def _staging(parent):
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(".ppclust-"))


@pytest.fixture()
def work(tmp_path):
    """A user's folder: their own files next to the data."""
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(size=(15, 2)), rng.normal(size=(15, 2)) + 8]
    np.savetxt(tmp_path / "x.csv", X, delimiter=",")
    (tmp_path / "thesis.txt").write_text("years of work")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("mine")
    return tmp_path


# --- interrupted runs ---------------------------------------------------------------------------------


def _caught(pid: int, sig: int) -> bool:
    """Whether process ``pid`` has a handler for ``sig`` (Linux: the SigCgt mask of /proc/pid/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    return False


# a process started in the background of a shell without job control ignores SIGINT, and so do the CLI
# processes it starts: SIGINT cannot reach them there
_SIGINT = pytest.param(
    signal.SIGINT,
    marks=pytest.mark.skipif(
        signal.getsignal(signal.SIGINT) is not signal.default_int_handler,
        reason="SIGINT is not handled by Python's default handler in this test process",
    ),
)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
@pytest.mark.parametrize("sig", [signal.SIGTERM, _SIGINT])
def test_a_signal_mid_fit_writes_nothing_and_exits_cleanly(work, sig):
    before = _snapshot(work)
    argv = ["fit", "-", "--method", "dpmeans", "--param", "lam=20", "--out", str(work / "out")]
    p = subprocess.Popen([*CMD, *argv], cwd=work, stdin=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    deadline = time.monotonic() + 300
    while not _caught(p.pid, signal.SIGTERM):  # main() has installed its handlers
        assert p.poll() is None and time.monotonic() < deadline, p.stderr.read()
        time.sleep(0.01)
    p.stdin.write((work / "x.csv").read_bytes())
    p.stdin.close()  # the data are read, the fit starts (compiling and fitting take seconds)
    time.sleep(0.3)
    if p.poll() is not None:
        pytest.skip("the run ended before the signal could be sent")
    os.kill(p.pid, sig)
    p.wait(timeout=300)
    err = p.stderr.read().decode()
    assert p.returncode == 128 + sig if sig != signal.SIGINT else p.returncode == 130, err
    assert "ppclust: interrupted" in err and "Traceback" not in err, err
    assert not (work / "out").exists() and _staging(work) == []
    assert _snapshot(work) == before


@pytest.mark.parametrize("sig", [signal.SIGTERM, _SIGINT])
def test_a_signal_while_writing_removes_the_staging_folder(work, sig):
    before = _snapshot(work)
    argv = ["fit", "x.csv", "--method", "dpmeans", "--param", "lam=20", "--out", str(work / "out")]
    p = subprocess.Popen([*CMD, *argv], cwd=work, stderr=subprocess.PIPE, env=_env())
    while not _staging(work):  # figures are drawn into the staging folder (seconds, with matplotlib)
        assert p.poll() is None, ("the run ended before its staging folder was seen", p.stderr.read())
        time.sleep(0.002)
    os.kill(p.pid, sig)
    p.wait(timeout=300)
    err = p.stderr.read().decode()
    assert p.returncode in (128 + sig, 130), (p.returncode, err)
    assert _staging(work) == [], err
    assert not (work / "out").exists() or not any((work / "out").iterdir())
    assert _snapshot(work) == before


def test_a_killed_runs_staging_folder_is_removed_by_the_next_run(work):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    old = time.time() - 3600

    def staged(name, pid, marker=True):
        d = work / name
        d.mkdir()
        (d / "labels.csv").write_text("label\n0\n")
        if marker:
            (d / ".ppclust-staging").write_text(json.dumps({"pid": pid, "created": old}))
            os.utime(d / ".ppclust-staging", (old, old))
        return d

    staged(".ppclust-killed1", dead.pid)  # ppclust's, its process gone: removed
    staged(".ppclust-running", os.getpid())  # a live process's: kept
    staged(".ppclust-userown", dead.pid, marker=False)  # no marker: not clearly ppclust's, kept
    before = {k: v for k, v in _snapshot(work).items() if not k.startswith(".ppclust-killed1")}
    r = _run(["fit", "x.csv", "--method", "dpmeans", "--param", "lam=20", "--out", "out", "--no-plots"], work)
    assert r.returncode == 0, r.stderr
    assert _staging(work) == [".ppclust-running", ".ppclust-userown"]
    after = _snapshot(work)
    assert {k: v for k, v in after.items() if not k.startswith("out/")} == before
    assert sorted(os.listdir(work / "out")) == ["labels.csv", "summary.json"]


# --- .npy files ---------------------------------------------------------------------------------------


def _not_npy(tmp_path, kind):
    f = tmp_path / "x.npy"
    X = np.arange(8.0).reshape(4, 2)
    if kind == "csv":
        np.savetxt(f, X, delimiter=",")
    elif kind == "pickle":
        f.write_bytes(pickle.dumps(X))
    elif kind == "npz":
        with open(f, "wb") as fh:
            np.savez(fh, a=X)
    elif kind == "object":
        np.save(f, np.array([1.0, "a"], dtype=object), allow_pickle=True)
    return f


@pytest.mark.parametrize(
    ("kind", "needle"),
    [
        ("csv", "is a text file (CSV?), not a NumPy array, despite its .npy name; rename it to .csv"),
        ("pickle", "is a Python pickle, which ppclust never loads"),
        ("npz", "is a zip archive (an .npz file?)"),
        ("object", "holds Python objects (dtype object), which ppclust never unpickles"),
    ],
)
def test_a_file_named_npy_that_is_not_one_is_named_for_what_it_is(tmp_path, kind, needle):
    f = _not_npy(tmp_path, kind)
    r = _run(["fit", str(f), "--method", "dpmeans", "--out", str(tmp_path / "out"), "--no-plots"], tmp_path)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and str(f) in lines[0], lines
    assert "allow_pickle" not in r.stderr and "unsafely" not in r.stderr and "trust" not in r.stderr
    assert not (tmp_path / "out").exists() and _staging(tmp_path) == []


def test_npy_is_recognised_by_its_header_and_never_unpickled(tmp_path, monkeypatch):
    f = tmp_path / "data.bin"
    np.save(tmp_path / "d.npy", np.arange(6.0).reshape(3, 2))
    (tmp_path / "d.npy").rename(f)
    assert cli.read_data(str(f)).values.tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    seen = []
    real = np.load
    monkeypatch.setattr(np, "load", lambda *a, **k: seen.append(k.get("allow_pickle")) or real(*a, **k))
    cli.read_data(str(f))
    assert seen == [False]


# --- labels files -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "n", "expected", "classes"),
    [
        ("label\n0\n\n1\n", 3, [0, -1, 1], None),  # an empty cell is a row, not a dropped line
        ("\n0\n1\n", 3, [-1, 0, 1], None),  # also the first row's
        ("0\n\n1\n\n", 4, [0, -1, 1, -1], None),  # and the last's
        ("0\n\n1\n\n\n", 3, [0, -1, 1], None),  # blank lines beyond the rows are not rows
        ("0,,1,-1\n", 4, [0, -1, 1, -1], None),  # one row of labels
        ("species\nsetosa\n\nvirginica\nsetosa\n", 4, [0, -1, 1, 0], {"setosa": 0, "virginica": 1}),
        ("b\na\n-1\nb\n", 4, [1, 0, -1, 1], {"a": 0, "b": 1}),  # no header: the count says so
        ('"Iris setosa"\nIris virginica\n\n', 3, [0, 1, -1], {"Iris setosa": 0, "Iris virginica": 1}),
    ],
)
def test_labels_keep_empty_cells_and_accept_class_names(tmp_path, text, n, expected, classes):
    f = tmp_path / "y.csv"
    f.write_text(text)
    lab = cli.read_labels_named(str(f), n)
    assert lab.y.tolist() == expected and lab.classes == classes


@pytest.mark.parametrize(
    ("text", "n", "message"),
    [
        ("0\n\n1\nfoo\n1\n", 5, r"non-numeric value 'foo' at row 3, column 0 \(0-based; line 4 of"),
        ("a\n\nb\n3\nb\n", 5, r"number '3' at row 3, column 0 \(0-based; line 4 of the file\) among class"),
        ("label\n0\n\n1\n", 4, r"3 entries but the data has 4 rows \(its first line 'label' was read as a"),
        ("0\n\n1.5\n", 3, r"must hold integers; got 1.5 at row 2, column 0 \(0-based; line 3 of the"),
        ("0,1\n2,3\n", 2, r"must have one column .*line 1 has 2 columns"),
    ],
)
def test_labels_errors_name_the_right_row(tmp_path, text, n, message):
    f = tmp_path / "y.csv"
    f.write_text(text)
    with pytest.raises(cli.CLIError, match=message):
        cli.read_labels(str(f), n)


def test_fit_with_class_names_and_empty_cells_records_the_coding(work):
    names = ["left"] * 15 + ["right"] * 15
    for i in (1, 4, 20, 29):
        names[i] = ""
    (work / "y.csv").write_text("side\n" + "\n".join(names) + "\n")
    before = _snapshot(work)
    r = _run(
        ["fit", "x.csv", "--labels", "y.csv", "--method", "ssgmm", "--param", "n_clusters=2", "--out", "out"]
        + ["--param", "random_state=0", "--no-plots"],
        work,
    )
    assert r.returncode == 0, r.stderr
    assert "labels given as 2 class names, coded left=0, right=1" in r.stderr
    summary = json.loads((work / "out" / "summary.json").read_text())
    expected = {"path": "y.csv", "n_labelled": 26, "classes": {"left": 0, "right": 1}}
    assert summary["inputs"]["labels"] == expected
    labels = np.loadtxt(work / "out" / "labels.csv", skiprows=1, dtype=int)
    assert labels.shape == (30,) and len(set(labels[:15])) == 1 and labels[0] != labels[15]
    assert {k: v for k, v in _snapshot(work).items() if not k.startswith("out/")} == before
