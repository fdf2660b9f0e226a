"""``ppclust predict`` reads a model saved by ``ppclust fit --save-model`` and labels new rows."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from ppclust.cli import main


def test_fit_saves_a_model_that_predict_reads_in_a_new_process(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(0, 1, (20, 2)), rng.normal(6, 1, (20, 2))]
    data, new = tmp_path / "x.csv", tmp_path / "new.csv"
    np.savetxt(data, X, delimiter=",", header="a,b", comments="")
    np.savetxt(new, [[0.1, 0.2], [6.2, 5.9]], delimiter=",", header="a,b", comments="")
    model = tmp_path / "model.pkl"
    params = ["n_draws=20", "n_warmup=20", "n_chains=1", "random_state=0", "progress_bar=false"]
    argv = ["fit", "--method", "tvclust", str(data), "--out", str(tmp_path / "fit"), "--no-plots"]
    assert main(argv + [f"--param={p}" for p in params] + ["--save-model", str(model)]) == 0
    assert model.is_file()
    fitted = np.loadtxt(tmp_path / "fit" / "labels.csv", skiprows=1, dtype=int)
    out = tmp_path / "labels.csv"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    cmd = [sys.executable, "-m", "ppclust", "predict", "--model", str(model), str(new), "--out", str(out)]
    run = subprocess.run(cmd + ["--proba"], capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr
    table = np.loadtxt(out, delimiter=",", skiprows=1, ndmin=2)
    assert out.read_text().splitlines()[0].startswith("label,p_0,p_1")
    assert table[:, 0].astype(int).tolist() == [fitted[0], fitted[25]]
    np.testing.assert_allclose(table[:, 1:].sum(1), 1.0, atol=1e-5)
    again = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert again.returncode == 2 and "exists" in again.stderr  # no silent overwrite


def test_predict_names_a_missing_or_foreign_model(tmp_path, capsys):
    new = tmp_path / "new.csv"
    np.savetxt(new, [[0.1, 0.2]], delimiter=",")
    assert (
        main(["predict", "--model", str(tmp_path / "none.pkl"), str(new), "--out", str(tmp_path / "o")]) == 2
    )
    assert "no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.pkl"
    bad.write_bytes(b"not a pickle")
    assert main(["predict", "--model", str(bad), str(new), "--out", str(tmp_path / "o")]) == 2
    assert "not a model" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--proba", None])
def test_predict_parser_accepts_its_options(flag):
    from ppclust.cli import build_parser

    argv = ["predict", "--model", "m.pkl", "x.csv", "--out", "y.csv"] + ([flag] if flag else [])
    args = build_parser().parse_args(argv)
    assert args.model == "m.pkl" and args.proba == (flag is not None)
