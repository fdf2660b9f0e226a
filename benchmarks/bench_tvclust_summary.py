"""TVClust: sampling time and posterior-summary time side by side, per algorithm and n (one chain).

A fit is timed twice at each size (the first compiles); the second fit's wall time is split into the
summary (``TVClust._set_posterior``: point estimate, credible ball, link-parameter draws, the objective and
the ArviZ tree) and the rest (validation and sampling). The pointwise log-likelihood for LOO is not part of
``fit``; its cost is the separate column "log-lik (on request)" (``TVClust.compute_log_likelihood``).
Data: 5 Gaussian blobs in d = 2, 200 random pairs of which the same-blob ones become must-links.

Usage: PYTHONPATH=. python benchmarks/bench_tvclust_summary.py [--sizes 10000 100000]
       [--algorithms subcluster variational collapsed explicit] [--draws 50] [--loglik]
Writes benchmarks/results/tvclust_summary.md (a section per run's settings).
"""

from __future__ import annotations

import argparse
import subprocess
import time

import numpy as np

from benchmarks._common import RESULTS, machine_info, md_table, write_section


def data(n, seed=0):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 5, n)
    X = rng.normal(size=(5, 2))[truth] * 6 + rng.normal(size=(n, 2))
    ml = rng.integers(0, n, (200, 2))
    return X, ml[truth[ml[:, 0]] == truth[ml[:, 1]]]


def one(algorithm, n, draws, loglik):
    """(fit s, summary s, log-lik s or nan, clusters) of the second fit at this size."""
    from ppclust import TVClust
    from ppclust.estimators import tvclust

    spent = {}
    original = tvclust.TVClust._set_posterior

    def timed(self, *args):
        t = time.perf_counter()
        original(self, *args)
        spent["summary"] = time.perf_counter() - t

    tvclust.TVClust._set_posterior = timed
    X, ml = data(n)
    if algorithm == "variational":
        kw = dict(algorithm=algorithm, vb_max_iter=draws, random_state=0)
    else:
        kw = dict(algorithm=algorithm, n_draws=draws, n_warmup=draws, n_chains=1, progress_bar=False)
        kw["random_state"] = 0
    try:
        for _ in range(2):  # the first fit compiles
            spent.clear()
            t = time.perf_counter()
            est = TVClust(**kw).fit(X, must_link=ml)
            total = time.perf_counter() - t
        ll = float("nan")
        if loglik and est.posterior_ is not None:
            t = time.perf_counter()
            est.compute_log_likelihood()
            ll = time.perf_counter() - t
    finally:
        tvclust.TVClust._set_posterior = original
    summary = spent.get("summary", 0.0)
    return total - summary, summary, ll, est.n_clusters_


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--algorithms", nargs="+", default=["subcluster", "variational", "collapsed", "explicit"])
    ap.add_argument("--draws", type=int, default=50)
    ap.add_argument("--loglik", action="store_true", help="also time compute_log_likelihood")
    args = ap.parse_args()
    rows = []
    for algorithm in args.algorithms:
        for n in args.sizes:
            sample_s, summary_s, ll_s, k = one(algorithm, n, args.draws, args.loglik)
            rows.append([algorithm, n, sample_s, summary_s, summary_s / sample_s, ll_s, k])
            print(rows[-1], flush=True)
    try:
        git = ["git", "rev-parse", "--short", "HEAD"]
        commit = subprocess.run(git, capture_output=True, text=True).stdout
    except OSError:
        commit = "?"
    head = ["algorithm", "n", "sampling s", "summary s", "summary / sampling", "log-lik (on request) s", "K"]
    text = (
        f"## draws {args.draws} (+ as many warm-up sweeps), one chain, d = 2\n\n"
        f"Machine: {machine_info()} | commit {commit.strip() or '?'}\n\n"
        f"{md_table(head, rows)}\n\n"
        "Variational: `vb_max_iter` = draws; its summary is part of the fit (no `_set_posterior`). "
        "Above `ppclust.partition.SALSO_MAX_N` points the point estimate is `partition.best_draw`.\n"
    )
    name = f"draws{args.draws}-n{'-'.join(map(str, args.sizes))}-{'-'.join(args.algorithms)}"
    path = write_section(RESULTS / "tvclust_summary.md", name, text)
    print("wrote", path)


if __name__ == "__main__":
    main()
