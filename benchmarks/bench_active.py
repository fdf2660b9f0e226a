"""Active pair selection for TVClust: ARI against the number of questions, and the cost of a round.

For each data set (standardised, subsampled), oracle noise and strategy, :class:`ppclust.active.ActiveLearner`
asks questions in batches until each budget is reached (batch = the step to the next budget, at most
``--batch``), refitting TVClust warm after each batch; the ARI of ``labels_`` against the classes is recorded
at every budget. "random" feeds uniform random pairs (the first B of one list) to a cold TVClust fit at each
budget. Explore-Consolidate / Min-Max (``active_semi_supervised_clustering``) and COBRAS (``cobras_ts``) run
when importable; the results file says which were.

A timing section measures on iris (n = 150, after a compiling fit): a cold TVClust fit with its defaults
(500 warm-up sweeps, 500 draws, 2 chains), a warm refit after 50 more answers (``ActiveLearner``'s
defaults: a tenth of the warm-up, a fifth of the draws) and the choice of one batch of 50 pairs.

Usage: PYTHONPATH=. python benchmarks/bench_active.py [--quick] [--budget-s 1200]
Writes benchmarks/results/active.md and active.json.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from benchmarks._common import RESULTS, machine_info, md_table, write_json, write_result

FULL_SETS = ["iris", "wine", "breast_cancer", "digits", "segment", "vehicle"]
FULL_BUDGETS = [25, 50, 100, 200, 300, 600, 900]


def load(name, n_max, seed):
    from ppclust import datasets

    X, y = datasets.load(name)
    rng = np.random.default_rng(seed)
    if len(y) > n_max:
        idx = np.sort(rng.choice(len(y), n_max, replace=False))
        X, y = X[idx], y[idx]
    sd = X.std(0)
    X = (X - X.mean(0)) / np.where(sd > 0, sd, 1.0)
    if X.shape[1] > 10:  # the NIW sampler on few points: the leading principal components
        U, S, _ = np.linalg.svd(X - X.mean(0), full_matrices=False)
        X = U[:, :10] * S[:10]
    return X, np.unique(y, return_inverse=True)[1]


def tvclust(args, seed):
    from ppclust import TVClust

    return TVClust(
        n_draws=args.draws, n_warmup=args.warmup, n_chains=1, progress_bar=False, random_state=seed, k_max=32
    )


def run_active(X, y, strategy, noise, budgets, args, seed):
    from ppclust import metrics
    from ppclust.active import ActiveLearner, simulated_oracle

    oracle = simulated_oracle(y, noise=noise, random_state=seed)
    al = ActiveLearner(
        tvclust(args, seed),
        strategy=strategy,
        warm_warmup=max(5, args.warmup // 5),
        warm_draws=args.draws,
        random_state=seed,
    )
    al.fit(X)
    out, asked = {}, 0
    for b in budgets:
        while asked < b:
            k = min(args.batch, b - asked)
            q = al.suggest(k)
            al.tell(q, oracle(q))
            asked += len(q)
        out[b] = metrics.ari(y, al.estimator_.labels_)
    return out


def run_random(X, y, noise, budgets, args, seed):
    from ppclust import metrics
    from ppclust.active import simulated_oracle

    rng = np.random.default_rng(seed + 7)
    pairs = np.sort(rng.integers(0, len(y), size=(4 * max(budgets), 2)), 1)
    pairs = np.unique(pairs[pairs[:, 0] != pairs[:, 1]], axis=0)
    pairs = pairs[rng.permutation(len(pairs))][: max(budgets)]
    ans = simulated_oracle(y, noise=noise, random_state=seed)(pairs)
    out = {}
    for b in budgets:
        p, a = pairs[:b], ans[:b]
        est = tvclust(args, seed).fit(X, must_link=p[a > 0], cannot_link=p[a < 0])
        out[b] = metrics.ari(y, est.labels_)
    return out


# ---------------------------------------------------------------------------------------------------------
# Peers: Explore-Consolidate and Min-Max (Basu et al. 2004; Mallapragada et al. 2008) from
# active-semi-supervised-clustering, clustered by its PCKMeans with the true number of classes, as that
# package intends; COBRAS (van Craenendonck et al. 2018) from cobras_ts with its own k-means super-instances.
# Each asks the same simulated oracle (same noise, one pair at a time). Their code is never vendored: they run
# when importable, e.g. installed with `pip install --no-deps --target DIR` and `--peers-path DIR`.
PEER_MODULES = {
    "explore_consolidate": ("active_semi_supervised_clustering", "active_semi_clustering"),
    "min_max": ("active_semi_supervised_clustering", "active_semi_clustering"),
    "cobras": ("cobras_ts.cobras_kmeans",),
}


def import_peers():
    """{peer: module root or None}, {module: the import error's text} for the peers' packages."""
    import importlib

    found, errors = {}, {}
    for peer, mods in PEER_MODULES.items():
        found[peer] = None
        for m in mods:
            try:
                if m.startswith("cobras_ts"):
                    # cobras_ts 0.1.3 calls np.int (removed in NumPy 1.24); nothing else reads it
                    setattr(np, "int", int)  # noqa: B010 - a shim for the peer, not ppclust's use
                importlib.import_module(
                    m if m.startswith("cobras_ts") else m + ".active.pairwise_constraints"
                )
                found[peer] = m
                break
            except Exception as e:  # noqa: BLE001 - any import failure is reported as the peer's
                errors[m] = f"{type(e).__name__}: {e}"
    return found, errors


class _PeerOracle:
    """The peers' oracle interface (``query(i, j) -> bool``, a query limit) over :func:`simulated_oracle`;
    ``snapshot`` is called with the query count before each question."""

    def __init__(self, answer, limit, exceeded, snapshot=None):
        self.answer, self.max_queries_cnt, self.exceeded = answer, limit, exceeded
        self.queries_cnt, self.snapshot = 0, snapshot

    def query(self, i, j):
        if self.snapshot is not None:
            self.snapshot(self.queries_cnt)
        if self.queries_cnt >= self.max_queries_cnt:
            raise self.exceeded
        self.queries_cnt += 1
        return bool(self.answer(np.array([[i, j]]))[0] > 0)


def _neighbourhood_peer(root, which, X, y, noise, budget, seed, snap_at=()):
    """Neighbourhoods after ``budget`` questions of Explore-Consolidate / Min-Max, and snapshots of them
    at the budgets ``snap_at`` that fall in the consolidation phase ({budget: neighbourhoods})."""
    import copy
    import importlib

    from ppclust.active import simulated_oracle

    act = importlib.import_module(root + ".active.pairwise_constraints")
    exc = importlib.import_module(
        act.ExploreConsolidate.__module__.rsplit(".", 1)[0] + ".example_oracle"
        if root == "active_semi_clustering"
        else act.ExploreConsolidate.__module__.rsplit(".", 1)[0] + ".oracle"
    ).MaximumQueriesExceeded
    k = len(np.unique(y))
    np.random.seed(seed)  # noqa: NPY002 - the peers draw from NumPy's global generator
    snaps, state = {}, []

    def snapshot(count):
        if count in snap_at and state and count not in snaps:
            snaps[count] = copy.deepcopy(state[0])

    oracle = _PeerOracle(simulated_oracle(y, noise=noise, random_state=seed), budget, exc(), snapshot)
    peer = (act.ExploreConsolidate if which == "explore_consolidate" else act.MinMax)(n_clusters=k)
    hoods = peer._explore(X, k, oracle)
    state.append(hoods)
    try:
        hoods = peer._consolidate(hoods, X, oracle)
    except (ValueError, KeyError):  # every point placed before the budget ran out (the peer then fails)
        pass
    return hoods, snaps, oracle.queries_cnt


def _pckmeans_ari(root, hoods, X, y, seed):
    import importlib

    from ppclust import metrics

    semi = importlib.import_module(root + ".semi_supervised.pairwise_constraints")
    seen, clean = set(), []
    for h in hoods:  # a point once (Min-Max may re-ask a placed point when none is left)
        h = [int(i) for i in h if int(i) not in seen]
        seen.update(h)
        if h:
            clean.append(h)
    # the peer's constraints are every pair of a neighbourhood (must) and of two (cannot); PCKMeans closes
    # them transitively itself, so a chain per neighbourhood and one pair per two neighbourhoods give it the
    # same constraint graphs, without the peer's O(cannot x must^2) closure loop over the full lists
    ml = [(h[t], h[t + 1]) for h in clean for t in range(len(h) - 1)]
    cl = [(a[0], b[0]) for u, a in enumerate(clean) for b in clean[u + 1 :]]
    k = len(np.unique(y))
    for t in range(10):  # PCKMeans raises on an empty cluster: a fresh start
        np.random.seed(seed + 1000 * t)  # noqa: NPY002 - the peer's global generator
        try:
            return metrics.ari(y, semi.PCKMeans(n_clusters=k).fit(X, ml=ml, cl=cl).labels_)
        except Exception:  # noqa: BLE001 - EmptyClustersException of the peer
            continue
    return float("nan")


def run_peer(peer, root, X, y, noise, budgets, seed):
    """ARI of a peer at every budget (one run to the largest budget, snapshots along the way)."""
    if peer == "cobras":
        return _run_cobras(X, y, noise, budgets, seed)
    top, snaps, used = _neighbourhood_peer(root, peer, X, y, noise, max(budgets), seed, set(budgets))
    out, seen = {}, {}
    for b in budgets:
        if b >= used:
            hoods = top
        elif b in snaps:
            hoods = snaps[b]
        else:  # the budget ended in the exploration phase: its own run
            hoods = _neighbourhood_peer(root, peer, X, y, noise, b, seed)[0]
        key = tuple(tuple(int(i) for i in h) for h in hoods)
        if key not in seen:  # the same answers (every point placed): the same clustering
            seen[key] = _pckmeans_ari(root, hoods, X, y, seed)
        out[b] = seen[key]
    return out


def _run_cobras(X, y, noise, budgets, seed):
    from cobras_ts.cobras_kmeans import COBRAS_kmeans

    from ppclust import metrics
    from ppclust.active import simulated_oracle

    answer = simulated_oracle(y, noise=noise, random_state=seed)

    class Querier:
        def query_points(self, i, j):
            return bool(answer(np.array([[i, j]]))[0] > 0)

        def update_clustering(self, clustering):
            return None

        def update_clustering_detailed(self, clustering):
            return None

        def continue_cluster_process(self):
            return True

    np.random.seed(seed)  # noqa: NPY002 - the peers draw from NumPy's global generator
    final, steps, _, _, _ = COBRAS_kmeans(X, Querier(), max(budgets)).cluster()
    last = final.construct_cluster_labeling()
    return {b: metrics.ari(y, steps[b - 1] if b <= len(steps) else last) for b in budgets}


def timing(args):
    from ppclust import TVClust
    from ppclust.active import ActiveLearner, simulated_oracle

    X, y = load("iris", 150, 0)
    oracle = simulated_oracle(y, noise=0.1, random_state=0)
    est = TVClust(progress_bar=False, random_state=0)
    if args.quick:
        est.set_params(n_draws=100, n_warmup=100)
    al = ActiveLearner(est, batch_size=50, random_state=0).fit(X)  # compiles
    q = al.suggest(50)
    al.tell(q, oracle(q))  # compiles the warm shapes
    wall, cpu = {}, {}  # best of two rounds; process CPU time (all threads) is less sensitive to the load
    for _ in range(2):
        for name, step in (
            ("cold", lambda: al.fit(X)),
            ("choose", lambda: al.suggest(50)),
            ("warm", None),
        ):
            if step is None:
                a = oracle(q)

                def step(q=q, a=a):
                    return al.tell(q, a)

            t, c = time.perf_counter(), time.process_time()
            out = step()
            wall[name] = min(wall.get(name, np.inf), time.perf_counter() - t)
            cpu[name] = min(cpu.get(name, np.inf), time.process_time() - c)
            if name == "choose":
                q = out
    cold, warm, choose = wall["cold"], wall["warm"], wall["choose"]
    return {
        "cold_s": cold,
        "warm_s": warm,
        "choose_s": choose,
        "warm_over_cold": warm / cold,
        "choose_over_warm": choose / warm,
        "cpu_s": cpu,
        "cpu_warm_over_cold": cpu["warm"] / cpu["cold"],
        "cpu_choose_over_warm": cpu["choose"] / cpu["warm"],
        "cold_settings": f"n_warmup={est.n_warmup}, n_draws={est.n_draws}, n_chains={est.n_chains}",
        "warm_settings": f"n_warmup={al.estimator_.n_warmup}, n_draws={al.estimator_.n_draws}",
    }


# ---------------------------------------------------------------------------------------------------------
# Tuning the warm refit (``--tune``): synthetic Gaussian mixtures that are none of the six data sets, with
# 10 features like five of them (the same compiled program sizes). For each warm-refit variant the
# learner's own fits are compared with a cold fit on the very answers it collected, so that the refit, not
# the choice of pairs, is measured. No default is chosen on the six data sets' curves.
# name: (classes, generator seed); the means' scale 1 makes the classes overlap (about 2.4 standard
# deviations between two means along their difference), as on the harder benchmark sets
TUNE_SETS = {"gmm5": (5, 11), "gmm7": (7, 12)}
TUNE_VARIANTS = {  # name: ActiveLearner parameters of the warm refit
    "collapsed": {"warm_algorithm": None},
    "subcluster": {"warm_algorithm": "subcluster"},
}


def tuning_set(name, n=150, d=10):
    """A Gaussian mixture: Dirichlet(3) weights, means N(0, I), covariances L L^T with
    L = I + 0.5 N(0, 1); standardised; classes relabelled 0 .. k-1."""
    k, seed = TUNE_SETS[name]
    rng = np.random.default_rng(seed)
    y = rng.choice(k, n, p=rng.dirichlet(np.full(k, 3.0)))
    mu = rng.normal(0.0, 1.0, (k, d))
    X = np.empty((n, d))
    for c in range(k):
        L = np.eye(d) + 0.5 * rng.normal(size=(d, d))
        X[y == c] = mu[c] + rng.normal(size=((y == c).sum(), d)) @ L.T
    X = (X - X.mean(0)) / X.std(0)
    return X, np.unique(y, return_inverse=True)[1]


def run_tune(X, y, variant, noise, budgets, args, seed):
    """{budget: (ARI of the learner's warm fit, its clusters, its q_, ARI of a cold fit on the same
    answers or None)} and the process CPU seconds of the warm refits."""
    from ppclust import metrics
    from ppclust.active import ActiveLearner, simulated_oracle

    oracle = simulated_oracle(y, noise=noise, random_state=seed)
    al = ActiveLearner(
        tvclust(args, seed),
        warm_warmup=max(5, args.warmup // 5),
        warm_draws=args.draws,
        random_state=seed,
        **TUNE_VARIANTS[variant],
    ).fit(X)
    out, asked, cpu = {}, 0, 0.0
    for b in budgets:
        while asked < b:
            q = al.suggest(min(args.batch, b - asked))
            a = oracle(q)
            c = time.process_time()
            al.tell(q, a)
            cpu += time.process_time() - c
            asked += len(q)
        est = al.estimator_
        cold = None
        if variant == "collapsed":  # the reference: a cold fit on the learner's answers
            e = tvclust(args, seed).fit(X, must_link=al.must_link_, cannot_link=al.cannot_link_)
            cold = metrics.ari(y, e.labels_)
        out[b] = (metrics.ari(y, est.labels_), int(est.n_clusters_), float(est.q_), cold)
    return out, cpu


def tune(args):
    """Run the warm-refit variants on the tuning sets; write active_tuning.md / .json."""
    budgets = args.budgets or [25, 50, 100, 200, 300]
    variants = args.variants or list(TUNE_VARIANTS)
    cache = RESULTS / f"active_tuning_{'_'.join(variants)}_cache.json"  # one per process
    res = json.loads(cache.read_text()) if args.resume and cache.exists() else {"runs": []}
    res.update(budgets=budgets, settings={k: getattr(args, k) for k in ("draws", "warmup", "batch")})
    done = {(r["data"], r["noise"], r["variant"], r["seed"]) for r in res["runs"]}
    t0 = time.perf_counter()
    for seed in range(0 if args.tables_only else args.seeds):  # --tables-only: the caches' runs only
        for noise in args.noises or [0.0]:
            for d in args.sets or list(TUNE_SETS):
                for v in variants:
                    if (d, noise, v, seed) in done:
                        continue
                    if time.perf_counter() - t0 > args.budget_s:
                        print("time budget spent; skipping", d, noise, v, seed, flush=True)
                        continue
                    X, y = tuning_set(d)
                    out, cpu = run_tune(X, y, v, noise, budgets, args, seed)
                    res["runs"].append(
                        {
                            "data": d,
                            "noise": noise,
                            "variant": v,
                            "seed": seed,
                            "cpu_s": cpu,
                            "by_budget": {str(b): list(r) for b, r in out.items()},
                        }
                    )
                    print(d, noise, v, seed, out, f"refits {cpu:.1f} s CPU", flush=True)
                    cache.write_text(json.dumps(res))
    if not args.tables_only:
        cache.write_text(json.dumps(res))
    merged = dict(res, runs=[])
    for f in sorted(RESULTS.glob("active_tuning_*_cache.json")):  # every process's runs
        merged["runs"] += json.loads(f.read_text())["runs"]
    write_result("active_tuning.md", tune_report(merged))
    write_json("active_tuning", merged, "benchmarks/bench_active.py")


def tune_report(res):
    budgets = res["budgets"]
    runs = res["runs"]
    s = res["settings"]
    lines = [
        "# Tuning the warm refit of ActiveLearner (sets that are not the benchmark's)",
        "",
        f"Written by `benchmarks/bench_active.py --tune`; {machine_info()}.",
        "",
        "Sets: Gaussian mixtures of 150 points in 10 dimensions ("
        + ", ".join(f"{k}: {c} classes, generator seed {g}" for k, (c, g) in TUNE_SETS.items())
        + "; `tuning_set` in the script). TVClust with 1 chain, "
        f"{s['warmup']} warm-up sweeps and {s['draws']} draws; warm refits of {max(5, s['warmup'] // 5)} "
        f"warm-up sweeps and {s['draws']} draws; batches of at most {s['batch']} questions; "
        "strategy 'information'. 'cold on the same answers' is a cold TVClust fit (the settings above) on "
        "the links the 'collapsed' learner had collected at that budget: what its refit could reach.",
        "",
    ]
    cells = sorted({(r["data"], r["noise"]) for r in runs})
    rows = []
    for d, noise in cells:
        for v in TUNE_VARIANTS:
            rs = [r for r in runs if (r["data"], r["noise"], r["variant"]) == (d, noise, v)]
            if not rs:
                continue
            for what, i in (("ARI", 0), ("clusters", 1), ("q_", 2)):
                rows.append(
                    [d, f"{noise:.0%}", v, what, len(rs)]
                    + [float(np.mean([r["by_budget"][str(b)][i] for r in rs])) for b in budgets]
                    + [float(np.mean([r["cpu_s"] for r in rs]))]
                )
            if v == "collapsed":
                rows.append(
                    [d, f"{noise:.0%}", "cold on the same answers", "ARI", len(rs)]
                    + [float(np.mean([r["by_budget"][str(b)][3] for r in rs])) for b in budgets]
                    + [float("nan")]
                )
    lines += [
        "Means over the seeds that ran; the last column is the process CPU time of all the learner's warm "
        "refits of a run.",
        "",
        md_table(
            ["data", "noise", "warm refit", "value", "seeds"]
            + [str(b) for b in budgets]
            + ["refits CPU (s)"],
            rows,
        ),
        "",
    ]
    return "\n".join(lines) + "\n"


PEERS = tuple(PEER_MODULES)


def plan_cells(sets, part="all"):
    """(data, noise, strategy) in run order: noise outer, so every set gets its 0% curves first (the peers:
    their 10% curves, the noise of the goal that compares with them); ``part`` "tvclust" (ppclust's
    strategies) or "peers" keeps one kind."""
    plan = []
    levels = (
        (0.0, ("information", "random")),
        (0.1, ("information", "random", "uncertainty")),
        (0.2, ("information", "random")),
    )
    if part == "peers":
        levels = (levels[1], levels[0], levels[2])
    for noise, strategies in levels:
        own = [(d, noise, s) for d in sets for s in strategies]
        peers = [(d, noise, s) for d in sets for s in PEERS]
        plan += {"all": own + peers, "tvclust": own, "peers": peers}[part]
    return plan


def _peers_lines(res):
    info = res.get("peers")
    if not info:
        return ["Peers: not run in this file's run.", ""]
    ran = [p for p, m in info["found"].items() if m]
    out = [
        "Peers (their own code, installed outside the repository with `pip install --no-deps --target DIR` "
        "and put on the path with `--peers-path DIR`; the same simulated oracle, one pair at a time): "
        + (", ".join(f"{p} (`{info['found'][p]}`)" for p in ran) or "none")
        + ". Explore-Consolidate and Min-Max choose the pairs and PCKMeans clusters with the neighbourhoods' "
        "constraints, all three given the true number of classes (the peers need it; TVClust is not given "
        "it); when every point is placed before the budget is spent, the remaining questions are not asked "
        "(the peers stop there). COBRAS (k-means super-instances) uses only the questions it needs.",
    ]
    if info["errors"]:
        out.append(
            "Import errors on the way (the first name of each peer is tried first): "
            + "; ".join(f"`{m}`: {e}" for m, e in info["errors"].items())
            + "."
        )
    if "cobras" in ran:
        out.append(
            "cobras_ts 0.1.3 calls `np.int`, removed in NumPy 1.24: the script sets `np.int = int` before "
            "importing it."
        )
    missing = [p for p, m in info["found"].items() if not m]
    if missing:
        out.append("Not importable: " + ", ".join(missing) + ".")
    return out + [""]


def _verdict(hits, judged, need, of=6):
    """ "met" / "missed", or "not decided" while the sets not run could still change the answer."""
    if hits >= need:
        return "met"
    if hits + (of - judged) < need:
        return "missed"
    return f"not decided ({judged} of {of} sets ran)"


def report(res, args):
    seconds = res.get("seconds")
    draws_text, least, fewer = _draws_lines(res)
    lines = [
        "# Active pair selection for TVClust",
        "",
        "Written by `benchmarks/bench_active.py`"
        + (" --quick" if args.quick else "")
        + f"; {machine_info()}.",
        "",
        f"Settings: data sets subsampled to at most {args.n_max} points (standardised; more than 10 "
        f"features: the first 10 principal components); TVClust with 1 chain, {args.warmup} warm-up sweeps, "
        f"{args.draws} "
        f"draws (warm refits: {max(5, args.warmup // 5)} warm-up sweeps, {args.draws} draws); batches of at "
        f"most {args.batch} questions; {draws_text}. "
        f'Budgets: {res["budgets"]}. "random" '
        'refits TVClust cold at every budget on the first B of one list of uniform pairs; "information" '
        'and "uncertainty" are `ActiveLearner` loops with warm refits.',
        "These are smaller than the issue's ("
        + ("five draws, " if least < 5 else "")
        + "the default sampler settings, the whole data sets) "
        "so that the run fits about an hour on a shared, loaded 2-core machine (each process stops starting "
        "curves after its time budget, `--budget-s`"
        + (
            "; "
            + " and ".join(
                f"{who} took {seconds[part]:.0f} s"
                for part, who in (("tvclust", "ppclust's strategies"), ("peers", "the peers"))
                if seconds.get(part)
            )
            + " of processes' wall time"
            + (", run side by side" if all(seconds.get(p) for p in ("tvclust", "peers")) else "")
            + (" in this run" if res.get("reused") or res.get("extended") else "")
            if isinstance(seconds, dict) and any(seconds.get(p) for p in ("tvclust", "peers"))
            else ""
        )
        + "). The goals at 0% and 10% noise ran first; 20% noise last.",
        "",
    ] + _peers_lines(res)
    lines += fewer
    if res.get("extended"):
        ex = res["extended"]
        was, ru = ex.get("previous_seconds") or {}, ex.get("previous_reused") or {}
        lines += [
            f"Seeds {', '.join(map(str, ex['seeds']))} ran in this run (`--extend`) and were added to the "
            "per-seed ARIs of the previous results file of this script ("
            + ex["run"]
            + "); the means are over all draws of a cell (`seeds` and `ari_per_seed` per curve in "
            "active.json). That file's draws: "
            + (
                f"{ex['previous_reused_curves']} curves from the run of {ru['run']}"
                + (
                    f" (its processes took {ru['seconds']['tvclust']:.0f} s for ppclust's strategies and "
                    f"{ru['seconds']['peers']:.0f} s for the peers)"
                    if (ru.get("seconds") or {}).get("tvclust") is not None
                    else ""
                )
                + f", the other {len(res['curves']) - ex['previous_reused_curves']} from its own run"
                if ru
                else "from its own run"
            )
            + (
                f" ({was['peers']:.0f} s for the peers)"
                if ru and was.get("peers") and not was.get("tvclust")
                else ""
            )
            + "; the code of the curves did not change since"
            + (
                "; the cost table is that of the run of " + ru["run"] + "."
                if ru.get("timing")
                else "; the cost table is that file's."
            ),
            "",
        ]
    if res.get("reused"):
        ru = res["reused"]
        n_copied = sum(bool(c.get("reused")) for c in res["curves"])
        was = ru.get("seconds") or {}
        lines += [
            f"{n_copied} of the {len(res['curves'])} curves (of "
            + ", ".join(ru["strategies"])
            + ") are copied from the previous run of this script ("
            + ru["run"]
            + (
                f"; its processes took {was['tvclust']:.0f} s for ppclust's strategies and "
                f"{was['peers']:.0f} s for the peers"
                if was.get("tvclust") is not None and was.get("peers") is not None
                else ""
            )
            + "): their code did not change since, so only the other curves ran in this run"
            + ("; the cost table is that run's too." if ru.get("timing") else "."),
            "",
        ]
    done = {(c["data"], c["noise"], c["strategy"]) for c in res["curves"]}
    found = (res.get("peers") or {}).get("found") or {}
    planned = [
        cell
        for cell in plan_cells(res.get("sets") or FULL_SETS)
        if cell not in done and (cell[2] not in PEERS or found.get(cell[2]))
    ]
    if planned:
        lines += [
            f"Not run within the time budget ({len(planned)} of {len(planned) + len(done)} planned curves; "
            "every goal below is judged on the curves that ran): "
            + "; ".join(f"{d} {n:.0%} {s}" for d, n, s in planned)
            + ".",
            "",
        ]
    goals = []
    t = res.get("timing")
    if t:
        lines += [
            "## Cost of a round (iris, n = 150, after compiling fits)",
            "",
            md_table(
                [
                    "clock",
                    "cold fit (s)",
                    "warm refit, 50 answers (s)",
                    "choose 50 pairs (s)",
                    "warm / cold",
                    "choose / warm",
                ],
                [
                    [
                        "wall",
                        t["cold_s"],
                        t["warm_s"],
                        t["choose_s"],
                        t["warm_over_cold"],
                        t["choose_over_warm"],
                    ]
                ]
                + (
                    [
                        [
                            "process CPU",
                            t["cpu_s"]["cold"],
                            t["cpu_s"]["warm"],
                            t["cpu_s"]["choose"],
                            t["cpu_warm_over_cold"],
                            t["cpu_choose_over_warm"],
                        ]
                    ]
                    if "cpu_s" in t
                    else []
                ),
            ),
            "",
            "Best of two rounds each"
            + (
                "; the goals are judged on process CPU time (all threads), which the other processes of the "
                "shared machine disturb less than the wall clock."
                if "cpu_s" in t
                else "."
            ),
            "",
            f"Cold: {t['cold_settings']}; warm: {t['warm_settings']}.",
            "",
        ]
        goals.append(
            (
                "a round of 50 answers costs at most a fifth of a cold fit",
                t.get("cpu_warm_over_cold", t["warm_over_cold"]) <= 0.2,
                f"warm / cold = {t.get('cpu_warm_over_cold', t['warm_over_cold']):.3f}",
            )
        )
        goals.append(
            (
                "choosing a batch takes at most a tenth of the warm refit",
                t.get("cpu_choose_over_warm", t["choose_over_warm"]) <= 0.1,
                f"choose / warm = {t.get('cpu_choose_over_warm', t['choose_over_warm']):.3f}",
            )
        )
    curves = res["curves"]
    budgets = res["budgets"]
    for noise in sorted({c["noise"] for c in curves}):
        lines += [f"## ARI against questions, oracle noise {noise:.0%}", ""]
        rows = []
        order = {s: i for i, s in enumerate(("information", "random", "uncertainty", *PEERS))}
        sets_order = {d: i for i, d in enumerate(res.get("sets") or FULL_SETS)}
        for c in sorted(curves, key=lambda c: (sets_order.get(c["data"], 99), order.get(c["strategy"], 99))):
            if c["noise"] == noise:
                rows.append(
                    [c["data"], c["strategy"]] + [c["ari"].get(str(b), float("nan")) for b in budgets]
                )
        lines += [md_table(["data", "strategy"] + [str(b) for b in budgets], rows), ""]

    def curve(data, strategy, noise):
        for c in curves:
            if (c["data"], c["strategy"], c["noise"]) == (data, strategy, noise):
                return c["ari"]
        return None

    sets = sorted({c["data"] for c in curves})
    # goal 1: information at <= 300 questions reaches random's ARI at 900 (noise 0)
    top = str(max(budgets))
    mid = str(300 if 300 in budgets else budgets[len(budgets) // 2])
    hits, detail = 0, []
    for d in sets:
        inf, rnd = curve(d, "information", 0.0), curve(d, "random", 0.0)
        if inf and rnd:
            ok = max(v for b, v in inf.items() if int(b) <= int(mid)) >= rnd[top] - 1e-9
            hits += ok
            detail.append(f"{d} {max(v for b, v in inf.items() if int(b) <= int(mid)):.3f} vs {rnd[top]:.3f}")
    goals.append(
        (
            f"'information' reaches random's ARI at {top} questions with at most {mid} on at least 5 of 6 "
            "sets (0% noise)",
            _verdict(hits, len(detail), 5),
            f"{hits} of {len(detail)} sets judged ({'; '.join(detail)})",
        )
    )
    # goal 2: at 10% noise, information >= every peer at every budget on at least 4 of 6
    hits, detail = 0, []
    for d in sets:
        inf = curve(d, "information", 0.1)
        peers = [c for c in curves if c["data"] == d and c["noise"] == 0.1 and c["strategy"] != "information"]
        if inf and peers:
            ok = all(inf[str(b)] >= p["ari"][str(b)] - 1e-9 for p in peers for b in budgets)
            hits += ok
            detail.append(f"{d}: {'yes' if ok else 'no'}")
    goals.append(
        (
            "at 10% noise, ARI at least every peer's ("
            + ", ".join(sorted({c["strategy"] for c in curves if c["strategy"] != "information"}))
            + ") at every budget on at least 4 of 6",
            _verdict(hits, len(detail), 4),
            f"{hits} of {len(detail)} sets judged ({'; '.join(detail)})",
        )
    )
    lines += [
        "## Goals",
        "",
        md_table(
            ["goal", "met", "numbers"],
            [[g, ok if isinstance(ok, str) else ("met" if ok else "missed"), n] for g, ok, n in goals],
        ),
        "",
    ]
    return "\n".join(lines) + "\n"


def committed():
    """The committed results file's data (benchmarks/results/active.json)."""
    prev = json.loads((RESULTS / "active.json").read_text())
    return prev.get("data", prev)


def _curve_seeds(c, res):
    """The seeds of a curve's ``ari_per_seed`` (a curve without its own list: the file's first ones)."""
    return c.get("seeds") or res["seeds"][: len(c["ari_per_seed"])]


def merge_extend():
    """The committed active.json with the draws of the ``--extend`` caches added to its curves' per-seed
    ARIs (a seed once); each curve's ``ari`` is the mean over all its draws, ``seeds`` names them."""
    prev = committed()
    res = {
        k: ({a: b for a, b in v.items() if a != "_run"} if isinstance(v, dict) else v)
        for k, v in prev.items()
    }
    seconds, added = {"tvclust": 0.0, "peers": 0.0}, {}
    for f in sorted(RESULTS.glob("active_*_extend_cache.json")):
        r = json.loads(f.read_text())
        seconds["peers" if f.name.startswith("active_peers") else "tvclust"] += r.get("seconds", 0.0)
        res["peers"] = r.get("peers") or res.get("peers")  # this run's import (the peers' order as run)
        for c in r["curves"]:
            added.setdefault((c["data"], c["noise"], c["strategy"]), []).append(c)
    curves, new_seeds = [], set()
    for c in prev["curves"] + [
        dict(c, ari_per_seed=[], seeds=[])  # cells that the committed file lacks: the caches' draws only
        for c in (cs[0] for cs in added.values())
        if (c["data"], c["noise"], c["strategy"])
        not in {(p["data"], p["noise"], p["strategy"]) for p in prev["curves"]}
    ]:
        seeds, per = list(_curve_seeds(c, prev)), list(c["ari_per_seed"])
        for a in added.get((c["data"], c["noise"], c["strategy"]), []):
            for v, r in zip(a["seeds"], a["ari_per_seed"], strict=True):
                if v not in seeds:
                    seeds.append(v)
                    per.append(r)
                    new_seeds.add(v)
        curves.append(
            {
                **{k: v for k, v in c.items() if k not in ("reused", "seconds")},
                "seeds": seeds,
                "ari_per_seed": per,
                "ari": {b: float(np.mean([r[b] for r in per])) for b in per[0]},
            }
        )
    res.update(
        curves=curves,
        seeds=sorted({v for c in curves for v in c["seeds"]}),
        seconds=seconds,
        reused=None,
        extended={
            "seeds": sorted(new_seeds),
            "run": (prev.get("settings") or {}).get("_run", {}).get("machine", ""),
            "previous_reused": res.get("reused"),
            "previous_reused_curves": sum(bool(c.get("reused")) for c in prev["curves"]),
            "previous_seconds": res.get("seconds"),
        },
    )
    return res


def _draws_lines(res):
    """The draws per cell: (settings text, lines listing the cells with fewer draws than the most)."""
    by_n = {}
    for c in res["curves"]:
        by_n.setdefault(len(c["ari_per_seed"]), []).append(c)
    top = max(by_n) if by_n else len(res["seeds"])
    seeds = sorted({tuple(_curve_seeds(c, res)) for c in by_n.get(top, [])}) or [tuple(res["seeds"])]
    named = ", ".join(map(str, seeds[0])) if len(seeds) == 1 else "as listed"
    text = f"{top} draws (seeds {named}: sampler and oracle; the tables show the mean ARI over them) per cell"
    fewer = []
    for n in sorted(by_n, reverse=True)[1:]:
        fewer.append(
            f"Cells with {n} draws (not {top}): "
            + "; ".join(
                f"{c['data']} {c['noise']:.0%} {c['strategy']} (seeds "
                + ", ".join(map(str, _curve_seeds(c, res)))
                + ")"
                for c in by_n[n]
            )
            + "."
        )
    if fewer:
        text += ", except the cells listed below"
    return text, min(by_n) if by_n else top, fewer + ([""] if fewer else [])


def _peer_setup(args):
    """Put ``--peers-path`` on sys.path and import the peers: {"found": {peer: module}, "errors": {...}}."""
    import sys

    path = args.peers_path or os.environ.get("PPCLUST_PEERS_PATH")
    if path and path not in sys.path:
        sys.path.insert(0, path)
    found, errors = import_peers()
    return {"found": found, "errors": errors}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--budget-s", type=float, default=1200.0)
    ap.add_argument("--sets", nargs="*")
    ap.add_argument("--budgets", nargs="*", type=int)
    ap.add_argument("--n-max", type=int, default=150)
    ap.add_argument("--draws", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=40)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--seeds", type=int, default=1, help="draws per cell (sampler and oracle seeds 0 ..)")
    ap.add_argument("--no-timing", action="store_true")
    ap.add_argument(
        "--part",
        choices=("all", "tvclust", "peers"),
        default="all",
        help="run ppclust's strategies or the peers only (two processes; then --merge)",
    )
    ap.add_argument("--merge", action="store_true", help="write active.md/json from the two parts' caches")
    ap.add_argument("--peers-path", help="a folder holding the peers' packages (or PPCLUST_PEERS_PATH)")
    ap.add_argument(
        "--timing-only", action="store_true", help="measure the cost table into the tvclust cache"
    )
    ap.add_argument("--noises", nargs="*", type=float, help="only these oracle noise levels (own cache)")
    ap.add_argument("--resume", action="store_true", help="keep the curves of the part's cache; run the rest")
    ap.add_argument("--tables-only", action="store_true", help="rewrite active.md from active.json")
    ap.add_argument(
        "--reuse",
        nargs="*",
        help="--merge: take these strategies' curves (code unchanged since) from the committed active.json; "
        "a run: skip these strategies' cells that it holds",
    )
    ap.add_argument(
        "--extend",
        action="store_true",
        help="a run: only the seeds of --seeds that the committed active.json lacks for a cell (own cache); "
        "--merge --extend: add them to that file's per-seed ARIs",
    )
    ap.add_argument("--tune", action="store_true", help="the warm-refit variants on the tuning sets")
    ap.add_argument("--variants", nargs="*", help="--tune: only these variants")
    args = ap.parse_args()
    if args.tune:
        tune(args)
        return
    if args.timing_only:
        res = {"curves": [], "timing": timing(args)}
        print("timing", res["timing"], flush=True)
        (RESULTS / "active_tvclust_timing_cache.json").write_text(json.dumps(res))
        return
    if args.tables_only or args.merge:
        if args.merge and args.extend:
            res = merge_extend()
        elif args.merge:
            res, seen, seconds = None, set(), {"tvclust": 0.0, "peers": 0.0}
            for part in ("tvclust", "peers"):  # every part's caches (processes side by side); a curve once
                for f in sorted(RESULTS.glob(f"active_{part}*_cache.json")):
                    if f.name.endswith("_extend_cache.json"):  # --merge --extend's
                        continue
                    r = json.loads(f.read_text())
                    seconds[part] += r.get("seconds", 0.0)
                    if res is None:
                        res = dict(r, curves=[])
                    if r.get("timing") and "cpu_s" not in (res.get("timing") or {}):
                        res["timing"] = r["timing"]  # the CPU-timed table first
                    res["peers"] = res.get("peers") or r.get("peers")
                    for c in r["curves"]:
                        if (c["data"], c["noise"], c["strategy"]) not in seen:
                            seen.add((c["data"], c["noise"], c["strategy"]))
                            res["curves"].append(c)
            res["seconds"] = seconds
            if args.reuse:  # curves whose code did not change: from the committed active.json
                prev = json.loads((RESULTS / "active.json").read_text())
                prev = prev.get("data", prev)
                stamp = (prev.get("settings") or {}).get("_run", {}).get("machine", "")
                was = {k: v for k, v in (prev.get("seconds") or {}).items() if k != "_run"}
                res["reused"] = {"strategies": list(args.reuse), "run": stamp, "seconds": was}
                res["peers"] = res.get("peers") or prev.get("peers")
                if not res.get("timing") and prev.get("timing"):  # no part measured it: the previous run's
                    res["timing"] = {k: v for k, v in prev["timing"].items() if k != "_run"}
                    res["reused"]["timing"] = True
                for c in prev["curves"]:
                    key = (c["data"], c["noise"], c["strategy"])
                    if c["strategy"] in args.reuse and key not in seen:
                        seen.add(key)
                        res["curves"].append(dict(c, reused=True))
        else:
            res = json.loads((RESULTS / "active.json").read_text())
            res = res.get("data", res)
        args.n_max, args.draws, args.warmup, args.batch = (
            res["settings"][k] for k in ("n_max", "draws", "warmup", "batch")
        )
        write_result("active.md", report(res, args))
        if args.merge:
            write_json("active", res, "benchmarks/bench_active.py")
        return
    sets = args.sets or (["iris", "wine"] if args.quick else FULL_SETS)
    budgets = args.budgets or ([25, 50, 100] if args.quick else FULL_BUDGETS)
    if args.quick:
        args.n_max, args.draws, args.warmup = 60, 20, 20
    seeds = list(range(args.seeds))
    res = {
        "budgets": budgets,
        "seeds": seeds,
        "curves": [],
        "settings": {k: getattr(args, k) for k in ("n_max", "draws", "warmup", "batch", "budget_s")},
        "peers": _peer_setup(args) if args.part != "tvclust" else None,
    }
    name = "quick" if args.quick else ("all" if args.part == "all" else args.part)
    if args.noises:
        name += "_" + "_".join(f"{v:g}" for v in args.noises)
    if args.extend:
        name += "_extend"
    cache = RESULTS / f"active_{name}_cache.json"
    if args.resume and cache.exists():
        res["curves"] = json.loads(cache.read_text())["curves"]
    done = {(c["data"], c["noise"], c["strategy"]) for c in res["curves"]}
    if args.reuse:  # cells that --merge --reuse will take from the committed active.json
        prev = json.loads((RESULTS / "active.json").read_text())
        prev = prev.get("data", prev)
        done |= {(c["data"], c["noise"], s) for c in prev["curves"] if (s := c["strategy"]) in args.reuse}
    held = {}  # --extend: {cell: the seeds that the committed active.json holds}
    if args.extend:
        prev = committed()
        held = {(c["data"], c["noise"], c["strategy"]): _curve_seeds(c, prev) for c in prev["curves"]}
    t0 = time.perf_counter()
    if not args.no_timing and args.part != "peers":
        res["timing"] = timing(args)
        print("timing", res["timing"], flush=True)
    res["sets"] = sets
    for d, noise, s in plan_cells(sets, args.part):
        if args.noises and noise not in args.noises:
            continue
        cell_seeds = [v for v in seeds if v not in held.get((d, noise, s), ())]
        if (s in PEERS and not res["peers"]["found"].get(s)) or (d, noise, s) in done or not cell_seeds:
            continue
        if time.perf_counter() - t0 > args.budget_s:
            print("time budget spent; skipping", d, noise, s, flush=True)
            res.setdefault("skipped", []).append([d, noise, s])
            continue
        X, y = load(d, args.n_max, 0)
        t = time.perf_counter()
        per_seed = []
        for seed in cell_seeds:
            if s in PEERS:
                per_seed.append(run_peer(s, res["peers"]["found"][s], X, y, noise, budgets, seed))
            elif s == "random":
                per_seed.append(run_random(X, y, noise, budgets, args, seed))
            else:
                per_seed.append(run_active(X, y, s, noise, budgets, args, seed))
        ari = {b: float(np.mean([r[b] for r in per_seed])) for b in budgets}
        res["curves"].append(
            {
                "data": d,
                "noise": noise,
                "strategy": s,
                "ari": {str(b): float(v) for b, v in ari.items()},
                "ari_per_seed": [{str(b): float(v) for b, v in r.items()} for r in per_seed],
                "seeds": cell_seeds,
                "seconds": time.perf_counter() - t,
            }
        )
        print(
            d,
            noise,
            s,
            {b: round(v, 3) for b, v in ari.items()},
            f"{time.perf_counter() - t:.0f}s",
            flush=True,
        )
        res["seconds"] = time.perf_counter() - t0
        cache.write_text(json.dumps(res))
    res["seconds"] = time.perf_counter() - t0
    cache.write_text(json.dumps(res))
    if args.part != "all":
        return
    text = report(res, args)
    if args.quick:
        print(text)
        return
    write_result("active.md", text)
    write_json("active", res, "benchmarks/bench_active.py")


if __name__ == "__main__":
    main()
