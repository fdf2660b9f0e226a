"""One command for a lent GPU: does every estimator's XLA path agree with the CPU, how fast is it at scale,
and how much device memory does it take.

    python benchmarks/gpu_check.py            # on a GPU machine, finishes within 8 minutes on one GPU
    python benchmarks/gpu_check.py --reduced  # tiny sizes on CPU (the test suite runs this)

Sections:

1. ``em``: one EM iteration (E-step and M-step of ppclust's EM functions) at N = 10^6, K = 1024,
   D = 128, diagonal and full covariance, float64 and float32, against Flash-GMM's published E-step
   (152 ms on one A100 at the same sizes); the iteration runs in row chunks (the full-covariance E-step
   forms a (rows, K, D) array);
2. ``subcluster``: TVClust ``algorithm="subcluster"`` throughput (point-sweeps per second, from two
   compiled fits that differ only in their number of sweeps, after untimed fits) at n = 10^7, d = 2
   and n = 10^6, d = 32;
3. ``agreement``: every registered estimator fitted on small data on the accelerator (XLA backends where
   an estimator has a choice) and on the CPU, same seed: the adjusted Rand index of the two labelings
   (1 = same partition); ``variants`` does the same for the non-default algorithms (TVClust explicit,
   variational and sub-cluster; CEC-IB and C3L batch);
4. peak device memory (``memory_stats()["peak_bytes_in_use"]`` where the device reports it).

The results files are rewritten after every measurement, and ``--deadline`` skips what is left once
that many seconds have passed, so a run cut short still leaves what it measured.

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
    "sweeps": (2, 12),
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


# the non-default algorithms whose XLA path the ``variants`` section compares
VARIANTS = {"tvclust": ("explicit", "variational", "subcluster"), "cecib": ("batch",), "c3l": ("batch",)}


def fit_kwargs(method, cls, X, y, truth, ml, cl, links=True):
    params = inspect.signature(cls.fit).parameters
    kw = {}
    if "must_link" in params and links:
        kw.update(must_link=ml, cannot_link=cl)
    elif method == "c3l":
        kw["partial_labels"] = np.where(y >= 0, (y > 0).astype(int), -1)
    elif "partial_labels" in params:
        kw["partial_labels"] = y
    if "background" in params:
        kw["background"] = (X[:, 0] > np.median(X[:, 0])).astype(int)
    return kw


def check_agreement(n, accel, cpu, only=None, variants=False, on_row=None, out_of_time=None):
    """ARI of the accelerator's and the CPU's labels, one row per estimator (or non-default algorithm)."""
    import jax
    from sklearn.metrics import adjusted_rand_score

    from ppclust._registry import METHODS

    X, y, truth, ml, cl = small_data(n)
    rows = []
    for name, info in METHODS.items():
        if only and name not in only:
            continue
        algorithms = VARIANTS.get(name, ()) if variants else (None,)
        for algorithm in algorithms:
            row = {"method": name if algorithm is None else f"{name} ({algorithm})"}
            if out_of_time is not None and out_of_time():
                row["error"] = "skipped: deadline"
                rows.append(row)
                continue
            try:
                cls = info.load()
                kwargs = estimator_kwargs(cls)
                if algorithm is not None:
                    kwargs["algorithm"] = algorithm
                if algorithm == "variational":  # no draws, warm-up, chains or backend to set
                    kwargs = {
                        k: v
                        for k, v in kwargs.items()
                        if k not in ("n_draws", "n_warmup", "n_chains", "backend")
                    }
                labels = {}
                for where, dev in (("accel", accel), ("cpu", cpu)):
                    est = cls(**kwargs)
                    fkw = fit_kwargs(name, cls, X, y, truth, ml, cl, links="links" in info.side_info)
                    with jax.default_device(dev):
                        t0 = time.perf_counter()
                        est.fit(X, **fkw)
                        row[f"{where}_s"] = time.perf_counter() - t0
                    labels[where] = np.asarray(est.labels_)
                row["ari"] = float(adjusted_rand_score(labels["cpu"], labels["accel"]))
            except Exception as err:  # noqa: BLE001 - one estimator's failure is a finding, not the end
                row["error"] = f"{type(err).__name__}: {err}"[:300]
                traceback.print_exc()
            rows.append(row)
            if on_row is not None:
                on_row(rows)
    return rows


def subcluster_throughput(sizes, sweeps, on_row=None, out_of_time=None):
    """Seconds per sweep from two compiled fits that differ only in their sweeps (after untimed fits)."""
    from ppclust import TVClust

    out = []
    for n, d in sizes:
        if out_of_time is not None and out_of_time():
            out.append({"n": n, "d": d, "error": "skipped: deadline"})
            continue
        rng = np.random.default_rng(1)
        X = rng.normal(size=(n, d)) + 6.0 * (np.arange(n) % 4)[:, None]

        def fit(s, X=X):
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
            return time.perf_counter() - t0, est

        try:
            # a small number of draws sets the draw block of the compiled sampler (a shape): one untimed fit
            # per sweep count first
            first = [fit(s)[0] for s in sweeps]
            times, est = [], None
            for s in sweeps:
                t, est = fit(s)
                times.append(t)
        except Exception as err:  # noqa: BLE001 - e.g. out of device memory: a finding, not the end
            out.append({"n": n, "d": d, "error": f"{type(err).__name__}: {err}"[:300]})
            traceback.print_exc()
            continue
        per_sweep = max(times[1] - times[0], 1e-9) / (sweeps[1] - sweeps[0])
        out.append(
            {
                "n": n,
                "d": d,
                "first_fit_s": first,
                "seconds": times,
                "sweeps": list(sweeps),
                "s_per_sweep": per_sweep,
                "point_sweeps_per_s": n / per_sweep,
                "n_clusters": int(est.n_clusters_),
            }
        )
        if on_row is not None:
            on_row(out)
    return out


def em_iteration(N, K, D, cov_type, chunk, dtype="float64"):
    """Seconds of one EM iteration (E-step then M-step from the summed statistics), rows in chunks."""
    import contextlib

    import jax
    import jax.numpy as jnp

    from ppclust._jax import x64
    from ppclust.inference import em

    with x64() if dtype == "float64" else contextlib.nullcontext():
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
        default="em,subcluster,agreement,variants",
        help="comma-separated sections, run in this order (default: em,subcluster,agreement,variants)",
    )
    ap.add_argument(
        "--combine",
        nargs="+",
        type=Path,
        metavar="JSON",
        help="instead of measuring, merge earlier runs' gpu_check.json files (a later run's row replaces an "
        "earlier row of the same method / size / covariance unless it was skipped) into --out",
    )
    ap.add_argument(
        "--deadline",
        type=float,
        default=None,
        help="seconds after which the measurements not yet started are skipped (default: none)",
    )
    args = ap.parse_args(argv)
    if args.combine:
        res = combine([json.loads(f.read_text()) for f in args.combine])
        write(res, args.out)
        print(render(res))
        return 0
    sections = args.sections.split(",")
    unknown = set(sections) - {"em", "subcluster", "agreement", "variants"}
    if unknown:
        ap.error(f"unknown sections {sorted(unknown)}")
    import jax

    sizes = REDUCED if args.reduced else FULL
    accel = jax.devices()[0]
    cpu = jax.devices("cpu")[0]
    if not args.reduced and accel.platform == "cpu":
        print("gpu_check: no accelerator (jax.devices() lists only CPUs); use --reduced", file=sys.stderr)
        return 2
    t_start = time.perf_counter()

    def out_of_time():
        return args.deadline is not None and time.perf_counter() - t_start > args.deadline

    res = {
        "machine": machine_info(),
        "device": str(accel),
        "device_kind": getattr(accel, "device_kind", None),
        "reduced": bool(args.reduced),
        "sizes": sizes,
        "agreement": [],
        "subcluster": [],
        "em": [],
        "peak_bytes": None,
        "seconds": 0.0,
    }

    def save(key=None, rows=None):
        if key is not None:
            res[key] = list(rows)
        res["peak_bytes"] = peak_memory(accel)
        res["seconds"] = time.perf_counter() - t_start
        write(res, args.out)

    only = None if args.methods is None else set(args.methods.split(","))
    agreement = []
    for section in sections:
        if section in ("agreement", "variants"):
            rows = check_agreement(
                sizes["agree_n"],
                accel,
                cpu,
                only,
                variants=section == "variants",
                on_row=lambda r: save("agreement", agreement + r),
                out_of_time=out_of_time,
            )
            agreement.extend(rows)
            save("agreement", agreement)
        elif section == "subcluster":
            with jax.default_device(accel):
                rows = subcluster_throughput(
                    sizes["subcluster"],
                    sizes["sweeps"],
                    on_row=lambda r: save("subcluster", r),
                    out_of_time=out_of_time,
                )
            save("subcluster", rows)
        elif section == "em":
            N, K, D = sizes["em"]
            rows = []
            for dtype in ("float64", "float32"):
                for c in ("diag", "full"):
                    row = {"N": N, "K": K, "D": D, "cov": c, "dtype": dtype}
                    if out_of_time():
                        row["error"] = "skipped: deadline"
                    else:
                        try:
                            with jax.default_device(accel):
                                row["ms"] = 1e3 * em_iteration(N, K, D, c, sizes["em_chunk"], dtype)
                            row["ratio_to_flash_gmm_estep"] = row["ms"] / FLASH_GMM_ESTEP_MS
                        except Exception as err:  # noqa: BLE001 - e.g. out of device memory: a finding
                            row["error"] = f"{type(err).__name__}: {err}"[:300]
                            traceback.print_exc()
                    rows.append(row)
                    save("em", rows)
        print(f"gpu_check: {section} done at {time.perf_counter() - t_start:.0f} s", file=sys.stderr)
    save()
    print(render(res))
    return 0


def write(res, out: Path) -> None:
    """``gpu_check.json`` and ``gpu_check.md`` of ``res`` into the folder ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_check.json").write_text(json.dumps(res, indent=2, default=str))
    (out / "gpu_check.md").write_text(render(res))


_KEYS = {
    "agreement": lambda r: r["method"],
    "subcluster": lambda r: (r["n"], r["d"]),
    "em": lambda r: (r["N"], r["K"], r["D"], r["cov"], r.get("dtype", "float64")),
}


def combine(runs):
    """One result from several runs: rows keyed per section, a later run's measured row replacing an
    earlier one; the machine line and run seconds of every run kept under ``runs``."""
    out = {k: v for k, v in runs[0].items() if k not in _KEYS}
    out["runs"] = [{"machine": r["machine"], "device": r["device"], "seconds": r["seconds"]} for r in runs]
    for section, key in _KEYS.items():
        rows = {}
        for run in runs:
            for row in run.get(section, []):
                if key(row) not in rows or not row.get("error", "").startswith("skipped"):
                    rows[key(row)] = row
        out[section] = list(rows.values())
    out["peak_bytes"] = max((r["peak_bytes"] or 0 for r in runs), default=0) or None
    out["seconds"] = sum(r["seconds"] for r in runs)
    return out


def _f(row, key, fmt):
    return format(row[key], fmt) if key in row else "-"


def render(res) -> str:
    lines = [
        "# GPU check (benchmarks/gpu_check.py)",
        "",
        f"{res['machine']} | device {res['device']}" + (" | REDUCED sizes on CPU" if res["reduced"] else ""),
        "",
    ]
    if len(res.get("runs", [])) > 1:
        lines += [
            f"Combined from {len(res['runs'])} runs (`--combine`); later rows replace earlier ones:",
            "",
        ]
        lines += [f"- {r['machine']} | {r['seconds']:.0f} s" for r in res["runs"]] + [""]
    lines += [
        "## XLA path on the device vs the CPU (small data, same seed)",
        "",
        "| method | ARI device vs CPU | device s (first fit) | CPU s (first fit) | error |",
        "|---|---|---|---|---|",
    ]
    for r in res["agreement"]:
        lines.append(
            f"| {r['method']} | {_f(r, 'ari', '.3f')} | {_f(r, 'accel_s', '.2f')} | "
            f"{_f(r, 'cpu_s', '.2f')} | {r.get('error', '')} |"
        )
    lines += [
        "",
        "## TVClust subcluster throughput",
        "",
        "| n | d | first fit s (compile + sweeps) | s / sweep | point-sweeps / s | clusters | error |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in res["subcluster"]:
        first = format(r["first_fit_s"][0], ".1f") if "first_fit_s" in r else "-"
        lines.append(
            f"| {r['n']} | {r['d']} | {first} | {_f(r, 's_per_sweep', '.4f')} | "
            f"{_f(r, 'point_sweeps_per_s', '.3g')} | {r.get('n_clusters', '-')} | {r.get('error', '')} |"
        )
    lines += [
        "",
        f"## One EM iteration vs Flash-GMM's E-step ({FLASH_GMM_ESTEP_MS:.0f} ms, one A100)",
        "",
        "| N | K | D | covariance | dtype | ms / iteration (E + M) | ratio to Flash-GMM E-step | error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in res["em"]:
        lines.append(
            f"| {r['N']} | {r['K']} | {r['D']} | {r['cov']} | {r.get('dtype', 'float64')} | "
            f"{_f(r, 'ms', '.1f')} | {_f(r, 'ratio_to_flash_gmm_estep', '.2f')} | {r.get('error', '')} |"
        )
    peak = res["peak_bytes"]
    peak_text = "not reported" if peak is None else f"{peak / 2**30:.2f} GiB"
    lines += [
        "",
        f"Peak device memory{' (largest run)' if len(res.get('runs', [])) > 1 else ''}: {peak_text}",
    ]
    lines += [f"Total: {res['seconds']:.0f} s", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
