"""Rows spread over processes (ppclust.distributed): the layout helpers in one process, and fits with real
processes on localhost (jax.distributed over gloo, CPU devices) whose labels equal the one-process fit."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ppclust import C3L, CECIB, DPMeans, RDPMeans, SemiSupervisedGMM, TVClust, distributed
from ppclust.errors import InvalidInputError

sys.path.insert(0, str(Path(__file__).parent))
import _distributed_worker as worker  # noqa: E402

from tests._tiers import fast_first  # noqa: E402

WORKER = Path(__file__).parent / "_distributed_worker.py"
TIMEOUT = 240  # seconds: a hard limit on every child, so nothing can hang the suite
SLOW_TIMEOUT = 600


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(P, method, tmp_path, mode="fit", heartbeat=100, dump=False):
    port = _free_port()
    env = dict(os.environ, PPCLUST_TEST_HEARTBEAT=str(heartbeat), JAX_PLATFORMS="cpu")
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parent.parent), env.get("PYTHONPATH", "")])
    env.pop("XLA_FLAGS", None)
    procs = []
    for i in range(P):
        if dump:  # every compiled program's optimised HLO, for _row_collectives
            env["XLA_FLAGS"] = f"--xla_dump_to={tmp_path / f'hlo{i}'} --xla_dump_hlo_as_text"
        cmd = [
            sys.executable,
            str(WORKER),
            str(port),
            str(P),
            str(i),
            method,
            str(tmp_path / f"out{i}.npz"),
            mode,
        ]
        log = open(tmp_path / f"log{i}.txt", "w")
        procs.append(subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT))
    return procs


def _wait(procs, timeout=TIMEOUT):
    end = time.monotonic() + timeout
    codes = []
    for p in procs:
        try:
            codes.append(p.wait(timeout=max(end - time.monotonic(), 1)))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            pytest.fail(f"a worker did not finish within {timeout} s")
    return codes


def _run(P, method, tmp_path, timeout=TIMEOUT, dump=False):
    codes = _wait(_start(P, method, tmp_path, dump=dump), timeout)
    logs = [(tmp_path / f"log{i}.txt").read_text()[-3000:] for i in range(P)]
    assert codes == [0] * P, logs
    outs = [np.load(tmp_path / f"out{i}.npz") for i in range(P)]
    return np.concatenate([o["labels"] for o in outs]), [o["centres"] for o in outs]


_OP = re.compile(r"= (\w+)\[([\d,]*)\]\S* (all-gather|reduce-window)\(")
_WINDOW = re.compile(r"window=\{size=([\dx]+)")


def _row_collectives(dump_dir, n_rows):
    """The partitioned programs' row-sized collectives: every ``all-gather`` of floating-point data with a
    dimension of at least ``n_rows`` (the rows of X gathered on every process: the memory of the whole data
    set) and every ``reduce-window`` with a window of at least ``n_rows`` (a cumulative sum over the rows,
    partitioned by summing a window per row: quadratic work)."""
    found = []
    for path in sorted(Path(dump_dir).glob("*after_optimizations.txt")):
        for line in path.read_text().splitlines():
            m = _OP.search(line)
            if m is None:
                continue
            dtype, dims, op = m.groups()
            dims = [int(v) for v in dims.split(",") if v]
            window = _WINDOW.search(line)
            if op == "all-gather" and dtype.startswith(("f", "bf")) and max(dims, default=0) >= n_rows:
                found.append((path.name, line.strip()[:200]))
            if op == "reduce-window" and window and max(int(v) for v in window.group(1).split("x")) >= n_rows:
                found.append((path.name, line.strip()[:200]))
    return found


def _one_process(method):
    X, y = worker.data()
    return worker.fit(worker.estimator(method), X, y)


# ------------------------------------------------------------------------------------ one process


def test_layout_of_unequal_counts():
    lay = distributed.RowLayout((3, 5, 2), 8)
    assert lay.n == 10 and lay.offsets == (0, 3, 8)
    assert lay.positions([0, 2, 3, 7, 8, 9]).tolist() == [0, 2, 8, 12, 16, 17]
    with pytest.raises(ValueError):
        lay.positions([10])


def test_process_rows_round_trip():
    X = np.arange(10.0).reshape(5, 2)
    Xg = distributed.process_rows(X)
    assert Xg.shape == (32, 2) and Xg.dtype == np.float64
    np.testing.assert_array_equal(distributed.local(Xg), X)
    y = distributed.process_labels([0, -1, 1, -1, -1], like=Xg)
    assert distributed.local(y).tolist() == [0, -1, 1, -1, -1]
    assert np.asarray(y)[5:].tolist() == [-1] * 27  # padding is unlabelled
    assert distributed.global_rows([[0, 4]], Xg).tolist() == [[0, 4]]
    with pytest.raises(ValueError):
        distributed.global_rows([5], Xg)


def test_one_process_global_fit_equals_numpy_fit():
    X, y = worker.data()
    a = worker.fit(worker.estimator("ssgmm"), X, y)
    b = worker.fit(worker.estimator("ssgmm"), distributed.process_rows(X), distributed.process_labels(y))
    np.testing.assert_array_equal(distributed.local(b.labels_), a.labels_)
    np.testing.assert_allclose(b.means_, a.means_, rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(b.classes_, a.classes_)
    assert b.n_clusters_ == a.n_clusters_ and b.n_iter_ == a.n_iter_


def test_methods_that_do_not_scale_out_say_which_do():
    Xg = distributed.process_rows(np.zeros((4, 2)))
    for algorithm in ("collapsed", "explicit"):
        with pytest.raises(
            InvalidInputError, match="algorithm='subcluster'.*SemiSupervisedGMM.*DPMeans and RDP"
        ):
            TVClust(algorithm=algorithm).fit(Xg)
    with pytest.raises(InvalidInputError, match="point_estimate='max_log_joint'.*init='one'"):
        TVClust(algorithm="subcluster").fit(Xg)
    for est in (DPMeans(lam=1.0), RDPMeans(lam=1.0, variant="delayed", compat=True)):
        with pytest.raises(InvalidInputError, match="variant='delayed'"):
            est.fit(Xg)


@pytest.mark.parametrize("method", fast_first(["tvclust-sub", "tvclust-sub-chains"]))
def test_one_process_global_tvclust_equals_numpy_fit(method):
    """TVClust's sub-cluster sampler on the rows path (every device's rows, uniforms keyed by global row,
    statistics reduced, links by global row, partial labels gathered) in one process equals the XLA fit on
    NumPy rows: the same draws."""
    X, y = worker.data()
    a = worker.fit(worker.estimator(method), X, y)
    b = worker.fit(worker.estimator(method), distributed.process_rows(X), distributed.process_labels(y))
    np.testing.assert_array_equal(distributed.local(b.labels_), a.labels_)
    assert b.n_clusters_ == a.n_clusters_ > 1
    np.testing.assert_allclose(worker.model(b), worker.model(a), rtol=1e-9)
    draws = np.moveaxis(distributed.local(b.samples_.labels), 0, -1)  # (n_chains, n_draws, n)
    np.testing.assert_array_equal(draws, a.samples_.labels)
    assert b.alpha_ == pytest.approx(a.alpha_, rel=1e-12)
    if method == "tvclust-sub":  # alpha fixed: the draw's log joint is that of labels_
        assert b.objective_ == pytest.approx(a.objective_, rel=1e-9)


@pytest.mark.parametrize("method", ["dpmeans", "rdpmeans"])
def test_one_process_global_dpmeans_equals_numpy_fit(method):
    """The rows path (lam from the data, links as global indices, partial labels gathered) in one process."""
    X, y = worker.data()
    a = worker.fit(worker.estimator(method), X, y)
    b = worker.fit(worker.estimator(method), distributed.process_rows(X), distributed.process_labels(y))
    np.testing.assert_array_equal(distributed.local(b.labels_), a.labels_)
    np.testing.assert_allclose(b.cluster_centers_, a.cluster_centers_, rtol=1e-10, atol=1e-10)
    assert b.lam_ == pytest.approx(a.lam_, rel=1e-12) and b.n_iter_ == a.n_iter_
    if method == "rdpmeans":
        assert b.xi0_ == pytest.approx(a.xi0_, rel=1e-12) and b.xi_max_ == pytest.approx(a.xi_max_, rel=1e-12)
        assert b.link_weight_share_ == a.link_weight_share_ and a.link_weight_share_ is not None


@pytest.mark.parametrize("method", fast_first(["cecib-batch", "cecib-batch-labels", "c3l-batch"]))
def test_one_process_global_cec_batch_equals_numpy_fit(method):
    """CEC-IB / C3L batch on the rows path (starts, reduced statistics, the polish handed from process to
    process, the model from reduced moments) in one process equals the fit on NumPy rows."""
    X, y = worker.data()
    a = worker.fit(worker.estimator(method), X, y)
    b = worker.fit(worker.estimator(method), distributed.process_rows(X), distributed.process_labels(y))
    np.testing.assert_array_equal(distributed.local(b.labels_), a.labels_)
    assert b.n_clusters_ == a.n_clusters_ and b.n_iter_ == a.n_iter_ and b.converged_ == a.converged_
    np.testing.assert_allclose(b.means_, a.means_, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(b.covariances_, a.covariances_, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(b.weights_, a.weights_, rtol=1e-12)
    assert b.objective_ == pytest.approx(a.objective_, rel=1e-10)
    np.testing.assert_allclose(b.restart_objectives_, a.restart_objectives_, rtol=1e-10)
    for key, value in a.objective_terms_.items():
        assert b.objective_terms_[key] == pytest.approx(value, rel=1e-9, abs=1e-12)


def test_cec_rows_need_the_batch_algorithm_and_c3l_a_hyperplane():
    X, y = worker.data()
    Xg = distributed.process_rows(X)
    for est in (CECIB(3), C3L(3)):
        with pytest.raises(InvalidInputError, match="algorithm='batch'.*DPMeans"):
            est.fit(Xg, distributed.process_labels(y))
    with pytest.raises(InvalidInputError, match="hyperplane=\\(normal, offset\\)"):
        C3L(3, algorithm="batch").fit(Xg, distributed.process_labels(y))


def test_invalid_rows_are_reported():
    with pytest.raises(InvalidInputError, match="NaN"):
        SemiSupervisedGMM(1, progress_bar=False).fit(distributed.process_rows([[0.0, np.nan]]))


# ------------------------------------------------------------------------------------ real processes


# rdpmeans runs dpmeans' pass with links: plain dpmeans in the slow tier. EM's sufficient statistics and
# CEC-IB's batch steps with the Hartigan polish handed between processes run in `make test` whatever they
# cost (the suite runs real processes); the others (TVClust's sub-cluster sampler compiles one large
# program per process) in the extended tier by their recorded time
@pytest.mark.parametrize(
    "method",
    fast_first(["ssgmm", "cecib-batch"], n_fast=2, core=True)
    + fast_first(
        ["rdpmeans", "c3l-batch", "tvclust-sub", "dpmeans", "cecib-batch-labels", "tvclust-sub-chains"],
        n_fast=3,
    ),
)
def test_two_processes_equal_one(method, tmp_path):
    labels, centres = _run(2, method, tmp_path, dump=True)
    # rows are reduced, never gathered: no program of process 0 gathers X or sums a window per row
    assert _row_collectives(tmp_path / "hlo0", len(labels)) == []
    ref = _one_process(method)
    np.testing.assert_array_equal(labels, ref.labels_)
    np.testing.assert_array_equal(centres[0], centres[1])  # the model is the same on every process
    np.testing.assert_allclose(centres[0], worker.model(ref), rtol=1e-8, atol=1e-8)


@pytest.mark.slow
@pytest.mark.parametrize(
    "method", ["ssgmm", "ssgmm-diag", "dpmeans", "rdpmeans", "cecib-batch", "c3l-batch", "tvclust-sub"]
)
def test_four_processes_equal_one(method, tmp_path):
    labels, centres = _run(4, method, tmp_path, SLOW_TIMEOUT)
    ref = _one_process(method)
    np.testing.assert_array_equal(labels, ref.labels_)
    for c in centres[1:]:
        np.testing.assert_array_equal(c, centres[0])


def test_a_dead_process_stops_the_others(tmp_path):
    procs = _start(2, "ssgmm", tmp_path, mode="hang", heartbeat=3)
    ready = tmp_path / "out1.npz.ready"
    end = time.monotonic() + TIMEOUT
    while not ready.exists() and time.monotonic() < end and procs[1].poll() is None:
        time.sleep(0.2)
    assert ready.exists(), (tmp_path / "log1.txt").read_text()[-2000:]
    procs[1].kill()
    code = _wait(procs[:1], timeout=120)[0]
    procs[1].wait()
    log = (tmp_path / "log0.txt").read_text()
    assert code != 0
    assert "task died" in log or "unhealthy" in log, log[-2000:]
