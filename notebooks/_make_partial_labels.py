# ruff: noqa: E501  (notebook cell sources)
"""Generate notebooks/partial_labels.ipynb (run from the repository root, outputs not stored)."""

import nbformat as nbf

nb = nbf.v4.new_notebook()
md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
nb.cells = [
md("""# Partial, coarse and noisy labels: CEC-IB, C3L and the semi-supervised GMM

Three ways to use a few labels when clustering:

* **CEC-IB** (`ppclust.CECIB`, Śmieja & Geiger 2017) — cross-entropy clustering plus an information-bottleneck
  term $\\beta \\sum_i p_i H(Z\\mid Y_i)$ that only penalises *mixing* categories inside a cluster. Several
  clusters may share a category, and the number of clusters is found by deleting small ones.
* **C3L** (`ppclust.C3L`, Śmieja, Struski & Tabor 2017) — two categories give a hyperplane; every cluster may
  leak at most a mass $\\alpha$ across it.
* **Semi-supervised GMM** (`ppclust.SemiSupervisedGMM`) — EM on a Gaussian mixture whose labelled points are
  tied to their class's components, optionally with a label-noise model.

Small settings by default; set `PPCLUST_NOTEBOOK_FULL=1` for larger data and grids."""),
code("""import os
import time
import numpy as np
import matplotlib.pyplot as plt
import ppclust
from ppclust import datasets, metrics
from ppclust.plot import plot_cost_trace, plot_partitions, scatter_partition
from ppclust.inference import cecib as cecib_inf
from ppclust.inference import c3l as c3l_inf

# import every estimator module (and numpyro) before the first fit: a module that registers JAX config
# options on import changes JAX's tracing context and would force the solvers compiled so far to recompile
ppclust.CECIB, ppclust.C3L, ppclust.SemiSupervisedGMM

FULL = os.environ.get("PPCLUST_NOTEBOOK_FULL") == "1"
N_PER_SUB = 100 if FULL else 50           # points per sub-group
N_INIT = 10 if FULL else 3                # restarts of CEC-IB / C3L
NOISE_GRID = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5] if FULL else [0.0, 0.2, 0.4]
SEEDS = range(5) if FULL else range(1)
T0 = time.perf_counter()"""),
md("""## (a) Sub-group discovery from coarse labels

Three categories, each the union of two Gaussian sub-groups. We reveal the *category* of 30 % of the
points. CEC-IB starts from 12 clusters (more than categories): the label term keeps clusters inside one
category, the Gaussian term splits a category into its sub-groups. A semi-supervised GMM with one component
per category has to merge the sub-groups."""),
code("""X, y_fine, y_cat = datasets.make_blobs_hier(n_categories=3, n_sub=2, n_per_sub=N_PER_SUB, cluster_std=1.5,
                                            sub_spread=3.5, category_spread=8.0, seed=4)
coarse = np.repeat(np.arange(3), 2)                 # fine sub-group -> category
y = datasets.sample_labels(y_fine, 0.3, coarse=coarse, seed=0)
print(f"n = {len(X)}, labelled = {(y >= 0).sum()}, categories = {np.unique(y[y >= 0])}")

fits = {
    "CEC (beta=0)": ppclust.CECIB(n_clusters=12, beta=0.0, n_init=N_INIT, random_state=0).fit(X, y),
    "CEC-IB (beta=1)": ppclust.CECIB(n_clusters=12, beta=1.0, n_init=N_INIT, random_state=0).fit(X, y),
    "SSGMM, 3 comp.": ppclust.SemiSupervisedGMM(3, random_state=0).fit(X, y),
    "SSGMM, 6 comp.": ppclust.SemiSupervisedGMM(6, random_state=0).fit(X, y),
}
print(f"{'method':18s} {'K':>3s} {'NMI(sub-groups)':>16s} {'NMI(categories)':>16s} {'purity(cat.)':>13s}")
for name, m in fits.items():
    lab = m.labels_
    print(f"{name:18s} {len(np.unique(lab)):3d} {metrics.nmi(y_fine, lab):16.3f} {metrics.nmi(y_cat, lab):16.3f}"
          f" {metrics.purity(y_cat, lab):13.3f}")
fig = plot_partitions(X, {"sub-groups (truth)": y_fine, "revealed labels": y,
                          **{k: m.labels_ for k, m in fits.items()}}, ncols=3)"""),
md("""### Choosing $\\beta$: the critical value $\\beta_0$ (Theorem 4.2)

Splitting a point set into label-consistent parts $P_1..P_k$ instead of keeping one cluster pays off
exactly when $\\beta \\ge \\beta_0 = 1 + \\sum_i \\frac{p_i}{2}\\ln\\frac{\\det\\Sigma_i}{\\det\\Sigma}\\big/H(p)$
(`ppclust.inference.cecib.beta0`). For a 1-D Gaussian whose two labels split it at its mean,
$\\beta_0 = 1 + \\ln\\sqrt{1-2/\\pi}/\\ln 2 \\approx 0.27$ (`BETA0_HALF_NORMAL`), the paper's default for noisy
labels. The cost difference (merged - split) computed with `cecib_cost` crosses zero there; well separated
sub-groups have $\\beta_0 < 0$ (split for every $\\beta$)."""),
code("""rng = np.random.default_rng(0)
x1 = rng.standard_normal((4000, 1))
half = (x1[:, 0] > 0).astype(int)
b0 = cecib_inf.beta0([x1[half == 0], x1[half == 1]])
print(f"beta0 (sample) = {b0:.4f}, asymptotic = {cecib_inf.BETA0_HALF_NORMAL:.4f}")
betas = np.linspace(0, 0.6, 25)
diff = [cecib_inf.cecib_cost(x1, np.zeros(len(x1)), half, b).total - cecib_inf.cecib_cost(x1, half, half, b).total
        for b in betas]
fig, ax = plt.subplots(figsize=(5, 3))
ax.plot(betas, diff); ax.axhline(0, color="k", lw=0.5); ax.axvline(b0, ls="--", color="tab:red", label="beta0")
ax.set_xlabel("beta"); ax.set_ylabel("E(one cluster) - E(split)"); ax.legend(); plt.show()

print("beta0 of the labelled categories of (a):", round(cecib_inf.beta0_from_labels(X, y), 3))
print("beta0 of the two sub-groups of category 0:", round(cecib_inf.beta0([X[y_fine == 0], X[y_fine == 1]]), 3))"""),
md("""## (b) Noisy labels

A share of the revealed category labels is replaced by a wrong category. CEC-IB with $\\beta=1$ trusts the
labels; $\\beta=\\beta_0\\approx0.27$ is the paper's robust choice. The SSGMM is run without (`label_noise=0`,
labels are hard constraints) and with its label-noise model (`label_noise=0.3`, a fixed guess of the rate).
NMI against the six sub-groups."""),
code("""methods = {
    "CEC-IB beta=1": lambda s: ppclust.CECIB(n_clusters=12, beta=1.0, n_init=N_INIT, random_state=s),
    "CEC-IB beta=0.27": lambda s: ppclust.CECIB(n_clusters=12, beta=cecib_inf.BETA0_HALF_NORMAL, n_init=N_INIT,
                                                random_state=s),
    "SSGMM": lambda s: ppclust.SemiSupervisedGMM(6, random_state=s),
    "SSGMM + noise model": lambda s: ppclust.SemiSupervisedGMM(6, label_noise=0.3, random_state=s),
}
res = {k: np.zeros((len(NOISE_GRID), len(SEEDS))) for k in methods}
for i, noise in enumerate(NOISE_GRID):
    for j, s in enumerate(SEEDS):
        yn = datasets.sample_labels(y_fine, 0.3, noise=noise, coarse=coarse, seed=100 + s)
        for k, make in methods.items():
            res[k][i, j] = metrics.nmi(y_fine, make(s).fit(X, yn).labels_)
fig, ax = plt.subplots(figsize=(5.5, 3.5))
for k, v in res.items():
    ax.plot(NOISE_GRID, v.mean(1), "o-", label=k)
ax.set_xlabel("share of wrong labels"); ax.set_ylabel("NMI vs sub-groups"); ax.legend(fontsize=8); plt.show()
print("noise  " + "  ".join(f"{k:>18s}" for k in res))
for i, noise in enumerate(NOISE_GRID):
    print(f"{noise:5.2f}  " + "  ".join(f"{v[i].mean():18.3f}" for v in res.values()))"""),
md("""## (c) Labels for only some classes

Only categories 0 and 1 get labels; category 2 has none. CEC-IB is free to open clusters that hold no
labelled point (they pay no label cost). Note that a cluster mixing *unlabelled* category-2 points with
labelled category-0 points pays no label cost either, so whether category 2 gets clusters of its own depends
on the geometry (the Gaussian term), not on the labels. For the SSGMM we add two free
components (`component_classes=-1`) that take no labelled point."""),
code("""y_some = datasets.sample_labels(y_fine, 0.3, classes=[0, 1, 2, 3], coarse=coarse, seed=1)
cec = ppclust.CECIB(n_clusters=12, beta=1.0, n_init=N_INIT, random_state=0).fit(X, y_some)
gmm = ppclust.SemiSupervisedGMM(6, component_classes=[0, 0, 1, 1, -1, -1], random_state=0).fit(X, y_some)
for name, lab in (("CEC-IB", cec.labels_), ("SSGMM + 2 free comp.", gmm.labels_)):
    unl = np.unique(lab[y_cat == 2])
    no_label = [k for k in unl if not (y_some[lab == k] >= 0).any()]
    share = np.isin(lab[y_cat == 2], no_label).mean()
    print(f"{name:22s} K={len(np.unique(lab))}, NMI(sub-groups)={metrics.nmi(y_fine, lab):.3f}, "
          f"{share:.0%} of category 2 in clusters without labelled points")
fig = plot_partitions(X, {"labels (cat. 2 hidden)": y_some, "CEC-IB": cec.labels_, "SSGMM": gmm.labels_}, ncols=3)"""),
md("""## (d) C3L: two categories and controlled leakage

Two categories (left / right), each made of three sub-groups, two of which touch the other
category; 10 % of the points are labelled. A linear SVM on the labelled
points gives the decision hyperplane. C3L fits CEC clusters whose Gaussian model leaks at most
$\\alpha$ of its mass to the other side; with $\\alpha \\ge 0.5$ the constraint is void (plain CEC) and clusters
straddle the boundary."""),
code("""centres = np.array([(-1.5, -4), (-4, 0), (-1.5, 4), (1.5, -4), (4, 0), (1.5, 4)])  # category = sign of x
X2, f2 = datasets.make_blobs(6 * N_PER_SUB, centers=centres, cluster_std=1.0, seed=0)
c2 = (f2 >= 3).astype(int)
y2 = datasets.sample_labels(c2, 0.1, seed=0)
c3 = {a: ppclust.C3L(n_clusters=10, leakage=a, n_init=N_INIT, random_state=0).fit(X2, y2) for a in (0.05, 0.5)}
h, a = c3[0.05].hyperplane_
fig, axes = plt.subplots(1, 3, figsize=(12, 3.6), constrained_layout=True)
xs = np.linspace(X2[:, 0].min(), X2[:, 0].max(), 2)
for ax, (alpha, m) in zip(axes[:2], c3.items()):
    scatter_partition(ax, X2, m.labels_, title=f"C3L alpha={alpha}: K={m.n_clusters_}, "
                      f"NMI(cat.)={metrics.nmi(c2, m.labels_):.2f}")
    ax.plot(xs, (a - h[0] * xs) / h[1], "k--", lw=1); ax.set_ylim(X2[:, 1].min() - 1, X2[:, 1].max() + 1)
w = 0.4
for i, (alpha, m) in enumerate(c3.items()):
    axes[2].bar(np.arange(m.n_clusters_) + (i - 0.5) * w, m.leakage_, w, label=f"alpha={alpha}")
axes[2].axhline(0.05, color="k", ls=":", lw=1); axes[2].set_xlabel("cluster"); axes[2].set_ylabel("leakage_")
axes[2].legend(); plt.show()
for alpha, m in c3.items():
    print(f"alpha={alpha}: K={m.n_clusters_}, NMI(categories)={metrics.nmi(c2, m.labels_):.3f}, "
          f"NMI(sub-groups)={metrics.nmi(f2, m.labels_):.3f}, purity(cat.)={metrics.purity(c2, m.labels_):.3f}, "
          f"max leakage={m.leakage_.max():.3f}")"""),
md("""The Hartigan passes never increase the cost (C3L's `objective_trace_`, one value per pass; the jumps down
are deleted clusters):"""),
code("""plot_cost_trace({f"alpha={alpha}": m.objective_trace_ for alpha, m in c3.items()}, ylabel="C3L cost", xlabel="pass",
                title="C3L cost per Hartigan pass"); plt.show()"""),
md("""### Without labels: projection pursuit

`ppclust.inference.c3l.pp_hyperplane` finds a categorisation without any label (paper Sec. 6.3): the
direction of minimum kurtosis (a bimodal projection), a two-component 1-D GMM on it and the boundary at the
density crossing. C3L then refines the clustering under that hyperplane. On these data the most bimodal
(minimum-kurtosis) direction is not the category boundary: projection pursuit finds *a* two-group split,
not necessarily the one the labels describe."""),
code("""normal, offset, pp_lab = c3l_inf.pp_hyperplane(X2, random_state=0, n_starts=50 if FULL else 10)
pp = ppclust.C3L(n_clusters=10, leakage=0.05, n_init=N_INIT, random_state=0).fit(X2, hyperplane=(normal, offset))
print(f"projection-pursuit split vs categories: NMI={metrics.nmi(c2, pp_lab):.3f}")
print(f"C3L on it: K={pp.n_clusters_}, NMI(categories)={metrics.nmi(c2, pp.labels_):.3f}, "
      f"purity(cat.)={metrics.purity(c2, pp.labels_):.3f}")
print(f"notebook time: {time.perf_counter() - T0:.1f} s")"""),
]
for i, c in enumerate(nb.cells):  # stable ids: regenerating gives no diff
    c.id = f"cell-{i:02d}"
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
nbf.write(nb, "notebooks/partial_labels.ipynb")
