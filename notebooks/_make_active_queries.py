# ruff: noqa: E501  (notebook cell sources)
"""Generate notebooks/active_queries.ipynb (run from the repository root, outputs not stored)."""

import nbformat as nbf

nb = nbf.v4.new_notebook()
md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
nb.cells = [
md("""# Choosing the next question: active pair selection with TVClust

`ppclust.active.ActiveLearner` asks about the pairs whose answer tells TVClust's posterior the most: for a
pair with posterior co-clustering probability $\\pi$ and link noise $p$ (a "same" answer is right), $q$
(a "different" answer is right), the expected information of the answer about the partition is

$$I = H(\\pi p + (1-\\pi)(1-q)) - [\\pi H(p) + (1-\\pi) H(q)].$$

Here a simulated oracle with 10% wrong answers plays the person (or language model) answering. We compare the
ARI reached after each number of questions with "information", "uncertainty" ($\\pi$ near 1/2) and random
pairs. Small settings by default; set `PPCLUST_NOTEBOOK_FULL=1` for more points, draws and budgets. The
benchmark `benchmarks/bench_active.py` runs the full comparison (`benchmarks/results/active.md`)."""),
code("""import os
import time
import numpy as np
import matplotlib.pyplot as plt
import ppclust
from ppclust import datasets, metrics
from ppclust.active import ActiveLearner, information_gain, simulated_oracle

T0 = time.perf_counter()
FULL = os.environ.get("PPCLUST_NOTEBOOK_FULL") == "1"
N = 150 if FULL else 60                      # points (a subsample of iris)
DRAWS = 100 if FULL else 20                  # kept draws (warm-up as many)
BUDGETS = [20, 40, 80, 160, 320] if FULL else [10, 20, 40]
NOISE = 0.1

X, y = datasets.load("iris")
idx = np.sort(np.random.default_rng(0).choice(len(y), N, replace=False))
X, y = X[idx], y[idx]
X = (X - X.mean(0)) / X.std(0)


def tvclust():
    return ppclust.TVClust(n_draws=DRAWS, n_warmup=DRAWS, n_chains=1, progress_bar=False, random_state=0)"""),
md("""The information gain as a function of $\\pi$ for a few noise levels: zero where the posterior is sure, and
smaller the less reliable the answers."""),
code("""pis = np.linspace(0, 1, 201)
fig, ax = plt.subplots(figsize=(5, 3))
for eps in (0.0, 0.1, 0.2, 0.3):
    ax.plot(pis, information_gain(pis, 1 - eps, 1 - eps), label=f"{eps:.0%} wrong answers")
ax.set_xlabel("posterior co-clustering probability $\\\\pi$"); ax.set_ylabel("information (nats)"); ax.legend()
plt.show()"""),
md("""The loop: `suggest` a batch, ask the oracle, `tell` the answers (TVClust refits warm, from its last
partition)."""),
code("""def curve(strategy):
    oracle = simulated_oracle(y, noise=NOISE, random_state=0)
    al = ActiveLearner(tvclust(), strategy=strategy, random_state=0).fit(X)
    out, asked = [], 0
    for b in BUDGETS:
        al.run(oracle, b - asked)
        asked = b
        out.append(metrics.ari(y, al.estimator_.labels_))
    return out, al


curves, learners = {}, {}
for s in ("information", "uncertainty", "random"):
    curves[s], learners[s] = curve(s)
    print(s, [round(v, 3) for v in curves[s]])"""),
code("""fig, ax = plt.subplots(figsize=(5, 3.2))
for s, v in curves.items():
    ax.plot(BUDGETS, v, "o-", label=s)
ax.set_xscale("log"); ax.set_xlabel("questions asked"); ax.set_ylabel("ARI"); ax.legend()
ax.set_title(f"iris (n={N}), {NOISE:.0%} wrong answers")
plt.show()"""),
md("""Where did "information" ask? Mostly pairs that touch the points the posterior is unsure about (the overlap of
versicolor and virginica)."""),
code("""al = learners["information"]
asked = np.r_[al.must_link_, al.cannot_link_]
fig, ax = plt.subplots(figsize=(5, 3.6))
ax.scatter(X[:, 2], X[:, 3], c=al.estimator_.labels_, s=14, cmap="tab10")
for i, j in asked:
    ax.plot(X[[i, j], 2], X[[i, j], 3], "k-", lw=0.4, alpha=0.4)
ax.set_xlabel("petal length (std.)"); ax.set_ylabel("petal width (std.)")
ax.set_title(f"{len(asked)} pairs asked by 'information'")
plt.show()
print(f"fitted link noise: p={al.estimator_.p_:.2f}, q={al.estimator_.q_:.2f}")
print(f"notebook time: {time.perf_counter() - T0:.1f} s")"""),
]
for i, c in enumerate(nb.cells):  # stable ids: regenerating gives no diff
    c.id = f"cell-{i:02d}"
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
nbf.write(nb, "notebooks/active_queries.ipynb")
