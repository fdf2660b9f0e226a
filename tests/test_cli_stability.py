"""``ppclust stability``: a JSON report of runs per seed and prior setting, from real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from ppclust.cli import main


def _data(tmp_path):
    X = np.r_[np.zeros((10, 2)), np.full((10, 2), 6.0)] + np.random.default_rng(0).normal(size=(20, 2))
    path = tmp_path / "data.csv"
    np.savetxt(path, X, delimiter=",", header="a,b", comments="")
    return path


def _run(args):
    env = dict(os.environ, PPCLUST_PROGRESS="0")
    cmd = [sys.executable, "-m", "ppclust", "stability", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def test_stability_reads_real_files_and_never_replaces_its_report(tmp_path, capsys):
    from ppclust import RDPMeans
    from ppclust.metrics import ari

    data = _data(tmp_path)
    links = tmp_path / "links.csv"
    links.write_text("i,j,sign\n0,1,1\n0,15,-1\n12,13,1\n")
    out = tmp_path / "report.json"
    args = [data, "--method", "rdpmeans", "--links", links, "--seeds", 0, 1, 2, "--out", out]
    r = _run(args)
    assert r.returncode == 0, r.stderr
    rep = json.loads(out.read_text())
    assert rep["method"] == "rdpmeans" and rep["runs"]["seed"] == [0, 1, 2]
    X = np.loadtxt(data, delimiter=",", skiprows=1)
    kw = dict(must_link=[(0, 1), (12, 13)], cannot_link=[(0, 15)])
    fits = [RDPMeans(random_state=s).fit(X, **kw).labels_ for s in (0, 1, 2)]  # the same runs, in process
    assert rep["runs"]["n_clusters"] == [len(np.unique(f)) for f in fits]
    assert np.allclose(rep["ari"], [[ari(a, b) for b in fits] for a in fits])
    assert rep["stable"] == (min(min(row) for row in rep["ari"]) >= rep["ari_min"])
    assert rep["r_hat"] is None and rep["runs"]["k_mean"] == [None, None, None]  # no posterior
    assert rep["verdict"] in r.stdout
    assert main(["stability", *map(str, args)]) == 2  # refused before any fit
    assert "exists" in capsys.readouterr().err
    assert json.loads(out.read_text()) == rep


@pytest.mark.slow  # a fresh process compiles the sampler
def test_stability_of_tvclust_from_files(tmp_path):
    data = _data(tmp_path)
    out = tmp_path / "report.json"
    r = _run([data, "--method", "tvclust", "--param", "n_draws=40", "--param", "n_warmup=40", "--seeds", 0, 1,
              "--out", out])  # fmt: skip
    assert r.returncode == 0, r.stderr
    rep = json.loads(out.read_text())
    assert rep["stable"] is True and rep["runs"]["n_clusters"] == [2, 2]
    assert rep["runs"]["k_low"][0] <= 2 <= rep["runs"]["k_high"][0] and rep["r_hat"] is not None
    assert rep["runs"]["in_every_ball"] == [True, True]


def test_prior_settings_become_runs_and_bad_ones_are_named(tmp_path, capsys):
    data = _data(tmp_path)
    out = tmp_path / "r.json"
    args = ["stability", str(data), "--method", "dpmeans", "--seeds", "0", "--out", str(out)]
    assert main([*args, "--prior", "lam=200", "--prior", "lam_k=2,lam_method=farthest_first"]) == 0
    rep = json.loads(out.read_text())
    assert rep["settings"] == [{"lam": 200}, {"lam_k": 2, "lam_method": "farthest_first"}]
    assert rep["runs"]["n_clusters"][0] == 1 and rep["runs"]["setting"][0] == '{"lam": 200}'
    assert main([*args, "--overwrite", "--prior", "kappa0=1", "--prior", "lam=1"]) == 2
    assert "kappa0" in capsys.readouterr().err
    assert (
        main(["stability", str(data), "--method", "dpmeans", "--seeds", "0", "--out", str(tmp_path / "x")])
        == 2
    )
    assert "two runs" in capsys.readouterr().err
