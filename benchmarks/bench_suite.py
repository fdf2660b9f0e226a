"""Wall time of `make test` as CI meets it: a fresh clone of this checkout's HEAD, with `../shared` beside
it, an empty per-user cache folder, `.ci/run` from start to end; the phases (set-up, the numba warm-up of
the suite's controller, the tests) and the slowest tests. Then `make demo` as a new user meets it: another
fresh clone and empty per-user cache folder (set-up, `ppclust warmup`, the demo). Writes
``benchmarks/results/suite.md`` and ``suite.json``.

The set-up installs from the uv/pip download cache of this machine unless ``--empty-download-cache`` (CI's
machine starts without one). The goal it reports: `make test` within 8 minutes on 2 cores.

Run: ``python -m benchmarks.bench_suite [--empty-download-cache] [--keep]`` (about 10 minutes).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks._common import machine_info, md_table, write_json, write_result

ROOT = Path(__file__).resolve().parent.parent
GOAL_S = 8 * 60
DEMO_GOAL_S = 2 * 60


def run_ci(clone: Path, env: dict) -> tuple[float, list[tuple[float, str]], int]:
    """Run ``.ci/run`` in ``clone``: wall seconds, every output line with its second, the exit code."""
    lines = []
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [".ci/run"], cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    for line in proc.stdout:
        lines.append((time.perf_counter() - t0, line.rstrip("\n")))
    proc.wait()
    return time.perf_counter() - t0, lines, proc.returncode


def run_demo(clone: Path, env: dict) -> tuple[float, list[str], int]:
    """Run ``make demo`` in ``clone``: wall seconds, its output lines, the exit code."""
    t0 = time.perf_counter()
    proc = subprocess.run(["make", "demo"], cwd=clone, env=env, capture_output=True, text=True)
    return time.perf_counter() - t0, (proc.stdout + proc.stderr).splitlines(), proc.returncode


def phases(lines: list[tuple[float, str]], wall: float) -> dict:
    """Seconds of the set-up (until ruff starts), lint, the warm-up and the pytest session (its output)."""

    def first(pattern):
        return next((t for t, line in lines if re.search(pattern, line)), None)

    ruff = first(r"ruff check")
    pytest_start = first(r"-m pytest")
    warm, session = 0.0, None
    for _, line in lines:
        if m := re.search(r"numba kernels compiled in (\d+)", line):
            warm = float(m.group(1))
        if "passed" in line and (m := re.search(r" in ([\d.]+)s(?: \(|$)", line)):
            session = float(m.group(1))
    summary = next((line.strip("= ") for _, line in lines if re.search(r"\d+ passed", line)), "")
    return {
        "set-up s": ruff,
        "lint s": None if ruff is None or pytest_start is None else pytest_start - ruff,
        "numba warm-up s": warm,
        "pytest session s": session,
        "total s": wall,
        "summary": summary,
    }


def slowest(lines) -> list[list]:
    out, on = [], False
    for _, line in lines:
        if "slowest 20 durations" in line:
            on = True
            continue
        if on:
            m = re.match(r"([\d.]+)s (\w+)\s+(\S+)", line)
            if not m:
                break
            out.append([float(m.group(1)), m.group(2), m.group(3)])
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--empty-download-cache", action="store_true", help="uv and pip start without a cache")
    ap.add_argument("--keep", action="store_true", help="keep the clone (its path is printed)")
    args = ap.parse_args(argv)
    shared = Path(os.environ.get("PPCLUST_SHARED", ROOT.parent / "shared"))  # the golden references
    work = Path(tempfile.mkdtemp(prefix="ppclust-suite-"))
    try:
        if shared.is_dir():
            (work / "shared").symlink_to(shared)
        clone = work / "ppclust"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=clone, capture_output=True, text=True
        )
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "NUMBA_", "JAX_", "PPCLUST_"))
        }
        # uv and pip keep their download caches under XDG_CACHE_HOME too: this machine's, unless asked not to
        home_cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        env.setdefault("UV_CACHE_DIR", str(home_cache / "uv"))
        env.setdefault("PIP_CACHE_DIR", str(home_cache / "pip"))
        env["XDG_CACHE_HOME"] = str(work / "cache")  # an empty per-user cache (ppclust's numba and JAX)
        if args.empty_download_cache:
            env["UV_CACHE_DIR"] = str(work / "uv-cache")
            env["PIP_CACHE_DIR"] = str(work / "pip-cache")
        load = machine_info()
        demo_clone = work / "ppclust-demo"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(demo_clone)], check=True)
        demo_env = {**env, "XDG_CACHE_HOME": str(work / "demo-cache")}
        if args.empty_download_cache:  # its own empty download cache, as the suite's
            demo_env.update(
                UV_CACHE_DIR=str(work / "demo-uv-cache"), PIP_CACHE_DIR=str(work / "demo-pip-cache")
            )
        demo_wall, demo_lines, demo_rc = run_demo(demo_clone, demo_env)
        wall, lines, rc = run_ci(clone, env)
        ph = phases(lines, wall)
        ph["exit code"] = rc
        ph["commit"] = head.stdout.strip()
        ph["download cache"] = "empty" if args.empty_download_cache else "this machine's"
        ph["slowest"] = slowest(lines)
        rows = [[k, round(v, 1) if isinstance(v, float) else v] for k, v in ph.items() if k != "slowest"]
        met = "met" if rc == 0 and wall <= GOAL_S else "missed"
        text = "\n\n".join(
            [
                "# `make test` from a fresh clone",
                f"Written by `benchmarks/bench_suite.py`; {load}.",
                "A fresh clone of HEAD with `../shared` beside it and an empty per-user cache folder runs "
                "`.ci/run` (= `make test`: set-up, lint, the core tier of the tests on 2 workers). The "
                "phases are read from its output.",
                md_table(["phase", "value"], rows),
                f"Goal: `make test` within {GOAL_S // 60} minutes on 2 cores, set-up included: **{met}** "
                f"({wall / 60:.1f} min, exit code {rc}).",
                "## `make demo` from a fresh clone",
                "Another fresh clone and empty per-user cache folder (and download cache, as the suite's): "
                "set-up, `ppclust warmup` (numba kernels) and the demo.",
                md_table(
                    ["phase", "value"],
                    [["total s", round(demo_wall, 1)], ["exit code", demo_rc]]
                    + [
                        ["warm-up", line.split("ppclust warmup: ")[1]]
                        for line in demo_lines
                        if "kernels ready" in line
                    ],
                ),
                f"Goal: `make demo` within {DEMO_GOAL_S // 60} minutes on 2 cores: "
                f"**{'met' if demo_rc == 0 and demo_wall <= DEMO_GOAL_S else 'missed'}** "
                f"({demo_wall / 60:.1f} min, exit code {demo_rc}).",
                "## Slowest 20 (pytest `--durations=20`)",
                md_table(["seconds", "phase", "test"], ph["slowest"]),
            ]
        )
        write_result("suite.md", text + "\n")
        demo = {"total s": demo_wall, "exit code": demo_rc}
        write_json("suite", {"make_test": ph, "make_demo": demo}, script="benchmarks/bench_suite.py")
        if rc != 0:
            print("\n".join(line for _, line in lines[-60:]))
        print(f"make test: {wall:.0f} s, exit code {rc} ({met})")
        return rc
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
