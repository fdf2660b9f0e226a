"""One command for a lent GPU: does every estimator's XLA path agree with the CPU, how fast is it at scale,
and how much device memory does it take.

    python benchmarks/gpu_check.py            # on a GPU machine, finishes within 8 minutes on one GPU
    python benchmarks/gpu_check.py --reduced  # tiny sizes on CPU (the test suite runs this)

Sections:

1. every registered estimator fitted on small data on the accelerator (XLA backends where an estimator
   has a choice) and on the CPU, same seed: the adjusted Rand index of the two labelings (1 = same
   partition);
2. TVClust ``algorithm="subcluster"`` throughput (point-sweeps per second, from two fits that differ
   only in their number of sweeps) at n = 10^7, d = 2 and n = 10^6, d = 32;
3. one EM iteration (E-step and M-step of ppclust's EM functions) at N = 10^6, K = 1024, D = 128,
   diagonal and full covariance, against Flash-GMM's published E-step (152 ms on one A100 at the same
   sizes); the full-covariance iteration runs in row chunks (its E-step forms an (rows, K, D) array);
4. peak device memory (``memory_stats()["peak_bytes_in_use"]`` where the device reports it).

Writes ``gpu_check.md`` and ``gpu_check.json`` to ``benchmarks/results/`` (``--out`` elsewhere).
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import time
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks._common import RESULTS, machine_info  # noqa: E402

FLASH_GMM_ESTEP_MS = 152.0  # Flash-GMM, one A100, N = 10^6, K = 1024, D = 128 (published)

FULL = {
    "agree_n": 600,
    "subcluster": [(10_000_000, 2), (1_000_000, 32)],
    "sweeps": (2, 6),
    "em": (1_000_000, 1024, 128),
    "em_chunk": 8192,
}
REDUCED = {
    "agree_n": 120,
    "subcluster": [(2_000, 2), (500, 4)],
    "sweeps": (2, 3),
    "em": (2_000, 8, 4),
    "em_chunk": 512,
}


def small_data(n, seed=0):
    rng = np.random.default_rng(seed)
    k = 3
    X = np.concatenate([rng.normal(4 * c, 1.0, (n // k, 2)) for c in range(k)])
    truth = np.repeat(np.arange(k), n // k)
    y = np.full(len(X), -1)
    lab = rng.choice(len(X), len(X) // 5, replace=False)
    y[lab] = truth[lab]
    pairs = rng.choice(len(X), (len(X) // 4, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    same = truth[pairs[:, 0]] == truth[pairs[:, 1]]
    return X, y, truth, pairs[same], pairs[~same]


def estimator_kwargs(cls):
    keys = cls().get_params()
    want = {
        "n_clusters": 3,
        "random_state": 0,
        "progress_bar": False,
        "backend": "xla",
        "n_draws": 20,
        "n_warmup": 20,
        "n_chains": 1,
    }
    return {k: v for k, v in want.items() if k in keys}


def fit_kwargs(method, cls, X, y, truth, ml, cl):
    params = inspect.signature(cls.fit).parameters
    kw = {}
    if "must_link" in params:
        kw.update(must_link=ml, cannot_link=cl)
    elif method == "c3l":
        kw["partial_labels"] = np.where(y >= 0, (y > 0).astype(int), -1)
    elif "partial_labels" in params:
        kw["partial_labels"] = y
    if "background" in params:
        kw["background"] = (X[:, 0] > np.median(X[:, 0])).astype(int)
    return kw


def check_agreement(n, accel, cpu, only=None):
    import jax
    from sklearn.metrics import adjusted_rand_score

    from ppclust._registry import METHODS

    X, y, truth, ml, cl = small_data(n)
    rows = []
    for name, info in METHODS.items():
        if only and name not in only:
            continue
        row = {"method": name}
        try:
            cls = info.load()
            labels = {}
            for where, dev in (("accel", accel), ("cpu", cpu)):
                est = cls(**estimator_kwargs(cls))
                with jax.default_device(dev):
                    t0 = time.perf_counter()
                    est.fit(X, **fit_kwargs(name, cls, X, y, truth, ml, cl))
                    row[f"{where}_s"] = time.perf_counter() - t0
                labels[where] = np.asarray(est.labels_)
            row["ari"] = float(adjusted_rand_score(labels["cpu"], labels["accel"]))
        except Exception as err:  # noqa: BLE001 - one estimator's failure is a finding, not the end
            row["error"] = f"{type(err).__name__}: {err}"[:300]
            traceback.print_exc()
        rows.append(row)
    return rows


def subcluster_throughput(sizes, sweeps):
    from ppclust import TVClust

    out = []
    for n, d in sizes:
        rng = np.random.default_rng(1)
        X = rng.normal(size=(n, d)) + 6.0 * (np.arange(n) % 4)[:, None]
        times = []
        for s in sweeps:
            est = TVClust(
                algorithm="subcluster",
                n_draws=s,
                n_warmup=0,
                n_chains=1,
                backend="xla",
                point_estimate="max_log_joint",
                max_psm_n=0,
                random_state=0,
                progress_bar=False,
            )
            t0 = time.perf_counter()
            est.fit(X)
            times.append(time.perf_counter() - t0)
        per_sweep = max(times[1] - times[0], 1e-9) / (sweeps[1] - sweeps[0])
        out.append(
            {
                "n": n,
                "d": d,
                "seconds": times,
                "sweeps": list(sweeps),
                "s_per_sweep": per_sweep,
                "point_sweeps_per_s": n / per_sweep,
                "n_clusters": int(est.n_clusters_),
            }
        )
    return out


def em_iteration(N, K, D, cov_type, chunk):
    """Seconds of one EM iteration (E-step then M-step from the summed statistics), rows in chunks."""
    import jax
    import jax.numpy as jnp

    from ppclust._jax import x64
    from ppclust.inference import em

    with x64():
        key = jax.random.key(0)
        x = jax.random.normal(key, (N, D))
        means = jax.random.normal(jax.random.key(1), (K, D))
        shape = {"diag": (K, D), "full": (K, D, D)}[cov_type]
        prec = jnp.ones(shape) if cov_type == "diag" else jnp.broadcast_to(jnp.eye(D), shape)
        params = em.GMMParams(jnp.full(K, 1.0 / K), means, prec)
        chunk = max(c for c in range(1, min(chunk, N) + 1) if N % c == 0)  # equal chunks: a divisor of N
        chunks = x.reshape(N // chunk, chunk, D)

        @jax.jit
        def one_iteration(params, chunks):
            def stats(xc):
                ll, log_resp = em.e_step(xc, params, None, cov_type)
                return ll, em.suff_stats(xc, jnp.exp(log_resp), cov_type)

            ll, st = jax.lax.map(stats, chunks)
            st = jax.tree.map(lambda a: a.sum(0), st)
            return ll.sum(), em.m_step_from_stats(st, cov_type, 1e-6, None)

        jax.block_until_ready(one_iteration(params, chunks))  # compile
        t0 = time.perf_counter()
        jax.block_until_ready(one_iteration(params, chunks))
        return time.perf_counter() - t0


def peak_memory(dev):
    try:
        stats = dev.memory_stats() or {}
    except Exception:  # noqa: BLE001 - CPU devices may not report
        stats = {}
    return stats.get("peak_bytes_in_use")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reduced", action="store_true", help="tiny sizes on CPU (what the test suite runs)")
    ap.add_argument("--out", type=Path, default=RESULTS, help="folder of gpu_check.md/json")
    ap.add_argument("--methods", help="comma-separated registered methods to compare (default: all)")
    ap.add_argument(
        "--sections",
        default="agreement,subcluster,em",
        help="comma-separated sections to run (default: all three; the fast test skips subcluster)",
    )
    args = ap.parse_args(argv)
    sections = set(args.sections.split(","))
    import jax

    sizes = REDUCED if args.reduced else FULL
    accel = jax.devices()[0]
    cpu = jax.devices("cpu")[0]
    if not args.reduced and accel.platform == "cpu":
        print("gpu_check: no accelerator (jax.devices() lists only CPUs); use --reduced", file=sys.stderr)
        return 2
    t_start = time.perf_counter()
    res = {"machine": machine_info(), "device": str(accel), "reduced": bool(args.reduced), "sizes": sizes}
    only = None if args.methods is None else set(args.methods.split(","))
    res["agreement"] = check_agreement(sizes["agree_n"], accel, cpu, only) if "agreement" in sections else []
    print(f"gpu_check: agreement done at {time.perf_counter() - t_start:.0f} s", file=sys.stderr)
    with jax.default_device(accel):
        res["subcluster"] = (
            subcluster_throughput(sizes["subcluster"], sizes["sweeps"]) if "subcluster" in sections else []
        )
        print(f"gpu_check: subcluster done at {time.perf_counter() - t_start:.0f} s", file=sys.stderr)
        N, K, D = sizes["em"]
        res["em"] = [
            {"N": N, "K": K, "D": D, "cov": c, "ms": 1e3 * em_iteration(N, K, D, c, sizes["em_chunk"])}
            for c in ("diag", "full")
            if "em" in sections
        ]
    for row in res["em"]:
        row["ratio_to_flash_gmm_estep"] = row["ms"] / FLASH_GMM_ESTEP_MS
    res["peak_bytes"] = peak_memory(accel)
    res["seconds"] = time.perf_counter() - t_start
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu_check.json").write_text(json.dumps(res, indent=2, default=str))
    (args.out / "gpu_check.md").write_text(render(res))
    print(render(res))
    return 0


def render(res) -> str:
    lines = [
        "# GPU check (benchmarks/gpu_check.py)",
        "",
        f"{res['machine']} | device {res['device']}" + (" | REDUCED sizes on CPU" if res["reduced"] else ""),
        "",
        "## XLA path on the device vs the CPU (small data, same seed)",
        "",
        "| method | ARI device vs CPU | device s | CPU s | error |",
        "|---|---|---|---|---|",
    ]
    for r in res["agreement"]:
        lines.append(
            f"| {r['method']} | {r.get('ari', float('nan')):.3f} | {r.get('accel_s', float('nan')):.2f} | "
            f"{r.get('cpu_s', float('nan')):.2f} | {r.get('error', '')} |"
        )
    lines += [
        "",
        "## TVClust subcluster throughput",
        "",
        "| n | d | s / sweep | point-sweeps / s |",
        "|---|---|---|---|",
    ]
    for r in res["subcluster"]:
        lines.append(f"| {r['n']} | {r['d']} | {r['s_per_sweep']:.4f} | {r['point_sweeps_per_s']:.3g} |")
    lines += [
        "",
        f"## One EM iteration vs Flash-GMM's E-step ({FLASH_GMM_ESTEP_MS:.0f} ms, one A100)",
        "",
        "| N | K | D | covariance | ms / iteration (E + M, float64) | ratio to Flash-GMM E-step |",
        "|---|---|---|---|---|---|",
    ]
    for r in res["em"]:
        lines.append(
            f"| {r['N']} | {r['K']} | {r['D']} | {r['cov']} | {r['ms']:.1f} | "
            f"{r['ratio_to_flash_gmm_estep']:.2f} |"
        )
    peak = res["peak_bytes"]
    lines += ["", f"Peak device memory: {'not reported' if peak is None else f'{peak / 2**30:.2f} GiB'}"]
    lines += [f"Total: {res['seconds']:.0f} s", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
