"""Where the compiled CPU loops (numba) beat the one XLA program: TVClust's samplers by data size.

    python benchmarks/bench_backend.py                       # both samplers, n = 178 ... 10^5, d = 2 and 13
    python benchmarks/bench_backend.py --algorithms subcluster --sizes 1000,3000

Both backends draw the same chain (``backend`` changes where the loops run, not the draws), so the only
question is time. For each algorithm, backend, d and n: Gaussian blobs (``d`` dimensions, 5 clusters, unit
noise, centres 8 apart on average) with 2n noisy links (10% flipped), ``TVClust(algorithm=...,
n_warmup=50, n_draws=50)`` with its other defaults; a first fit (compiles what is not cached yet) and a
repeat fit at the same n, timed. Each backend runs in its own fresh process with the user's warm caches.
Writes ``benchmarks/results/backend.md`` and ``.json``, whose ``crossover`` (the largest n up to which XLA's
repeat fit was faster for every d measured) is ``ppclust.inference.subcluster.XLA_UP_TO`` (a test compares
them).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks._common import machine_info, md_table, write_json, write_result  # noqa: E402

SWEEPS = {"n_warmup": 50, "n_draws": 50}


def data(n, d, seed=0):
    import numpy as np

    from ppclust import datasets

    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 8 / np.sqrt(2), (5, d))
    y = rng.integers(0, 5, n)
    X = centres[y] + rng.normal(size=(n, d))
    side = datasets.sample_links(y, 2 * n, noise=0.1, seed=seed)
    return X, side


def worker(args) -> None:
    from ppclust import TVClust

    out = []
    for d in args.dims:
        for n in args.sizes:
            X, side = data(n, d)
            times = []
            for _ in range(2):
                opts = dict(algorithm=args.algorithm, backend=args.backend, progress_bar=False, **SWEEPS)
                est = TVClust(random_state=0, **opts)
                t = time.perf_counter()
                est.fit(X, must_link=side.must_link, cannot_link=side.cannot_link)
                times.append(time.perf_counter() - t)
            row = dict(d=d, n=n, first_s=times[0], repeat_s=times[1], n_clusters=int(est.n_clusters_))
            print("RESULT " + json.dumps(row), flush=True)
            out.append(row)


def run(algorithm, backend, sizes, dims, timeout):
    cmd = [sys.executable, __file__, "--worker", "--algorithm", algorithm, "--backend", backend]
    cmd += ["--sizes", ",".join(map(str, sizes)), "--dims", ",".join(map(str, dims))]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    rows = [json.loads(ln[7:]) for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode:
        raise RuntimeError(f"{algorithm}/{backend} failed:\n{proc.stderr[-3000:]}")
    return rows


def crossover(res: dict) -> dict:
    """Per algorithm: the largest n measured at which XLA's repeat fit was faster than numba's for every
    d, provided XLA was faster at every smaller n too (0: never)."""
    out = {}
    for alg, r in res["algorithms"].items():
        below = 0
        for n in sorted({row["n"] for row in r["numba"]}):
            faster = all(
                x["repeat_s"] < b["repeat_s"]
                for b in r["numba"]
                for x in r["xla"]
                if b["n"] == n and x["n"] == n and b["d"] == x["d"]
            )
            if not faster:
                break
            below = n
        out[alg] = below
    return out


def report(res: dict) -> str:
    lines = [
        "# Numba loops or one XLA program: TVClust's samplers by data size (benchmarks/bench_backend.py)",
        "",
        res["machine"],
        "",
        "Gaussian blobs (5 clusters, unit noise), 2n noisy links (10% flipped), `TVClust(algorithm=..., "
        "n_warmup=50, n_draws=50)` with its other defaults (two chains). Seconds of a first fit in a fresh "
        "process with warm caches (what it compiles that is not cached) and of a repeat fit at the same n. "
        "Both backends draw the same chain; K is the number of clusters of the point estimate.",
        "",
    ]
    for alg, r in res["algorithms"].items():
        rows = []
        for b in r["numba"]:
            x = next(x for x in r["xla"] if x["n"] == b["n"] and x["d"] == b["d"])
            rows.append(
                [
                    b["d"],
                    b["n"],
                    f"{b['first_s']:.2f}",
                    f"{b['repeat_s']:.3f}",
                    f"{x['first_s']:.2f}",
                    f"{x['repeat_s']:.3f}",
                    f"{x['repeat_s'] / b['repeat_s']:.2f}",
                    b["n_clusters"],
                    x["n_clusters"],
                ]
            )
        head = ["d", "n", "numba first s", "numba repeat s", "xla first s", "xla repeat s"]
        head += ["xla / numba (repeat)", "K numba", "K xla"]
        lines += [f"## algorithm={alg!r}", "", md_table(head, rows), ""]
        below = res["crossover"][alg]
        lines += [
            f"XLA's repeat fit faster at every n up to: {below if below else 'none measured'}.",
            "",
        ]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--algorithms", default="subcluster,collapsed")
    ap.add_argument("--sizes", default="178,1000,3000,10000,30000,100000")
    ap.add_argument("--dims", default="2,13")
    ap.add_argument("--timeout", type=int, default=3600)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--algorithm", default="subcluster", help=argparse.SUPPRESS)
    ap.add_argument("--backend", default="numba", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.sizes = [int(v) for v in str(args.sizes).split(",")]
    args.dims = [int(v) for v in str(args.dims).split(",")]
    if args.worker:
        worker(args)
        return 0
    res = {"machine": machine_info(), "sweeps": SWEEPS, "algorithms": {}}
    for alg in args.algorithms.split(","):
        res["algorithms"][alg] = {
            be: run(alg, be, args.sizes, args.dims, args.timeout) for be in ("numba", "xla")
        }
        print(alg, res["algorithms"][alg], flush=True)
    res["crossover"] = crossover(res)
    write_json("backend", res, "benchmarks/bench_backend.py")
    write_result("backend.md", report(res))
    print(report(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
