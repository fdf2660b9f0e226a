"""The RDP-means reproduction protocol of Khashabi et al. (2015), Tables 1-3 [C]: constraint sampling,
pairwise F, and the trials of K-means, DP-means, RDP-means (and the authors' variational TVClust) on iris
and wine. ``tests/inference/test_dpmeans.py`` asserts the paper's numbers on it;
``reproduce/rdpmeans.py`` writes the tables."""

from __future__ import annotations

import jax
import numpy as np
from sklearn.cluster import KMeans
from sklearn.datasets import load_iris, load_wine
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

from ppclust._jax import x64
from ppclust.inference import dpmeans as dp

RS = (0.01, 0.03, 0.05)
PS = (1.0, 0.95, 0.9, 0.8)
VB_K = 15  # the authors' truncation (main_VB_TVClust_sim_data2.r)


def pairwise_f(y, z):
    def same(a):
        _, c = np.unique(a, return_counts=True)
        return (c * (c - 1) // 2).sum()

    _, cont = np.unique(np.stack([y, z], 1), axis=0, return_counts=True)
    tp = (cont * (cont - 1) // 2).sum()
    return 2 * tp / (same(y) + same(z))


def scores(y, z):
    return (
        pairwise_f(y, z),
        adjusted_rand_score(y, z),
        normalized_mutual_info_score(y, z, average_method="geometric"),
    )


def sample_constraints(y, r, p, rng, ordered=False):
    """floor(r n^2) distinct ordered pairs, signs from the classes flipped with probability 1 - p; returns
    the canonical pairs and signs (later draws overwrite), plus with ``ordered`` the draws in order."""
    n = len(y)
    m = int(np.floor(r * n * n))
    seen = set()
    E = {}
    draws = []
    while len(seen) < m:
        i, j = (int(v) for v in rng.integers(0, n, 2))
        if i == j or (i, j) in seen:
            continue
        seen.add((i, j))
        s = 1.0 if y[i] == y[j] else -1.0
        if rng.random() >= p:
            s = -s
        E[(min(i, j), max(i, j))] = s
        draws.append((i, j, s))
    if ordered:
        return np.array(list(E.keys())), np.array(list(E.values())), np.array(draws)
    return np.array(list(E.keys())), np.array(list(E.values()))


def vb_fits(cases):
    """TVClust (variational, the authors' code path: as-run mask, K = 15, 30 iterations, tol 5e-5,
    features standardised with the n - 1 sd) on each ``(X, ordered draws)``; one compilation per data set
    (entry arrays and neighbour table padded). Initial means: ``tvclust_vb.authors_init_means`` (the
    authors reuse R's seed 1 for every run). Returns the labels per case."""
    import jax.numpy as jnp

    from ppclust.families import GaussianNIW
    from ppclust.inference import tvclust_vb as vb

    n, d = cases[0][0].shape
    ents = [vb.directed_entries(dr[:, :2].astype(np.int64), dr[:, 2], "as_run") for _, dr in cases]
    width = max(int(np.bincount(s, minlength=n).max()) for s, _, _ in ents)
    m = max(len(s) for s, _, _ in ents)
    means0 = jnp.asarray(vb.authors_init_means(VB_K, d))
    fam = GaussianNIW(jnp.zeros(d), jnp.asarray(1.0), jnp.asarray(float(d)), jnp.eye(d))
    out = []
    for (src, dst, e), (X, _) in zip(ents, cases, strict=True):
        xs = (X - X.mean(0)) / X.std(0, ddof=1)
        nbr, ev, valid = vb.neighbour_arrays(n, src, dst, e, width=width)
        pad = m - len(src)
        w = np.concatenate([np.ones(len(src)), np.zeros(pad)])
        src, dst, e = (np.concatenate([a, np.zeros(pad, a.dtype)]) for a in (src, dst, e))
        res = vb.fit(
            jnp.asarray(xs),
            means0,
            fam,
            (nbr, ev, valid),
            (src, dst, e),
            (1.0, 10.0, 10.0, 1.0),
            1.0,
            max_iter=30,
            tol=5e-5,
            entry_weight=w,
        )
        out.append(np.asarray(res.labels))
    return out


def run(datasets=("iris", "wine"), trials=5, seed=0, vb=True):
    loaders = {"iris": load_iris, "wine": load_wine}
    res = {}  # (method, dataset, r, p) -> list of (F, ARI, NMI)
    with x64():
        for name in datasets:
            X0, y0 = loaders[name](return_X_y=True)
            n = len(y0)
            lam = dp.kth_farthest_from_mean(X0, 3)
            rng = np.random.default_rng(seed)
            jobs = []
            for r in RS:
                for p in PS:
                    for t in range(trials):
                        perm = rng.permutation(n)
                        X, y = X0[perm], y0[perm]
                        pairs, sign, draws = sample_constraints(y, r, p, rng, ordered=True)
                        jobs.append((r, p, t, X, y, pairs, sign, int(rng.integers(2**31)), draws))
            width = max(np.bincount(j[5].ravel(), minlength=n).max() for j in jobs)
            if vb:
                vb_labels = vb_fits([(j[3], j[8]) for j in jobs])
            for jb, (r, p, _t, X, y, pairs, sign, s, _d) in enumerate(jobs):
                key = jax.random.key(s)
                table = dp.neighbour_table(n, pairs, sign, width=width)
                kw = dict(compat=True, divergence="euclidean", tie="last", init="bbox_random", k_max=48)
                a = dp.fit(
                    key,
                    X,
                    table,
                    lam,
                    xi0=1e-3,
                    xi_rate=2.0,
                    xi_max=np.inf,
                    order="random",
                    patience=20,
                    max_iter=2000,
                    **kw,
                )
                b = dp.fit(key, X, None, lam, xi0=0.0, order="fixed", patience=0, max_iter=99, **kw)
                km = KMeans(3, init="random", n_init=1, max_iter=50, random_state=s % 10**6).fit(X)
                for meth, lab in (("RDP-means", a.labels), ("DP-means", b.labels), ("K-means", km.labels_)):
                    res.setdefault((meth, name, r, p), []).append(scores(y, np.asarray(lab)))
                if vb:
                    res.setdefault(("TVClust-VB", name, r, p), []).append(scores(y, vb_labels[jb]))
    return res
