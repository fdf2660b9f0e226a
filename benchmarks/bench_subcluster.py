"""Sub-cluster split/merge TVClust sampler vs the collapsed numba sweep vs scikit-learn's DP mixture.

Data: ``n`` points from 12 unit-variance Gaussian blobs in d = 2 (centres on a 4 x 3 grid, spacing 8),
``n / 100`` random pairs observed as links (about 2% of the points are endpoints), each link's sign
flipped with probability 0.1 (noisy links); features standardised; NIW prior mu0 = 0, kappa0 = 1,
nu0 = d + 2, Psi0 = I; collapsed p, q. All timings in the same run, float64, compile excluded (each
sampler is called once to compile and run the mixing trace, then continued from its state for the
timed sweeps). Sections written to benchmarks/results/subcluster.md:

1. throughput at d = 2: point-updates per second (n per sweep) of the sub-cluster sampler (its
   split/merge moves included) and of ``gibbs.sample(backend="numba")``; ARI against the truth of
   the final state, both started from one cluster; sweeps until ARI > 0.95 (mixing from one cluster);
2. throughput at d = 30 (blobs with random centres N(0, 3^2 I)), 12 clusters;
3. mixing from a wrong K: k-means++ start with 30 clusters, sweeps until K = 12 and ARI > 0.95, 8 seeds
   of each sampler (sub-cluster sampler with 4 and 16 moves per sweep, and 4 with the former merge-pair
   choice: 1/2 uniform, exp(-D / min D)), K after sweep t;
4. time to a stable K and ARI vs sklearn ``BayesianGaussianMixture(weight_concentration_prior_type=
   "dirichlet_process")`` (n_components = 30, its default tolerance), no links for sklearn.

5. why merges from a wrong K are rejected: for every pair of clusters of the K = 30 start that share
   their majority true blob, the change of the log joint when they merge, the log probability that the
   sub-cluster fit of the union, proposed from the two pieces, splits it back into exactly this pair,
   log h - log m of that fit (best sum of 5 fits), and the sum (the merge's log Hastings ratio up to the
   pair-choice term, about log K); the same counts after 5 sweeps of label updates only;
6. mixing from one cluster: both samplers from one cluster at n = 20,000 (4 seeds, sweep caps 60 and
   400), sweeps and seconds until ARI > 0.95, until K = 12 with ARI > 0.95, and until ARI > 0.99;
7. ("callbacks") the fixed cost of a ``jax.pure_callback`` crossing on this host: per call, in a jitted
   scan, with a scalar operand, with an n-sized int32 operand (the labels every move's callbacks take)
   and with an n-sized operand and result (a move's proposal), the host side doing nothing else.

The process sees 2 host devices (``XLA_FLAGS=--xla_force_host_platform_device_count=2``, set below
before jax is imported, unless XLA_FLAGS is set already) so that section 1 also times the data-parallel
path (``mesh`` over the 2 CPU devices) in the same run; the other rows use the default device.

Usage: python -m benchmarks.bench_subcluster [--n N] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=2")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks._common import RESULTS, machine_info, md_table, write_section  # noqa: E402
from ppclust._jax import x64  # noqa: E402
from ppclust.families import GaussianNIW  # noqa: E402
from ppclust.inference import gibbs, hartigan, subcluster, subcluster_moves  # noqa: E402
from ppclust.metrics import ari  # noqa: E402
from ppclust.models.tvclust import TVClustPrior, make_links  # noqa: E402

PRIOR = TVClustPrior()


@contextlib.contextmanager
def retraced(**attrs):
    """``subcluster``'s module attributes set to ``attrs`` inside the block (restored after). The jitted
    sampler reads them when it is traced, so the compile caches are cleared on entry and on exit: the block
    compiles its own program and the code after it gets the usual one back."""
    keep = {k: getattr(subcluster, k) for k in attrs}
    for k, v in attrs.items():
        setattr(subcluster, k, v)
    jax.clear_caches()
    try:
        yield
    finally:
        for k, v in keep.items():
            setattr(subcluster, k, v)
        jax.clear_caches()


def blobs(n, d, seed=0, k=12):
    rng = np.random.default_rng(seed)
    if d == 2:
        centres = np.array([[8.0 * i, 8.0 * j] for i in range(4) for j in range(3)])
    else:
        centres = rng.normal(scale=3.0, size=(k, d))
    truth = rng.integers(0, k, n)
    x = centres[truth] + rng.normal(size=(n, d))
    m = n // 100
    pairs = rng.integers(0, n, (m, 2))
    pairs = np.unique(np.sort(pairs[pairs[:, 0] != pairs[:, 1]], 1), axis=0)
    sign = np.where(truth[pairs[:, 0]] == truth[pairs[:, 1]], 1, -1)
    sign = np.where(rng.random(len(sign)) < 0.1, -sign, sign)
    x = (x - x.mean(0)) / x.std(0)
    return x, truth, pairs, sign


def family(d):
    return GaussianNIW(jnp.zeros(d), jnp.asarray(1.0), jnp.asarray(d + 2.0), jnp.eye(d))


def problem(x, pairs, sign):
    """``(x, links, family, colouring)`` of a :func:`blobs` draw, the sampler's inputs (call under x64)."""
    n, d = x.shape
    links = make_links(n, pairs, sign)
    return jnp.asarray(x), links, family(d), subcluster.colour_links(links, n)


def first_hit(labels, truth, k_true=None, n_clusters=None, thresh=0.95):
    for t, row in enumerate(labels):
        if ari(truth, row) > thresh and (k_true is None or n_clusters[t] == k_true):
            return t + 1
    return None


def run_sub(
    x,
    links,
    fam,
    col,
    sweeps,
    k_max,
    init_labels=None,
    n_moves=4,
    seed=0,
    mesh=None,
    init_state=None,
    backend="auto",
):
    """Mixing trace (compiles), then the same number of timed sweeps continued from its state."""
    kw = dict(
        n_draws=sweeps,
        n_warmup=0,
        n_chains=1,
        k_max=k_max,
        pq="collapse",
        n_moves=n_moves,
        colouring=col,
        mesh=mesh,
        backend=backend,
    )
    t0 = time.perf_counter()
    tr = subcluster.sample(
        jax.random.key(seed), x, links, fam, PRIOR, init_labels=init_labels, init_state=init_state, **kw
    )
    t_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = subcluster.sample(jax.random.key(seed + 1), x, links, fam, PRIOR, init_state=tr.state, **kw)
    jax.block_until_ready(res.state.labels)
    return tr, res, (time.perf_counter() - t0) / sweeps, t_first


def run_col(x, links, fam, sweeps, k_max, init_labels=None, seed=0, init_state=None):
    kw = dict(
        n_draws=sweeps,
        n_warmup=0,
        n_chains=1,
        k_max=k_max,
        pq="collapse",
        backend="numba",
        progress_bar=False,
    )
    tr = gibbs.sample(
        jax.random.key(seed), x, links, fam, PRIOR, init_labels=init_labels, init_state=init_state, **kw
    )
    t0 = time.perf_counter()
    res = gibbs.sample(jax.random.key(seed + 1), x, links, fam, PRIOR, init_state=tr.state, **kw)
    jax.block_until_ready(res.state.labels)
    return tr, res, (time.perf_counter() - t0) / sweeps


def section_throughput(
    n, d, sweeps, col_sweeps, k_max=32, mesh_sweeps=0, xla_sweeps=0, rounds=2, int32_rounds=0
):
    """Rows: the sub-cluster sampler with ``backend="numba"`` (mixing trace of ``sweeps`` from one
    cluster, then ``rounds`` timed rounds of ``sweeps`` continued sweeps, interleaved with ``rounds`` timed
    rounds of the numba collapsed sweep, A/B/A/B: the ratio is per round), ``backend="xla"`` and the
    2-device mesh (continued from the numba chain's state, ``xla_sweeps`` / ``mesh_sweeps`` timed).
    ``int32_rounds``: that many pairs of ``sweeps`` continued sweeps with the labels crossing the callbacks
    as int32 (``subcluster._UINT8_SLOTS = 0``) and as uint8, alternating."""
    x, truth, pairs, sign = blobs(n, d)
    rows = []
    with x64():
        xj = jnp.asarray(x)
        links = make_links(n, pairs, sign)
        fam = family(d)
        t0 = time.perf_counter()
        col = subcluster.colour_links(links, n)
        t_col = time.perf_counter() - t0
        tr, res, t_sweep, t_first = run_sub(xj, links, fam, col, sweeps, k_max, backend="numba")
        hit = first_hit(tr.labels[0], truth)
        t_subs, t_cols = [t_sweep], []
        if col_sweeps:
            trc, resc, tc = run_col(xj, links, fam, col_sweeps, k_max)
            t_cols.append(tc)
            for _ in range(rounds - 1):  # A/B/A/B: both samplers continue their chains
                _, res, t_s, _ = run_sub(
                    xj, links, fam, col, sweeps, k_max, init_state=res.state, backend="numba"
                )
                t_subs.append(t_s)
                t_cols.append(run_col(xj, links, fam, col_sweeps, k_max, init_state=resc.state)[2])
        t_sweep = float(np.median(t_subs))
        sub_rate = n / t_sweep
        rows.append(
            [
                "subcluster, backend numba (split/merge + block Gibbs)",
                f"{sub_rate:,.0f}",
                f"{t_sweep:.3f}",
                int(res.n_clusters[0, -1]),
                f"{ari(truth, res.labels[0, -1]):.3f}",
                hit if hit else f"> {sweeps}",
            ]
        )
        if int32_rounds:
            t32, t8 = [], []
            for _ in range(int32_rounds):
                for slots, acc in ((0, t32), (subcluster._UINT8_SLOTS, t8)):
                    with retraced(_UINT8_SLOTS=slots):
                        acc.append(
                            run_sub(
                                xj, links, fam, col, sweeps, k_max, init_state=res.state, backend="numba"
                            )[2]
                        )
            m32, m8 = float(np.median(t32)), float(np.median(t8))
            rows.append(
                [
                    f"subcluster, backend numba, int32 labels in the callbacks ("
                    f"{int32_rounds} rounds alternating with uint8)",
                    f"{n / m32:,.0f}",
                    f"{m32:.3f}",
                    "-",
                    "-",
                    "-",
                ]
            )
            rows.append(
                [
                    f"subcluster, backend numba, uint8 labels (the same {int32_rounds} rounds)",
                    f"{n / m8:,.0f}",
                    f"{m8:.3f}",
                    "-",
                    "-",
                    "-",
                ]
            )
        if xla_sweeps:
            _, resx, tx, _ = run_sub(
                xj, links, fam, col, xla_sweeps, k_max, init_state=res.state, backend="xla"
            )
            rows.append(
                [
                    f"subcluster, backend xla ({xla_sweeps} sweeps continued)",
                    f"{n / tx:,.0f}",
                    f"{tx:.3f}",
                    int(resx.n_clusters[0, -1]),
                    f"{ari(truth, resx.labels[0, -1]):.3f}",
                    "-",
                ]
            )
        if mesh_sweeps and len(jax.devices()) >= 2:
            from ppclust._devices import resolve_mesh

            _, resm, tm, _ = run_sub(
                xj,
                links,
                fam,
                col,
                mesh_sweeps,
                k_max,
                mesh=resolve_mesh(2),
                init_state=res.state,
                backend="xla",
            )
            rows.append(
                [
                    f"subcluster, backend xla, 2 CPU devices (shard_map; {mesh_sweeps} sweeps continued)",
                    f"{n / tm:,.0f}",
                    f"{tm:.3f}",
                    int(resm.n_clusters[0, -1]),
                    f"{ari(truth, resm.labels[0, -1]):.3f}",
                    "-",
                ]
            )
        if col_sweeps:
            tc = float(np.median(t_cols))
            hitc = first_hit(trc.labels[0], truth)
            rows.append(
                [
                    "collapsed Gibbs, numba sweep",
                    f"{n / tc:,.0f}",
                    f"{tc:.3f}",
                    int(resc.n_clusters[0, -1]),
                    f"{ari(truth, resc.labels[0, -1]):.3f}",
                    hitc if hitc else f"> {col_sweeps}",
                ]
            )
    text = (
        f"n = {n:,}, d = {d}, 12 true clusters, {len(pairs):,} links (10% flipped), "
        f"{int(col.classes.shape[0])} colour classes (greedy colouring {t_col:.2f} s), k_max = {k_max}, "
        f"both chains started from one "
        f"cluster; timed sweeps continue the chain (compile excluded; first call incl. compile "
        f"{t_first:.0f} s)\n\n"
    )
    text += md_table(
        [
            "sampler",
            "point-updates/s",
            "s/sweep",
            "K (last)",
            "ARI (last)",
            "sweeps to ARI > 0.95 from one cluster",
        ],
        rows,
    )
    if col_sweeps:
        per = ", ".join(f"{c / s:.1f}x" for s, c in zip(t_subs, t_cols, strict=True))
        text += (
            f"\n\nratio subcluster (numba) / numba collapsed: {sub_rate / (n / tc):.1f}x (medians; per "
            f"interleaved round: {per}; {sweeps} sub-cluster and {col_sweeps} collapsed sweeps per "
            "round)\n"
        )
    return text


def section_merge_diagnosis(n, k0=30, k_max=48, n_fits=5, blur_sweeps=5):
    """Section 5 of the module docstring."""
    from ppclust.inference.subcluster import _log_joint, _log_m_lab, _log_q_pair

    x, truth, pairs, sign = blobs(n, 2, seed=1)
    with x64():
        xj = jnp.asarray(x)
        links = make_links(n, pairs, sign)
        fam = family(2)
        start = hartigan.voronoi(xj, hartigan.init_kmeanspp(jax.random.key(5), xj, k0))
        lj = jax.jit(lambda z: _log_joint(z, xj, links, fam, PRIOR, "collapse", 0.9, 0.9, k_max)[0])

        @jax.jit
        def merge_terms(key, mask, in_a):  # the merge's proposal of the union's fit from the two pieces
            fit = subcluster_moves.subcluster_responsibilities(key, xj, mask, fam, in_a, True)
            return _log_q_pair(fit.log_r, fit.log_1r, mask, in_a), fit.log_h - _log_m_lab(fit, in_a, mask)

        def pairs_of(lab):
            lj0 = float(lj(lab))
            labn = np.asarray(lab)
            occ = np.unique(labn)
            major = {c: np.bincount(truth[labn == c]).argmax() for c in occ}
            rows = []
            for i, a in enumerate(occ):
                for b in occ[i + 1 :]:
                    if major[a] != major[b]:
                        continue
                    dlp = float(lj(jnp.where(lab == b, a, lab))) - lj0
                    mask = (lab == a) | (lab == b)
                    terms = [
                        tuple(map(float, merge_terms(jax.random.key(s), mask, lab == a)))
                        for s in range(n_fits)
                    ]
                    lq, pen = max(terms, key=lambda t: t[0] + t[1])
                    rows.append(
                        [
                            f"{a}+{b}",
                            f"{int((lab == a).sum())}+{int((lab == b).sum())}",
                            f"{dlp:.1f}",
                            f"{lq:.1f}",
                            f"{pen:.1f}",
                            f"{dlp + lq + pen:.1f}",
                        ]
                    )
            return rows

        rows = pairs_of(start)
        blurred = subcluster.sample(
            jax.random.key(0),
            xj,
            links,
            fam,
            PRIOR,
            n_draws=blur_sweeps,
            n_warmup=0,
            n_chains=1,
            k_max=k_max,
            init_labels=start,
            n_moves=0,
        )
        rows_b = pairs_of(jnp.asarray(blurred.labels[0, -1]))

    def counts(rows):
        return sum(float(r[2]) > 0 for r in rows), sum(float(r[-1]) > 0 for r in rows), len(rows)

    g0, p0, t0 = counts(rows)
    g1, p1, t1 = counts(rows_b)
    text = (
        f"n = {n:,}, d = 2, start: k-means++ Voronoi partition with K = {k0}; {t0} pairs of clusters "
        f"share their majority true blob. Merging raises log p for {g0} of them; the merge's log "
        f"Hastings ratio (up to the pair-choice term, about log K) is > 0 for {p0} (best of {n_fits} "
        f"fits of the union proposed from the two pieces: log q of the pieces' bipartition + log h - "
        f"log m of the fit's labelled subsample, module docstring of subcluster.py, (a)).\n\n"
        f"After {blur_sweeps} sweeps of block label updates only (no moves; the pieces' boundaries "
        f"blurred): {t1} such pairs, merging raises log p for {g1}, ratio > 0 for {p1}.\n\n"
        f"At the start:\n\n"
    )
    return text + md_table(
        ["pair", "points", "merge: change of log p", "log q of the reverse split", "log h - log m", "sum"],
        rows,
    )


def section_wrong_k(n, sweeps, k0=30, k_max=48, seeds=8, moves=(4, 16), old_pairs=True):
    """Both samplers from a k-means++ partition with K = k0; ``old_pairs``: also n_moves = 4 with the merge
    pair choice ``_MERGE_UNIFORM`` 1/2, ``_MERGE_SHARPNESS`` 1 (the former default), the same seeds."""
    x, truth, pairs, sign = blobs(n, 2, seed=1)
    rows, trace = [], []
    marks = [t for t in (1, 2, 5, 10, 15, 20, 25, 30) if t <= sweeps]
    with x64():
        xj = jnp.asarray(x)
        links = make_links(n, pairs, sign)
        fam = family(2)
        init = hartigan.voronoi(xj, hartigan.init_kmeanspp(jax.random.key(5), xj, k0))
        col = subcluster.colour_links(links, n)
        for seed in range(seeds):
            runs = []
            for nm in moves:
                tr, _, t_sweep, _ = run_sub(
                    xj, links, fam, col, sweeps, k_max, init_labels=init, seed=seed, n_moves=nm
                )
                runs.append((f"subcluster n_moves={nm}", tr, t_sweep))
            if old_pairs:
                with retraced(_MERGE_UNIFORM=0.5, _MERGE_SHARPNESS=1.0):
                    tr, _, t_sweep, _ = run_sub(
                        xj, links, fam, col, sweeps, k_max, init_labels=init, seed=seed, n_moves=4
                    )
                runs.append(("subcluster n_moves=4, old pair choice", tr, t_sweep))
            trc, _, tc = run_col(xj, links, fam, sweeps, k_max, init_labels=init, seed=seed)
            for name, t, s_ in runs + [("collapsed (numba)", trc, tc)]:
                hit = first_hit(t.labels[0], truth, 12, t.n_clusters[0])
                h99 = first_hit(t.labels[0], truth, thresh=0.99)
                rows.append(
                    [
                        f"{name}, seed {seed}",
                        hit if hit else f"> {sweeps}",
                        f"{h99} ({h99 * s_:.1f} s)" if h99 else f"> {sweeps}",
                        int(t.n_clusters[0, -1]),
                        f"{ari(truth, t.labels[0, -1]):.3f}",
                        f"{s_:.3f}",
                    ]
                )
                trace.append([f"{name}, seed {seed}"] + [int(t.n_clusters[0, m - 1]) for m in marks])
    rows.sort(key=lambda r: r[0].split(", seed")[0])
    trace.sort(key=lambda r: r[0].split(", seed")[0])
    text = (
        f"n = {n:,}, d = 2, 12 true clusters, start: k-means++ Voronoi partition with K = {k0}, "
        f"{sweeps} sweeps, {seeds} seeds of each sampler (subcluster: n_moves split/merge steps and "
        f"max(1, n_moves) peel/absorb steps per sweep; the default n_moves is 4). Merge pairs: "
        f"{subcluster_moves._MERGE_UNIFORM:g} uniform, else a uniform cluster and a partner with weight "
        f"exp(-{subcluster_moves._MERGE_SHARPNESS:g} D / min D) (D: squared distance of the means)"
        + (
            '; "old pair choice": 1/2 uniform and exp(-D / min D), the former default, the same seeds'
            if old_pairs
            else ""
        )
        + "\n\n"
    )
    return (
        text
        + md_table(
            [
                "sampler",
                "sweeps to K = 12 and ARI > 0.95",
                "sweeps to ARI > 0.99 (x s/sweep)",
                "K (last)",
                "ARI (last)",
                "s/sweep",
            ],
            rows,
        )
        + "\n\nK after sweep t:\n\n"
        + md_table(["sampler"] + [f"t = {t}" for t in marks], trace)
    )


def section_from_one(n, sub_cap=60, col_cap=400, k_max=48, seeds=4, n_moves=4):
    """Section 6 of the module docstring: both samplers from one cluster, sweeps (and seconds: sweeps
    times the s/sweep of a timed continuation) until ARI > 0.95, until K = 12 with ARI > 0.95, until
    ARI > 0.99, within a sweep cap each."""
    x, truth, pairs, sign = blobs(n, 2, seed=1)
    rows, trace = [], []
    marks = [t for t in (1, 2, 5, 10, 20, 30, 60, 100, 200, 400) if t <= max(sub_cap, col_cap)]
    with x64():
        xj, links, fam, col = problem(x, pairs, sign)
        one = jnp.zeros(n, jnp.int32)
        for seed in range(seeds):
            tr, _, ts, _ = run_sub(
                xj, links, fam, col, sub_cap, k_max, init_labels=one, seed=seed, n_moves=n_moves
            )
            trc, _, tc = run_col(xj, links, fam, col_cap, k_max, init_labels=one, seed=seed)
            for name, t, s_, cap in (
                (f"subcluster n_moves={n_moves}", tr, ts, sub_cap),
                ("collapsed (numba)", trc, tc, col_cap),
            ):
                hits = [
                    first_hit(t.labels[0], truth),
                    first_hit(t.labels[0], truth, 12, t.n_clusters[0]),
                    first_hit(t.labels[0], truth, thresh=0.99),
                ]
                rows.append(
                    [f"{name}, seed {seed}"]
                    + [f"{h} ({h * s_:.1f} s)" if h else f"> {cap}" for h in hits]
                    + [int(t.n_clusters[0, -1]), f"{ari(truth, t.labels[0, -1]):.3f}", f"{s_:.4f}"]
                )
                trace.append(
                    [f"{name}, seed {seed}"]
                    + [int(t.n_clusters[0, m - 1]) if m <= cap else "-" for m in marks]
                )
        # reference: where the chains stay when started from the true partition (the posterior's own K)
        ref = []
        for seed in range(2):
            kw = dict(init_labels=jnp.asarray(truth, jnp.int32), seed=seed)
            for name, t in (
                (
                    f"subcluster n_moves={n_moves}",
                    run_sub(xj, links, fam, col, sub_cap, k_max, n_moves=n_moves, **kw)[0],
                ),
                ("collapsed (numba)", run_col(xj, links, fam, sub_cap, k_max, **kw)[0]),
            ):
                k = t.n_clusters[0]
                small = [int(np.sum((c > 0) & (c < 100))) for c in map(np.bincount, t.labels[0])]
                ref.append(
                    [
                        f"{name}, seed {seed}",
                        f"{k.min()}-{k.max()}",
                        f"{np.mean(k == 12):.2f}",
                        f"{np.mean(small):.1f}",
                        f"{min(ari(truth, r) for r in t.labels[0]):.3f}",
                    ]
                )
    rows.sort(key=lambda r: r[0].split(", seed")[0])
    trace.sort(key=lambda r: r[0].split(", seed")[0])
    ref.sort(key=lambda r: r[0].split(", seed")[0])
    text = (
        f"n = {n:,}, d = 2, 12 true clusters, {n // 100:,} links (10% flipped), both samplers started "
        f"from one cluster, {seeds} seeds each; sweep caps: sub-cluster {sub_cap}, collapsed {col_cap}. "
        f"Seconds = sweeps x the s/sweep of a timed continuation of the same chain (compile "
        f"excluded).\n\n"
    )
    return (
        text
        + md_table(
            [
                "sampler",
                "sweeps to ARI > 0.95 (s)",
                "sweeps to K = 12 and ARI > 0.95 (s)",
                "sweeps to ARI > 0.99 (s)",
                "K (last)",
                "ARI (last)",
                "s/sweep",
            ],
            rows,
        )
        + "\n\nK after sweep t:\n\n"
        + md_table(["sampler"] + [f"t = {t}" for t in marks], trace)
        + f"\n\nReference: both samplers started from the true partition, {sub_cap} sweeps (2 seeds): "
        f"the K they hold, the share of sweeps at K = 12, the mean number of clusters under 100 points, "
        f"the lowest ARI.\n\n"
        + md_table(
            ["sampler", "K (min-max)", "share at K = 12", "clusters < 100 points (mean)", "ARI (min)"], ref
        )
    )


def section_sklearn(ns, sweeps):
    """One pair of rows per n in ``ns``: the sub-cluster sampler from one cluster (1% noisy links) and
    scikit-learn's DP mixture (no links), each to its own stopping point."""
    from sklearn.mixture import BayesianGaussianMixture

    rows = []
    for n in ns:
        x, truth, pairs, sign = blobs(n, 2, seed=2)
        with x64():
            xj, links, fam, col = problem(x, pairs, sign)
            tr, _, t_sweep, _ = run_sub(xj, links, fam, col, sweeps, 32)
        k = tr.n_clusters[0]
        stable = next((t for t in range(len(k)) if (k[t:] == k[-1]).all()), len(k) - 1) + 1
        aris = [ari(truth, row) for row in tr.labels[0]]
        hit = next((t + 1 for t, a in enumerate(aris) if a > 0.95), None)
        to95 = f"{hit} sweeps = {hit * t_sweep:.1f} s" if hit else f"not within {sweeps} sweeps"
        t0 = time.perf_counter()
        bgm = BayesianGaussianMixture(
            n_components=30, weight_concentration_prior_type="dirichlet_process", random_state=0
        ).fit(x)
        t_bgm = time.perf_counter() - t0
        lab = bgm.predict(x)
        rows += [
            [
                f"{n:,}",
                "subcluster (from one cluster, 1% noisy links)",
                f"{stable} sweeps = {stable * t_sweep:.1f} s",
                to95,
                int(k[-1]),
                f"{aris[-1]:.3f}",
            ],
            [
                f"{n:,}",
                "sklearn BayesianGaussianMixture (DP, 30 components, no links)",
                f"{bgm.n_iter_} EM iterations = {t_bgm:.1f} s"
                + ("" if bgm.converged_ else " (not converged: max_iter)"),
                "reached" if ari(truth, lab) > 0.95 else "not reached",
                int(len(np.unique(lab))),
                f"{ari(truth, lab):.3f}",
            ],
        ]
    text = (
        f"d = 2, 12 true clusters. Subcluster: {sweeps} sweeps from one cluster; time to a stable K = "
        f"sweeps until K stays at its final value for the rest of the run, time to ARI > 0.95 = sweeps "
        f"until the draw's ARI first exceeds 0.95, each times the measured s/sweep (compile excluded); K "
        f"and ARI of the last draw. sklearn: fit time with its defaults (tol 1e-3, max_iter 100), K = "
        f"distinct predicted labels.\n\n"
    )
    return text + md_table(["n", "method", "time to stable K", "time to ARI > 0.95", "K", "ARI"], rows)


def _mesh_rows(n, mesh, sweeps, rounds, anchor):
    """The rows of :func:`section_mesh` for one n."""
    x, _, pairs, sign = blobs(n, 2, seed=3)
    with x64():
        xj, links, fam, col = problem(x, pairs, sign)
        kw = dict(n_warmup=0, n_chains=1, k_max=32, pq="collapse", colouring=col, backend="xla")
        start = subcluster.sample(jax.random.key(0), xj, links, fam, PRIOR, n_draws=10, **kw).state
        kinds = [("one device", None, True), ("2 CPU devices (shard_map)", mesh, True)]
        if anchor:
            kinds.append(("2 CPU devices, no fence", mesh, False))
        times = {name: [] for name, _, _ in kinds}
        labels = {}

        def timed(name, m, r):
            t0 = time.perf_counter()
            res = subcluster.sample(
                jax.random.key(1), xj, links, fam, PRIOR, n_draws=sweeps, init_state=start, mesh=m, **kw
            )
            jax.block_until_ready(res.state.labels)
            if r:  # the first round compiles
                times[name].append((time.perf_counter() - t0) / sweeps)
            labels[name] = np.asarray(res.labels[0, -1])

        for r in range(rounds + 1):  # the fenced rows alternate
            for name, m, fence in kinds:
                if fence:
                    timed(name, m, r)
        for name, m, fence in kinds:
            if fence:
                continue
            # the fence is read when the sampler is traced: the unfenced program needs its own compile
            with retraced(_replicated=lambda mesh, *t: t[0] if len(t) == 1 else t):
                for r in range(rounds + 1):
                    timed(name, m, r)
    rows = []
    for name, _, _ in kinds:
        t = float(np.median(times[name]))
        rows.append(
            [
                f"{n:,}",
                name,
                f"{n / t:,.0f}",
                f"{t:.3f}",
                " / ".join(f"{v:.3f}" for v in times[name]),
                "yes" if np.array_equal(labels[name], labels["one device"]) else "no",
            ]
        )
    return rows


def section_mesh(ns, sweeps=5, rounds=2):
    """The data-parallel path (``mesh`` over the process's 2 CPU devices, ``backend="xla"``) against the
    same chain on one device, per n in ``ns``: both continue one state (10 sweeps from one cluster on one
    device) in alternating timed rounds of ``sweeps`` sweeps. At the smallest n also the mesh without the
    sharding fence of ``subcluster._replicated`` (monkeypatched to the identity), the
    anchor that shows what the fence changed."""
    from ppclust._devices import resolve_mesh

    mesh = resolve_mesh(2)
    rows = [r for n in ns for r in _mesh_rows(n, mesh, sweeps, rounds, anchor=n == min(ns))]
    text = (
        f"backend xla, d = 2, 12 blobs, 1% of points linked (10% noisy); each row continues the same "
        f"state (10 sweeps from one cluster on one device) with the same key for {sweeps} sweeps, "
        f"{rounds} timed rounds after a compiling one (the fenced rows alternate; the unfenced row runs "
        f'after them, as it needs its own compile); the rate is n / (median s per sweep). "same '
        f"labels\": the last draw equals the one-device chain's. The two simulated devices share the "
        f"machine's 2 cores, so the mesh cannot be faster here: the rows measure the path's cost, not a "
        f"speed-up.\n\n"
    )
    return text + md_table(
        ["n", "devices", "point-updates/s", "s/sweep", "rounds (s/sweep)", "same labels"], rows
    )


def section_callbacks(ns=(100_000, 1_000_000), calls=50, reps=5):
    """Section 7: ms per ``pure_callback`` call (median of ``reps`` jitted scans of ``calls`` calls)."""
    rows = []
    for n in ns:
        lab = jnp.zeros(n, jnp.int32)

        def small_out(c, _):  # the operand's size is the carry's: a scalar or n labels
            return c + jax.pure_callback(
                lambda a: np.zeros(4, np.int32), jax.ShapeDtypeStruct((4,), jnp.int32), c
            )[0], None

        def big_out(c, _):
            return jax.pure_callback(
                lambda a: np.array(a, np.int32), jax.ShapeDtypeStruct(c.shape, c.dtype), c
            ), None

        for name, body, start in (
            ("scalar operand, 4-word result", small_out, jnp.int32(0)),
            ("n-sized int32 operand, 4-word result", small_out, lab),
            ("n-sized int32 operand and result (a copy)", big_out, lab),
        ):
            run = jax.jit(lambda s0, body=body: jax.lax.scan(body, s0, None, length=calls)[0])
            jax.block_until_ready(run(start))
            ts = []
            for _ in range(reps):
                t0 = time.perf_counter()
                jax.block_until_ready(run(start))
                ts.append((time.perf_counter() - t0) / calls)
            rows.append([f"{n:,}", name, f"{np.median(ts) * 1e3:.3f}"])
    text = (
        f"One `jax.pure_callback` per step of a jitted `lax.scan` of {calls} steps, the host function "
        f"doing nothing but build its result; median of {reps} scans. Every split/merge move of the "
        f"numba backend passes the labels (n int32) into two callbacks and gets its proposal (n int32) "
        f"back from one; each peel/absorb step passes them into one.\n\n"
    )
    return text + md_table(["n", "callback", "ms per call"], rows)


def section_chains(n, d=2, n_chains=2, sweeps=10, k_max=64, rounds=2):
    """Section 7: several chains in one call (``vmap``), as ``TVClust`` runs them (2 chains, k_max = 64):
    s/sweep with the chains agreeing on one label-block width per sweep (``step``'s ``chain_axis``, the
    default) against the anchor ``subcluster._AGREE_WIDTH = False`` (a batched width index: ``lax.switch``
    runs every width's label step), in alternating rounds of ``sweeps`` sweeps continued from the state
    after ``sweeps`` sweeps from one cluster; and whether both draw the same labels in the first round."""
    x, truth, pairs, sign = blobs(n, d)
    kw = dict(
        n_draws=sweeps, n_warmup=0, n_chains=n_chains, k_max=k_max, pq="collapse", n_moves=4, backend="numba"
    )
    times = {True: [], False: []}
    with x64():
        xj = jnp.asarray(x)
        links = make_links(n, pairs, sign)
        fam = family(d)
        kw["colouring"] = subcluster.colour_links(links, n)
        start = subcluster.sample(jax.random.key(0), xj, links, fam, PRIOR, **kw).state
        labels = {}
        try:
            for r in range(rounds):
                for agree in (True, False):
                    subcluster._AGREE_WIDTH = agree
                    if r == 0:  # compiles
                        subcluster.sample(jax.random.key(9), xj, links, fam, PRIOR, init_state=start, **kw)
                    t0 = time.perf_counter()
                    res = subcluster.sample(
                        jax.random.key(1 + r), xj, links, fam, PRIOR, init_state=start, **kw
                    )
                    jax.block_until_ready(res.state.labels)
                    times[agree].append((time.perf_counter() - t0) / sweeps)
                    if r == 0:
                        labels[agree] = (np.asarray(res.labels), res.n_clusters)
        finally:
            subcluster._AGREE_WIDTH = True
    same = float(np.mean(labels[True][0] == labels[False][0]))
    ks = labels[True][1]
    rows = [
        [
            name,
            f"{np.median(times[a]):.3f}",
            ", ".join(f"{t:.3f}" for t in times[a]),
            f"{n * n_chains / np.median(times[a]):,.0f}",
        ]
        for name, a in (("one width per sweep (default)", True), ("every width (anchor)", False))
    ]
    ratio = [f"{b / a:.2f}x" for a, b in zip(times[True], times[False], strict=True)]
    text = (
        f"n = {n:,}, d = {d}, {n_chains} chains (vmap), k_max = {k_max} (widths "
        f"{', '.join(str(w) for w in subcluster._widths(k_max))}), 4 moves; {sweeps} sweeps per round, "
        f"continued from the state after {sweeps} sweeps from one cluster; K over the first round's "
        f"draws {int(ks.min())}-{int(ks.max())}\n\n"
    )
    return (
        text
        + md_table(["chains' label block", "s/sweep (median)", "per round", "point-updates/s"], rows)
        + f"\n\nratio anchor / default per round: {', '.join(ratio)}; labels equal in the first round: "
        f"{same:.4f} of all draws\n"
    )


def section_profile(n, d, reps=3, k_max=32, backend="numba", start="truth", chain_sweeps=30):
    """Section 6: one sweep's parts timed one by one (jitted separately, median of ``reps`` calls after a
    compiling call) from a state: ``start="truth"`` the true partition (12 clusters), ``"chain"`` the state of
    the throughput sections' timed chain (``chain_sweeps`` sweeps of ``backend`` from one cluster, seed 0, as
    :func:`section_throughput` runs it first). Parts: a split/merge MH step (``_move``, the mean over 4
    ``reps`` keys, 50/50 split/merge draws, from the sweep's cluster index on numba), the peel/absorb step
    (the mean over 4 ``reps`` keys; a sweep makes max(1, n_moves) = 4),
    the block label step at the width the sweep uses (``_label_step``; on numba also its unlinked block's draw
    alone, the callback), the statistics and pair counts of the end of the sweep, and the whole sweep
    (``step``, 4 moves); the last row is the whole sweep less the parts (the sum with 4 moves: the O(K) and
    O(n) work between the parts: parameter draws, the relabelling, the branch switch). The O(n) passes on
    ``backend``. The numba threads: ``NUMBA_NUM_THREADS`` (the callbacks run on XLA's threads, so
    ``numba.set_num_threads`` in this one would not reach them)."""
    from ppclust.inference.subcluster import _label_step, _move, _peel_move, _widths
    from ppclust.models.tvclust import log_joint_from_stats
    from ppclust.sideinfo import pair_counts

    x, truth, pairs, sign = blobs(n, d)
    with x64():
        xj, links, fam, col = problem(x, pairs, sign)
        if start == "chain":
            tr = subcluster.sample(
                jax.random.key(0),
                xj,
                links,
                fam,
                PRIOR,
                n_draws=chain_sweeps,
                n_warmup=0,
                n_chains=1,
                k_max=k_max,
                pq="collapse",
                n_moves=4,
                colouring=col,
                backend=backend,
            )
            st = jax.tree.map(lambda a: a[0], tr.state)
        else:
            st = gibbs.init(
                xj, links, fam, k_max=k_max, labels=jnp.asarray(truth), p=0.9, q=0.9, alpha=PRIOR.alpha
            )
        sizes = np.asarray(st.stats.n)
        n_act = int((sizes > 0).sum())
        lj = log_joint_from_stats(st.stats, st.counts, fam, PRIOR)
        xw, held = None, contextlib.nullcontext()
        if backend == "numba":  # the data held on the host for the callbacks, once, as sample() does
            from ppclust.inference._callback import hold, wired
            from ppclust.inference._subcluster_cpu import family_stats
            from ppclust.inference._subcluster_draw_cpu import draw_block

            held = hold(xj)
            xw = jax.jit(wired)(xj, held.__enter__())
        index = None
        if backend == "numba":  # the sweep's cluster index, built once per sweep before the moves
            from ppclust.inference._cluster_index import cluster_index

            index = jax.jit(lambda z: cluster_index(z, k_max))(st.labels)
            idx_f = jax.jit(lambda z, xw: cluster_index(z, k_max).token)
        mv = jax.jit(
            lambda k, xw: _move(
                k,
                st.labels,
                lj,
                st.stats,
                st.counts,
                xj,
                links,
                fam,
                PRIOR,
                "collapse",
                st.p,
                st.q,
                backend,
                xw,
                index,
            )[0]
        )
        peel = jax.jit(
            lambda k, xw: _peel_move(
                k,
                st.labels,
                lj,
                st.stats,
                st.counts,
                xj,
                links,
                fam,
                PRIOR,
                "collapse",
                st.p,
                st.q,
                backend,
                index,
            )[0]
        )
        theta = fam.sample_posterior(jax.random.key(1), st.stats)
        # the label step as the sweep runs it: occupied slots first, the smallest width holding them
        order = jnp.argsort(~(st.stats.n > 0), stable=True)
        w = min(v for v in _widths(k_max) if v >= n_act)
        n_w = st.stats.n[order][:w]
        log_pi = jnp.where(n_w > 0, jnp.log(jnp.maximum(n_w, 1e-300)), -jnp.inf)
        th_w = jax.tree.map(lambda a: a[order][:w], theta)
        lab_w = jnp.argsort(order).astype(st.labels.dtype)[st.labels]
        lab = jax.jit(
            lambda k, xw: _label_step(
                k, lab_w, n_w, xj, links, col, fam, log_pi, th_w, st.p, st.q, backend=backend, xw=xw
            )
        )
        if backend == "numba":
            fin = jax.jit(lambda z, xw: (family_stats(xj, z, k_max, fam, xw), pair_counts(z, links)))
        else:
            fin = jax.jit(lambda z, xw: (fam.stats(xj, z, k_max), pair_counts(z, links)))
        sw = jax.jit(
            lambda k, xw: (
                subcluster.step(k, st, xj, links, col, fam, PRIOR, n_moves=4, backend=backend, x_wired=xw)[
                    0
                ].labels
            )
        )
        parts = [
            ("one split/merge MH step (_move)", mv, lambda i: jax.random.key(i), 4),
            ("peel/absorb step (_peel_move)", peel, lambda i: jax.random.key(i), 4),
            (f"block label step, width {w} (_label_step)", lab, lambda i: jax.random.key(i), 1),
            ("end-of-sweep statistics + pair counts", fin, lambda i: st.labels, 1),
            ("whole sweep (step, 4 moves)", sw, lambda i: jax.random.key(i), 0),
        ]
        if backend == "numba":
            parts.insert(1, ("cluster index of the moves (once per sweep)", idx_f, lambda i: st.labels, 1))
            drw = jax.jit(
                lambda s, xw: draw_block(
                    xj, col.linked, lab_w, log_pi, th_w, s, fam, subcluster._DRAW_CUT, xw
                )[0]
            )
            parts.insert(
                4,
                (
                    "  of which: the unlinked block's draw (callback)",
                    drw,
                    lambda i: jnp.asarray([i, 7], jnp.uint32),
                    0,
                ),
            )
        rows, total = [], 0.0
        for name, f, arg, times in parts:
            jax.block_until_ready(f(arg(0), xw))
            ts = []
            for i in range(1, (4 * reps if times == 4 else reps) + 1):
                t0 = time.perf_counter()
                jax.block_until_ready(f(arg(i), xw))
                ts.append(time.perf_counter() - t0)
            ms = 1e3 * float(np.mean(ts) if times == 4 else np.median(ts))  # move, peel: mean of 4 reps keys
            total += times * ms
            rows.append([name, f"{ms:.1f}"])
        rows.append(
            [
                "whole sweep less the parts (4 moves, 4 peel/absorb steps)",
                f"{1e3 * float(np.median(ts)) - total:.1f}",
            ]
        )
        held.__exit__(None, None, None)
    where = (
        "the true partition (12 clusters)"
        if start == "truth"
        else f"the state after {chain_sweeps} sweeps from one cluster (seed 0: the throughput chain's)"
    )
    text = (
        f"backend {backend}; n = {n:,}, d = {d}, {where}: K = {n_act}, cluster sizes "
        f"{', '.join(str(int(v)) for v in sorted(sizes[sizes > 0], reverse=True))}; k_max = {k_max}; "
        f"median of {reps} calls after the compiling one (a move or a peel/absorb step: the mean of "
        f"{4 * reps} keys), each part jitted on its own\n\n"
    )
    return text + md_table(["part", "ms"], rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--quick", action="store_true", help="n = 20,000, fewer sweeps (smoke run)")
    ap.add_argument(
        "--skip",
        default="",
        help="comma-separated sections to skip: "
        "d2,d30,wrongk,merge,fromone,chains,mesh,sklearn,profile,callbacks",
    )
    ap.add_argument(
        "--mesh-sweeps",
        type=int,
        default=5,
        help="timed sweeps of the 2-device row of section 1 (0: no such row)",
    )
    ap.add_argument(
        "--xla-sweeps",
        type=int,
        default=5,
        help="timed sweeps of the backend='xla' row of sections 1-2 (0: no such row)",
    )
    ap.add_argument(
        "--rounds",
        type=int,
        default=2,
        help="interleaved timing rounds (sub-cluster, collapsed) of sections d2 and d30",
    )
    ap.add_argument(
        "--int32-rounds",
        type=int,
        default=0,
        help="rounds of int32 against uint8 labels in the callbacks (sections d2 and d30)",
    )
    ap.add_argument("--backends", default="numba,xla", help="backends of the profile section")
    ap.add_argument(
        "--sklearn-n",
        default="100000,1000000",
        help="comma-separated n of the sklearn section (capped at --n)",
    )
    ap.add_argument(
        "--sklearn-sweeps",
        type=int,
        default=100,
        help="sweeps of the sub-cluster chain in the sklearn section",
    )
    ap.add_argument("--label", default="current", help="names the code version in the profile section")
    ap.add_argument(
        "--profile-start",
        default="truth",
        help="states of the profile section: truth (the true partition), chain (the throughput "
        "chain's state), or both comma-separated",
    )
    args = ap.parse_args()
    n = 20_000 if args.quick else args.n
    skip = set(args.skip.split(","))
    sweeps = 10 if args.quick else 30
    out = RESULTS / "subcluster.md"
    load = os.getloadavg()
    head = (
        f"{machine_info()}; load average at start {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
        f"(the 2 cores are shared with other jobs: absolute rates are lower bounds, ratios are "
        f"same-run)\n\n"
    )
    if "d2" not in skip:
        write_section(
            out,
            "subcluster-d2" + ("-quick" if args.quick else ""),
            "## Throughput and mixing, d = 2"
            + (" (smoke run, --quick)" if args.quick else "")
            + "\n\n"
            + head
            + section_throughput(
                n,
                2,
                sweeps,
                3 if args.quick else 5,
                mesh_sweeps=args.mesh_sweeps,
                xla_sweeps=args.xla_sweeps,
                rounds=args.rounds,
                int32_rounds=args.int32_rounds,
            ),
        )
        print(out.read_text())
    if "d30" not in skip:
        n30 = max(n // 10, 10_000)
        write_section(
            out,
            "subcluster-d30" + ("-quick" if args.quick else ""),
            "## Throughput, d = 30\n\n"
            + head
            + section_throughput(
                n30,
                30,
                sweeps // 2,
                2 if args.quick else 3,
                xla_sweeps=min(args.xla_sweeps, 3),
                rounds=args.rounds,
                int32_rounds=args.int32_rounds,
            ),
        )
    if "wrongk" not in skip:
        write_section(
            out,
            "subcluster-wrongk" + ("-quick" if args.quick else ""),
            "## Mixing from a wrong K\n\n" + head + section_wrong_k(min(n, 20_000), sweeps),
        )
    if "merge" not in skip:
        write_section(
            out,
            "subcluster-merge" + ("-quick" if args.quick else ""),
            "## Why merges from a wrong K are rejected\n\n" + head + section_merge_diagnosis(min(n, 20_000)),
        )
    if "fromone" not in skip:
        write_section(
            out,
            "subcluster-fromone" + ("-quick" if args.quick else ""),
            "## Mixing from one cluster\n\n" + head + section_from_one(min(n, 20_000)),
        )
    if "callbacks" not in skip:
        write_section(
            out,
            "subcluster-callbacks" + ("-quick" if args.quick else ""),
            "## The fixed cost of a callback crossing\n\n" + head + section_callbacks(),
        )
    if "chains" not in skip:
        write_section(
            out,
            "subcluster-chains" + ("-quick" if args.quick else ""),
            "## Several chains: one label-block width per sweep\n\n"
            + head
            + section_chains(min(n, 200_000), sweeps=3 if args.quick else 10),
        )
    if "mesh" not in skip:
        write_section(
            out,
            "subcluster-mesh" + ("-quick" if args.quick else ""),
            "## Data parallel over 2 CPU devices (mesh)\n\n"
            + head
            + section_mesh(sorted({min(n, 100_000), n}) if not args.quick else [n]),
        )
    if "profile" not in skip:
        text = "\n\n".join(
            f"### d = {d}, backend {b}, from {st}\n\n"
            + section_profile(nn, d, backend=b, start=st, chain_sweeps=cs)
            for nn, d, cs in ((n, 2, sweeps), (max(n // 10, 10_000), 30, sweeps // 2))
            for b in args.backends.split(",")
            for st in args.profile_start.split(",")
        )
        write_section(
            out,
            "subcluster-profile-" + args.label.split()[0] + ("-quick" if args.quick else ""),
            f"## Where a sweep's time goes (code {args.label})\n\n" + head + text,
        )
    if "sklearn" not in skip:
        write_section(
            out,
            "subcluster-sklearn" + ("-quick" if args.quick else ""),
            "## Time to a stable K vs scikit-learn's DP mixture\n\n"
            + head
            + section_sklearn(
                sorted({min(n, int(v)) for v in args.sklearn_n.split(",")}),
                10 if args.quick else args.sklearn_sweeps,
            ),
        )
    print(out.read_text())


if __name__ == "__main__":
    main()
