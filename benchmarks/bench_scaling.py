"""Scaling curves: fit time vs n (d fixed) and vs d (n fixed) for every estimator; PNG + table.

Each point is the best of ``--repeat`` fits after one warm-up fit of the same shape (so compile time
is excluded), with fixed small iteration budgets so the curves show per-pass cost, not convergence
luck. Run: ``PYTHONPATH=. python benchmarks/bench_scaling.py [--quick]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks._common import RESULTS, machine_info, md_table, write_result


def _data(n, d, k=5, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.integers(0, k, n)
    centres = rng.normal(scale=6.0, size=(k, d))
    X = centres[z] + rng.normal(size=(n, d))
    i, j = rng.integers(0, n, (2, max(n // 50, 10)))
    keep = i != j
    i, j = i[keep], j[keep]
    same = z[i] == z[j]
    return X, z, np.c_[i[same], j[same]], np.c_[i[~same], j[~same]]


def _estimators():
    import ppclust

    return {
        "RDP-means (max_iter=5)": (
            lambda: ppclust.RDPMeans(lam=200.0, max_iter=5, patience=100, random_state=0),
            "links",
        ),
        "SSGMM EM (20 iter)": (
            lambda: ppclust.SemiSupervisedGMM(5, max_iter=20, tol=0.0, n_init=1, random_state=0),
            "labels",
        ),
        "CEC-IB (1 restart)": (lambda: ppclust.CECIB(n_clusters=5, n_init=1, random_state=0), "labels"),
        "SMIC (t=5, fixed gamma)": (
            lambda: ppclust.SMIC(5, n_neighbors=5, gamma=1.0, eta=0.0, random_state=0),
            "links",
        ),
        "TVClust (20 sweeps)": (
            lambda: ppclust.TVClust(n_draws=10, n_warmup=10, n_chains=1, random_state=0),
            "links",
        ),
    }


def _fit(make, uses, X, z, ml, cl):
    est = make()
    if uses == "links":
        est.fit(X, must_link=ml, cannot_link=cl)
    else:
        y = np.where(np.arange(len(z)) % 5 == 0, z, -1)
        est.fit(X, y)


def _time(make, uses, n, d, repeat):
    X, z, ml, cl = _data(n, d)
    _fit(make, uses, X, z, ml, cl)  # warm-up: compile this shape
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        _fit(make, uses, X, z, ml, cl)
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    ns = [500, 1000, 2000] if a.quick else [1000, 2000, 4000, 8000]
    ds = [2, 8, 32] if a.quick else [2, 4, 8, 16, 32]
    ests = _estimators()
    by_n = {name: [_time(mk, uses, n, 4, a.repeat) for n in ns] for name, (mk, uses) in ests.items()}
    by_d = {name: [_time(mk, uses, 1000, d, a.repeat) for d in ds] for name, (mk, uses) in ests.items()}

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    for name in ests:
        ax[0].loglog(ns, by_n[name], "o-", label=name)
        ax[1].loglog(ds, by_d[name], "o-", label=name)
    ax[0].loglog(ns, [by_n[next(iter(ests))][0] * n / ns[0] for n in ns], "k:", label="slope 1")
    ax[0].set(xlabel="n (d = 4)", ylabel="seconds per fit", title="time vs n")
    ax[1].set(xlabel="d (n = 1000)", ylabel="seconds per fit", title="time vs d")
    ax[0].legend(fontsize=7)
    fig.tight_layout()
    RESULTS.mkdir(parents=True, exist_ok=True)
    fig.savefig(RESULTS / "scaling.png", dpi=110)

    slope = {name: np.polyfit(np.log(ns), np.log(by_n[name]), 1)[0] for name in ests}
    text = (
        f"# Scaling curves (`benchmarks/bench_scaling.py`{' --quick' if a.quick else ''})\n\n"
        f"{machine_info()}\n\nFit time after warm-up (compile excluded), best of {a.repeat}. "
        "Figure: `scaling.png`.\n\n## time vs n (d = 4)\n\n"
        + md_table(
            ["estimator", *[f"n={n}" for n in ns], "log-log slope"],
            [[name, *[f"{t:.3f}" for t in by_n[name]], f"{slope[name]:.2f}"] for name in ests],
        )
        + "\n\n## time vs d (n = 1000)\n\n"
        + md_table(
            ["estimator", *[f"d={d}" for d in ds]],
            [[name, *[f"{t:.3f}" for t in by_d[name]]] for name in ests],
        )
        + "\n"
    )
    print(text)
    write_result("scaling.md", text)


if __name__ == "__main__":
    main()
