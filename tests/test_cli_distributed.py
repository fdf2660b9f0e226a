"""``ppclust fit``'s multi-process options: ``--rows`` of a shared file and the checks of the options (the
multi-process fit itself is tested with real processes in tests/test_distributed.py)."""

from __future__ import annotations

import numpy as np

from ppclust.cli import main


def _data(tmp_path):
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(0, 1, (30, 2)), rng.normal(6, 1, (30, 2))])
    path = tmp_path / "x.npy"
    np.save(path, X)
    return path


def test_rows_fit_only_that_range(tmp_path):
    data = _data(tmp_path)
    out = tmp_path / "out"
    args = ["fit", str(data), "--method", "ssgmm", "--param", "n_clusters=2", "--param", "random_state=0"]
    assert main([*args, "--rows", "10:50", "--no-plots", "--out", str(out)]) == 0
    labels = np.loadtxt(out / "labels.csv", skiprows=1)
    assert labels.shape == (40,)
    assert len(set(labels[:20])) == 1 and len(set(labels[20:])) == 1 and labels[0] != labels[-1]


def test_bad_options_are_one_line_errors(tmp_path, capsys):
    data = _data(tmp_path)
    base = ["fit", str(data), "--method", "ssgmm", "--out", str(tmp_path / "o")]
    assert main([*base, "--rows", "5:500"]) == 2
    assert "--rows" in capsys.readouterr().err
    assert main([*base, "--coordinator", "127.0.0.1:1"]) == 2
    assert "go together" in capsys.readouterr().err
    assert main([*base, "--coordinator", "127.0.0.1:1", "--num-processes", "2", "--process-id", "2"]) == 2
    assert "--process-id" in capsys.readouterr().err


def test_two_processes_each_on_its_own_file_equal_one_fit(tmp_path):
    """`ppclust fit` in two real processes (jax.distributed over gloo), each reading its own data file
    and the same links file in global rows (links across the processes, which a process's own row count
    would refuse): the concatenated labels files equal the one-process fit of all rows."""
    import os
    import socket
    import subprocess
    import sys
    from pathlib import Path

    rng = np.random.default_rng(1)
    truth = np.repeat([0, 1, 2], 30)
    X = rng.normal(size=(90, 2)) + 7.0 * np.stack([truth, truth % 2], 1)
    parts = [X[:50], X[50:]]  # unequal shares
    pairs = rng.choice(90, (60, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    assert ((pairs < 50) != (pairs >= 50)).any()  # some links join rows of the two processes
    sign = np.where(truth[pairs[:, 0]] == truth[pairs[:, 1]], 1, -1)
    links = tmp_path / "links.csv"
    np.savetxt(links, np.column_stack([pairs, sign]), fmt="%d", delimiter=",", header="i,j,sign", comments="")
    np.save(tmp_path / "all.npy", X)
    for i, part in enumerate(parts):
        np.save(tmp_path / f"part-{i}.npy", part)
    params = ["--method", "rdpmeans", "--links", str(links), "--no-plots"]
    params += ["--param", "lam=20.0", "--param", "variant=delayed", "--param", "random_state=0"]

    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, JAX_PLATFORMS="cpu", PPCLUST_PROGRESS="0")
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")])
    env.pop("XLA_FLAGS", None)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "ppclust", "fit", str(tmp_path / f"part-{i}.npy"), *params]
            + ["--coordinator", f"127.0.0.1:{port}", "--num-processes", "2", "--process-id", str(i)]
            + ["--out", str(tmp_path / f"out-{i}")],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for i in range(2)
    ]
    try:
        logs = [p.communicate(timeout=240)[0] for p in procs]
    finally:
        for p in procs:
            p.kill()
    assert [p.returncode for p in procs] == [0, 0], "\n".join(logs)[-3000:]
    one = subprocess.run(
        [
            sys.executable,
            "-m",
            "ppclust",
            "fit",
            str(tmp_path / "all.npy"),
            *params,
            "--out",
            str(tmp_path / "one"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert one.returncode == 0, one.stderr[-3000:]
    spread = np.concatenate([np.loadtxt(tmp_path / f"out-{i}" / "labels.csv", skiprows=1) for i in range(2)])
    whole = np.loadtxt(tmp_path / "one" / "labels.csv", skiprows=1)
    assert spread.shape == (90,)
    np.testing.assert_array_equal(spread, whole)
    assert len(np.unique(whole)) >= 2
