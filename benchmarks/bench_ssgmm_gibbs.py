"""Semi-supervised GMM collapsed-Gibbs sweep throughput (finite-mixture mode of ppclust.inference.gibbs).

n = 5,000 points (default), d = 5, K = 5 components, 10% labelled, Gaussian NIW (full / diag), one chain
on CPU. Reports point updates per second of both sweep backends (compiled CPU loop "numba", jitted "xla";
best of 3, compile excluded, same run) and writes its ``gibbs`` section of benchmarks/results/ssgmm.md.
Usage: PYTHONPATH=. python benchmarks/bench_ssgmm_gibbs.py [--n N]
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks._common import RESULTS, machine_info, md_table, write_section
from ppclust._jax import x64
from ppclust.families import GaussianNIW
from ppclust.inference import gibbs
from ppclust.models.ssgmm import default_component_classes, label_log_mask
from ppclust.models.tvclust import TVClustPrior, make_links


def main(n=5000, d=5, k=5, sweeps=20):
    rng = np.random.default_rng(0)
    z = rng.integers(0, k, n)
    x = rng.normal(0, 4, (k, d))[z] + rng.normal(size=(n, d))
    y = np.where(rng.random(n) < 0.1, z, -1)
    log_mask, _ = label_log_mask(y, default_component_classes(k, k), k, 0.0)
    rows = []
    for cov, backend in (("full", "numba"), ("full", "xla"), ("diag", "numba"), ("diag", "xla")):
        with x64():
            xj = jnp.asarray(x - x.mean(0))
            fam = GaussianNIW.default(xj, cov)
            kw = dict(
                n_draws=1,
                n_warmup=sweeps - 1,
                n_chains=1,
                k_max=k,
                pq="fixed",
                partition="finite",
                point_logprior=jnp.asarray(log_mask),
                progress_bar=False,
                store_labels=False,
                backend=backend,
            )
            links, prior = make_links(n), TVClustPrior(alpha=k)

            def run(s, xj=xj, fam=fam, kw=kw, links=links, prior=prior):
                return gibbs.sample(jax.random.key(s), xj, links, fam, prior, **kw)

            run(0)  # compile
            best = float("inf")
            for s in range(3):
                t = time.perf_counter()
                jax.block_until_ready(run(s + 1).log_joint)
                best = min(best, time.perf_counter() - t)
        rows.append([cov, backend, n, d, k, sweeps, round(best, 3), f"{n * sweeps / best:,.0f}"])
    table = md_table(["covariance", "backend", "n", "d", "K", "sweeps", "best s", "points/s"], rows)
    block = (
        "# Collapsed Gibbs sweep throughput (benchmarks/bench_ssgmm_gibbs.py)\n\n"
        f"{machine_info()}\n\nOne chain, 10% labelled (eps = 0), float64, compile excluded, "
        "best of 3.\n\n"
        f"{table}\n"
    )
    write_section(RESULTS / "ssgmm.md", "gibbs", block)
    print(block)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5000)
    main(ap.parse_args().n)
