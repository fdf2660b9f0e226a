"""RDP-means defaults on standardised data (issue 20) -> results/rdpmeans_defaults_study.md.

``ppclust demo`` found 8 clusters on 3-class standardised wine with ``RDPMeans()``: the authors' lambda rule
(squared distance of the 3rd-farthest row from the mean) with the authors' start (a random point of the
bounding box, ``init="bbox_random"``), and the benefit panel found RDP-means below its no-link result
by more than 0.02 NMI at 20% link noise on 5 of 8 data sets. On the panel's data, draws, link draws and
seeds (``bench_benefit.py``: n <= 200, every feature standardised) this study compares:

* the start: ``bbox_random`` (authors) and ``mean`` (one cluster at the global mean: Kulis & Jordan 2012,
  Algorithm 1, the DP-means algorithm itself);
* lambda: the authors' k = 3 rule, and k = 1 (the farthest row: no row can open a cluster from the
  global-mean start in the first pass);
* the link weight's cap ``xi_max``: the default 1e12 (links become hard constraints as xi doubles every
  sweep) and ``xi_max = lam`` (one broken link never costs more than opening a new cluster, so the
  annealing cannot make a wrong link override the geometry by more than one cluster's price), and
  ``xi_max = lam / (links per point)`` (all links of an average point together never outweigh a new
  cluster).

Settings: no links, 3 clean pairs per point, 3 pairs per point with 20% of signs flipped. Reported: NMI
and the number of clusters (mean (sd) over draws), the gain at the clean budget and the change at 20%
noise against the same configuration without links (paired per draw), and how many of 8 data sets meet
the issue's goals (gain >= 0.05, change >= -0.02).

Run: ``PYTHONPATH=. python benchmarks/study_rdpmeans_defaults.py [--draws 3] [--budget-s 900]``
(cache ``results/rdpmeans_defaults_study.json``; ``--tables-only`` rewrites the table).
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
    study_row,
    timed_labels,
    write_result,
)
from benchmarks.bench_benefit import DATASETS, _ms, panel_draws, panel_seed
from ppclust import datasets, metrics

N_MAX = 200
SETTINGS = ((0.0, 0.0), (3.0, 0.0), (3.0, 0.2))  # (pairs per point, link noise)
CONFIGS = {  # name -> (init, lam_k, cap xi at lam)
    "authors: bbox_random, lam_k=3": ("bbox_random", 3, False),
    "mean, lam_k=3": ("mean", 3, False),
    "mean, lam_k=3, xi_max=lam": ("mean", 3, True),
    "mean, lam_k=1": ("mean", 1, False),
    "mean, lam_k=1, xi_max=lam": ("mean", 1, True),
    "bbox_random, lam_k=3, xi_max=lam": ("bbox_random", 3, True),
    "mean, lam_k=3, xi_max=lam/links per point": ("mean", 3, "per-link"),
    "bbox_random, lam_k=3, xi_max=lam/links per point": ("bbox_random", 3, "per-link"),
}
CACHE = RESULTS / "rdpmeans_defaults_study.json"


def make(name, X, seed, n_links=0):
    from ppclust.estimators.dpmeans import RDPMeans
    from ppclust.inference import dpmeans as _dp

    init, lam_k, cap = CONFIGS[name]
    lam = _dp.lambda_from_k(X, lam_k, "kth_farthest_from_mean", "sqeuclidean")
    kw = {}
    if cap == "per-link":  # the links of an average point together never outweigh a new cluster
        kw = dict(xi_max=lam / max(2.0 * n_links / len(X), 1.0))
    elif cap:
        kw = dict(xi_max=lam)
    return RDPMeans(lam_k=lam_k, init=init, random_state=seed, **kw)


def _fit(name, X, draw, side):
    kw = dict(must_link=side.must_link, cannot_link=side.cannot_link) if side else {}
    return make(name, X, draw, side.n_links if side else 0).fit(X, **kw).labels_


def run(args, cache):
    t0 = time.time()
    for draw, data, X, y, _K in panel_draws(args.draws, N_MAX):
        n = len(y)
        for level, noise in SETTINGS:
            side = None
            if level > 0:  # the panel's link draw for this (draw, level, noise)
                side = datasets.sample_links(y, int(round(level * n)), noise,
                                             seed=panel_seed(draw, level, noise))
            for name in CONFIGS:
                k = f"{data}|{draw}|{name}|{level:g}|{noise:g}"
                if k in cache:
                    continue
                if budget_spent(t0, args.budget_s):
                    return
                pred, rec = timed_labels(_fit, name, X, draw, side)
                if pred is not None:
                    rec.update(nmi=metrics.nmi(y, pred), k=int(len(np.unique(pred))))
                cache[k] = rec
        print(data, draw, f"{time.time() - t0:.0f}s", flush=True)
        CACHE.write_text(json.dumps(cache, indent=0, sort_keys=True))


def tables(args, cache):
    draws = range(args.draws)
    out = ["# RDP-means defaults on the benefit panel (issue 20)", "",
           f"Written by `benchmarks/study_rdpmeans_defaults.py` (draws={args.draws}, n_max={N_MAX}). "
           f"{machine_info()}", "",
           " ".join([
               "Same data, subsamples, link draws and seeds as `bench_benefit.py`. NMI / k: mean (sd) over",
               "draws; gain: mean paired difference (3 clean pairs per point minus no links); noise change:",
               "3 pairs per point with 20% of signs flipped minus no links."]), ""]
    summary = []
    for name in CONFIGS:
        rows, n_gain, n_noise, n_all, ks, pooled = [], 0, 0, 0, [], {st: [] for st in SETTINGS}
        for data in DATASETS:
            recs = {s: [study_row(cache, data, d, name, *s) for d in draws] for s in SETTINGS}
            none, clean, noisy = (recs[s] for s in SETTINGS)
            gains = [c["nmi"] - a["nmi"] for a, c in zip(none, clean, strict=True) if a and c]
            drops = [c["nmi"] - a["nmi"] for a, c in zip(none, noisy, strict=True) if a and c]
            if not gains or not drops:
                continue
            n_all += 1
            for st in SETTINGS:
                pooled[st] += [r["nmi"] for r in recs[st] if r]
            n_gain += np.mean(gains) >= 0.05
            n_noise += np.mean(drops) >= -0.02
            k0 = [a["k"] for a in none if a]
            ks.append(np.mean(k0))
            rows.append([data, len(gains), "{:.3f} ({:.3f})".format(*_ms([a["nmi"] for a in none if a])),
                         f"{np.mean(k0):.1f}",
                         "{:.3f}".format(np.mean([c["nmi"] for c in clean if c])),
                         "{:.1f}".format(np.mean([c["k"] for c in clean if c])),
                         f"{np.mean(gains):+.3f} ({np.std(gains):.3f})",
                         f"{np.mean(drops):+.3f} ({np.std(drops):.3f})",
                         "{:.1f}".format(np.mean([c["k"] for c in noisy if c]))])
        if rows:
            out += [f"## {name}", "", md_table(["data", "draws", "NMI no links", "k no links", "NMI clean",
                                                "k clean", "gain (sd)", "change at 20% noise (sd)",
                                                "k 20% noise"], rows), ""]
            summary.append([name, n_all, n_gain, n_noise, f"{np.mean(ks):.1f}",
                            *(f"{np.mean(pooled[st]):.3f}" for st in SETTINGS)])
    out[6:6] = ["## Summary", "", md_table(["configuration", "data sets", "gain >= 0.05 (goal >= 6)",
                                             "20% noise >= -0.02", "mean k without links",
                                             "mean NMI: no links", "3 clean pairs/point",
                                             "3 pairs/point, 20% flipped"], summary), ""]
    write_result("rdpmeans_defaults_study.md", "\n".join(out))


def main(argv=None):
    cached_study_main(argv, __doc__, CACHE, run, tables, draws=3, budget_s=900.0)


if __name__ == "__main__":
    main()
