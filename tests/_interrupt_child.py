"""A child process fitting one estimator for a long time, interrupted by SIGINT (shared by
``tests/test_interrupt.py`` and ``benchmarks/bench_interrupt.py``)."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

CHILD = textwrap.dedent(
    """
    import sys, time
    import numpy as np
    import ppclust as pc

    name, n = sys.argv[1], int(sys.argv[2])
    rng = np.random.default_rng(0)
    K = 5
    y = rng.integers(0, K, n)
    X = rng.normal(0, 4, (K, 4))[y] + rng.normal(size=(n, 4))
    pairs = rng.integers(0, n, (2 * n, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    same = y[pairs[:, 0]] == y[pairs[:, 1]]
    links = dict(must_link=pairs[same][: n // 2], cannot_link=pairs[~same][: n // 2])
    part = dict(partial_labels=np.where(rng.random(n) < 0.1, y, -1))
    part2 = dict(partial_labels=np.where(part["partial_labels"] >= 0, part["partial_labels"] % 2, -1))  # C3L

    def make(big):
        m = 1000 if big else 1
        tv = dict(n_warmup=2, progress_bar=True, random_state=0)
        return {
            "dpmeans": lambda: (pc.DPMeans(n_init=20 * m, max_iter=1000, random_state=0), {}),
            "rdpmeans": lambda: (pc.RDPMeans(n_init=5 * m, random_state=0), links),
            "ssgmm_em": lambda: (pc.SemiSupervisedGMM(K, n_init=20 * m, max_iter=1000, tol=0,
                                                      random_state=0, progress_bar=False), part),
            "bayes_ssgmm": lambda: (pc.BayesianSemiSupervisedGMM(K, n_draws=100 * m, n_warmup=2,
                                                                 n_chains=1, random_state=0), part),
            "tvclust": lambda: (pc.TVClust(100 * m, n_chains=1, **tv), links),
            "tvclust_2chains": lambda: (pc.TVClust(100 * m, n_chains=2, **tv), links),
            "tvclust_subcluster": lambda: (pc.TVClust(100 * m, n_chains=1, algorithm="subcluster", **tv),
                                           links),
            "tvclust_variational": lambda: (pc.TVClust(algorithm="variational", vb_max_iter=10 * m,
                                                       vb_tol=1e-300, random_state=0, progress_bar=False),
                                            links),
            "cecib": lambda: (pc.CECIB(K, n_init=2 * m, init="k-means++", random_state=0,
                                       progress_bar=False), part),
            "cecib_batch": lambda: (pc.CECIB(K, n_init=2 * m, init="k-means++", algorithm="batch",
                                             random_state=0, progress_bar=False), part),
            "c3l": lambda: (pc.C3L(K, n_init=2 * m, random_state=0, progress_bar=False), part2),
            "ccib": lambda: (pc.CCIB(K, n_init=2 * m, random_state=0, progress_bar=False), part),
            "smic": lambda: (pc.SMIC(K, random_state=0, progress_bar=False), links),
        }[name]()

    est, kw = make(False)
    est.fit(X, **kw)  # compiles the programs the long fit runs
    est, kw = make(True)
    print("fitting", flush=True)
    try:
        est.fit(X, **kw)
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("interrupted", time.monotonic(), flush=True)
        print("fitted", [k for k in vars(est) if k.endswith("_")], flush=True)
        est, kw = make(False)
        print("usable", est.fit(X, **kw).labels_.shape == (n,), flush=True)
    """
)

ESTIMATORS = [
    "dpmeans",
    "rdpmeans",
    "ssgmm_em",
    "bayes_ssgmm",
    "tvclust",
    "tvclust_2chains",
    "tvclust_subcluster",
    "tvclust_variational",
    "cecib",
    "cecib_batch",
    "c3l",
    "ccib",
    "smic",
]


def next_line(proc, deadline):
    """The child's next stdout line, or None past ``deadline`` (time.monotonic())."""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    while time.monotonic() < deadline:
        if sel.select(timeout=0.05):
            return proc.stdout.readline()
    return None


def interrupt_child(name, stderr: Path, n=3000, delay=1.5):
    """Start the child for estimator ``name`` on ``n`` points; ``delay`` seconds after its long fit
    started, send SIGINT. Returns a dict: ``answer_s`` (seconds from the signal to the child's
    KeyboardInterrupt, None if it did not answer within 60 s or finished), ``fitted`` (its fitted
    attributes after the interrupt) and ``usable`` (a following fit worked); its stderr goes to ``stderr``.
    """
    env = dict(os.environ, PPCLUST_PROGRESS="1", PYTHONUNBUFFERED="1")  # sampler chunks as in the warm-up
    with open(stderr, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, name, str(n)],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=env,
        )
    out = {"answer_s": None, "fitted": None, "usable": None}
    try:
        if next_line(proc, time.monotonic() + 900) != "fitting\n":
            return out
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        line = next_line(proc, sent + 60)
        if line is None or not line.startswith("interrupted"):
            return out
        out["answer_s"] = float(line.split()[1]) - sent
        out["fitted"] = next_line(proc, time.monotonic() + 300)
        out["usable"] = next_line(proc, time.monotonic() + 300) == "usable True\n"
        return out
    finally:
        proc.kill()
        proc.wait()
