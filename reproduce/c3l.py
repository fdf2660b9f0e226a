"""C3L reproduction (spec c3l.md §6): C1-C6, C9 (Wine), C11 (Australian PP) -> results/c3l.md.

Run: ``PYTHONPATH=. python reproduce/c3l.py [--reps 20]``. Data offline: sklearn's Wine, KEEL's
Australian (via ppclust.datasets). The regression sets of Sec. 6.1 (C7, C8), Balance/User/the 210-row
Segmentation file (rest of C9, C10) and the chemical data (C12) are not available offline.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.optimize import minimize
from scipy.stats import norm
from sklearn.metrics import normalized_mutual_info_score as nmi
from sklearn.mixture import GaussianMixture

from ppclust import datasets
from ppclust._jax import x64
from ppclust.estimators.c3l import C3L
from ppclust.inference import c3l
from reproduce._common import RESULTS, machine_info, md_table, write_json


def fit1d(mu, s2, a):
    with x64():
        return tuple(np.asarray(v) for v in c3l.constrained_fit_1d(mu, s2, c3l.quantile(a)))


def claim_c1(n=1000):
    rng = np.random.default_rng(0)
    mu, s = rng.normal(0, 2, n), np.exp(rng.uniform(-1.5, 1.5, n))
    al = np.exp(rng.uniform(np.log(1e-6), np.log(0.49), n))
    m, sig, e, act = fit1d(mu, s * s, al)
    worst = 0.0
    for i in range(n):
        p = norm.isf(al[i])

        def h(v, i=i):
            return 0.5 * np.log(2 * np.pi) + v[1] + ((mu[i] - v[0]) ** 2 + s[i] ** 2) / (2 * np.exp(2 * v[1]))

        best = np.inf
        for sg in (1.0, -1.0):  # both sides of the barrier, from a feasible start
            x0 = [sg * (abs(mu[i]) + p * s[i]), np.log(s[i])]
            cons = [{"type": "ineq", "fun": lambda v, sg=sg, p=p: sg * v[0] - p * np.exp(v[1])}]
            r = minimize(h, x0, method="SLSQP", options={"ftol": 1e-15, "maxiter": 1000}, constraints=cons)
            best = min(best, r.fun)
        worst = max(worst, abs(best - e[i]))
    leak = norm.cdf(-np.abs(m) / sig)
    rel = float(np.max(np.abs(leak[act] - al[act]) / al[act]))
    return n, worst, float(np.max(leak - al)), rel, int(act.sum())


def claim_c3():
    a_, b_ = 2.0, 3.0 + 0.25 / 3.0
    out, ratios = [], {}
    for alpha in (1e-2, 1e-8, 1e-16, 1e-150):
        p = norm.isf(alpha)
        mp, sp, _, _ = fit1d(1.0, 1.0, alpha)
        mm, sm, _, _ = fit1d(-3.0, 0.25, alpha)
        row = [f"{alpha:g}"]
        for t in (0.1, 1.0, 3.9):
            lo = norm.logpdf(t, mp, sp) - norm.logpdf(t, mm, sm)
            c = t * (a_ + b_) * (t * (a_ - b_) + 2 * a_ * b_) / (2 * a_**2 * b_**2)
            row.append(f"{lo:.4g} ({lo / (p * p * c):.3f})")
            ratios.setdefault(f"{alpha:g}", {})[f"{t:g}"] = {"log_odds": lo, "ratio": lo / (p * p * c)}
        out.append(row)
    return out, ratios


def gmm_fit(X, k, seed):
    return GaussianMixture(k, covariance_type="full", n_init=3, random_state=seed, reg_covar=1e-6).fit(X)


def half_models(X, side, ks, seed, kind, hp):
    """GMM_H / CEC_H: separate fits on X_- (side False) and X_+; labels by the largest weighted density."""
    n = len(X)
    scores = []
    for s_, k in zip((False, True), ks, strict=True):
        Xh = X[side == s_]
        w = np.log(len(Xh) / n)
        if kind == "gmm":
            g = gmm_fit(Xh, k, seed)
            scores.append(g._estimate_weighted_log_prob(X) + w)
        else:
            m = C3L(n_clusters=2 * k, leakage=0.5, n_init=10, random_state=seed).fit(Xh, hyperplane=hp)
            scores.append(m._log_density(X) + w)
    return np.argmax(np.concatenate(scores, 1), 1)


def table3_wine(reps):
    X, y = datasets.load("wine")
    X_raw = X
    X = (X - X.mean(0)) / X.std(0)  # C3L runs in the space where the SVM found H (spec §7.2)
    ypm = (y == 2).astype(int)  # Y_- = {1, 2}, Y_+ = {3}
    res = {
        k: [] for k in ("C3L a=0.01", "C3L a=0.05", "CEC_H", "CEC", "GMM_H", "GMM", "GMM_H raw", "GMM raw")
    }
    times = {"C3L a=0.05": [], "GMM": []}
    passes = []
    for r in range(reps):
        rng = np.random.default_rng(r)
        ypart = np.where(rng.random(len(y)) < 0.15, ypm, -1)
        if len(np.unique(ypart[ypart >= 0])) < 2:
            continue
        h, a = c3l.hyperplane_from_labels(X, ypart)
        side = X @ h - a >= 0
        for alpha in (0.01, 0.05, 0.5):
            t0 = time.perf_counter()
            m = C3L(n_clusters=6, leakage=alpha, n_init=10, random_state=r).fit(X, hyperplane=(h, a))
            if alpha == 0.05:
                times["C3L a=0.05"].append(time.perf_counter() - t0)
            passes.append(m.restart_n_passes_.max())
            res["CEC" if alpha == 0.5 else f"C3L a={alpha}"].append(nmi(y, m.labels_))
        t0 = time.perf_counter()
        g = gmm_fit(X, 3, r)
        times["GMM"].append(time.perf_counter() - t0)
        res["GMM"].append(nmi(y, g.predict(X)))
        res["GMM_H"].append(nmi(y, half_models(X, side, (2, 1), r, "gmm", (h, a))))
        res["CEC_H"].append(nmi(y, half_models(X, side, (2, 1), r, "cec", (h, a))))
        # the C9 mismatch reason under test: the paper's GMMs on raw (unstandardised) features
        res["GMM raw"].append(nmi(y, gmm_fit(X_raw, 3, r).predict(X_raw)))
        res["GMM_H raw"].append(nmi(y, half_models(X_raw, side, (2, 1), r, "gmm", (h, a))))
    return res, times, int(max(passes))


def pp_australian():
    X, y = datasets.load("australian")
    X = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1)
    h, a, lab = c3l.pp_hyperplane(X, random_state=0, n_starts=50)
    out = {"PP+GMM": nmi(y, lab)}
    for alpha in (0.01, 0.05, 0.25, 0.5):
        m = C3L(n_clusters=2, leakage=alpha, n_init=10, random_state=0).fit(X, hyperplane=(h, a))
        out[f"C3L a={alpha}"] = nmi(y, m.labels_)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    lines = ["# C3L: paper vs ppclust", "", f"Machine: {machine_info()}", ""]
    n, worst, over, rel_eq, nact = claim_c1()
    js = {
        "c1": {
            "n": n,
            "max_abs_cost_diff": worst,
            "max_leak_over_alpha": over,
            "max_rel_leak_active": rel_eq,
            "n_active": nact,
        }
    }
    lines += [
        "## C1 Theorem 1 closed form",
        "",
        f"{n} random (mu, s, alpha in [1e-6, 0.49]); {nact} active. Max |closed form - SLSQP "
        f"constrained minimum| = {worst:.2e} (target <= 1e-9). Max (fitted leakage - alpha) = "
        f"{over:.1e}; max relative |leakage - alpha| when active = {rel_eq:.1e}. Spec §3.1 test "
        "vectors: tests/inference/test_c3l_theory.py.",
        "",
    ]
    al = 10.0 ** -np.arange(1, 13)
    m, sig, e, _ = fit1d(1.0, 1.0, al)
    js["c2"] = {
        "alpha": al,
        "m": m,
        "sigma": sig,
        "m_increasing": bool(np.all(np.diff(m) > 0)),
        "sigma_decreasing": bool(np.all(np.diff(sig) < 0)),
    }
    c3rows, js["c3"] = claim_c3()
    lines += [
        "## C2 alpha -> 0 (mu = s = 1, L = 2)",
        "",
        md_table(
            ["alpha", "m", "sigma", "E1"],
            [
                [f"{a:g}", f"{mm:.6f}", f"{ss:.6f}", f"{ee:.6f}"]
                for a, mm, ss, ee in zip(al, m, sig, e, strict=True)
            ],
        ),
        "",
        f"monotone m up: {bool(np.all(np.diff(m) > 0))}, sigma down: {bool(np.all(np.diff(sig) < 0))}",
        "",
    ]
    lines += [
        "## C3 log-odds at t (ratio to p^2 c(t)); + : mu=1,s=1; - : mu=-3,s=0.5",
        "",
        md_table(["alpha", "t=0.1", "t=1", "t=3.9"], c3rows),
        "",
        "Spec target: ratio within 10% of 1 at 1e-16, within 1% at 1e-150.",
        "",
    ]
    t0 = time.perf_counter()
    res, times, maxpass = table3_wine(args.reps)
    paper = {
        "C3L a=0.01": 0.50,
        "C3L a=0.05": 0.51,
        "CEC_H": 0.34,
        "CEC": 0.46,
        "GMM_H": 0.40,
        "GMM": 0.45,
        "GMM_H raw": 0.40,
        "GMM raw": 0.45,
    }
    rows = [[k, paper[k], f"{np.mean(v):.3f} ± {np.std(v):.3f}"] for k, v in res.items()]
    js["c9_wine"] = {
        k: {"mean": np.mean(v), "sd": np.std(v), "draws": len(v), "paper": paper[k]} for k, v in res.items()
    }
    js["c5"] = {"max_passes": maxpass, "max_iter": 100}
    js["c6"] = {"c3l_median_s": np.median(times["C3L a=0.05"]), "gmm_median_s": np.median(times["GMM"])}
    js["c6"]["ratio"] = js["c6"]["c3l_median_s"] / js["c6"]["gmm_median_s"]
    lines += [
        "## C9 Table 3, Wine (NMI, 15% labels -> linear SVM, standardised features, "
        f"{len(res['GMM'])} draws)",
        "",
        md_table(["method", "paper", "ppclust"], rows),
        "",
        "C4 (alpha >= 1/2 = CEC) is tested exactly in tests/inference/test_c3l.py. C5: max passes over "
        "all "
        f"Wine restarts = {maxpass} (< 100). C6 timing (Wine, n=178): C3L alpha=0.05 (6 clusters, "
        "10 restarts) "
        f"median {np.median(times['C3L a=0.05']):.2f} s; sklearn GMM k=3 (3 inits) median "
        f"{np.median(times['GMM']):.3f} s (ratio {js['c6']['ratio']:.1f}; spec target <= 3: "
        f"{'met' if js['c6']['ratio'] <= 3 else 'MISSED'}). Section wall time "
        f"{time.perf_counter() - t0:.0f} s. 'raw' rows: the same GMMs on unstandardised Wine (the "
        "paper's presumed setting), the test of the C9 mismatch reason.",
        "",
    ]
    pp = pp_australian()
    js["c11"] = dict(pp)
    lines += [
        "## C11 Sec. 6.3 Australian credit, PP + C3L (k=2, standardised)",
        "",
        md_table(["method", "NMI"], [[k, f"{v:.3f}"] for k, v in pp.items()]),
        "",
        "Paper: PP+GMM 0.24; C3L at alpha in {0.01, 0.05} high, at {0.25, 0.5} low (figure only).",
        "",
    ]
    lines += [
        "## Not reproduced here",
        "",
        "C7, C8 (UCI regression sets), Balance/User/Segmentation-210 columns of C9, C10 (label "
        "noise), C12 (chemical data): data not available offline in this environment.",
        "",
    ]
    (RESULTS / "c3l.md").write_text("\n".join(lines))
    write_json("c3l", js, f"reproduce/c3l.py --reps {args.reps}")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
