"""Run every ``benchmarks/bench_*.py`` (``make bench``); each writes its table to benchmarks/results/."""

from __future__ import annotations

import runpy
import sys
import time
from pathlib import Path

# command-line arguments per script, so that each writes its table to benchmarks/results/
ARGS = {
    "bench_dpmeans": ["--out", "benchmarks/results/bench_dpmeans.md"],
    "bench_tvclust_alg2": ["--append"],
}


def main() -> int:
    here = Path(__file__).resolve().parent
    scripts = sorted(here.glob("bench_*.py"))
    only = sys.argv[1:]
    failed = []
    for s in scripts:
        if only and not any(o in s.stem for o in only):
            continue
        print(f"== {s.stem}", flush=True)
        t0 = time.perf_counter()
        argv, sys.argv = sys.argv, [str(s), *ARGS.get(s.stem, [])]
        try:
            runpy.run_path(str(s), run_name="__main__")
        except Exception as err:  # noqa: BLE001 - report and go on with the others
            failed.append(s.stem)
            print(f"   FAILED: {type(err).__name__}: {err}", flush=True)
        finally:
            sys.argv = argv
        print(f"   ({time.perf_counter() - t0:.0f} s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
