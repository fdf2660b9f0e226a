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
