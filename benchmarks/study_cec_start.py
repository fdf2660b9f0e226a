"""Why plain CEC collapses on satimage, why C3L with labels can lose to plain CEC, and what wrong labels do
to CEC-IB / C3L on the benefit panel (issue 20, session 9). Writes results/cec_start_study.md.

Same data, subsamples (``bench_benefit.panel_sample``), label draws (``panel_seed``) and seeds as the panel
(n <= 200 per draw, every feature standardised). Questions and the settings that answer them:

* **Initial number of clusters against the size rule.** A CEC cluster with an ML covariance needs
  ``min_size = max(eps * n, d + 2)`` points (CEC-IB; C3L: ``card_min = max(ceil(0.05 n), d_r + 3)``), or it is
  deleted. The panel starts from 2K clusters; on satimage (n = 200, d = 36, K = 6) that is 12 clusters of
  ~17 points where every cluster needs 38: no initial cluster can exist, the engine falls back to one
  cluster. ``cap`` = ``floor(n / min_size)``, the largest number of clusters whose *average* size meets the
  rule; the setting "cap" starts from ``min(2K, cap)`` clusters (the same as 2K where the cap does not bind:
  iris, wine, breast_cancer, vehicle).
* **The start of labelled runs.** CEC-IB and C3L from the label-seeded start ("labels") and from
  k-means++ ("km"), and "pick": of the two fits (same seed), the one with the lower final cost -- the
  method's own objective decides which start to trust, with no per-data-set choice.
* **C3L's model:** C3L with ``leakage=0.5`` (the constraint off) is its product model alone -- a 1-D
  Gaussian along each hyperplane normal (one hyperplane for two categories, one per category beyond:
  ``J`` of them, not orthogonal) times a Gaussian on the complement -- against plain CEC's full
  covariances: where it loses with the constraint off, the constraint and the start are not the cause.
* **Sample size:** on the four sets where 10% labels gain least at n = 200 (digits, segment, satimage,
  penbased: K = 6-10 classes, d = 10-36, so a class holds about as many points as a full covariance needs),
  plain CEC and CEC-IB at the defaults (capped 2K start, ``init="auto"``) with n = 600 per draw, 3 draws
  (the same subsample rule with ``n_max = 600``): whether the gain grows with the points per class.
* **Wrong labels:** 10% labels of which 20% are wrong, against 10% clean and 5% clean; CEC-IB also with the
  paper's beta0 = 0.27 (Example 4.1, its choice for noisy labels) and with ``label_noise`` (beta times the
  share of a label's information that survives a flip channel, ``sideinfo.label_channel_information``):
  the true rate 0.2 (on clean labels too: a user who overstates the noise) and ``"auto"`` (the rate read
  off a first fit's partition, ``label_noise_``, mean in the table).

Values: mean (sd) over draws of the paired (same draw) difference in NMI to plain CEC with the panel's
2K start ("CEC 2K"; the panel's 'none' point) and, in the second column, to plain CEC with the capped
start ("CEC cap").

Run: ``PYTHONPATH=. python benchmarks/study_cec_start.py [--draws 5] [--budget-s 1500]`` (cached in
``results/cec_start_study.json``; ``--tables-only`` rewrites the table).
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
from benchmarks.bench_benefit import DATASETS, panel_draws, panel_sample, panel_seed
from ppclust import datasets, metrics

N_MAX = 200
SETTINGS = ((0.05, 0.0), (0.10, 0.0), (0.10, 0.2))  # (labelled fraction, label noise)
CACHE = RESULTS / "cec_start_study.json"


def caps(n, d, n_cat):
    """(CEC-IB cap, C3L cap): floor(n / minimum cluster size) of each method's default size rule."""
    from ppclust.inference import c3l, cecib

    J = 1 if n_cat <= 2 else n_cat  # C3L: one hyperplane for two categories, one per category beyond
    return int(n // cecib.min_size(n, d, 0.05)), int(n // c3l.min_size(n, d - J))


def configs(K, n, d, n_cat):
    """(name, factory(seed)) of every labelled fit; the n_clusters each start uses."""
    from ppclust.estimators.c3l import C3L
    from ppclust.estimators.cecib import CECIB

    cap_ib, cap_c3l = caps(n, d, n_cat)
    ks = {"2K": 2 * K, "cap": min(2 * K, cap_ib)}
    ks3 = {"2K": 2 * K, "cap": min(2 * K, cap_c3l)}
    out = []
    for tag, k in ks.items():
        for init in ("labels", "kmeans++"):
            out.append((f"CECIB {init} {tag}", lambda s, k=k, init=init: CECIB(
                k, beta=1.0, init=init, random_state=s, progress_bar=False)))
        out.append((f"CECIB labels beta=0.27 {tag}", lambda s, k=k: CECIB(
            k, beta=0.27, init="labels", random_state=s, progress_bar=False)))
    # the labels start scored by plain CEC's cost (beta = 0): "CECIB cecpick cap" below takes the labels
    # start's beta = 1 fit when this fit's cost is below plain CEC's from k-means++ ("CEC cap"), else the
    # k-means++ start's beta = 1 fit
    out.append(("CEC labels cap", lambda s, k=ks["cap"]: CECIB(
        k, beta=0.0, init="labels", random_state=s, progress_bar=False)))
    k = ks["cap"]  # label_noise: beta times the label channel's information (given rate, or learnt)
    for ln in ("auto", 0.2):
        out.append((f"CECIB labels label_noise={ln} cap", lambda s, k=k, ln=ln: CECIB(
            k, beta=1.0, init="labels", label_noise=ln, random_state=s, progress_bar=False)))
    for tag, k in ks3.items():
        for init in ("labels", "kmeans++"):
            out.append((f"C3L {init} {tag}", lambda s, k=k, init=init: C3L(
                k, init=init, random_state=s, progress_bar=False)))
    # C3L without its leakage constraint (>= 0.5 disables it): its product model alone (the hyperplanes'
    # 1-D Gaussians times the complement's), against plain CEC's full covariances
    out.append(("C3L kmeans++ leakage=0.5 cap", lambda s, k=ks3["cap"]: C3L(
        k, leakage=0.5, init="kmeans++", random_state=s, progress_bar=False)))
    return out, ks


def _fit(est, X, lab, y):
    """The cache record of one fit (``timed_labels``): its NMI against the classes ``y``, cost, number of
    clusters and learnt flip rate."""
    pred, rec = timed_labels(lambda: est.fit(X, lab).labels_)
    if pred is not None:
        rec.update(nmi=metrics.nmi(y, pred), cost=float(est.cost_), k=int(est.n_clusters_))
        if hasattr(est, "label_noise_"):
            rec["label_noise"] = float(est.label_noise_)
    return rec


def run(args, cache):
    from ppclust.estimators.cecib import CECIB

    t0 = time.time()
    for draw, data, X, y, _K in panel_draws(args.draws, N_MAX):
        n, d = X.shape
        K = int(y.max()) + 1
        cap_ib, _ = caps(n, d, K)
        for tag, k in {"2K": 2 * K, "cap": min(2 * K, cap_ib)}.items():
            key = f"{data}|{draw}|CEC {tag}"
            if key not in cache:
                rec = _fit(CECIB(k, beta=0.0, random_state=draw, progress_bar=False), X, None, y)
                cache[key] = rec if "error" in rec else dict(rec, n_clusters=k)
        for frac, noise in SETTINGS:
            lab = datasets.sample_labels(y, frac, noise, seed=panel_seed(draw, frac, noise))
            lab = lab.astype(np.int64)
            n_cat = len(np.unique(lab[lab >= 0]))
            todo, _ = configs(K, n, d, n_cat)
            for name, factory in todo:
                key = f"{data}|{draw}|{name}|{frac:g}|{noise:g}"
                if key in cache:
                    continue
                if budget_spent(t0, args.budget_s):
                    return
                cache[key] = _fit(factory(draw), X, lab, y)
            print(data, draw, frac, noise, f"{time.time() - t0:.0f}s", flush=True)
            CACHE.write_text(json.dumps(cache, indent=0, sort_keys=True))
    run_large(cache, t0, args.budget_s)


LARGE = ("digits", "segment", "satimage", "penbased")
N_LARGE, DRAWS_LARGE = 600, 3


def run_large(cache, t0, budget_s):
    """Plain CEC and CEC-IB (defaults, 10% clean labels) at n = N_LARGE on the sets in LARGE."""
    from ppclust.estimators.cecib import CECIB

    for draw in range(DRAWS_LARGE):
        for data in LARGE:
            X, y = panel_sample(data, N_LARGE, draw)
            K = int(y.max()) + 1
            lab = datasets.sample_labels(y, 0.1, 0.0, seed=panel_seed(draw, 0.1, 0.0)).astype(np.int64)
            for name, labels, beta in (("CEC", None, 0.0), ("CECIB", lab, 1.0)):
                key = f"n{N_LARGE}|{data}|{draw}|{name}"
                if key in cache or time.time() - t0 > budget_s:
                    continue
                est = CECIB(2 * K, beta=beta, random_state=draw, progress_bar=False)
                cache[key] = _fit(est, X, labels, y)
            print(f"n={N_LARGE}", data, draw, f"{time.time() - t0:.0f}s", flush=True)
            CACHE.write_text(json.dumps(cache, indent=0, sort_keys=True))


def _get(cache, key):
    r = cache.get(key)
    return r if r and "error" not in r else None


def _value(cache, data, draw, name, frac, noise):
    """NMI of a config; 'pick' configs take the lower-cost fit of the labels and k-means++ starts."""
    if " cecpick " in name:
        a = _get(cache, f"{data}|{draw}|CEC labels cap|{frac:g}|{noise:g}")
        b = _get(cache, f"{data}|{draw}|CEC cap")
        if a is None or b is None:
            return None
        start = "labels" if a["cost"] <= b["cost"] else "kmeans++"  # as CECIB(init="auto")
        return _get(cache, f"{data}|{draw}|{name.replace(' cecpick ', f' {start} ')}|{frac:g}|{noise:g}")
    if " pick " in name:
        a = _get(cache, f"{data}|{draw}|{name.replace(' pick ', ' labels ')}|{frac:g}|{noise:g}")
        b = _get(cache, f"{data}|{draw}|{name.replace(' pick ', ' kmeans++ ')}|{frac:g}|{noise:g}")
        if a is None or b is None:
            return None
        return a if a["cost"] <= b["cost"] else b
    return _get(cache, f"{data}|{draw}|{name}|{frac:g}|{noise:g}")


NAMES = tuple(f"{m} {s} {t}" for t in ("2K", "cap") for m in ("CECIB", "C3L")
              for s in ("labels", "kmeans++", "pick")) + ("CECIB labels beta=0.27 2K",
                                                           "CECIB labels beta=0.27 cap",
                                                           "CECIB labels label_noise=auto cap",
                                                           "CECIB labels label_noise=0.2 cap",
                                                           "CECIB cecpick cap",
                                                           "C3L kmeans++ leakage=0.5 cap")


def tables(args, cache):
    draws = range(args.draws)
    out = ["# CEC start, cluster-size rule and wrong labels on the benefit panel (issue 20, session 9)", "",
           f"Written by `benchmarks/study_cec_start.py` (draws={args.draws}, n_max={N_MAX}). "
           f"{machine_info()}",
           "", "See the script's docstring for the question and the settings. 'cap' = floor(n / minimum "
           "cluster size) of the method's size rule; a 'cap' start uses min(2K, cap) initial clusters. "
           "'pick' = of the labels-start and k-means++-start fits (same seed), the one with the lower final "
           "cost. Cells: mean (sd) over draws of the paired NMI difference to plain CEC from 2K clusters "
           "(the panel's 'none') | to plain CEC from the capped start.", ""]
    rows = []
    for data in DATASETS:
        a = [_get(cache, f"{data}|{d}|CEC 2K") for d in draws]
        b = [_get(cache, f"{data}|{d}|CEC cap") for d in draws]
        a, b = [r for r in a if r], [r for r in b if r]
        if a and b:
            rows.append([data, len(a), b[0]["n_clusters"], f"{np.mean([r['nmi'] for r in a]):.3f}",
                         f"{np.mean([r['k'] for r in a]):.1f}", f"{np.mean([r['nmi'] for r in b]):.3f}",
                         f"{np.mean([r['k'] for r in b]):.1f}"])
    out += ["## Plain CEC (beta = 0): 2K initial clusters against the capped start", "",
            md_table(["data", "draws", "capped n_clusters (draw 0)", "NMI 2K", "k 2K", "NMI cap", "k cap"],
                     rows), ""]
    rows = []
    for data in LARGE:
        pairs = [(a, b) for d in range(DRAWS_LARGE) if (a := _get(cache, f"n{N_LARGE}|{data}|{d}|CECIB"))
                 and (b := _get(cache, f"n{N_LARGE}|{data}|{d}|CEC"))]
        small = [(a, b) for d in range(DRAWS_LARGE)
                 if (a := _value(cache, data, d, "CECIB cecpick cap", 0.1, 0.0))
                 and (b := _get(cache, f"{data}|{d}|CEC cap"))]
        if pairs and small:
            g = [a["nmi"] - b["nmi"] for a, b in pairs]
            g0 = [a["nmi"] - b["nmi"] for a, b in small]
            rows.append([data, len(pairs), f"{np.mean([b['nmi'] for _, b in pairs]):.3f}",
                         f"{np.mean([a['nmi'] for a, _ in pairs]):.3f}",
                         f"{np.mean(g):+.3f} ({np.std(g):.3f})", f"{np.mean(g0):+.3f}"])
    if rows:
        out += [f"## Sample size: CEC-IB's gain with 10% clean labels at n = {N_LARGE} (defaults)", "",
                md_table(["data", "draws", f"CEC NMI (n={N_LARGE})", f"CEC-IB NMI (n={N_LARGE})",
                          f"gain n={N_LARGE} (sd)", f"gain n={N_MAX}, same draws"], rows), ""]
    summary, detail = [], []
    for name in NAMES:
        for frac, noise in SETTINGS:
            rows, ok = [], [0, 0]
            pooled = [[], []]
            for data in DATASETS:
                diffs, flips = [[], []], []
                for d in draws:
                    v = _value(cache, data, d, name, frac, noise)
                    refs = (_get(cache, f"{data}|{d}|CEC 2K"), _get(cache, f"{data}|{d}|CEC cap"))
                    if v is None or None in refs:
                        continue
                    for i, r in enumerate(refs):
                        diffs[i].append(v["nmi"] - r["nmi"])
                    if "label_noise" in v:
                        flips.append(v["label_noise"])
                if not diffs[0]:
                    continue
                cells = []
                for i in (0, 1):
                    g = float(np.mean(diffs[i]))
                    ok[i] += (g >= 0.05) if noise == 0 else (g >= -0.02)
                    pooled[i] += diffs[i]
                    cells.append(f"{g:+.3f} ({np.std(diffs[i]):.3f})")
                rows.append([data, len(diffs[0]), *cells, f"{np.mean(flips):.3f}" if flips else "-"])
            if not rows:
                continue
            summary.append([name, f"{frac:.0%}", f"{noise:.0%}", len(rows),
                            f"{np.mean(pooled[0]):+.3f} / {np.mean(pooled[1]):+.3f}", f"{ok[0]} / {ok[1]}",
                            "gain >= 0.05" if noise == 0 else "change >= -0.02"])
            detail += [f"### {name}, {frac:.0%} labelled, {noise:.0%} wrong", "",
                       md_table(["data", "draws", "NMI - CEC 2K (sd)", "NMI - CEC cap (sd)",
                                 "label_noise_ (mean)"], rows), ""]
    out += ["## Summary (data sets out of 8 where the goal holds; vs CEC 2K / vs CEC cap)", "",
            md_table(["setting", "labelled", "wrong", "data sets", "mean NMI change", "goal holds on",
                      "goal"], summary), "", "## Per data set", "", *detail]
    write_result("cec_start_study.md", "\n".join(out))


def main(argv=None):
    cached_study_main(argv, __doc__, CACHE, run, tables, draws=5, budget_s=1500.0)


if __name__ == "__main__":
    main()
