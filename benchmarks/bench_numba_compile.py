"""Where a first fit's numba compile time goes: per kernel, the signatures compiled and the seconds.

For each compiled path (TVClust's collapsed sweep and its sub-cluster sampler on the numba backend,
CEC-IB's and C3L's Hartigan engine), a fresh Python process with ``PPCLUST_CACHE_DIR`` (hence
``NUMBA_CACHE_DIR``) pointed at an empty folder fits wine (n = 178, d = 13, standardised; links: 2n
noisy pairs; labels: 20%) with default settings, listening to numba's ``numba:compile`` events: for every
kernel it records each signature compiled and the CPU seconds of its compilation (the compiling thread's
CPU time: on a shared machine less inflated by the load than wall time), inclusive of the kernels it
calls and compiles on the way and exclusive of them (the inclusive time of a kernel nested in another is
counted once, in the outer kernel's inclusive time). A second fit in the same process then runs with
the compiled code (its time is the repeat fit), and a third process with the folder the first one left
times a warm-cache first fit (loading from numba's cache). Writes ``benchmarks/results/numba_compile.md``.

Run: ``python -m benchmarks.bench_numba_compile [--only NAME ...] [--out FILE]`` (a few minutes).
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

from benchmarks._common import machine_info, md_table, write_result

ROOT = Path(__file__).resolve().parent.parent

#: name -> (estimator, keyword arguments, side information kind)
SPECS = {
    "TVClust (collapsed)": ("TVClust", {}, "links"),
    "TVClust (subcluster)": ("TVClust", {"algorithm": "subcluster"}, "links"),
    "CECIB (hartigan)": ("CECIB", {"n_clusters": 6}, "labels"),
    "C3L": ("C3L", {"n_clusters": 4}, "labels"),
}

CHILD = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
t0 = time.perf_counter()
from numba.core import event
import numpy as np
import ppclust
from ppclust import datasets

stack, events = [], []

class Listen(event.Listener):
    def on_start(self, ev):
        stack.append([time.thread_time(), 0.0])

    def on_end(self, ev):
        start, inner = stack.pop()
        total = time.thread_time() - start
        if stack:
            stack[-1][1] += total
        disp = ev.data["dispatcher"]
        fn = disp.py_func
        events.append(dict(kernel=f"{fn.__module__}.{fn.__qualname__}", sig=str(ev.data["args"]),
                           inclusive=total, exclusive=total - inner, nested=bool(stack)))

event.register("numba:compile", Listen())
est_name, kw, side_kind = json.loads(sys.argv[1])
Est = getattr(ppclust, est_name)
X, y = datasets.load("wine")
X = (X - X.mean(0)) / X.std(0)
side = {}
if side_kind == "links":
    s = datasets.sample_links(y, 2 * len(y), noise=0.1, seed=0)
    side = dict(must_link=s.must_link, cannot_link=s.cannot_link)
elif side_kind == "labels":
    side = dict(partial_labels=datasets.sample_labels(y, 0.2, seed=0))
import_s = time.perf_counter() - t0

def fit():
    t, c = time.perf_counter(), time.process_time()
    Est(**kw, progress_bar=False, random_state=0).fit(X, **side)
    return time.perf_counter() - t, time.process_time() - c

(first, first_cpu), (repeat, repeat_cpu) = fit(), fit()
print(json.dumps(dict(import_s=import_s, first_s=first, first_cpu=first_cpu, repeat_s=repeat,
                      repeat_cpu=repeat_cpu, events=events)))
"""


def run_child(spec: tuple, cache: str) -> dict:
    """One fresh process fitting ``spec`` with the cache folder ``cache``; its JSON output."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"JAX_COMPILATION_CACHE_DIR", "NUMBA_CACHE_DIR", "PPCLUST_CACHE_DIR", "XLA_FLAGS"}
    }
    env.update(PYTHONPATH=str(ROOT), PPCLUST_CACHE_DIR=cache, JAX_PLATFORMS="cpu", PPCLUST_PROGRESS="0")
    res = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(spec)], env=env, capture_output=True, text=True, timeout=1800
    )
    if res.returncode != 0:
        raise RuntimeError(res.stderr[-3000:])
    return json.loads(res.stdout.strip().splitlines()[-1])


def kernel_rows(events: list) -> list:
    """Per kernel: signatures compiled, exclusive and inclusive seconds (outermost calls only)."""
    per = {}
    for e in events:
        r = per.setdefault(e["kernel"], {"sigs": 0, "excl": 0.0, "incl": 0.0, "top": False})
        r["sigs"] += 1
        r["excl"] += e["exclusive"]
        if not e["nested"]:
            r["incl"] += e["inclusive"]
            r["top"] = True
    rows = sorted(per.items(), key=lambda kv: -kv[1]["excl"])
    short = lambda k: k.removeprefix("ppclust.")  # noqa: E731
    return [
        [short(k), r["sigs"], round(r["excl"], 2), round(r["incl"], 2) if r["top"] else ""] for k, r in rows
    ]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None, help=f"names among {list(SPECS)}")
    ap.add_argument("--out", default="numba_compile.md", help="results file name (in benchmarks/results)")
    args = ap.parse_args(argv)
    names = args.only or list(SPECS)
    results = {}
    with tempfile.TemporaryDirectory(prefix="ppclust-numba-compile-") as tmp:
        for name in names:
            cache = str(Path(tmp) / name.replace(" ", "_"))
            t = time.perf_counter()
            fresh = run_child(SPECS[name], cache)
            warm = run_child(SPECS[name], cache)
            results[name] = dict(fresh=fresh, warm=warm, wall=time.perf_counter() - t)
            total = sum(e["exclusive"] for e in fresh["events"])
            print(
                f"{name}: first {fresh['first_s']:.1f} s ({fresh['first_cpu']:.1f} s CPU), "
                f"numba compile {total:.1f} s CPU",
                flush=True,
            )
    parts = [
        "# numba compile time of a first fit, per kernel",
        "",
        f"Machine: {machine_info()}",
        "",
        "Written by `benchmarks/bench_numba_compile.py`. A fresh process with an empty cache folder "
        "(`PPCLUST_CACHE_DIR`, so also `NUMBA_CACHE_DIR`) fits wine (n = 178, d = 13, standardised; "
        "links: 356 noisy pairs; labels: 20%) with default settings and listens to numba's "
        "`numba:compile` events. Fits: wall seconds and the process's CPU seconds. Kernels: CPU seconds of "
        "the compiling thread; *exclusive*: the kernel's own compilation (its callees compiled on the way "
        "subtracted); *inclusive*: with them, for the kernels compiled from Python (outermost). A kernel "
        "compiled for more than one argument-type signature is listed once with their count. *Warm "
        "cache*: the next process, the same folder (loads numba's cache). Wall times are inflated by the "
        "load above, CPU times much less.",
        "",
        md_table(
            [
                "estimator",
                "fresh: first fit s",
                "fresh: first fit CPU s",
                "numba compile CPU s",
                "kernels",
                "signatures",
                "fresh: repeat s",
                "warm cache: first fit s",
            ],
            [
                [
                    name,
                    round(r["fresh"]["first_s"], 2),
                    round(r["fresh"]["first_cpu"], 2),
                    round(sum(e["exclusive"] for e in r["fresh"]["events"]), 2),
                    len({e["kernel"] for e in r["fresh"]["events"]}),
                    len(r["fresh"]["events"]),
                    round(r["fresh"]["repeat_s"], 3),
                    round(r["warm"]["first_s"], 2),
                ]
                for name, r in results.items()
            ],
        ),
    ]
    for name, r in results.items():
        parts += [
            "",
            f"## {name}",
            "",
            md_table(
                ["kernel", "signatures", "exclusive CPU s", "inclusive CPU s"],
                kernel_rows(r["fresh"]["events"]),
            ),
        ]
    text = "\n".join(parts) + "\n"
    write_result(args.out, text)
    print(text)


if __name__ == "__main__":
    main()
