"""EM iteration time of ppclust's jitted EM against scikit-learn's GaussianMixture, same run, same init.

n = 100,000, d = 10, k = 10, full covariances, float64. Time per iteration is the difference between runs of
``2m`` and ``m`` iterations divided by ``m`` (removes compile, init and transfer costs for both).
Writes the table into benchmarks/results/ssgmm.md.

Usage: PYTHONPATH=. python benchmarks/bench_em.py [--n 100000] [--iters 10]
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import GaussianMixture

from benchmarks._common import machine_info
from ppclust._jax import x64
from ppclust.inference import em


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    centres = rng.normal(0, 3, (a.k, a.d))
    X = centres[rng.integers(0, a.k, a.n)] + rng.normal(size=(a.n, a.d))
    means0 = X[rng.choice(a.n, a.k, replace=False)]
    w0 = np.full(a.k, 1 / a.k)
    prec0 = np.stack([np.eye(a.d)] * a.k)
    m = a.iters

    def sk_time(iters):
        gm = GaussianMixture(
            a.k,
            covariance_type="full",
            tol=0.0,
            max_iter=iters,
            weights_init=w0,
            means_init=means0,
            precisions_init=prec0,
        )
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            gm.fit(X)
        return time.perf_counter() - t0

    with x64():
        x = jnp.asarray(X)
        p0 = em.GMMParams(
            jnp.asarray(w0), jnp.asarray(means0), em.precision_cholesky(jnp.asarray(prec0), "full")
        )
        allowed = jnp.ones((1, a.k), bool)

        def pp_time(iters):
            f = lambda: em.fit(
                jax.random.key(0),
                x,
                None,
                allowed,
                jnp.zeros((a.k, a.d)),
                jnp.zeros(a.k, bool),
                n_components=a.k,
                cov_type="full",
                max_iter=iters,
                tol=0.0,
                init_params=p0,
            )
            jax.block_until_ready(f())  # compile
            t0 = time.perf_counter()
            jax.block_until_ready(f())
            return time.perf_counter() - t0

        pp = [(pp_time(2 * m) - pp_time(m)) / m for _ in range(a.repeats)]
    sk = [(sk_time(2 * m) - sk_time(m)) / m for _ in range(a.repeats)]
    pp_s, sk_s = float(np.median(pp)), float(np.median(sk))
    dev = jax.devices()[0]
    print(
        f"{dev.platform} ({dev.device_kind}); ppclust {pp_s * 1e3:.1f} ms/it, sklearn {sk_s * 1e3:.1f} "
        f"ms/iter, ratio ppclust/sklearn = {pp_s / sk_s:.2f}"
    )
    if a.no_write:
        return
    lines = [
        "# EM iteration time (benchmarks/bench_em.py)",
        "",
        machine_info(),
        "",
        f"n={a.n}, d={a.d}, k={a.k}, full covariance, float64, same initial parameters, median of "
        f"{a.repeats} x ({2 * m} - {m} iterations) / {m}.",
        "",
        "| device | ppclust ms/iter | sklearn GaussianMixture ms/iter | ratio (goal <= 1.5) |",
        "|---|---|---|---|",
        f"| {dev.platform} {dev.device_kind} | {pp_s * 1e3:.1f} | {sk_s * 1e3:.1f} | {pp_s / sk_s:.2f} |",
    ]
    out = Path(__file__).resolve().parent / "results" / "ssgmm.md"
    text = out.read_text() if out.exists() else ""
    tag = f"<!-- bench {dev.platform} -->"
    block = tag + "\n" + "\n".join(lines) + "\n<!-- /bench -->"
    if tag in text:
        i = text.index(tag)
        j = text.index("<!-- /bench -->", i) + len("<!-- /bench -->")
        text = text[:i] + block + text[j:]
    else:
        text = (text + "\n\n" if text else "") + block + "\n"
    out.write_text(text)


if __name__ == "__main__":
    main()
