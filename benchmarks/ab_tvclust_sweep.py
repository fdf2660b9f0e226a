"""Interleaved A/B timing of the compiled (numba) and XLA TVClust sweeps: this tree against a git revision.

On a shared, loaded machine two benchmark runs minutes apart differ by 2-4x; here the two code versions
alternate run by run (each a fresh process pinned to one core, compiled before timing), so drift hits both
alike. The revision is exported with ``git archive`` into a temporary folder. Writes its section of
benchmarks/results/tvclust_refactor.md. Usage:
python -m benchmarks.ab_tvclust_sweep [--rev 383666b] [--n 3000] [--rounds 3] [--clock cpu] [--compile]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks._common import RESULTS, machine_info, md_table, write_section

ROOT = Path(__file__).resolve().parent.parent

SNIPPET = r"""
import sys, time
import jax, jax.numpy as jnp, numpy as np
from ppclust._jax import x64
from ppclust.families import GaussianNIW
from ppclust.inference import gibbs
from ppclust.models.tvclust import TVClustPrior, make_links, sample_prior
d, n, cov, backend, sweeps = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
clock = time.process_time if sys.argv[6] == "cpu" else time.perf_counter
with x64():
    x, truth, pairs, sign = sample_prior(jax.random.key(0), n, dim=d, labels=np.arange(n) % 10,
                                         link_fraction=0.01)
    xj = jnp.asarray(x)
    fam, links = GaussianNIW.default(xj, cov), make_links(n, pairs, sign)
    kw = dict(n_chains=1, k_max=32, progress_bar=False, init_labels=truth, n_warmup=0, backend=backend,
              n_draws=sweeps)
    gibbs.sample(jax.random.key(0), xj, links, fam, TVClustPrior(), **kw)  # compile
    times = []
    for _ in range(3):
        t = clock()
        gibbs.sample(jax.random.key(1), xj, links, fam, TVClustPrior(), **kw)
        times.append(clock() - t)
print(n * sweeps / min(times))
"""


COMPILE_SNIPPET = r"""
import time
from ppclust._warmup import warmup
print(warmup()["TVClust"])
"""


KERNEL_SNIPPET = r"""
import importlib.util, sys, tempfile, time
from pathlib import Path
import jax, jax.numpy as jnp, numpy as np
from ppclust._jax import x64
from ppclust.families import GaussianNIW
from ppclust.inference import _gibbs_cpu, gibbs
from ppclust.models.tvclust import TVClustPrior, make_links, sample_prior
before_file, d, n, cov, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
spec = importlib.util.spec_from_file_location("ppclust.inference._gibbs_cpu_before", before_file)
before = importlib.util.module_from_spec(spec)
spec.loader.exec_module(before)
rec, after = [], _gibbs_cpu._sweep_chains
_gibbs_cpu._sweep_chains = lambda *a: (rec.append([np.array(v) if isinstance(v, np.ndarray) else v
                                                   for v in a]), after(*a))[1]
with x64():
    x, truth, pairs, sign = sample_prior(jax.random.key(0), n, dim=d, labels=np.arange(n) % 10,
                                         link_fraction=0.01)
    xj = jnp.asarray(x)
    fam, links = GaussianNIW.default(xj, cov), make_links(n, pairs, sign)
    gibbs.sample(jax.random.key(0), xj, links, fam, TVClustPrior(), n_chains=1, k_max=32, progress_bar=False,
                 init_labels=truth, n_warmup=0, backend="numba", n_draws=2)
_gibbs_cpu._sweep_chains = after


def run(fn):
    a = [v.copy() if isinstance(v, np.ndarray) else v for v in rec[-1]]
    t = time.process_time()
    fn(*a)
    return time.process_time() - t, a


run(before._sweep_chains), run(after)
tb, ta = [], []
for _ in range(reps):
    t, out_b = run(before._sweep_chains)
    tb.append(t)
    t, out_a = run(after)
    ta.append(t)
same = all(np.array_equal(u, v) for u, v in zip(out_b, out_a) if isinstance(u, np.ndarray))
print(min(tb), min(ta), int(same))
"""


def _kernel_rows(rev: str, configs, n: int, reps: int = 15) -> list:
    """Both versions of the compiled sweep kernel in one process (the 'before' module loaded from the
    revision's file under another name), timed alternately on the same recorded sweep inputs: no
    process-to-process drift, so a few percent show."""
    rows = []
    src = subprocess.run(
        ["git", "show", f"{rev}:ppclust/inference/_gibbs_cpu.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for d, cov, backend, _ in configs:
        if backend != "numba":
            continue
        # a fresh path per process: numba's disk cache cannot reload a kernel of a module loaded by path
        with tempfile.TemporaryDirectory() as tmp:
            f = Path(tmp) / "_gibbs_cpu_before.py"
            f.write_text(src)
            cmd = [sys.executable, "-c", KERNEL_SNIPPET, str(f), str(d), str(n), cov, str(reps)]
            if hasattr(os, "sched_getaffinity"):
                cmd = ["taskset", "-c", str(min(os.sched_getaffinity(0)))] + cmd
            out = subprocess.run(
                cmd,
                env=dict(os.environ, PYTHONPATH=str(ROOT)),
                capture_output=True,
                text=True,
                check=True,
                cwd=ROOT,
            )
            b, a, same = out.stdout.split()[-3:]
            rows.append(
                [
                    d,
                    cov,
                    f"{float(b) * 1e3:.3f}",
                    f"{float(a) * 1e3:.3f}",
                    f"{float(b) / float(a):.2f}",
                    "yes" if same == "1" else "no",
                ]
            )
            print(rows[-1], flush=True)
    return rows


def _compile_seconds(src: Path, cache: Path) -> float:
    """Seconds of the warm-up's TVClust fit (sweep + PSIS-LOO kernels) with the numba cache at ``cache``."""
    env = dict(os.environ, PYTHONPATH=str(src), NUMBA_CACHE_DIR=str(cache))
    cmd = [sys.executable, "-c", COMPILE_SNIPPET]
    if hasattr(os, "sched_getaffinity"):
        cmd = ["taskset", "-c", str(min(os.sched_getaffinity(0)))] + cmd
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, cwd=src)
    return float(out.stdout.strip().splitlines()[-1])


def _compile_rows(before: Path, rounds: int) -> list:
    """Cold (empty numba cache) minus warm (same cache, second process) warm-up TVClust fit per side."""
    secs = {"before": [], "after": []}
    for r in range(rounds):
        for side in ("before", "after") if r % 2 == 0 else ("after", "before"):
            src = before if side == "before" else ROOT
            with tempfile.TemporaryDirectory() as cache:
                cold = _compile_seconds(src, Path(cache))
                warm = _compile_seconds(src, Path(cache))
            secs[side].append((cold, warm))
    b = min(c - w for c, w in secs["before"])
    f = min(c - w for c, w in secs["after"])
    return [["warm-up TVClust fit: cold - warm numba cache (s)", f"{b:.1f}", f"{f:.1f}", f"{f / b:.2f}"]]


def _rate(src: Path, d, n, cov, backend, sweeps, clock="wall") -> float:
    env = dict(os.environ, PYTHONPATH=str(src))
    cmd = [sys.executable, "-c", SNIPPET, str(d), str(n), cov, backend, str(sweeps), clock]
    if hasattr(os, "sched_getaffinity"):
        cmd = ["taskset", "-c", str(min(os.sched_getaffinity(0)))] + cmd
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, cwd=src)
    return float(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rev", default="383666b", help="the 'before' git revision")
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--configs",
        nargs="*",
        default=["2:full:numba", "10:full:numba", "10:diag:numba", "2:full:xla", "10:full:xla"],
        help="d:covariance:backend cells",
    )
    ap.add_argument("--section", default="ab", help="section of the results file to (re)write")
    ap.add_argument(
        "--compile",
        action="store_true",
        help="also time the numba compilation (warmup's TVClust fit, cold minus warm cache)",
    )
    ap.add_argument(
        "--kernel",
        action="store_true",
        help="also time the two sweep kernels in one process on the same inputs (_kernel_rows)",
    )
    ap.add_argument("--kernel-only", action="store_true", help="only the one-process kernel A/B")
    ap.add_argument(
        "--clock",
        default="wall",
        choices=["wall", "cpu"],
        help="cpu: process CPU time (less sensitive to other jobs on a loaded machine)",
    )
    a = ap.parse_args()
    configs = []
    for c in a.configs:
        d, cov, backend = c.split(":")
        configs.append((int(d), cov, backend, 6 if backend == "numba" else 2))
    rows = []
    kern = _kernel_rows(a.rev, configs, a.n) if a.kernel or a.kernel_only else []
    if a.kernel_only:
        text = (
            "## Sweep kernel A/B in one process (`python -m benchmarks.ab_tvclust_sweep --kernel-only`)"
            f"\n\nMachine: {machine_info()}. n={a.n}, k_max=32, 10 true clusters, 1% of points linked, "
            f"collapsed p/q, at the true labels. before = `{a.rev}`, after = this tree. Both versions' "
            "`_sweep_chains` are loaded in one process (before from the revision's file under another "
            "module name) and timed alternately on the same recorded inputs of one sweep (process "
            "CPU ms, best of 15 each); 'same result': equal outputs.\n\n"
            + md_table(
                ["d", "covariance", "before ms", "after ms", "speed after/before", "same result"], kern
            )
            + "\n"
        )
        print(text)
        write_section(RESULTS / "tvclust_refactor.md", a.section, text)
        return
    with tempfile.TemporaryDirectory() as tmp:
        before = Path(tmp)
        archive = subprocess.run(
            ["git", "archive", a.rev, "ppclust"], cwd=ROOT, capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(before)], input=archive.stdout, check=True)
        for d, cov, backend, sweeps in configs:
            rates = {"before": [], "after": []}
            for _ in range(a.rounds):
                rates["before"].append(_rate(before, d, a.n, cov, backend, sweeps, a.clock))
                rates["after"].append(_rate(ROOT, d, a.n, cov, backend, sweeps, a.clock))
            b, f = max(rates["before"]), max(rates["after"])
            rows.append([d, cov, backend, f"{b:,.0f}", f"{f:,.0f}", f"{f / b:.2f}"])
            print(rows[-1], flush=True)
        comp = _compile_rows(before, a.rounds) if a.compile else []
        print(comp, flush=True)
    text = (
        "## Interleaved A/B (`python -m benchmarks.ab_tvclust_sweep`)\n\n"
        f"Machine: {machine_info()}. Point-updates/s of `gibbs.sample` (one chain, float64, n={a.n}, "
        "k_max=32, 10 true clusters, 1% of points linked, collapsed p/q, started at the true labels; "
        f"{'process CPU' if a.clock == 'cpu' else 'wall'} time), "
        f"best of 3 timed calls per process after compilation, best of {a.rounds} processes per side; "
        "the sides alternate process by process. "
        f"before = `{a.rev}` (`git archive`), after = this tree.\n\n"
        + md_table(["d", "covariance", "backend", "before", "after", "after/before"], rows)
        + "\n"
    )
    if kern:
        text += (
            "\nThe compiled sweep kernel alone (`--kernel`): both versions' `_sweep_chains` loaded in "
            "one process (before from the revision's file), timed alternately on the same recorded "
            "inputs (one sweep, process CPU ms, best of 15 each); 'same result': equal outputs.\n\n"
            + md_table(
                ["d", "covariance", "before ms", "after ms", "speed after/before", "same result"], kern
            )
            + "\n"
        )
    if comp:
        text += (
            "\nFirst-fit compile time: seconds of `ppclust warmup`'s TVClust fit (sweep and "
            "PSIS-LOO kernels) with an empty numba cache minus the same with that cache filled, best of "
            f"{a.rounds} per side, alternating.\n\n"
            + md_table(["measure", "before", "after", "after/before"], comp)
            + "\n"
        )
    print(text)
    write_section(RESULTS / "tvclust_refactor.md", a.section, text)


if __name__ == "__main__":
    main()
