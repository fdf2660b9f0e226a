"""Peak resident memory of a fit at n = 10^6, over the process's baseline, against the data plus the model.

For each fit, a fresh Python process builds its data (float64, a fixed seed), imports ppclust, reads its
resident set size (the baseline: interpreter, libraries, data), resets the kernel's high-water mark
(``/proc/self/clear_refs``, value 5) and fits; the peak (``VmHWM`` of ``/proc/self/status``) minus the
baseline is the first fit's extra memory, compiles included. The high-water mark is reset again and the same
fit repeated: the repeat's peak over the resident set before it is the fit's working memory with its
programs compiled. Each is divided by the bytes of the data plus the model (means, covariances, labels:
what the fitted estimator keeps of its own; a sampler's kept label draws are n x draws int32).

Goal (issue "time to result"): at most 5x the data plus the model.

Run: ``python -m benchmarks.bench_memory [--n N] [--only NAME ...]`` (Linux: reads ``/proc``). With
``--only``, the other fits' rows are kept from the previous ``results/memory.json`` (same ``n``), each with
the machine line of the run that measured it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks._common import machine_info, md_table, write_json, write_result

ROOT = Path(__file__).resolve().parent.parent

#: name -> (data: d, side information; the estimator's constructor; model bytes as an expression of n, d)
SPECS = {
    "SemiSupervisedGMM (EM)": (
        10,
        "labels",
        "ppclust.SemiSupervisedGMM(n_clusters=10, max_iter=20, random_state=0)",
        # means, covariances + precisions, weights; responsibilities_ (n, k) and labels_
        "8 * (10 * d + 10 * d * d * 2 + 10) + 8 * n * 10 + 8 * n",
    ),
    "DPMeans": (
        10,
        "none",
        "ppclust.DPMeans(random_state=0)",
        "8 * (64 * d) + 8 * n",  # centres (at most k_max = 64 slots), labels
    ),
    "TVClust (subcluster, 20 draws)": (
        2,
        "links",
        "ppclust.TVClust(algorithm='subcluster', n_draws=20, n_warmup=20, n_chains=1, "
        "progress_bar=False, random_state=0)",
        "4 * n * 20 + 8 * n",  # the kept label draws (int32) and the point estimate
    ),
    "CECIB (batch)": (
        10,
        "labels",
        "ppclust.CECIB(n_clusters=10, algorithm='batch', n_init=2, random_state=0, progress_bar=False)",
        "8 * (10 * d + 10 * d * d) + 8 * n",
    ),
}

CHILD = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import numpy as np

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096

def hwm():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024

def reset():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")

n, d, side, make = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
rng = np.random.default_rng(0)
K = 8
centres = rng.normal(0.0, 6.0, (K, d))
truth = rng.integers(0, K, n)
X = centres[truth] + rng.normal(size=(n, d))
kw = {}
if side == "labels":
    kw["partial_labels"] = np.where(rng.random(n) < 0.1, truth, -1)
elif side == "links":
    pairs = rng.integers(0, n, (10_000, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    same = truth[pairs[:, 0]] == truth[pairs[:, 1]]
    kw["must_link"], kw["cannot_link"] = pairs[same], pairs[~same]
import ppclust
data_bytes = X.nbytes + sum(np.asarray(v).nbytes for v in kw.values())
out = {"data_bytes": data_bytes}
for run in ("first", "repeat"):
    est = eval(make)
    base = rss()
    reset()
    t0 = time.perf_counter()
    est.fit(X, **kw)
    out[run + "_s"] = time.perf_counter() - t0
    out[run + "_peak"] = hwm() - base
    out["k"] = int(len(np.unique(est.labels_)))
    del est
print("RESULT", json.dumps(out))
"""


def _child(name: str, n: int) -> dict:
    d, side, make, model = SPECS[name]
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(n), str(d), side, make],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        return {"error": (proc.stderr or proc.stdout).strip().splitlines()[-1:]}
    res = json.loads(lines[-1][len("RESULT ") :])
    res["model_bytes"] = int(eval(model, {"n": n, "d": d}))
    return res


def _kept(names, n: int) -> dict:
    """The fits of the previous ``results/memory.json`` at the same ``n`` that this run does not measure,
    each with the machine line it was measured on."""
    p = ROOT / "benchmarks" / "results" / "memory.json"
    old = json.loads(p.read_text()) if p.exists() else {}
    if old.get("n") != n:
        return {}
    fits = old.get("fits", {})
    machine = fits.get("_run", {}).get("machine", "unknown")
    return {k: {"machine": machine, **v} for k, v in fits.items() if k in SPECS and k not in names}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--only", nargs="*", default=None, help=f"names among {list(SPECS)}")
    args = ap.parse_args(argv)
    names = args.only or list(SPECS)
    rows, data = [], _kept(names, args.n)
    t0 = time.perf_counter()
    for name in names:
        data[name] = {**_child(name, args.n), "machine": machine_info()}
        print(name, data[name], flush=True)
    kept = []
    for name in [s for s in SPECS if s in data]:
        res = data[name]
        if name not in names:
            kept.append(f"{name} ({res['machine']})")
        if "error" in res:
            rows.append([name, args.n, SPECS[name][0]] + ["-"] * 6 + [f"error: {res['error']}"])
            continue
        ref = res["data_bytes"] + res["model_bytes"]
        first, rep = res["first_peak"] / ref, res["repeat_peak"] / ref
        rows.append(
            [
                name,
                args.n,
                SPECS[name][0],
                round(ref / 2**20, 1),
                round(res["first_peak"] / 2**20, 1),
                round(first, 2),
                round(res["repeat_peak"] / 2**20, 1),
                round(rep, 2),
                round(res["repeat_s"], 2),
                "met" if max(first, rep) <= 5 else ("met by the repeat" if rep <= 5 else "missed"),
            ]
        )
    table = md_table(
        [
            "fit",
            "n",
            "d",
            "data + model MiB",
            "first fit: peak over baseline MiB",
            "/ (data + model)",
            "repeat: peak over baseline MiB",
            "/ (data + model)",
            "repeat s",
            "goal <= 5x",
        ],
        rows,
    )
    text = (
        "# Peak memory of a fit at scale\n\n"
        f"Machine: {machine_info()}\n\n"
        f"Written by `benchmarks/bench_memory.py` in {time.perf_counter() - t0:.0f} s. "
        + " ".join(__doc__.split("\n\n")[1].split())
        + "\n\n"
        + (
            f"Rows kept from an earlier run of the script (its machine line): {'; '.join(kept)}.\n\n"
            if kept
            else ""
        )
        + table
        + "\n"
    )
    write_result("memory.md", text)
    write_json("memory", {"n": args.n, "fits": data}, "benchmarks/bench_memory.py")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
