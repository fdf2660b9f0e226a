"""Time to a first result, and what a new data size compiles, for every estimator.

Every measurement starts a fresh Python process (``subprocess``), as a user's new notebook kernel or
script does, and times inside it, for each estimator and algorithm on wine (standardised; links: 2n
noisy pairs; labels: 20% of the points):

* **fresh install**: ``PPCLUST_CACHE_DIR`` an empty folder and no ``ppclust warmup``: the first fit
  compiles every numba kernel and XLA program it uses; then a repeat fit.
* **warm cache**: the next process with the folder the first one left: first fit and repeat fit, then
  new sizes in the same process (n = 150 and 120, rows of a fixed permutation): the first fit at each
  new n and a repeat at that n.
* **compiles per new size**: in the warm process, fits on synthetic data (three Gaussians, d = 4) at
  sizes 100 ... 1000 count XLA's compile events (``jax.monitoring``: backend compiles, which the
  persistent cache skips, and lowerings, which it does not) and name the bucket of each size
  (:func:`ppclust._buckets.bucket_size`).

Goals (issue "time to result"): a first fit in a fresh install at most 10 s; a warm-cache first fit at
most 1.5x a repeat fit; a new n in a warm process at most 1.2x a repeat fit; no compile for a new size
inside a bucket. Writes ``benchmarks/results/first_fit.md`` / ``.json`` and
``benchmarks/results/compiles.md``.

Run: ``python -m benchmarks.bench_first_fit [--only NAME ...]`` (``--only``: those estimators measured again,
the other rows and the warm-up time kept from the last results file).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._common import machine_info, md_table, write_json, write_result

ROOT = Path(__file__).resolve().parent.parent

#: name -> (estimator, keyword arguments, side information kind, keyword arguments for the size sweep)
SAMPLER_SWEEP = {"n_draws": 50, "n_warmup": 50}
SPECS = {
    "DPMeans": ("DPMeans", {}, None, {}),
    "RDPMeans": ("RDPMeans", {}, "links", {}),
    "SemiSupervisedGMM": ("SemiSupervisedGMM", {"n_clusters": 3}, "labels", {}),
    "BayesianSemiSupervisedGMM": ("BayesianSemiSupervisedGMM", {"n_clusters": 3}, "labels", {}),
    "TVClust (collapsed)": ("TVClust", {}, "links", SAMPLER_SWEEP),
    "TVClust (subcluster)": ("TVClust", {"algorithm": "subcluster"}, "links", SAMPLER_SWEEP),
    "TVClust (variational)": ("TVClust", {"algorithm": "variational"}, "links", {}),
    "CECIB (hartigan)": ("CECIB", {"n_clusters": 6}, "labels", {}),
    "CECIB (batch)": ("CECIB", {"n_clusters": 6, "algorithm": "batch"}, "labels", {}),
    "C3L": ("C3L", {"n_clusters": 4}, "labels", {}),
    "CCIB": ("CCIB", {"n_clusters": 3}, "labels", {}),
    "SMIC": ("SMIC", {"n_clusters": 3}, "links", {}),
}
NEW_SIZES = (150, 120)
SWEEP_SIZES = (100, 130, 160, 200, 260, 330, 420, 540, 700, 1000)

CHILD = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
t_start = time.perf_counter()
import jax.monitoring as mon
counts = {"compile": 0, "lower": 0}
def _listen(event, duration, **kw):
    if event == "/jax/core/compile/backend_compile_duration":
        counts["compile"] += 1
    elif event == "/jax/core/compile/jaxpr_to_mlir_module_duration":
        counts["lower"] += 1
mon.register_event_duration_secs_listener(_listen)
import numpy as np
import ppclust
from ppclust import datasets
from ppclust._buckets import bucket_size
est_name, kw, side_kind, sweep_kw, mode, new_sizes, sweep_sizes = json.loads(sys.argv[1])
Est = getattr(ppclust, est_name)
X0, y0 = datasets.load("wine")
perm = np.random.default_rng(0).permutation(len(y0))
X0, y0 = (X0 - X0.mean(0)) / X0.std(0), y0
t_import = time.perf_counter() - t_start

def side(y, n):
    if side_kind == "links":
        s = datasets.sample_links(y, 2 * n, noise=0.1, seed=0)
        return dict(must_link=s.must_link, cannot_link=s.cannot_link)
    if side_kind == "labels":
        return dict(partial_labels=datasets.sample_labels(y, 0.2, seed=0))
    return {}

def fit(X, y, extra=None):
    quiet = {"progress_bar": False} if "progress_bar" in Est().get_params() else {}
    est = Est(**kw, **(extra or {}), **quiet, random_state=0)
    c0, l0, t = counts["compile"], counts["lower"], time.perf_counter()
    est.fit(X, **side(y, len(y)))
    return time.perf_counter() - t, counts["compile"] - c0, counts["lower"] - l0

out = dict(import_s=t_import)
first = fit(X0, y0)
repeat = fit(X0, y0)
out.update(first_s=first[0], first_compiles=first[1], first_lowerings=first[2], repeat_s=repeat[0],
           repeat_compiles=repeat[1])
if mode == "warm":
    out["new"] = []
    for n in new_sizes:
        idx = np.sort(perm[:n])
        a, b = fit(X0[idx], y0[idx]), fit(X0[idx], y0[idx])
        out["new"].append(dict(n=n, first_s=a[0], compiles=a[1], lowerings=a[2], repeat_s=b[0]))
    rng = np.random.default_rng(1)
    out["sweep"] = []
    for n in sweep_sizes:
        truth = rng.integers(0, 3, n)
        X = np.array([[0, 0, 0, 0], [5, 0, 0, 0], [0, 5, 0, 0]])[truth] + rng.normal(size=(n, 4))
        t, c, l = fit(X, truth, sweep_kw)
        bucket = [bucket_size(n)]
        if side_kind == "links":  # the link list's and the neighbour table's lengths are bucketed too
            pairs = np.concatenate([np.reshape(v, (-1, 2)) for v in side(truth, n).values()])
            degree = np.bincount(pairs.ravel(), minlength=n).max() if len(pairs) else 1
            bucket += [bucket_size(len(pairs)), bucket_size(degree, minimum=1)]
            if kw.get("algorithm") == "subcluster":  # and the links' colouring: class count and width
                from ppclust.inference.subcluster import colour_links
                from ppclust.estimators._base import link_side_info
                from ppclust.sideinfo import make_links

                sides = side(truth, n)
                info = link_side_info(n, None, sides["must_link"], sides["cannot_link"], link_model="soft")
                classes = np.asarray(colour_links(make_links(n, side=info), n).classes)
                n_cls, width = classes.shape
                bucket += [0 if n_cls == 0 else bucket_size(n_cls, minimum=4), bucket_size(width, minimum=8)]
        out["sweep"].append(dict(n=n, bucket=bucket, s=t, compiles=c, lowerings=l))
print(json.dumps(out))
"""


def run_child(spec: tuple, mode: str, cache: str) -> dict:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"JAX_COMPILATION_CACHE_DIR", "NUMBA_CACHE_DIR", "PPCLUST_CACHE_DIR", "XLA_FLAGS"}
    }
    env.update(PYTHONPATH=str(ROOT), PPCLUST_CACHE_DIR=cache, JAX_PLATFORMS="cpu", PPCLUST_PROGRESS="0")
    arg = json.dumps([*spec, mode, list(NEW_SIZES), list(SWEEP_SIZES)])
    t0 = time.perf_counter()
    cmd = [sys.executable, "-c", CHILD, arg]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        err = res.stderr.strip()
        return {"error": err.splitlines()[-1] if err else f"exit {res.returncode}"}
    out = json.loads(res.stdout.strip().splitlines()[-1])
    out["process_s"] = wall
    return out


def run_warmup(cache: str) -> float:
    env = {k: v for k, v in os.environ.items() if k not in {"NUMBA_CACHE_DIR", "PPCLUST_CACHE_DIR"}}
    env.update(PYTHONPATH=str(ROOT), PPCLUST_CACHE_DIR=cache, JAX_PLATFORMS="cpu")
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ppclust", "warmup"], env=env, check=True, capture_output=True)
    return time.perf_counter() - t0


def _ok(x: float, goal: float) -> str:
    return "met" if x <= goal else "missed"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None, help=f"names among {list(SPECS)}")
    args = ap.parse_args(argv)
    names = args.only or list(SPECS)
    results, warmup_s = {}, None
    if args.only:  # the other estimators' rows (and the warm-up time) from the last full run
        last = json.loads((ROOT / "benchmarks" / "results" / "first_fit.json").read_text())
        results = {k: v for k, v in last["estimators"].items() if k in SPECS}
        warmup_s = last["warmup_s"]
    with tempfile.TemporaryDirectory(prefix="ppclust-first-fit-") as tmp:
        if warmup_s is None:
            warmup_s = run_warmup(str(Path(tmp) / "warmup"))
        for name in names:
            cache = str(Path(tmp) / name.replace(" ", "_"))
            fresh = run_child(SPECS[name], "fresh", cache)
            warm = run_child(SPECS[name], "warm", cache)
            results[name] = dict(fresh=fresh, warm=warm)
            print(name, json.dumps(results[name])[:300], flush=True)
    results = {name: results[name] for name in SPECS if name in results}  # the rows in SPECS's order
    machine = machine_info()
    first_rows, compile_rows = [], []
    for name, r in results.items():
        f, w = r["fresh"], r["warm"]
        if "error" in f or "error" in w:
            first_rows.append([name, f.get("error") or w.get("error"), "", "", "", "", "", "", ""])
            continue
        # a new n inside wine's bucket (150; the goal's measure) and in a bucket not seen yet (120)
        same = [x for x in w["new"] if x["n"] == 150]
        other = [x for x in w["new"] if x["n"] != 150]
        new_ratio = max(x["first_s"] / x["repeat_s"] for x in same)
        other_ratio = max(x["first_s"] / x["repeat_s"] for x in other)
        first_rows.append(
            [
                name,
                f["first_s"],
                f["repeat_s"],
                w["first_s"],
                w["repeat_s"],
                w["first_s"] / w["repeat_s"],
                new_ratio,
                other_ratio,
                f"{_ok(f['first_s'], 10)} / {_ok(w['first_s'] / w['repeat_s'], 1.5)} / {_ok(new_ratio, 1.2)}",
            ]
        )
        seen, per_new_bucket, inside = set(), [], []
        for x in w["sweep"]:
            key = tuple(x["bucket"])
            (inside if key in seen else per_new_bucket).append(x["compiles"])
            seen.add(key)
        compile_rows.append(
            [
                name,
                f["first_compiles"],
                " ".join(f"{x['n']}:{x['compiles']}" for x in w["sweep"]),
                len(seen),
                max(per_new_bucket) if per_new_bucket else 0,
                max(inside) if inside else 0,
                "met" if not inside or max(inside) == 0 else "missed",
            ]
        )
    text = "\n".join(
        [
            "# Time to a first fit, per estimator",
            "",
            f"Machine: {machine}",
            "",
            "Written by `benchmarks/bench_first_fit.py`. Wall-clock seconds in fresh Python processes on "
            "wine (n = 178, d = 13, standardised; links: 356 noisy pairs; labels: 20%), default settings. "
            "*Fresh install*: an empty cache folder and no `ppclust warmup`. *Warm cache*: the next "
            "process. *New n* (first fit at that n / a repeat at that n, in the warm process): "
            "n = 150 shares wine's row bucket (192, `ppclust._buckets.bucket_size`), the goal's measure; "
            "n = 120 opens a new bucket (128), whose programs are compiled once (not a goal). On a shared "
            "machine absolute times are inflated by the load above; the ratios within one process are the "
            "measure.",
            "",
            md_table(
                [
                    "estimator",
                    "fresh: first fit",
                    "fresh: repeat",
                    "warm: first fit",
                    "warm: repeat",
                    "warm first / repeat",
                    "new n (same bucket) first / repeat",
                    "new n (new bucket) first / repeat",
                    "goals (10 s / 1.5x / 1.2x)",
                ],
                first_rows,
            ),
            "",
            f"`ppclust warmup` into an empty folder: {warmup_s:.1f} s (goal: at most 30 s).",
        ]
    )
    write_result("first_fit.md", text + "\n")
    ctext = "\n".join(
        [
            "# Compiled programs per new data size",
            "",
            f"Machine: {machine}",
            "",
            "Written by `benchmarks/bench_first_fit.py`. In a warm process (after fits on wine), one fit per "
            "size on three Gaussians (d = 4, samplers with 50 + 50 sweeps) counts XLA backend compiles "
            "(`jax.monitoring`; programs found in the persistent cache are not compiled). Goal: no compile "
            "for a new size whose bucket (`ppclust._buckets.bucket_size`) was seen before. With links "
            "(2n noisy pairs) a bucket is the triple (rows, links, neighbour-table width), the widest "
            "table row being the largest number of links of one point.",
            "",
            md_table(
                [
                    "estimator",
                    "compiles of the first fit (fresh)",
                    "compiles per size (n:count)",
                    "buckets",
                    "max per new bucket",
                    "max inside a seen bucket",
                    "goal",
                ],
                compile_rows,
            ),
        ]
    )
    write_result("compiles.md", ctext + "\n")
    write_json("first_fit", {"estimators": results, "warmup_s": warmup_s}, "benchmarks/bench_first_fit.py")
    print(text)
    print(ctext)


if __name__ == "__main__":
    main()
