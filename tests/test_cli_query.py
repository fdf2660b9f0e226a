"""``ppclust query``: the next pairs written as i,j rows that, answered, the links file reads back."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from ppclust.cli import main


def _data(tmp_path):
    X = np.r_[np.zeros((10, 2)), np.full((10, 2), 5.0)] + np.random.default_rng(0).normal(size=(20, 2))
    path = tmp_path / "data.csv"
    np.savetxt(path, X, delimiter=",", header="a,b", comments="")
    return path, np.repeat([0, 1], 10)


@pytest.mark.parametrize(
    "method, tv",
    [
        ("rdpmeans", ["--strategy", "uncertainty"]),
        pytest.param(
            "tvclust",
            ["--param", "n_draws=20", "--param", "n_warmup=20", "--param", "n_chains=1"],
            marks=pytest.mark.slow,  # a fresh process compiles the sampler
        ),
    ],
)
def test_query_then_fit_reads_the_answers_back(tmp_path, method, tv):
    data, y = _data(tmp_path)
    links = tmp_path / "links.csv"
    links.write_text("i,j,sign\n0,1,1\n0,15,-1\n")
    out = tmp_path / "next_pairs.csv"
    cmd = [sys.executable, "-m", "ppclust", "query", "--method", method, str(data), "--links", str(links)]
    env = dict(os.environ, PPCLUST_PROGRESS="0")
    r = subprocess.run([*cmd, *tv, "-n", "5", "--out", str(out)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    rows = out.read_text().splitlines()
    assert rows[0] == "i,j" and len(rows) == 6
    pairs = np.array([list(map(int, row.split(","))) for row in rows[1:]])
    assert len(np.unique(pairs)) == 10  # no point twice in a batch
    assert not {(0, 1), (0, 15)} & {tuple(p) for p in np.sort(pairs, 1).tolist()}  # not asked again
    # never replaces a file
    r2 = subprocess.run([*cmd, *tv, "-n", "5", "--out", str(out)], capture_output=True, text=True, env=env)
    assert r2.returncode == 2 and "exists" in r2.stderr
    # answer them (a sign column) and append to the links file: fit reads them back
    signs = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1)
    with links.open("a") as fh:
        fh.writelines(f"{a},{b},{s}\n" for (a, b), s in zip(pairs.tolist(), signs.tolist(), strict=True))
    fit_out = tmp_path / "fit"
    args = [
        "fit",
        "--method",
        "rdpmeans",
        str(data),
        "--links",
        str(links),
        "--out",
        str(fit_out),
        "--no-plots",
    ]
    assert main(args) == 0
    import json

    summary = json.loads((fit_out / "summary.json").read_text())
    assert summary["inputs"]["links"]["n_must_link"] + summary["inputs"]["links"]["n_cannot_link"] == 7


def test_query_labels_and_errors(tmp_path, capsys):
    data, _ = _data(tmp_path)
    labels = tmp_path / "labels.csv"
    labels.write_text("label\n0\n" + "-1\n" * 18 + "1\n")
    out = tmp_path / "rows.csv"
    args = ["query", str(data), "--method", "ssgmm", "--labels", str(labels), "--param", "n_clusters=2"]
    assert main([*args, "-n", "3", "--out", str(out)]) == 0
    rows = out.read_text().splitlines()
    assert rows[0] == "row" and len(rows) == 4 and not {"0", "19"} & set(rows[1:])
    capsys.readouterr()
    assert main(["query", str(data), "--method", "rdpmeans", "--out", str(tmp_path / "x.csv")]) == 2
    assert "TVClust" in capsys.readouterr().err  # information needs a posterior
    assert not (tmp_path / "x.csv").exists()
    assert main(["query", str(data), "--method", "nope", "--out", str(tmp_path / "y.csv")]) == 2


@pytest.mark.parametrize("n", [0, -3])
def test_query_rejects_bad_n(tmp_path, n):
    data, _ = _data(tmp_path)
    assert (
        main(["query", str(data), "--method", "rdpmeans", "-n", str(n), "--out", str(tmp_path / "q.csv")])
        == 2
    )
