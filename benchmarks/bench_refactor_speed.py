"""Speed of the solver paths before and after a revision: EM (SemiSupervisedGMM), DP-means and RDP-means,
CCIB, TVClust's variational fit, the Hartigan engine of CEC-IB (XLA and compiled), the Gibbs driver (XLA
and compiled sweeps) and the compiled sub-cluster sampler.

The 'before' revision (``--rev``, default ``b967cb7``) is exported with ``git archive`` into a temporary
folder; 'after' is this tree. Each cell is one fresh process per side
(``PYTHONPATH`` at that tree, pinned to one core) that fits once to compile, then times ``--repeat`` fits
and keeps the best; the two sides alternate process by process (A/B/B/A/...) so that the load of a shared
machine hits both alike. Each process also reports the fit's iteration count and a digest of its labels,
so the table shows whether both sides did the same work. Settings whose defaults changed after 'before'
(the EM prior, TVClust's kappa0) are passed explicitly. Writes ``benchmarks/results/refactor_speed.md``.

Usage: python -m benchmarks.bench_refactor_speed [--rev b967cb7] [--rounds 2] [--repeat 3] [--only em ...]
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

from benchmarks._common import RESULTS, machine_info, md_table, write_section

ROOT = Path(__file__).resolve().parent.parent

# One timing snippet for both trees: only public names that exist at both revisions.
SNIPPET = r"""
import hashlib, json, sys, time
import warnings
warnings.filterwarnings("ignore")
import jax, jax.numpy as jnp, numpy as np
from ppclust._jax import x64
path, repeat = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(0)


def blobs(n, d, k, sep=6.0, seed=0):
    r = np.random.default_rng(seed)
    y = np.arange(n) % k
    return r.normal(size=(k, d))[y] * sep + r.normal(size=(n, d)), y


def links(y, m, seed=1):
    r = np.random.default_rng(seed)
    pairs = r.integers(0, len(y), (m, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    same = y[pairs[:, 0]] == y[pairs[:, 1]]
    return pairs[same], pairs[~same]


def est_fit(make, *args, **kw):
    def run():
        m = make().fit(*args, **kw)
        return np.asarray(m.labels_), getattr(m, "n_iter_", -1)
    return run


if path == "em":
    from ppclust import SemiSupervisedGMM
    x, y = blobs(4000, 5, 4, sep=2.5)
    yl = np.where(rng.random(len(y)) < 0.05, y, -1)
    run = est_fit(lambda: SemiSupervisedGMM(4, covariance_type="full", prior=None, max_iter=200, tol=1e-8,
                                            random_state=0), x, yl)
elif path in ("dpmeans", "rdpmeans"):
    from ppclust import DPMeans, RDPMeans
    x, y = blobs(3000, 3, 6)
    if path == "dpmeans":
        run = est_fit(lambda: DPMeans(random_state=0), x)
    else:
        ml, cl = links(y, 600)
        run = est_fit(lambda: RDPMeans(random_state=0, max_iter=200), x, must_link=ml, cannot_link=cl)
elif path == "ccib":
    from ppclust.datasets import make_two_factor_bits
    from ppclust.estimators.ccib import CCIB
    yb, b, c = make_two_factor_bits(300, noise=0.1, seed=np.random.default_rng(6))
    run = est_fit(lambda: CCIB(2, lam=0.3, n_init=2, random_state=0, progress_bar=False), yb, background=b)
elif path == "tvclust_vb":
    from ppclust import TVClust
    x, y = blobs(1500, 2, 3, sep=4.0)
    ml, cl = links(y, 600)
    run = est_fit(lambda: TVClust(algorithm="variational", kappa0=1.0, random_state=0, progress_bar=False),
                  x, must_link=ml, cannot_link=cl)
elif path in ("hartigan_xla", "hartigan_numba"):
    from ppclust.inference import cecib
    x, y = blobs(2000, 4, 5, sep=3.0)
    yl = np.where(rng.random(len(y)) < 0.1, y, -1)
    codes, n_lab = cecib.encode_labels(yl, len(y))

    def run():
        with x64():
            f = cecib.fit(jax.random.key(0), jnp.asarray(x), codes, n_lab, n_clusters=5, n_init=4,
                          backend=path.split("_")[1])
            lab = np.asarray(f.best.labels)
            return lab, int(np.asarray(f.n_passes).sum())
elif path in ("gibbs_xla", "gibbs_numba"):
    from ppclust.families import GaussianNIW
    from ppclust.inference import gibbs
    from ppclust.models.tvclust import TVClustPrior, make_links, sample_prior
    n = 400 if path == "gibbs_xla" else 3000
    sweeps = 10 if path == "gibbs_xla" else 20
    draws = "n_draws"  # both revisions' name (a keyword option of gibbs.sample's configuration)
    with x64():
        xs, truth, pairs, sign = sample_prior(jax.random.key(0), n, dim=3, labels=np.arange(n) % 6,
                                              link_fraction=0.02)
    kw = {"n_chains": 1, "k_max": 32, "progress_bar": False, "n_warmup": sweeps, draws: sweeps,
          "backend": path.split("_")[1], "init_labels": truth}

    def run():
        with x64():
            xj = jnp.asarray(xs)
            fam, lk = GaussianNIW.default(xj, "full", kappa0=1.0), make_links(n, pairs, sign)
            r = gibbs.sample(jax.random.key(1), xj, lk, fam, TVClustPrior(), **kw)
            return np.asarray(r.labels)[..., -1, :].ravel(), 2 * sweeps
elif path == "subcluster_numba":
    from ppclust.families import GaussianNIW
    from ppclust.inference import subcluster
    from ppclust.models.tvclust import TVClustPrior, make_links, sample_prior
    n, sweeps = 3000, 10
    with x64():
        xs, truth, pairs, sign = sample_prior(jax.random.key(0), n, dim=3, labels=np.arange(n) % 6,
                                              link_fraction=0.02)
    kw = {"n_chains": 1, "k_max": 32, "n_warmup": sweeps, "n_draws": sweeps, "backend": "numba"}

    def run():
        with x64():
            xj = jnp.asarray(xs)
            fam, lk = GaussianNIW.default(xj, "full", kappa0=1.0), make_links(n, pairs, sign)
            r = subcluster.sample(jax.random.key(1), xj, lk, fam, TVClustPrior(), **kw)
            return np.asarray(r.labels)[..., -1, :].ravel(), 2 * sweeps
else:
    raise SystemExit(f"unknown path {path}")

lab, it = run()  # compile
best = float("inf")
for _ in range(repeat):
    t = time.perf_counter()
    lab, it = run()
    best = min(best, time.perf_counter() - t)
digest = hashlib.sha1(np.ascontiguousarray(np.asarray(lab, np.int64)).tobytes()).hexdigest()[:8]
print(json.dumps({"seconds": best, "iterations": int(it), "labels": digest}))
"""

PATHS = [
    "em",
    "dpmeans",
    "rdpmeans",
    "ccib",
    "tvclust_vb",
    "hartigan_xla",
    "hartigan_numba",
    "gibbs_xla",
    "gibbs_numba",
    "subcluster_numba",
]
WHAT = {
    "em": "SemiSupervisedGMM EM, n 4000, d 5, K 4, full, 5% labels, prior None, tol 1e-8",
    "dpmeans": "DPMeans, n 3000, d 3, 6 blobs, default lambda",
    "rdpmeans": "RDPMeans, n 3000, d 3, 6 blobs, ~600 links",
    "ccib": "CCIB, two-factor bits n 300, 2 restarts",
    "tvclust_vb": "TVClust variational, n 1500, d 2, 3 blobs, ~600 links, kappa0 1",
    "hartigan_xla": "cecib.fit backend xla, n 2000, d 4, K 5, 4 restarts, 10% labels",
    "hartigan_numba": "cecib.fit backend numba, n 2000, d 4, K 5, 4 restarts, 10% labels",
    "gibbs_xla": "gibbs.sample backend xla, n 400, d 3, 10 + 10 sweeps, 1 chain",
    "gibbs_numba": "gibbs.sample backend numba, n 3000, d 3, 20 + 20 sweeps, 1 chain",
    "subcluster_numba": "subcluster.sample backend numba, n 3000, d 3, 10 + 10 sweeps, 1 chain",
}


def _one(src: Path, path: str, repeat: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src))
    cmd = [sys.executable, "-c", SNIPPET, path, str(repeat)]
    if hasattr(os, "sched_getaffinity"):
        cmd = ["taskset", "-c", str(min(os.sched_getaffinity(0)))] + cmd
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=src, timeout=1200)
    if out.returncode != 0:  # recorded as a failed cell, not a crash of the whole run
        print(f"{path} in {src} failed:\n{out.stderr[-2000:]}", file=sys.stderr, flush=True)
        return {"seconds": float("nan"), "iterations": -1, "labels": "error"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rev", default="b967cb7", help="the 'before' git revision")
    ap.add_argument("--rounds", type=int, default=2, help="processes per side per path")
    ap.add_argument("--repeat", type=int, default=3, help="timed fits per process (best kept)")
    ap.add_argument("--only", nargs="*", default=PATHS, choices=PATHS)
    ap.add_argument("--section", default="speed")
    a = ap.parse_args()
    load0, t0 = os.getloadavg()[0], time.time()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        before = Path(tmp)
        archive = subprocess.run(
            ["git", "archive", a.rev, "ppclust"], cwd=ROOT, capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(before)], input=archive.stdout, check=True)
        for path in a.only:
            res = {"before": [], "after": []}
            for r in range(a.rounds):
                sides = ("before", "after") if r % 2 == 0 else ("after", "before")
                for side in sides:
                    res[side].append(_one(before if side == "before" else ROOT, path, a.repeat))
            b = min(v["seconds"] for v in res["before"])
            f = min(v["seconds"] for v in res["after"])
            ib, ia = res["before"][0]["iterations"], res["after"][0]["iterations"]
            same = res["before"][0]["labels"] == res["after"][0]["labels"]
            per_it = f"{(f / max(ia, 1)) / (b / max(ib, 1)):.2f}" if ib > 0 and ia > 0 else "-"
            rows.append(
                [
                    path,
                    WHAT[path],
                    f"{b:.3f}",
                    f"{f:.3f}",
                    f"{f / b:.2f}",
                    f"{ib} / {ia}",
                    per_it,
                    "yes" if same else "no",
                ]
            )
            print(rows[-1], flush=True)
    load1 = os.getloadavg()[0]
    text = (
        "## Solver speed before/after (`python -m benchmarks.bench_refactor_speed`)"
        f"\n\nMachine: {machine_info()} (load {load0:.2f} at the start, {load1:.2f} at the end, "
        f"{(time.time() - t0) / 60:.1f} min). before = `{a.rev}` (`git archive`), after = this tree. "
        f"Seconds per fit: best of {a.repeat} timed fits per process after one compiling fit, best of "
        f"{a.rounds} processes per side, the sides alternating process by process, each process pinned "
        "to one core. 'iterations' is the fit's own count (EM/DP-means/VB iterations, CCIB annealing "
        "steps, Hartigan passes summed over restarts, Gibbs sweeps); 'per iteration' is the after/before "
        "ratio of seconds per iteration; 'same labels' compares the two sides' labels.\n\n"
        + md_table(
            [
                "path",
                "fit",
                "before s",
                "after s",
                "after/before",
                "iterations before / after",
                "per iteration",
                "same labels",
            ],
            rows,
        )
        + "\n"
    )
    print(text)
    write_section(RESULTS / "refactor_speed.md", a.section, text)


if __name__ == "__main__":
    main()
