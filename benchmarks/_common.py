"""Shared helpers for benchmark scripts: timing, machine info, markdown tables."""

from __future__ import annotations

import os
import platform
import time
import warnings
from collections.abc import Callable
from pathlib import Path

# `ppclust reproduce` points this elsewhere so that a quick run never overwrites the committed tables
RESULTS = Path(os.environ.get("PPCLUST_RESULTS_DIR") or Path(__file__).resolve().parent / "results")


def best_of(fn: Callable[[], object], repeat: int = 5, warmup: int = 1) -> float:
    """Best wall time (seconds) of ``repeat`` calls after ``warmup`` calls; blocks on JAX results."""
    import jax

    for _ in range(warmup):
        jax.block_until_ready(fn())
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        best = min(best, time.perf_counter() - t0)
    return best


def cpu_best(fn: Callable[[], object], repeat: int = 3) -> float:
    """Best process CPU time (seconds) of ``repeat`` calls: less sensitive than wall time on a shared,
    loaded machine (``fn`` must block on its JAX results)."""
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def commit() -> str:
    """The short hash of the checkout's HEAD (``+dirty`` with uncommitted changes), or ``"unknown"``."""
    import subprocess

    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def machine_info() -> str:
    """One line naming the machine, the load average, the versions, the date and the commit of a run."""
    import jax
    import numpy as np

    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",)
    return (
        f"{platform.node()} | {platform.processor() or platform.machine()} | {os.cpu_count()} cores | "
        f"jax {jax.__version__} ({jax.default_backend()}) | numpy {np.__version__} | "
        f"python {platform.python_version()} | load {load[0]:.2f} | {time.strftime('%Y-%m-%d %H:%M')} | "
        f"commit {commit()}"
    )


def write_section(path: Path, name: str, text: str) -> Path:
    """Put ``text`` between ``<!-- name:start -->`` / ``<!-- name:end -->`` markers in ``path`` (replacing
    the previous run's section, keeping hand-written notes around it), or append it."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    block = f"{start}\n{text.strip()}\n{end}\n"
    old = path.read_text() if path.exists() else ""
    if start in old and end in old:
        new = old[: old.index(start)] + block + old[old.index(end) + len(end) + 1 :]
    else:
        new = old + ("\n" if old else "") + block
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(new)
    return path


def pin_one_core() -> str:
    """Run this process on one CPU core (the benchmarks' "one core" condition); returns a note."""
    if not hasattr(os, "sched_setaffinity"):
        return "not pinned (no sched_setaffinity)"
    core = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {core})
    return f"pinned to CPU core {core} (os.sched_setaffinity)"


def md_table(header: list[str], rows: list[list]) -> str:
    def fmt(v):
        if isinstance(v, float):
            return f"{v:.4g}"
        return str(v)

    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(fmt(v) for v in r) + " |" for r in rows]
    return "\n".join(out)


def write_result(name: str, text: str, folder: Path | None = None) -> Path:
    """Write ``text`` to ``folder / name`` (default: this package's results folder)."""
    folder = RESULTS if folder is None else folder
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_text(text)
    return p


def _jsonable(v):
    import numpy as np

    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return _jsonable(v.tolist())
    if isinstance(v, np.generic):
        return v.item()
    return v


def write_json(name: str, data: dict, script: str, merge: bool = False, folder: Path | None = None) -> Path:
    """Write the numbers behind ``results/<name>.md`` to ``results/<name>.json`` (read by
    ``reproduce/claims.py``, which builds the claim ledger CLAIMS.md). ``merge`` keeps the keys of a
    previous run that this run did not produce (scripts that can regenerate one section at a time);
    every top-level section records the machine line and time of the run that wrote it."""
    import json

    folder = RESULTS if folder is None else folder
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / f"{name}.json"
    old = json.loads(p.read_text()) if merge and p.exists() else {}
    stamp = {"script": script, "machine": machine_info()}
    for k, v in data.items():
        v = _jsonable(v)
        if isinstance(v, dict):
            v = {**v, "_run": stamp}
        old[k] = v
    p.write_text(json.dumps(old, indent=1, sort_keys=True, allow_nan=True) + "\n")
    return p


def timed_labels(fit: Callable, *args, **kwargs):
    """One fit of a panel or study script: ``fit(*args, **kwargs)`` (warnings silenced) returns the
    predicted labels. Returns ``(labels, {"s": seconds})``, or ``(None, {"error": ..., "s": seconds})``
    when it raised, so that a failing fit is cached and shown as a failure instead of stopping the run."""
    import numpy as np

    t0 = time.time()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pred = np.asarray(fit(*args, **kwargs))
        return pred, {"s": time.time() - t0}
    except Exception as e:  # recorded
        return None, {"error": f"{type(e).__name__}: {str(e)[:120]}", "s": time.time() - t0}
