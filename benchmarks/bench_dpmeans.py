"""RDP-means speed: time per pass vs one Lloyd iteration of sklearn KMeans, and vs a NumPy Algorithm 1.

n = 100,000, d = 10, 20 Gaussian clusters, 0.1% of the points carry a link (n/1000 random pairs,
labelled by the true classes). The NumPy baseline is timed on a subset (``--n-numpy`` points, same
lambda, same links restricted to the subset) and scaled per point, because one full NumPy sweep
over 100,000 points takes minutes; the scaled figure is reported as such.

    PYTHONPATH=. python benchmarks/bench_dpmeans.py [--n 100000] [--out benchmarks/results/bench_dpmeans.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import jax
import numpy as np
from sklearn.cluster import KMeans

from benchmarks._common import machine_info
from ppclust._jax import x64
from ppclust.inference import dpmeans as dp
from tests._dpmeans_reference import rdpmeans_numpy


def make_data(n, d=10, k=20, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 6, size=(k, d))
    y = rng.integers(0, k, n)
    X = centres[y] + rng.normal(size=(n, d))
    m = max(n // 1000, 1)
    i = rng.integers(0, n, m)
    j = (i + 1 + rng.integers(0, n - 1, m)) % n
    pairs = np.unique(np.sort(np.stack([i, j], 1), axis=1), axis=0)
    sign = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1.0, -1.0)
    return X, y, centres, pairs, sign


def best_of(f, reps):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--n-numpy", type=int, default=2_000)
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    X, y, centres, pairs, sign = make_data(a.n)
    table = dp.neighbour_table(a.n, pairs, sign)
    lam = dp.kth_farthest_from_mean(X, 20, "sqeuclidean") * 0.25
    mu0 = X.mean(0)

    # one Lloyd iteration of sklearn KMeans, from the true centres
    km = lambda: KMeans(20, init=centres, n_init=1, max_iter=1, tol=0.0, algorithm="lloyd").fit(X)
    km()
    t_lloyd = best_of(km, a.reps)

    rows = []
    with x64():
        Xj = jax.device_put(X)
        for variant in ("sequential", "delayed"):
            kw = dict(
                xi0=1e-3,
                xi_rate=2.0,
                k_max=64,
                max_iter=a.passes,
                patience=10**6,
                variant=variant,
                init_centre=mu0,
            )
            run = lambda kw=kw: jax.block_until_ready(dp.fit(jax.random.key(0), Xj, table, lam, **kw))
            r = run()  # compile
            t = best_of(run, a.reps) / a.passes
            rows.append((variant, t, int(r.n_clusters)))

        # NumPy Algorithm 1 on a subset, per point
        sub = np.arange(a.n_numpy)
        keep = (pairs < a.n_numpy).all(1)
        tab_s = dp.neighbour_table(a.n_numpy, pairs[keep], sign[keep])
        rng = np.random.default_rng(1)
        t0 = time.perf_counter()
        rdpmeans_numpy(
            X[sub],
            tab_s.nbr,
            tab_s.sgn,
            tab_s.wgt,
            lam,
            mu0,
            lambda t: rng.permutation(a.n_numpy),
            patience=10**6,
            max_iter=a.passes,
        )
        t_np = (time.perf_counter() - t0) / a.passes * (a.n / a.n_numpy)

    dev = jax.devices()[0]
    lines = [
        "# RDP-means benchmark",
        "",
        machine_info(),
        "",
        f"n = {a.n}, d = 10, 20 clusters, {len(pairs)} links (0.1% of n), lambda = {lam:.3g}, "
        f"k_max = 64, float64. JAX device: {dev.platform} ({dev.device_kind}); "
        f"host {platform.processor() or '?'}, {os.cpu_count()} cores.",
        "Time per pass = best of the repeated runs of `passes` sweeps (compile excluded) / passes.",
        f"NumPy Algorithm 1 timed on n = {a.n_numpy} and **scaled per point** to n = {a.n}.",
        "",
        "| implementation | s / pass | ratio to one sklearn Lloyd iteration "
        "| speed-up over NumPy Algorithm 1 | K |",
        "|---|---|---|---|---|",
        f"| sklearn KMeans, one Lloyd iteration (k = 20) | {t_lloyd:.4f} | 1.0 | | 20 |",
    ]
    for variant, t, k in rows:
        lines.append(
            f"| ppclust RDP-means, {variant} | {t:.4f} | {t / t_lloyd:.2f} | {t_np / t:.0f}x | {k} |"
        )
    lines.append(f"| NumPy Algorithm 1 (scaled) | {t_np:.2f} | {t_np / t_lloyd:.0f} | 1x | |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
