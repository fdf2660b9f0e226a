# ruff: noqa: E501  (notebook cell sources)
"""Generate notebooks/side_information_benefit.ipynb (run from the repository root, outputs not stored)."""

import nbformat as nbf

nb = nbf.v4.new_notebook()
md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
nb.cells = [
md("""# Does side information help? The benefit panel

A user gives links or a few labels because they expect a better clustering. This notebook shows, on eight
real data sets no one here tuned to, how NMI moves with the amount of side information for every ppclust
method that takes it, next to peers on the same draws:

* **links** (random pairs, `m` pairs per point): TVClust, RDP-means, SMIC; peers gemclus (SMIC's peer,
  first draw only), PCKMeans, MPCKMeans, COP-KMeans (`active-semi-supervised-clustering`, given the true K);
* **partial labels** (a labelled fraction): SemiSupervisedGMM, CEC-IB, C3L; peer scikit-learn's
  LabelSpreading;
* dotted lines: scikit-learn's GaussianMixture (true K) and BayesianGaussianMixture without side information.

The curves come from `benchmarks/bench_benefit.py` (five random draws per data set, each a subsample of at
most 200 points, a side-information draw and a seed; its JSON cache `benchmarks/results/benefit_cache.json`,
keyed by the hash of every estimator parameter; protocol in the script's docstring, tables and goals in
`benchmarks/results/benefit.md`). The last section
refits a small piece live. Small settings by default; `PPCLUST_NOTEBOOK_FULL=1` adds a live TVClust curve."""),
code("""import json
import os
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import ppclust
from ppclust import datasets, metrics
from ppclust.plot import plot_benefit
from benchmarks import bench_benefit as bb

FULL = os.environ.get("PPCLUST_NOTEBOOK_FULL") == "1"
ROOT = Path(bb.__file__).resolve().parent
cache = json.loads((ROOT / "results" / "benefit_cache.json").read_text())
bb.CFG.update(n_max=200, quick=False)  # the panel's settings: part of every cache key
DRAWS = 1 + max(int(k.split("|")[1]) for k in cache)
names = [d for d in bb.DATASETS if any(k.startswith(d + "|") for k in cache)]
print(f"{len(cache)} cached fits, {DRAWS} draw(s), data sets: {names}")
T0 = time.perf_counter()"""),
md("""## NMI against the amount of clean side information

One row per data set: links on the left, labels on the right (mean over the cached draws, error bars = one
standard deviation over the draws)."""),
code("""def curves(ax, data, methods, levels, xlabel):
    scores = {}
    for m in methods:
        _, vals = bb.series(cache, data, m, 0.0, "nmi", DRAWS)
        if any(not v for v in vals[1:]):
            continue
        vals[0] = vals[0] or [np.nan] * len(vals[1])
        w = max(len(v) for v in vals)  # levels with fewer draws: NaN-padded, means over those present
        scores[m] = np.array([list(v) + [np.nan] * (w - len(v)) for v in vals])
    refs = {}
    for m in bb.REFERENCES:
        v = [cache.get(bb.key(data, d, m, 0.0, 0.0)) for d in range(DRAWS)]
        v = [r["nmi"] for r in v if r and "error" not in r]
        if v:
            refs[m] = float(np.mean(v))
    if scores:
        plot_benefit((0.0, *levels), scores, ax=ax, xlabel=xlabel, title=data, baseline=refs, errorbars=True)

fig, axes = plt.subplots(len(names), 2, figsize=(10, 3.2 * len(names)), squeeze=False)
for row, data in zip(axes, names):
    curves(row[0], data, bb.LINK_METHODS, bb.LINK_LEVELS, "pairs per point")
    curves(row[1], data, bb.LABEL_METHODS, bb.LABEL_LEVELS, "labelled fraction")
fig.tight_layout()"""),
md("""## The issue's goals, per method

Gain = NMI at the largest clean budget minus NMI without side information (mean over draws of the same-draw
differences, their sd in brackets); "monotone" = the clean mean curve never drops by more than the
draw-to-draw spread (at least 0.01); "noise" = at 20% noise the method stays within 0.02 NMI of its
no-side-information result."""),
code("""rows, summary = bb.goals(cache, names, DRAWS)
print(f"{'method':18s} {'data':14s} {'none':>6s} {'max':>6s} {'gain (sd)':>15s} {'mono':>5s} {'20% noise (sd)':>15s}")
for r in rows:
    print(f"{r[0]:18s} {r[1]:14s} {r[3]:>6s} {r[4]:>6s} {r[5]:>15s} {r[8]:>5s} {r[9]:>15s}")
print()
for m, (n, mono, gain, noise) in summary.items():
    print(f"{m:18s}: gain >= 0.05 on {gain} of {n} data sets, monotone on {mono}, 20%-noise goal on {noise}")"""),
md("""## Gain at the largest budget, all methods side by side"""),
code("""fig, ax = plt.subplots(figsize=(9, 3.4))
methods = [m for m in (*bb.LINK_METHODS, *bb.LABEL_METHODS) if m != "LabelSpreading"]
width = 0.8 / len(methods)
for j, m in enumerate(methods):
    gains = []
    for data in names:
        _, vals = bb.series(cache, data, m, 0.0, "nmi", DRAWS)
        gains.append(np.mean(vals[-1]) - np.mean(vals[0]) if vals[0] and vals[-1] else np.nan)
    ax.bar(np.arange(len(names)) + j * width, gains, width, label=m)
ax.axhline(0.05, color="grey", ls=":", lw=0.8)
ax.axhline(0.0, color="black", lw=0.6)
ax.set_xticks(np.arange(len(names)) + 0.4 - width / 2, names, fontsize=8)
ax.set_ylabel("NMI gain (max budget - none)")
ax.legend(fontsize=7, ncol=3)"""),
md("""## Live: partial labels on iris

A small re-run (one draw) of the semi-supervised GMM (and CEC-IB in full mode) on standardised iris, so the notebook shows the
estimators at work and not only a cache."""),
code("""X, y = datasets.load("iris")
X = (X - X.mean(0)) / X.std(0)
fracs = [0.0, 0.05, 0.1, 0.2]
live = {"SemiSupervisedGMM": []} | ({"CECIB": []} if FULL else {})
for f in fracs:
    lab = datasets.sample_labels(y, f, seed=1) if f > 0 else None
    live["SemiSupervisedGMM"].append(metrics.nmi(y, ppclust.SemiSupervisedGMM(3, random_state=0).fit(X, lab).labels_))
    if FULL:
        live["CECIB"].append(metrics.nmi(y, ppclust.CECIB(6, n_init=3, random_state=0).fit(X, lab).labels_))
ax = plot_benefit(fracs, live, xlabel="labelled fraction", title="iris, live (one draw)")
print({m: np.round(v, 3).tolist() for m, v in live.items()})"""),
md("""## Why TVClust over-split: the prior study

`benchmarks/study_tvclust_prior.py` changes one prior setting at a time on the panel's first draw. With the
mean prior of spec 2.8 (kappa0 = 1) the DP split standardised wine (3 classes) into 16 clusters without
links; Fraley & Raftery's kappa0 = 0.01 (the default since session 6) charges every extra cluster
(d/2) ln 100 more and gives 7. Sampling alpha and a data-covariance Psi0 did not help."""),
code("""study = json.loads((ROOT / "results" / "tvclust_prior_study.json").read_text())
fig, ax = plt.subplots(figsize=(8, 3.2))
data_sets = [d for d in ("wine", "digits", "segment", "iris", "breast_cancer", "vehicle")
             if f"{d}|0|default" in study]
for j, prior in enumerate(("default", "kappa0=0.01", "kappa0=0.01+link_noise=0.1")):
    ks = [study.get(f"{d}|0|{prior}", {}).get("k_mean", np.nan) for d in data_sets]
    ax.bar(np.arange(len(data_sets)) + 0.27 * j, ks, 0.27,
           label={"default": "kappa0 = 1 (old default)"}.get(prior, prior))
truth = {"wine": 3, "digits": 10, "segment": 7, "iris": 3, "breast_cancer": 2, "vehicle": 4}
ax.scatter(np.arange(len(data_sets)) + 0.27, [truth.get(d, np.nan) for d in data_sets], color="black",
           marker="_", s=300, label="classes", zorder=3)
ax.set_xticks(np.arange(len(data_sets)) + 0.27, data_sets, fontsize=8)
ax.set_ylabel("mean K over draws, no links")
ax.legend(fontsize=7)"""),
md("""## Why labels help CEC-IB little: the label-weight study

`benchmarks/study_cecib_beta.py` refits CEC-IB on the panel's draws with the label weight beta from the
paper's beta0 = 0.27 to 20 (= 1 / labelled share at 5%) and 1K or 2K initial clusters. Labels enter the cost
only through the label entropy of each cluster's *labelled* points; moving those few points into clusters
where their label is the majority zeroes that term, after which no unlabelled point feels the labels.
So a larger beta moves the labelled points, not the partition: with 2K initial clusters the NMI of the
labelled points rises while the gain over plain CEC on the unlabelled points (dashed) stays small at every
beta, and the largest betas (1 / labelled share) lose NMI. beta = 1 (Theorem 4.1) is the default at every
budget. What does help is where the Hartigan moves start: the label-seeded start (`init="labels"`, the
default `init="auto"` when labels are given since session 8: one initial cluster per labelled class at its
labelled points' mean, the other seeds by k-means++ given them) gains more than any beta, because the labels
then pick the basin instead of only relocating themselves (printed below). For C3L the start matters too:
k-means++ seeds instead of the paper's random partition (whose means all start near the hyperplane) give a
much larger gain; the label-seeded start adds a little at 10% labels and loses a little at 5%, so C3L keeps
k-means++ as its default (printed below)."""),
code("""from benchmarks import study_cecib_beta as sc

beta_study = json.loads((ROOT / "results" / "cecib_beta_study.json").read_text())
SD = 1 + max(int(k.split("|")[1]) for k in beta_study)  # the study's draws
fig, axes = plt.subplots(1, 2, figsize=(10.4, 3.4))
for ax, (frac, noise) in zip(axes, ((0.10, 0.0), (0.10, 0.2)), strict=True):
    for kf, colour in ((1, "C0"), (2, "C1")):
        for metric, ls in (("nmi", "-"), ("nmi_unl", "--")):
            means = []
            for b in sc.BETAS:
                diffs = [a[metric] - c[metric] for data in sc.DATASETS for d in range(SD)
                         if (a := sc._get(beta_study, data, d, f"CECIB beta={b:g} k={kf}K", frac, noise))
                         and (c := sc._get(beta_study, data, d, f"CEC k={kf}K", 0, 0))]
                means.append(np.mean(diffs) if diffs else np.nan)
            ax.plot(sc.BETAS, means, ls, color=colour, marker="o", ms=3,
                    label=f"{kf}K clusters, {'all points' if metric == 'nmi' else 'unlabelled only'}")
    ax.axhline(0, color="black", lw=0.6)
    ax.set_xscale("log")
    ax.set_xlabel("beta")
    ax.set_ylabel("NMI - plain CEC (mean over 8 sets x draws)")
    ax.set_title(f"CEC-IB, {frac:.0%} labels, {noise:.0%} wrong")
axes[0].legend(fontsize=7)
fig.tight_layout()
c3l = {}
for init in ("random", "kmeans++", "labels"):
    c3l[init] = np.mean([a["nmi"] - c["nmi"] for data in sc.DATASETS for d in range(SD)
                         if (a := sc._get(beta_study, data, d, f"C3L leakage=0.05 init={init} k=2K", 0.1, 0.0))
                         and (c := sc._get(beta_study, data, d, "CEC k=2K", 0, 0))])
print("C3L (leakage 0.05, 2K), 10% clean labels, mean NMI gain over plain CEC:",
      {k: round(float(v), 3) for k, v in c3l.items()})
for name in ("CECIB beta=1 k=2K", "CECIB init=labels beta=1 k=2K"):
    gain = np.mean([a["nmi"] - c["nmi"] for data in sc.DATASETS for d in range(SD)
                    if (a := sc._get(beta_study, data, d, name, 0.1, 0.0))
                    and (c := sc._get(beta_study, data, d, "CEC k=2K", 0, 0))])
    print(f"{name}, 10% clean labels, mean NMI gain over plain CEC: {gain:+.3f}")"""),
md("""## Wrong labels: the semi-supervised GMM learns how many there are

`benchmarks/study_ssgmm_label_noise.py` refits the semi-supervised GMM on the panel's draws with trusted
labels (`label_noise=0`) and with the label-flip rate learnt by EM (`label_noise="auto"`, the default since
session 8: a labelled point's label is its component's class with probability 1 - eps, else uniform over the
others; eps is re-estimated as the expected share of labelled points off their class). With clean labels the
two agree; with 20% wrong labels the learnt rate is near 0.2 on most sets and the fit no longer bends its
components around the wrong labels."""),
code("""ln_study = json.loads((ROOT / "results" / "ssgmm_label_noise_study.json").read_text())
fig, ax = plt.subplots(figsize=(8, 3.2))
for j, cfg in enumerate(("0.0", "auto")):
    gains = []
    for data in bb.DATASETS:
        d = [ln_study[f"{data}|{i}|{cfg}|0.1|0.2"]["nmi"] - ln_study[f"{data}|{i}|none|0|0"]["nmi"]
             for i in range(10) if f"{data}|{i}|{cfg}|0.1|0.2" in ln_study]
        gains.append(np.mean(d))
    ax.bar(np.arange(len(bb.DATASETS)) + 0.4 * j, gains, 0.4,
           label={"0.0": "labels trusted (eps = 0)", "auto": "eps learnt (default)"}[cfg])
ax.axhline(-0.02, color="black", lw=0.6, ls="--")
ax.set_xticks(np.arange(len(bb.DATASETS)) + 0.2, bb.DATASETS, fontsize=7)
ax.set_ylabel("NMI - no labels")
ax.set_title("SemiSupervisedGMM, 10% labels of which 20% wrong")
ax.legend(fontsize=7)"""),
md("""## The issue's two cases, at the size they were reported

The panel subsamples to 200 points. `benchmarks/study_issue_cases.py` re-runs the two failures that opened
issue 20 at their own size, old defaults against today's, on several random draws
(`benchmarks/results/issue_cases_study.md`): TVClust on 1500 handwritten digits (PCA to 6 dimensions) with
1500 / 6000 random pairs, and CEC-IB (with the semi-supervised GMM and C3L) on 3000 satimage points with
10% labels. Bars: mean NMI over the draws, error bars one standard deviation.

What they show: TVClust's links help at this size, modestly at 1500 pairs under the default prior ("links
are mostly right": one in ten wrong) and more when the user says the links are clean (`link_noise=0.01`);
the Gaussian mixture still splits each digit class, and of random pairs only about one in ten is a may-link.
CEC-IB's labels give no gain here under any of its settings: its label term reads only the labelled
points, so moving those few points is cheaper than moving a cluster's boundary, and labels act only
through the start. The semi-supervised GMM and C3L gain on the same draws."""),
code("""from benchmarks import study_issue_cases as ic

cases = json.loads((ROOT / "results" / "issue_cases_study.json").read_text())


def case_bars(ax, data, groups, cells, title):
    width = 0.8 / len(cells)
    for j, (name, *_) in enumerate(cells):
        vals = [ic.cell_values(cases, data, m, s, name, 100, "nmi") for m, s in groups]
        ax.bar(np.arange(len(groups)) + j * width, [np.mean(v) if v else np.nan for v in vals], width,
               yerr=[np.std(v) if v else 0 for v in vals], label=name)
    ax.set_xticks(np.arange(len(groups)) + 0.4 - width / 2, [f"{m}\\n{s}" for m, s in groups], fontsize=7)
    ax.set_ylabel("NMI")
    ax.set_ylim(0.4, 1.0)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, ncol=2, loc="upper left")


fig, axes = plt.subplots(1, 2, figsize=(12, 3.8))
case_bars(axes[0], "digits", [("TVClust", s) for s in ic.TV_SETTINGS], ic.LINK_CELLS,
          f"TVClust, digits (n = {ic.N_DIGITS}, PCA {ic.PCA_DIM})")
case_bars(axes[1], "satimage", [("CECIB", s) for s in ic.CEC_SETTINGS] + [("SemiSupervisedGMM", "now"), ("C3L", "now")],
          ic.LABEL_CELLS, f"labels, satimage (n = {ic.N_SAT}, d = 36)")
fig.tight_layout()"""),
md("""## Live (full mode): TVClust's link prior

Up to session 9 TVClust's prior on the link sensitivity / specificity was neutral (p ~ Beta(1, 10), q ~
Beta(10, 1), 11 pseudo-links): it learnt how credible links are from the partition alone, and because
full-covariance Gaussians at n = 200 prefer splitting a class into several clusters (by hundreds of nats in
the model's own log joint, `benchmarks/results/tvclust_split_study.md`: the model, not the sampler's mixing),
it explained clean may-links across those pieces as noise (posterior `p_` 0.3-0.55). The default since
session 10 (`link_noise="auto"`, `link_strength="links"`) says "links are mostly right": p, q get prior mean
0.9 with the strength of as many pseudo-links as there are links, so wrong links still lower p and q but
cannot talk the model out of them. `link_noise=None` is the neutral prior."""),
code("""if FULL:
    Xw, yw = datasets.load("wine")
    budgets = [0, 45, 178]
    res = {"neutral prior (link_noise=None)": [], "default (link_noise='auto')": []}
    for m in budgets:
        si = datasets.sample_links(yw, m, seed=5) if m else None
        kw = dict(must_link=si.must_link, cannot_link=si.cannot_link) if si is not None else {}
        for name, eps in zip(res, (None, "auto")):
            e = ppclust.TVClust(100, n_warmup=100, n_chains=1, link_noise=eps, random_state=0).fit(Xw, **kw)
            res[name].append(metrics.nmi(yw, e.labels_))
    plot_benefit(budgets, res, xlabel="links", title="TVClust on wine")
    print({k: np.round(v, 3).tolist() for k, v in res.items()})
else:  # small settings: TVClust's curve from the panel's cache instead of a live fit
    _, vals = bb.series(cache, "wine", "TVClust", 0.0, "nmi", DRAWS)
    plot_benefit((0.0, *bb.LINK_LEVELS), {"TVClust (panel cache)": [np.mean(v) for v in vals]},
                 xlabel="pairs per point", title="TVClust on wine (set PPCLUST_NOTEBOOK_FULL=1 to refit)")
print(f"notebook time: {time.perf_counter() - T0:.1f} s")"""),
]
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
nbf.write(nb, "notebooks/side_information_benefit.ipynb")
