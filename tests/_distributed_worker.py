"""One process of a multi-process fit on localhost (started by tests/test_distributed.py).

Usage: ``python tests/_distributed_worker.py PORT NUM_PROCESSES PROCESS_ID METHOD OUT [MODE]``. Each process
takes its share of :func:`data`'s rows (unequal shares), fits ``METHOD`` on the global array and saves its
rows' labels and the model's parameters to ``OUT``. ``MODE="die"``: process 1 exits before the fit, so the
others must fail within the heartbeat timeout instead of hanging; ``MODE="hang"``: process 1 writes
``OUT + ".ready"`` and sleeps until the test kills it.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np


def data():
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(0, 1, (60, 2)), rng.normal(6, 1, (50, 2)), rng.normal((0, 8), 1, (43, 2))])
    y = np.full(len(X), -1)
    y[[0, 70, 120]] = [0, 1, 2]
    return X, y


def links():
    """Links by global row index, many of them between rows of different processes (every process
    passes all of them)."""
    must = np.array([[1, 100], [2, 3], [61, 62], [140, 10], [30, 90]])
    cannot = np.array([[0, 59], [64, 65], [150, 30], [5, 145]])
    return must, cannot


def shares(n, P):
    """Row ranges of the processes: unequal (the first process takes the fewest)."""
    w = np.arange(1, P + 1, dtype=float)
    ends = np.round(np.cumsum(w) / w.sum() * n).astype(int)
    return list(zip(np.concatenate([[0], ends[:-1]]), ends, strict=True))


#: C3L's hyperplane (given: with rows spread over processes C3L takes an explicit one)
HYPERPLANE = (np.array([1.0, -1.0]), -3.0)


#: TVClust's sub-cluster sampler on rows spread over processes (XLA; the one-process reference too)
TVCLUST = dict(
    algorithm="subcluster",
    init="one",
    point_estimate="max_log_joint",
    backend="xla",
    n_warmup=5,
    n_draws=5,
    n_chains=1,
    k_max=16,
    progress_bar=False,
)


def estimator(method):
    from ppclust import C3L, CECIB, DPMeans, RDPMeans, SemiSupervisedGMM, TVClust

    if method == "tvclust-sub":  # links across processes, partial labels
        return TVClust(random_state=0, **TVCLUST)
    if method == "tvclust-sub-chains":  # two chains, p and q sampled, alpha resampled
        return TVClust(random_state=1, **dict(TVCLUST, n_chains=2, pq="sample", sample_alpha=True))
    if method == "ssgmm":
        return SemiSupervisedGMM(3, random_state=0, progress_bar=False)
    if method == "ssgmm-diag":
        return SemiSupervisedGMM(3, covariance_type="diag", n_init=2, random_state=1, progress_bar=False)
    if method == "dpmeans":
        return DPMeans(lam=None, variant="delayed", n_init=2, random_state=0)
    if method == "rdpmeans":
        return RDPMeans(lam=20.0, variant="delayed", random_state=0)
    if method == "cecib-batch":  # k-means++ seeds; the label term from the partial labels
        return CECIB(5, algorithm="batch", init="k-means++", n_init=2, random_state=0, progress_bar=False)
    if method == "cecib-batch-labels":  # the label-seeded start, the lazy reinsertion
        return CECIB(4, algorithm="batch", init="labels", n_init=1, random_state=1, progress_bar=False)
    if method == "c3l-batch":  # random starts; immediate reinsertion of a deleted cluster's points
        return C3L(5, algorithm="batch", init="random", n_init=2, random_state=0, progress_bar=False)
    raise ValueError(method)


def fit(est, X, y):
    name = type(est).__name__
    if name == "C3L":
        return est.fit(X, hyperplane=HYPERPLANE)
    if name == "CECIB":
        return est.fit(X, partial_labels=y)
    if name in ("RDPMeans", "TVClust"):
        must, cannot = links()
        return est.fit(X, partial_labels=y, must_link=must, cannot_link=cannot)
    return est.fit(X, partial_labels=y) if name == "SemiSupervisedGMM" else est.fit(X)


def model(est):
    """The model's parameters (the same on every process): means, centres, or TVClust's number of clusters
    and its sampler's trace (clusters, log joint, p, q, alpha of every kept draw)."""
    if type(est).__name__ == "TVClust":
        res = est.samples_
        trace = [res.n_clusters, res.log_joint, res.p, res.q, res.alpha]
        return np.concatenate([[est.n_clusters_]] + [np.ravel(t) for t in trace])
    return np.asarray(getattr(est, "means_", getattr(est, "cluster_centers_", None)))


def main():
    port, P, i, method, out = sys.argv[1:6]
    mode = sys.argv[6] if len(sys.argv) > 6 else "fit"
    P, i = int(P), int(i)
    import jax

    jax.config.update("jax_platforms", "cpu")
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=f"127.0.0.1:{port}",
        num_processes=P,
        process_id=i,
        heartbeat_timeout_seconds=int(os.environ.get("PPCLUST_TEST_HEARTBEAT", "100")),
    )
    from ppclust import distributed

    X, y = data()
    lo, hi = shares(len(X), P)[i]
    Xg = distributed.process_rows(X[lo:hi])
    yg = distributed.process_labels(y[lo:hi], like=Xg)
    if mode == "die" and i == 1:
        os._exit(3)
    if mode == "hang" and i == 1:
        open(out + ".ready", "w").close()
        time.sleep(600)
    est = fit(estimator(method), Xg, yg)
    centres = model(est)
    np.savez(out, labels=distributed.local(est.labels_), centres=np.asarray(centres))
    jax.distributed.shutdown()


if __name__ == "__main__":
    main()
