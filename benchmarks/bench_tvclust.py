"""TVClust collapsed-Gibbs sweep throughput: JAX (ppclust) vs a plain NumPy loop of the same sweep.

n = 10,000 points, Gaussian NIW full covariance, d = 2 and d = 10, ~10 true clusters, 1% of points
with links. Reports point-updates per second (one chain, one CPU core) and the ratio, measured in the
same run. Writes benchmarks/results/tvclust.md. Usage: python benchmarks/bench_tvclust.py [--n N]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import time
import types
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from scipy.special import betaln, gammaln

from benchmarks._common import cpu_best
from ppclust._jax import x64
from ppclust.families import GaussianNIW
from ppclust.inference import gibbs
from ppclust.models.tvclust import TVClustPrior, make_links, sample_prior


def numpy_sweep(x, z, nbr, sgn, wgt, counts, n_k, s_k, L_k, fam, prior, k_max, rng, n_points):
    """The same collapsed sweep (Student-t predictive via Cholesky of Psi_n, collapsed p, q) in NumPy."""
    d = x.shape[1]
    mu0, k0, nu0 = np.asarray(fam.mu0), float(fam.kappa0), float(fam.nu0)
    for i in rng.permutation(len(x))[:n_points]:
        xi, ko = x[i], z[i]
        # remove (recompute the Cholesky of slot ko from its rank-one downdate, done densely here)
        kn = k0 + n_k[ko] - 1
        mun = (k0 * mu0 + s_k[ko] - xi) / kn
        u = xi - mun
        P = L_k[ko] @ L_k[ko].T - kn / (kn + 1) * np.outer(u, u)
        n_k[ko] -= 1
        s_k[ko] -= xi
        L_k[ko] = np.linalg.cholesky(P)
        plus = np.where(sgn[i] > 0, wgt[i], 0.0)
        minus = np.where(sgn[i] < 0, wgt[i], 0.0)
        f = np.bincount(z[nbr[i]], plus, k_max)
        s = np.bincount(z[nbr[i]], minus, k_max)
        F, S = plus.sum(), minus.sum()
        c = counts - np.array([f[ko], s[ko], F - f[ko], S - s[ko]])
        active = n_k > 0
        kn = k0 + n_k
        nun = nu0 + n_k
        mun = (k0 * mu0 + s_k) / kn[:, None]
        df = nun - d + 1
        fac = (kn + 1) / (kn * df)
        w = np.stack([np.linalg.solve(L_k[k], xi - mun[k]) for k in range(k_max)])
        delta = (w * w).sum(1) / fac
        logdet = 2 * np.log(np.diagonal(L_k, axis1=1, axis2=2)).sum(1) + d * np.log(fac)
        lp = (gammaln((df + d) / 2) - gammaln(df / 2) - 0.5 * d * np.log(df * np.pi) - 0.5 * logdet
              - 0.5 * (df + d) * np.log1p(delta / df))
        link = (betaln(prior.a_p + c[0] + f, prior.b_p + c[1] + s)
                + betaln(prior.a_q + c[3] + S - s, prior.b_q + c[2] + F - f))
        logw = np.where(active, np.log(np.maximum(n_k, 1)) + lp + link, -np.inf)
        new = np.argmin(active)
        logw[new] = np.log(prior.alpha) + lp[new] + link[new]
        k = int(np.argmax(logw + rng.gumbel(size=k_max)))
        kn = k0 + n_k[k]
        u = xi - (k0 * mu0 + s_k[k]) / kn
        L_k[k] = np.linalg.cholesky(L_k[k] @ L_k[k].T + kn / (kn + 1) * np.outer(u, u))
        n_k[k] += 1
        s_k[k] += xi
        counts = c + np.array([f[k], s[k], F - f[k], S - s[k]])
        z[i] = k
    return counts


def _baseline_gibbs(rev):
    """``ppclust/inference/gibbs.py`` at git revision ``rev``, loaded as a module (before/after, same run)."""
    src = subprocess.run(["git", "show", f"{rev}:ppclust/inference/gibbs.py"], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).parent).stdout
    mod = types.ModuleType(f"gibbs_{rev}")
    exec(compile(src, f"gibbs@{rev}", "exec"), mod.__dict__)
    return mod


def make_problem(n, d, covariance="full"):
    """The benchmark's data (10 true clusters, 1% of points linked, standardised), links, family, prior.
    Call inside an ``x64()`` scope."""
    x, truth, pairs, sign = sample_prior(jax.random.key(d), n, labels=np.arange(n) % 10, dim=d,
                                         link_fraction=0.01, p=0.95, q=0.95)
    x = (x - x.mean(0)) / x.std(0)
    fam = GaussianNIW(jnp.zeros(d), jnp.asarray(1.0), jnp.asarray(d + 2.0), jnp.eye(d), covariance)
    return x, truth, make_links(n, pairs, sign), fam, TVClustPrior()


def bench(n, d, k_max, sweeps, numpy_points, chains=1, covariance="full", baseline=None, repeat=3):
    with x64():
        x, truth, links, fam, prior = make_problem(n, d, covariance)
        xj = jnp.asarray(x)
        kw = dict(n_chains=chains, k_max=k_max, progress_bar=False, init_labels=truth)
        rates, res = {}, None
        for name, mod in (("after", gibbs), ("before", baseline)):
            if mod is None:
                continue
            # compile
            mod.sample(jax.random.key(0), xj, links, fam, prior, n_samples=sweeps, n_warmup=0, **kw)
            t = cpu_best(lambda mod=mod: mod.sample(jax.random.key(1), xj, links, fam, prior,
                                                     n_samples=sweeps, n_warmup=0, **kw), repeat)
            rates[name] = n * sweeps * chains / t
            res = res or mod.sample(jax.random.key(1), xj, links, fam, prior, n_samples=sweeps, n_warmup=0,
                                    **kw)
        st = GaussianNIW(fam.mu0, fam.kappa0, fam.nu0, fam.psi0).stats(xj, jnp.asarray(truth), k_max)
        n_k, s_k, L_k = (np.array(a) for a in st)
        counts = np.array(gibbs.pair_counts(jnp.asarray(truth), links))
    z = truth.astype(np.int64).copy()
    nbr, sgn, wgt = (np.asarray(a) for a in (links.nbr, links.sgn, links.wgt))
    t = time.process_time()
    numpy_sweep(x, z, nbr, sgn, wgt, counts, n_k, s_k, L_k, fam, prior, k_max, np.random.default_rng(0),
                numpy_points)
    np_rate = numpy_points / (time.process_time() - t)
    return rates, np_rate, float(res.n_clusters.mean())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--sweeps", type=int, default=3)
    ap.add_argument("--k-max", type=int, default=32)
    ap.add_argument("--numpy-points", type=int, default=2000)
    ap.add_argument("--baseline", default="3aba7a7", help="git revision of gibbs.py to time in the same run "
                    "('' to skip)")
    a = ap.parse_args()
    baseline = _baseline_gibbs(a.baseline) if a.baseline else None
    rows = []
    for d, chains, cov in ((2, 1, "full"), (10, 1, "full"), (2, 4, "full"), (10, 1, "diag")):
        r, nr, k = bench(a.n, d, a.k_max, a.sweeps, a.numpy_points, chains, cov, baseline)
        before = r.get("before", float("nan"))
        rows.append(f"| {d} | {a.n} | {a.k_max} | {chains} | {cov} | {k:.1f} | {before:,.0f} | "
                    f"{r['after']:,.0f} | {r['after'] / before:.1f}x | {nr:,.0f} | {before / nr:.0f}x | "
                    f"{r['after'] / nr:.0f}x |")
        print(rows[-1], flush=True)
    out = Path(__file__).parent / "results" / "tvclust.md"
    out.write_text(
        "# TVClust collapsed Gibbs sweep throughput\n\n"
        f"Machine: {platform.machine()} {platform.processor() or ''}, 2 cores shared (load average "
        f"{os.getloadavg()[0]:.1f} at the end), jax {jax.__version__}, float64, device CPU. "
        f"n={a.n}, Gaussian NIW prior, 10 true clusters, 1% of points with links, collapsed p/q, "
        f"`gibbs.sample` with {a.sweeps} draws (thin 1) timed after compilation, best of 3 by process CPU "
        f"time (wall time is meaningless on this loaded machine). 'before' = gibbs.py at {a.baseline or '-'} "
        f"loaded from git and timed in the same run. NumPy: the same sweep (full covariance) as a Python "
        f"loop over {a.numpy_points} point updates, same run. Point-updates/s count every chain.\n\n"
        "| d | n | k_max | chains | covariance | mean K | JAX before | JAX after | after/before | NumPy "
        "| before/NumPy | after/NumPy |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
