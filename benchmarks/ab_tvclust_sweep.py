"""Interleaved A/B timing of the compiled (numba) and XLA TVClust sweeps: this tree against a git revision.

On a shared, loaded machine two benchmark runs minutes apart differ by 2-4x; here the two code versions
alternate run by run (each a fresh process pinned to one core, compiled before timing), so drift hits both
alike. The revision is exported with ``git archive`` into a temporary folder. Writes its section of
benchmarks/results/tvclust_refactor.md. Usage:
python -m benchmarks.ab_tvclust_sweep [--rev 383666b] [--n 3000] [--rounds 3]
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
with x64():
    x, truth, pairs, sign = sample_prior(jax.random.key(0), n, dim=d, labels=np.arange(n) % 10,
                                         link_fraction=0.01)
    xj = jnp.asarray(x)
    fam, links = GaussianNIW.default(xj, cov), make_links(n, pairs, sign)
    kw = dict(n_chains=1, k_max=32, progress_bar=False, init_labels=truth, n_warmup=0, backend=backend,
              n_samples=sweeps)
    gibbs.sample(jax.random.key(0), xj, links, fam, TVClustPrior(), **kw)  # compile
    times = []
    for _ in range(3):
        t = time.perf_counter()
        gibbs.sample(jax.random.key(1), xj, links, fam, TVClustPrior(), **kw)
        times.append(time.perf_counter() - t)
print(n * sweeps / min(times))
"""


def _rate(src: Path, d, n, cov, backend, sweeps) -> float:
    env = dict(os.environ, PYTHONPATH=str(src))
    cmd = [sys.executable, "-c", SNIPPET, str(d), str(n), cov, backend, str(sweeps)]
    if hasattr(os, "sched_getaffinity"):
        cmd = ["taskset", "-c", str(min(os.sched_getaffinity(0)))] + cmd
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, cwd=src)
    return float(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rev", default="383666b", help="the 'before' git revision")
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--configs", nargs="*", default=["2:full:numba", "10:full:numba", "10:diag:numba",
                                                      "2:full:xla", "10:full:xla"],
                    help="d:covariance:backend cells")
    ap.add_argument("--section", default="ab", help="section of the results file to (re)write")
    a = ap.parse_args()
    configs = []
    for c in a.configs:
        d, cov, backend = c.split(":")
        configs.append((int(d), cov, backend, 6 if backend == "numba" else 2))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        before = Path(tmp)
        archive = subprocess.run(["git", "archive", a.rev, "ppclust"], cwd=ROOT, capture_output=True,
                                 check=True)
        subprocess.run(["tar", "-x", "-C", str(before)], input=archive.stdout, check=True)
        for d, cov, backend, sweeps in configs:
            rates = {"before": [], "after": []}
            for _ in range(a.rounds):
                rates["before"].append(_rate(before, d, a.n, cov, backend, sweeps))
                rates["after"].append(_rate(ROOT, d, a.n, cov, backend, sweeps))
            b, f = max(rates["before"]), max(rates["after"])
            rows.append([d, cov, backend, f"{b:,.0f}", f"{f:,.0f}", f"{f / b:.2f}"])
            print(rows[-1], flush=True)
    text = ("## Interleaved A/B (`python -m benchmarks.ab_tvclust_sweep`)\n\n"
            f"Machine: {machine_info()}. Point-updates/s of `gibbs.sample` (one chain, float64, n={a.n}, "
            "k_max=32, 10 true clusters, 1% of points linked, collapsed p/q, started at the true labels), "
            f"best of 3 timed calls per process after compilation, best of {a.rounds} processes per side; "
            "the sides alternate process by process. "
            f"before = `{a.rev}` (`git archive`), after = this tree.\n\n"
            + md_table(["d", "covariance", "backend", "before", "after", "after/before"], rows) + "\n")
    print(text)
    write_section(RESULTS / "tvclust_refactor.md", a.section, text)


if __name__ == "__main__":
    main()
