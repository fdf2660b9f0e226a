"""Why 10% clean labels barely help CEC-IB and C3L on the benefit panel (issue 20).

Writes results/cecib_beta_study.md.

The panel (``bench_benefit.py``: eight real data sets, every feature standardised, n <= 200 per draw) found
CEC-IB with 10% clean labels and ``beta = 1`` at most 0.05 NMI above plain CEC on 2 of 8 data sets, and
C3L on 4 of 8. This study varies, on the same data, draws, label draws and seeds as the panel:

* CEC-IB (k-means++ start): the label weight ``beta`` in {0.27 (the paper's beta0), 1, 2, 5, 10, 20} and
  the initial number of clusters ``n_clusters`` in {K, 2K} (K = number of classes; the paper starts from
  2K), at 5% and 10% clean labels and at 10% labels of which 20% are wrong; plain CEC (``beta = 0``) is
  the reference.
* the label-seeded start ``init="labels"`` (session 8; session 7 measured a one-run prototype of it with
  as many clusters as label categories): one initial cluster per label category at its labelled points'
  mean, the other seeds by k-means++ given them, ``n_clusters`` in {K, 2K}, beta in {0.27, 1}.
* C3L: the leakage level ``leakage`` in {0.01, 0.05, 0.2}, ``init`` in {"random" (paper), "kmeans++"}
  and ``n_clusters`` in {K, 2K}, on the same label draws; ``init="labels"`` at leakage 0.05.

Besides NMI on all points it records NMI on the *unlabelled* points only and on the labelled points only:
if the label term only relocates the few labelled points, the labelled NMI rises while the unlabelled one
stays at plain CEC's. Values: mean (sd) over draws of the paired (same draw) difference to plain CEC with
the same ``n_clusters``.

Run: ``PYTHONPATH=. python benchmarks/study_cecib_beta.py [--draws 5] [--budget-s 1200]`` (cached in
``results/cecib_beta_study.json``; ``--tables-only`` rewrites the table).
"""

from __future__ import annotations

import json
import time

import numpy as np

from benchmarks._common import (
    RESULTS,
    budget_spent,
    cached_study_main,
    machine_info,
    md_table,
    timed_labels,
    write_result,
)
from benchmarks.bench_benefit import DATASETS, panel_draws, panel_seed
from ppclust import datasets, metrics

N_MAX = 200
SETTINGS = ((0.05, 0.0), (0.10, 0.0), (0.10, 0.2))  # (labelled fraction, label noise)
BETAS = (0.27, 1.0, 2.0, 5.0, 10.0, 20.0)
C3L_CONFIGS = tuple((lk, init, 2) for init in ("random", "kmeans++") for lk in (0.01, 0.05, 0.2)) + (
    (0.05, "random", 1),
    (0.05, "kmeans++", 1),
    (0.05, "labels", 2),
    (0.05, "labels", 1),
)
SEEDED_BETAS = (0.27, 1.0)
CACHE = RESULTS / "cecib_beta_study.json"


def configs():
    """(name, estimator factory(K, seed), needs labels) for every fit of one draw and setting."""
    from ppclust.estimators.c3l import C3L
    from ppclust.estimators.cecib import CECIB

    out = []
    for kf in (1, 2):
        out.append(
            (
                f"CEC k={kf}K",
                lambda K, s, kf=kf: CECIB(kf * K, beta=0.0, random_state=s, progress_bar=False),
                False,
            )
        )
        for b in BETAS:
            out.append(
                (
                    f"CECIB beta={b:g} k={kf}K",
                    lambda K, s, kf=kf, b=b: CECIB(
                        kf * K, beta=b, init="kmeans++", random_state=s, progress_bar=False
                    ),
                    True,
                )
            )
    for kf in (1, 2):
        for b in SEEDED_BETAS:
            out.append(
                (
                    f"CECIB init=labels beta={b:g} k={kf}K",
                    lambda K, s, kf=kf, b=b: CECIB(
                        kf * K, beta=b, init="labels", random_state=s, progress_bar=False
                    ),
                    True,
                )
            )
    for lk, init, kf in C3L_CONFIGS:
        out.append(
            (
                f"C3L leakage={lk:g} init={init} k={kf}K",
                lambda K, s, kf=kf, lk=lk, init=init: C3L(
                    kf * K, leakage=lk, init=init, random_state=s, progress_bar=False
                ),
                True,
            )
        )
    return out


def _fit(factory, K, draw, X, labels):
    return factory(K, draw).fit(X, labels).labels_


def run(args, cache):
    t0 = time.time()
    for draw, data, X, y, K in panel_draws(args.draws, N_MAX):
        for frac, noise in SETTINGS:
            # the panel's label draw for this (draw, level, noise)
            lab = datasets.sample_labels(y, frac, noise, seed=panel_seed(draw, frac, noise))
            lab = lab.astype(np.int64)
            m = lab >= 0
            for name, factory, needs in configs():
                if not needs and (frac, noise) != SETTINGS[0]:
                    continue
                k = f"{data}|{draw}|{name}|{frac:g}|{noise:g}" if needs else f"{data}|{draw}|{name}"
                if k in cache:
                    continue
                if budget_spent(t0, args.budget_s):
                    return
                pred, rec = timed_labels(_fit, factory, K, draw, X, lab if needs else None)
                if pred is not None:
                    rec.update(
                        nmi=metrics.nmi(y, pred),
                        nmi_unl=metrics.nmi(y[~m], pred[~m]),
                        nmi_lab=metrics.nmi(y[m], pred[m]),
                        k=int(len(np.unique(pred))),
                    )
                cache[k] = rec
            print(data, draw, frac, noise, f"{time.time() - t0:.0f}s", flush=True)
            CACHE.write_text(json.dumps(cache, indent=0, sort_keys=True))


def _get(cache, data, draw, name, frac, noise):
    needs = not name.startswith("CEC ")
    r = cache.get(f"{data}|{draw}|{name}|{frac:g}|{noise:g}" if needs else f"{data}|{draw}|{name}")
    return r if r and "error" not in r else None


def tables(args, cache):
    names = [c[0] for c in configs() if c[2]]
    draws = range(args.draws)
    out = [
        "# CEC-IB label weight and C3L settings on the benefit panel (issue 20)",
        "",
        f"Written by `benchmarks/study_cecib_beta.py` (draws={args.draws}, n_max={N_MAX}). {machine_info()}",
        "",
        " ".join(
            [
                "Same data, subsamples, label draws and seeds as `bench_benefit.py`. Each cell: mean over",
                "draws of the paired difference in NMI to plain CEC (CEC-IB with beta = 0, kmeans++ seeding)",
                "with the same initial number of clusters (K or 2K; 2K is the panel's reference), its sd",
                "over draws in brackets; 'unl' = NMI on the unlabelled points only,",
                "'lab' = on the labelled points only; 'k' = mean number of clusters found. The summary",
                "counts the data sets where the mean gain is >= 0.05 (clean labels) or the mean change is",
                ">= -0.02 (20% wrong labels).",
            ]
        ),
        "",
    ]
    for kf in (1, 2):
        rows = []
        for data in DATASETS:
            v = [_get(cache, data, d, f"CEC k={kf}K", 0, 0) for d in draws]
            v = [r for r in v if r]
            if v:
                rows.append(
                    [
                        data,
                        len(v),
                        f"{np.mean([r['nmi'] for r in v]):.3f}",
                        f"{np.mean([r['k'] for r in v]):.1f}",
                    ]
                )
        out += [f"Plain CEC, n_clusters = {kf}K:", "", md_table(["data", "draws", "NMI", "k"], rows), ""]
    summary, detail = [], []
    for name in names:
        kf = 1 if "k=1K" in name else 2
        for frac, noise in SETTINGS:
            rows, n_ok, pooled = [], 0, {"nmi": [], "nmi_unl": [], "nmi_lab": []}
            for data in DATASETS:
                pairs = [
                    (a, b)
                    for d in draws
                    if (a := _get(cache, data, d, name, frac, noise))
                    and (b := _get(cache, data, d, f"CEC k={kf}K", 0, 0))
                ]
                if not pairs:
                    continue
                diff = {m: [a[m] - b[m] for a, b in pairs] for m in pooled}
                for m in pooled:
                    pooled[m] += diff[m]
                g = float(np.mean(diff["nmi"]))
                n_ok += (g >= 0.05) if noise == 0 else (g >= -0.02)
                rows.append(
                    [
                        data,
                        len(pairs),
                        f"{g:+.3f} ({np.std(diff['nmi']):.3f})",
                        f"{np.mean(diff['nmi_unl']):+.3f}",
                        f"{np.mean(diff['nmi_lab']):+.3f}",
                        f"{np.mean([a['k'] for a, _ in pairs]):.1f}",
                    ]
                )
            summary.append(
                [
                    name,
                    f"{frac:.0%}",
                    f"{noise:.0%}",
                    len(rows),
                    *(f"{np.mean(v):+.3f}" if v else "-" for v in pooled.values()),
                    n_ok,
                    "gain >= 0.05" if noise == 0 else "change >= -0.02",
                ]
            )
            if rows:
                detail += [
                    f"### {name}, {frac:.0%} labelled, {noise:.0%} wrong",
                    "",
                    md_table(["data", "draws", "NMI - CEC (sd)", "unl", "lab", "k"], rows),
                    "",
                ]
    out += [
        "## Summary (data sets out of 8 where the goal holds)",
        "",
        md_table(
            [
                "setting",
                "labelled",
                "label noise",
                "data sets",
                "mean NMI - CEC (all draws)",
                "unl",
                "lab",
                "goal holds on",
                "goal",
            ],
            summary,
        ),
        "",
    ]
    out += ["## Per data set", "", *detail]
    write_result("cecib_beta_study.md", "\n".join(out))


def main(argv=None):
    cached_study_main(argv, __doc__, CACHE, run, tables, draws=5, budget_s=1200.0)


if __name__ == "__main__":
    main()
