"""Peak memory of a fit with rows spread over processes against one process fitting one share alone.

    python benchmarks/bench_distributed_memory.py                 # n = 4 x 10^6, d = 10, 4 processes
    python benchmarks/bench_distributed_memory.py --n 1000000 --processes 2   # smaller (the file says so)
    python benchmarks/bench_distributed_memory.py --methods tvclust          # n = 4 x 10^6, d = 2, 20 sweeps

For each of ``--methods``: ``ssgmm``, ``SemiSupervisedGMM`` (EM, ``--k`` components, ``--iters``
iterations), ``dpmeans``, ``DPMeans(variant="delayed")`` (``--iters`` passes, ``lam`` between the
within- and the between-cluster squared distances of the generated data), ``cecib`` (``algorithm="batch"``)
and ``tvclust``, ``TVClust(algorithm="subcluster")`` (always d = 2, ``--sweeps`` sweeps: half warm-up, half
kept draws, one chain, from one cluster; the lone process runs the same XLA sampler on its rows), on
``n`` rows over ``P``
processes on localhost (``jax.distributed`` over gloo, CPU), each process holding ``n / P`` rows, against
one process fitting ``n / P`` rows alone. Each process reports its peak resident set size (``getrusage``'s
``ru_maxrss``); the goal is at most 1.5 x the lone process's. All processes run on one host, so they share
its cores and memory bandwidth (the seconds are not those of a cluster). Writes
``benchmarks/results/distributed_memory.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks._common import RESULTS, machine_info  # noqa: E402

GOAL = 1.5


def rows(n_total, P, i, d, seed=0):
    """Process ``i``'s share of the data, generated in place (no process ever holds all rows)."""
    per = n_total // P
    rng = np.random.default_rng([seed, i])
    centres = np.random.default_rng(seed).normal(0, 8, (5, d))
    return centres[rng.integers(0, 5, per)] + rng.normal(size=(per, d))


def worker(args) -> None:
    os.sched_setaffinity(0, {args.id % os.cpu_count()})  # before jax: its thread pool follows the mask
    import jax

    jax.config.update("jax_platforms", "cpu")
    if args.processes > 1:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(
            coordinator_address=f"127.0.0.1:{args.port}", num_processes=args.processes, process_id=args.id
        )
    from ppclust import CECIB, DPMeans, SemiSupervisedGMM, TVClust, distributed

    X = rows(args.n, args.processes, args.id, args.d)
    if args.processes > 1 or args.method == "tvclust":  # tvclust: the lone process runs the same sampler
        X = distributed.process_rows(X)
    t0 = time.perf_counter()
    if args.method == "tvclust":
        est = TVClust(
            algorithm="subcluster",
            init="one",
            point_estimate="max_log_joint",
            n_warmup=args.sweeps - args.sweeps // 2,
            n_draws=max(1, args.sweeps // 2),
            n_chains=1,
            backend="xla",
            random_state=0,
            progress_bar=False,
        )
    elif args.method == "dpmeans":
        lam = 10.0 * 2 * args.d  # ten times the mean within-cluster squared distance (unit noise)
        est = DPMeans(lam=lam, variant="delayed", max_iter=args.iters, random_state=0)
    elif args.method == "cecib":
        est = CECIB(
            args.k,
            algorithm="batch",
            init="random",
            n_init=1,
            max_iter=args.iters,
            random_state=0,
            progress_bar=False,
        )
    else:
        est = SemiSupervisedGMM(
            args.k, covariance_type="full", max_iter=args.iters, tol=0.0, random_state=0, progress_bar=False
        )
    est.fit(X)
    out = {
        "id": args.id,
        "processes": args.processes,
        "rows": args.n // args.processes,
        "seconds": time.perf_counter() - t0,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    print("RESULT " + json.dumps(out), flush=True)
    if args.processes > 1:
        jax.distributed.shutdown()


def launch(method, n, P, d, k, iters, timeout, sweeps=20):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env["NUMBA_NUM_THREADS"] = "1"
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        "--method",
        method,
        "--n",
        str(n),
        "--d",
        str(d),
        "--k",
        str(k),
    ]
    cmd += ["--iters", str(iters), "--sweeps", str(sweeps), "--processes", str(P), "--port", str(port)]
    procs = [
        subprocess.Popen(
            [*cmd, "--id", str(i)], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        for i in range(P)
    ]
    outs = []
    for p in procs:
        try:
            stdout, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise
        line = [ln for ln in stdout.splitlines() if ln.startswith("RESULT ")]
        if p.returncode or not line:
            raise RuntimeError(f"worker failed (exit {p.returncode})")
        outs.append(json.loads(line[-1][7:]))
    return outs


WHAT = {
    "ssgmm": "SemiSupervisedGMM (EM, full covariance, K={k}, {iters} iterations)",
    "dpmeans": "DPMeans (variant='delayed', at most {iters} passes)",
    "cecib": "CECIB (algorithm='batch', init='random', K={k}, n_init=1, batch steps, then at most {iters} "
    "Hartigan passes handed from process to process)",
    "tvclust": "TVClust (algorithm='subcluster', d = 2, {sweeps} sweeps, one chain, init='one', XLA; "
    "the lone process runs the same sampler on its rows)",
}

#: methods measured at their own dimension whatever --d says (the issue's TVClust size: d = 2)
METHOD_D = {"tvclust": 2}


def report(res) -> str:
    """The markdown of every method measured so far (``res`` as in the json)."""
    n, P, full = res["n"], res["processes"], res["n"] == 4_000_000
    lines = [
        "# Peak memory with rows spread over processes (benchmarks/bench_distributed_memory.py)",
        "",
        res["machine"],
        "",
        f"n={n}, d={res['d']} (TVClust: d={METHOD_D['tvclust']}), {P} processes on localhost (gloo, CPU), "
        f"{n // P} rows each, against "
        f"one process fitting {n // P} rows alone. Measured on one host: the processes share its cores "
        "and memory, so the seconds are not a cluster's; peak RSS per process is what each host would need. "
        "Every process (the lone one too) is pinned to one core (process i to core i mod the cores; "
        "XLA then sizes its thread pool to one, and `NUMBA_NUM_THREADS=1`): P processes on a few cores "
        "would otherwise each run a pool whose waiting threads spin while the others compute. "
        f"Goal: every process's peak RSS at most {res['goal']} x the lone process's."
        + ("" if full else f" Smaller than the target n = 4 x 10^6 (time on a shared machine): n = {n}."),
        "",
        *([res["note"], ""] if res.get("note") else []),
        "| method | lone peak RSS MiB | largest process peak RSS MiB | ratio | goal |",
        "|---|---|---|---|---|",
    ]
    for method, r in res["methods"].items():
        top = max(p["peak_rss_mib"] for p in r["spread"])
        verdict = "met" if r["ratio"] <= res["goal"] else "missed"
        lines.append(
            f"| {method} | {r['lone']['peak_rss_mib']:.0f} | {top:.0f} | {r['ratio']:.2f} | {verdict} |"
        )
    lines.append("")
    for r in res["methods"].values():
        lone = r["lone"]
        lines += [
            f"## {r['what']}",
            "",
            r["machine"],
            "",
            "| run | rows per process | peak RSS MiB | seconds |",
            "|---|---|---|---|",
            f"| one process alone | {lone['rows']} | {lone['peak_rss_mib']:.0f} | {lone['seconds']:.1f} |",
        ]
        for p in r["spread"]:
            lines.append(
                f"| process {p['id']} of {P} | {p['rows']} | {p['peak_rss_mib']:.0f} | {p['seconds']:.1f} |"
            )
        verdict = "met" if r["ratio"] <= res["goal"] else "missed"
        lines += [
            "",
            f"Largest process / lone process: {r['ratio']:.2f} (goal <= {res['goal']}: {verdict})",
            "",
        ]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4_000_000)
    ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--sweeps", type=int, default=20, help="TVClust's sweeps (warm-up and kept draws)")
    ap.add_argument("--processes", type=int, default=4)
    ap.add_argument(
        "--methods",
        default="ssgmm,dpmeans,cecib,tvclust",
        help="comma-separated: ssgmm, dpmeans, cecib, tvclust",
    )
    ap.add_argument("--timeout", type=int, default=3600)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--note", help="a sentence for the results file (e.g. why the size is smaller)")
    ap.add_argument("--report-only", action="store_true", help="rewrite the .md from the .json (and --note)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--method", default="ssgmm", help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--id", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    if args.report_only:
        path = args.out / "distributed_memory.json"
        res = json.loads(path.read_text())
        if args.note:
            res["note"] = args.note
        for method, r in res["methods"].items():  # the titles from --k and --iters of the run
            r["what"] = WHAT[method].format(k=args.k, iters=args.iters, sweeps=args.sweeps)
        path.write_text(json.dumps(res, indent=2))
        (args.out / "distributed_memory.md").write_text(report(res))
        return 0
    P = args.processes
    res = {"machine": machine_info(), "n": args.n, "d": args.d, "processes": P, "goal": GOAL, "methods": {}}
    path = args.out / "distributed_memory.json"
    if path.exists():  # methods measured by an earlier run at the same size are kept
        old = json.loads(path.read_text())
        if all(old.get(f) == res[f] for f in ("n", "d", "processes", "goal")):
            res["methods"] = old.get("methods", {})
    if args.note:
        res["note"] = args.note
    for method in args.methods.split(","):
        d = METHOD_D.get(method, args.d)
        run = (args.k, args.iters, args.timeout, args.sweeps)
        lone = launch(method, args.n // P, 1, d, *run)[0]
        spread = launch(method, args.n, P, d, *run)
        ratio = max(r["peak_rss_mib"] for r in spread) / lone["peak_rss_mib"]
        what = WHAT[method].format(k=args.k, iters=args.iters, sweeps=args.sweeps)
        res["methods"][method] = {
            "what": what,
            "machine": machine_info(),
            "lone": lone,
            "spread": spread,
            "ratio": ratio,
        }
        args.out.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(res, indent=2))
        (args.out / "distributed_memory.md").write_text(report(res))
    print(report(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
