"""How many memory mappings compiled XLA programs hold, and what ``release_compiled_programs`` does about it.

Two measurements, written to ``benchmarks/results/suite_memory_maps.{md,json}``:

1. *Per fit*: in a fresh process, a semi-supervised GMM fitted on 10 data sizes (n = 60, 70, ..., 150):
   the growth of ``/proc/self/maps`` per new size (each size compiles or loads its own programs).
2. *The fast test suite*: ``pytest -m "not slow" -n 2 --dist loadfile`` (``make test``'s run) twice, with
   the test fixture that clears compiled programs after each test, and the estimators' own check, turned
   off (``PPCLUST_MAP_FRACTION=off``: the suite as it ran before) and on; every 2 s the script counts the
   mappings of each worker process. Reported: each run's peak per worker, against the kernel's limit
   (``vm.max_map_count``), its time, its exit code and whether a worker crashed.

Linux only (it reads ``/proc``). Usage: ``python -m benchmarks.suite_memory_maps [--skip-suite]``
(about 15 minutes on 2 cores; ``--skip-suite`` runs part 1 only and keeps the last suite numbers).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from benchmarks._common import machine_info
from ppclust._jax import memory_maps

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results"

_PER_FIT = textwrap.dedent("""
    import json
    import numpy as np
    from ppclust import SemiSupervisedGMM, _jax
    rng = np.random.default_rng(0)
    rows = []
    for n in range(60, 160, 10):
        X = np.concatenate([rng.normal(c, 0.5, size=(n // 3 + 1, 2)) for c in (-3, 0, 3)])[:n]
        y = np.full(n, -1)
        y[:6] = [0, 0, 1, 1, 2, 2]
        before = _jax.memory_maps()
        SemiSupervisedGMM(3, random_state=0).fit(X, y)
        rows.append({"n": n, "before": before, "after": _jax.memory_maps()})
    print(json.dumps({"rows": rows, "limit": _jax.memory_map_limit()}))
""")


def children(ppid: int) -> list[int]:
    """The processes whose parent is ``ppid`` (field 4 of ``/proc/<pid>/stat``)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2 :].split()[1]) == ppid:
                out.append(int(entry.name))
    return out


def per_fit() -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _PER_FIT], capture_output=True, text=True, cwd=ROOT, check=True
    )
    res = json.loads(out.stdout.strip().splitlines()[-1])
    growth = [r["after"] - r["before"] for r in res["rows"][1:]]  # (the first fit also loads libraries)
    res["growth_median"] = sorted(growth)[len(growth) // 2]
    res["growth_min"], res["growth_max"] = min(growth), max(growth)
    return res


def suite(keep: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PPCLUST_MAP_FRACTION"}
    if keep:  # the test fixture's and the estimators' check off: the suite without either
        env["PPCLUST_MAP_FRACTION"] = "off"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-m",
        "not slow",
        "-n",
        "2",
        "--dist",
        "loadfile",
        "-q",
        "--max-worker-restart=0",
        "-p",
        "no:cacheprovider",
    ]
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    peaks: dict[int, int] = {}
    samples: list[tuple[float, int, int]] = []
    done = threading.Event()

    def sample():
        while not done.is_set():
            for pid in children(proc.pid):
                m = memory_maps(pid)
                if m is not None:
                    peaks[pid] = max(peaks.get(pid, 0), m)
                    samples.append((round(time.perf_counter() - t0, 1), pid, m))
            done.wait(2.0)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    output, _ = proc.communicate()
    done.set()
    th.join()
    tail = output.strip().splitlines()[-1] if output.strip() else ""
    workers = sorted(peaks.values(), reverse=True)[:2]
    return {
        "keep_programs": keep,
        "seconds": round(time.perf_counter() - t0, 1),
        "returncode": proc.returncode,
        "worker_crashed": "crashed while running" in output,
        "summary": tail,
        "peak_per_worker": workers,
        "n_samples": len(samples),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-suite", action="store_true")
    args = ap.parse_args(argv)
    if memory_maps(os.getpid()) is None:
        print("needs Linux (/proc/<pid>/maps)", file=sys.stderr)
        return 2
    jpath = OUT / "suite_memory_maps.json"
    old = json.loads(jpath.read_text()) if jpath.exists() else {}
    res = {"per_fit": per_fit(), "cpu_count": os.cpu_count()}
    if args.skip_suite and "suite" in old:
        res["suite"] = old["suite"]
    else:
        res["suite"] = [suite(keep=True), suite(keep=False)]
    jpath.write_text(json.dumps(res, indent=1) + "\n")
    pf, limit = res["per_fit"], res["per_fit"]["limit"]
    lines = [
        "# Memory mappings of compiled programs (`benchmarks/suite_memory_maps.py`)",
        "",
        "Written by the script; Linux, `vm.max_map_count` = {:,}, {} CPUs.".format(limit, res["cpu_count"]),
        "",
        machine_info(),
        "",
        "## Per fit",
        "",
        "A fresh process fits `SemiSupervisedGMM(3)` on n = 60, 70, ..., 150: each new size adds "
        "{:,} mappings (median; {:,}-{:,} over sizes 2-10), {:,} after the tenth fit.".format(
            pf["growth_median"], pf["growth_min"], pf["growth_max"], pf["rows"][-1]["after"]
        ),
        "",
        "## The fast test suite (two workers)",
        "",
        "| clear after each test | seconds | exit code | worker crashed | peak mappings per worker | "
        "peak / limit |",
        "|---|---|---|---|---|---|",
    ]
    for s in res["suite"]:
        pk = s["peak_per_worker"]
        lines.append(
            "| {} | {} | {} | {} | {} | {:.0%} |".format(
                "no (nor in fits)" if s["keep_programs"] else "yes (at 1/4 of the limit)",
                s["seconds"],
                s["returncode"],
                "yes" if s["worker_crashed"] else "no",
                ", ".join(f"{p:,}" for p in pk),
                max(pk or [0]) / limit,
            )
        )
    lines += ["", "Last line of each run: " + " / ".join(f"`{s['summary']}`" for s in res["suite"]), ""]
    (OUT / "suite_memory_maps.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
