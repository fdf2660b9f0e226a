"""Why labels help CEC-IB, C3L and SemiSupervisedGMM little on some panel sets (issue 20, session 10).
Writes results/label_benefit_study.md.

Same data, subsamples (``bench_benefit.panel_sample``), label draws (``panel_seed``) and seeds as the benefit
panel (n <= 200 per draw, every feature standardised, 5 draws, CEC-IB / C3L from 2K initial clusters and
the true K for the GMM). Values: mean over draws of the paired (same draw) NMI difference to the method's
no-label fit (CEC-IB / C3L: plain CEC, the panel's 'none'). Questions:

* **CEC-IB, the regime.** A CEC cluster needs ``min_size = max(eps n, d + 2)`` points or it is deleted.
  Where a class holds about as many points as that (``n / (K min_size)`` near 1), the classes cannot all
  be clusters: the table gives that ratio with the final number of clusters without and with 10% clean
  labels.
* **CEC-IB, the start.** ``init="auto"`` (the default since session 9) fits plain CEC from the label-seeded
  start and from k-means++ and keeps the lower *plain-CEC* cost. Does that discard the label-seeded start
  that the CEC-IB objective (with its label term) would keep? Rows: the default; the label-seeded start
  always (``init="labels"``); "E_beta pick" = of the CEC-IB fits (beta = 1) from the label-seeded and the
  k-means++ start, the one with the lower CEC-IB cost ``cost_``; and how often each picks the labels.
* **CEC-IB, beta.** The paper's critical weight beta0 (Theorem 4.2, eq. 14; ``inference.cecib.beta0``) of
  the *true* classes of each subsample (an oracle, only where every class has more than d points): at
  ``beta >= beta0`` splitting along the labels costs no more than merging; Lemma E.1 says beta0 <= 1, so
  the default beta = 1 is never below it. Also beta = 2 (label-seeded start) as a check.
* **CEC-IB, the sample size.** The same rows (plain CEC, the default, the label-seeded start, the E_beta
  pick) at ``n_max = 600`` on the six sets with more than 200 points (5 draws, same subsample rule): where
  ``n / (K min_size)`` grows, do 10% labels gain?
* **CEC-IB, the dimension (a counterfactual).** The four sets that miss, projected on their first 5
  principal components: the size rule's d + 2 drops, so n / (K min_size) rises at the same n.
* **SemiSupervisedGMM:** the EM fit by maximum likelihood (``prior=None``) against the MAP fit under the
  model's conjugate prior (``prior="default"``: ``families.mixture_niw_prior``, kappa0 = 1, nu0 = d + 2,
  Psi0 = diag of the data's variances -- the prior ``BayesianSemiSupervisedGMM`` samples under), and
  ``n_init = 5`` restarts: the misses are vehicle (d = 18, 50 points per class) and segment.
* **C3L on iris:** with three categories C3L uses three one-vs-rest hyperplanes; on 4-D iris their 1-D
  Gaussians, treated as independent, leave one free dimension. Rows: the default; the label-seeded start;
  the constraint off (``leakage=0.5``, the product model alone); fewer hyperplanes than categories (the
  first m - 1 one-vs-rest rows, or the first row alone: iris only, breast_cancer has two categories);
  the final number of clusters.

Run: ``PYTHONPATH=. python benchmarks/study_label_benefit.py [--draws 5] [--budget-s 1800]`` (cached in
``results/label_benefit_study.json``; ``--tables-only`` rewrites the tables).
"""

from __future__ import annotations

import sys
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
SETTINGS = ((0.10, 0.0), (0.10, 0.2))  # (labelled fraction, label noise)
CACHE = RESULTS / "label_benefit_study.json"


def configs(K):
    """(method, name, factory(seed)) of every labelled fit."""
    from ppclust.estimators.c3l import C3L
    from ppclust.estimators.cecib import CECIB
    from ppclust.estimators.ssgmm import SemiSupervisedGMM

    kw = dict(progress_bar=False)
    return [
        ("CECIB", "default", lambda s: CECIB(2 * K, random_state=s, **kw)),
        ("CECIB", "labels", lambda s: CECIB(2 * K, init="labels", random_state=s, **kw)),
        ("CECIB", "kmeans++", lambda s: CECIB(2 * K, init="kmeans++", random_state=s, **kw)),
        ("CECIB", "labels beta=2", lambda s: CECIB(2 * K, init="labels", beta=2.0, random_state=s, **kw)),
        ("SSGMM", "prior=None", lambda s: SemiSupervisedGMM(K, random_state=s, prior=None, **kw)),
        ("SSGMM", 'prior="default"', lambda s: SemiSupervisedGMM(K, random_state=s, prior="default", **kw)),
        ("SSGMM", "n_init=5", lambda s: SemiSupervisedGMM(K, random_state=s, prior=None, n_init=5, **kw)),
        ("C3L", "default", lambda s: C3L(2 * K, random_state=s, **kw)),
        ("C3L", "labels", lambda s: C3L(2 * K, init="labels", random_state=s, **kw)),
        ("C3L", "leakage=0.5", lambda s: C3L(2 * K, leakage=0.5, random_state=s, **kw)),
        # fewer one-vs-rest hyperplanes than categories (the SVM's first m - 1 rows, or its first row)
        ("C3L", "J=m-1", lambda s: _Rows(C3L(2 * K, random_state=s, **kw), slice(0, -1))),
        ("C3L", "J=1", lambda s: _Rows(C3L(2 * K, random_state=s, **kw), 0)),
    ]


class _Rows:
    """C3L fitted with only some rows of the one-vs-rest hyperplanes the labels give (more than two
    categories; with two there is one hyperplane and this is the plain fit)."""

    def __init__(self, est, rows):
        self.est, self.rows = est, rows

    def fit(self, X, lab):
        from ppclust.inference import c3l

        h, a = c3l.hyperplane_from_labels(X, lab, C=self.est.svm_C)
        if np.ndim(h) == 2:
            h, a = h[self.rows], np.asarray(a)[self.rows]
        self.est.fit(X, hyperplane=(h, a))
        return self

    def __getattr__(self, name):
        return getattr(self.__dict__["est"], name)


C3L_SETS = ("iris", "breast_cancer")


def _fit(est, X, lab, y):
    """The cache record of one fit (``timed_labels``): its NMI against the classes ``y``, number of
    clusters and the fitted cost / start it reports."""
    pred, rec = timed_labels(lambda: est.fit(X, lab).labels_)
    if pred is not None:
        rec.update(nmi=metrics.nmi(y, pred), k=int(len(np.unique(pred))))
        for attr in ("cost_", "init_", "n_clusters_init_"):
            if hasattr(est, attr):
                v = getattr(est, attr)
                rec[attr.rstrip("_")] = v if isinstance(v, str) else float(v)
    return rec


def _beta0_true(X, y):
    from ppclust.inference.cecib import beta0

    parts = [X[y == c] for c in np.unique(y)]
    if min(len(p) for p in parts) <= X.shape[1]:
        return None
    try:
        return beta0(parts)
    except ValueError:
        return None


def run(args, cache):
    from ppclust.estimators.cecib import CECIB
    from ppclust.estimators.ssgmm import SemiSupervisedGMM

    t0 = time.time()
    for draw, data, X, y, K in panel_draws(args.draws, N_MAX):
        base = [
            ("CEC", lambda s, K=K: CECIB(2 * K, beta=0.0, random_state=s, progress_bar=False)),
            (
                "SSGMM prior=None",
                lambda s, K=K: SemiSupervisedGMM(K, random_state=s, prior=None, progress_bar=False),
            ),
            (
                'SSGMM prior="default"',
                lambda s, K=K: SemiSupervisedGMM(K, random_state=s, prior="default", progress_bar=False),
            ),
            (
                "SSGMM n_init=5",
                lambda s, K=K: SemiSupervisedGMM(
                    K, random_state=s, prior=None, n_init=5, progress_bar=False
                ),
            ),
        ]
        for name, factory in base:
            key = f"{data}|{draw}|{name}|none"
            if key not in cache:
                cache[key] = _fit(factory(draw), X, None, y)
        key = f"{data}|{draw}|beta0_true"
        if key not in cache:
            cache[key] = {"beta0": _beta0_true(X, y)}
        for frac, noise in SETTINGS:
            lab = datasets.sample_labels(y, frac, noise, seed=panel_seed(draw, frac, noise)).astype(
                np.int64
            )
            for method, name, factory in configs(K):
                if method == "C3L" and (
                    data not in C3L_SETS or (name.startswith("J=") and data != "iris")
                ):
                    continue
                key = f"{data}|{draw}|{method} {name}|{frac:g}|{noise:g}"
                if key in cache:
                    continue
                if budget_spent(t0, args.budget_s):
                    return
                cache[key] = _fit(factory(draw), X, lab, y)
        print(data, draw, f"{time.time() - t0:.0f}s", flush=True)
        import json

        CACHE.write_text(json.dumps(cache, indent=0, sort_keys=True))
    run_large(args, cache, t0)
    run_pca(args, cache, t0)


LARGE = ("breast_cancer", "digits", "vehicle", "segment", "satimage", "penbased")
N_LARGE = 600


def run_large(args, cache, t0):
    """Plain CEC and CEC-IB (default, label-seeded start, k-means++ start) at n_max = N_LARGE."""
    import json

    from ppclust.estimators.cecib import CECIB

    for draw, data, X, y, K in panel_draws(args.draws, N_LARGE, LARGE):
        todo = [("CEC", None, {"beta": 0.0})]
        for frac, noise in SETTINGS:
            lab = datasets.sample_labels(y, frac, noise, seed=panel_seed(draw, frac, noise)).astype(
                np.int64
            )
            todo += [
                (f"CECIB {nm}|{frac:g}|{noise:g}", lab, kw)
                for nm, kw in (
                    ("default", {}),
                    ("labels", {"init": "labels"}),
                    ("kmeans++", {"init": "kmeans++"}),
                )
            ]
        for name, lab, kw in todo:
            key = f"n{N_LARGE}|{data}|{draw}|{name}" + ("|none" if lab is None else "")
            if key in cache or time.time() - t0 > args.budget_s:
                continue
            cache[key] = _fit(CECIB(2 * K, random_state=draw, progress_bar=False, **kw), X, lab, y)
        print(f"n={N_LARGE}", data, draw, f"{time.time() - t0:.0f}s", flush=True)
        CACHE.write_text(json.dumps(cache, indent=0, sort_keys=True))


PCA_SETS = ("digits", "segment", "satimage", "penbased")
PCA_DIM = 5


def pca_sample(data, draw):
    """The panel's subsample projected on its first PCA_DIM principal components, re-standardised."""
    from sklearn.decomposition import PCA

    X, y = panel_sample(data, N_MAX, draw)
    Z = PCA(PCA_DIM, random_state=0).fit_transform(X)
    return (Z - Z.mean(0)) / Z.std(0), y


def run_pca(args, cache, t0):
    """Plain CEC and CEC-IB (defaults) on the four sets that miss, with d lowered to PCA_DIM: the size rule's
    d + 2 drops, n / (K min_size) rises; if the regime is the cause, the labels should gain there."""
    import json

    from ppclust.estimators.cecib import CECIB

    for draw in range(args.draws):
        for data in PCA_SETS:
            X, y = pca_sample(data, draw)
            K = int(y.max()) + 1
            todo = [("CEC|none", None, {"beta": 0.0})]
            for frac, noise in SETTINGS:
                lab = datasets.sample_labels(y, frac, noise, seed=panel_seed(draw, frac, noise)).astype(
                    np.int64
                )
                todo.append((f"CECIB default|{frac:g}|{noise:g}", lab, {}))
            for name, lab, kw in todo:
                key = f"pca{PCA_DIM}|{data}|{draw}|{name}"
                if key in cache or time.time() - t0 > args.budget_s:
                    continue
                cache[key] = _fit(CECIB(2 * K, random_state=draw, progress_bar=False, **kw), X, lab, y)
        CACHE.write_text(json.dumps(cache, indent=0, sort_keys=True))


def _get(cache, key):
    r = cache.get(key)
    return r if r and "error" not in r else None


def _labelled(cache, data, draw, method, name, frac, noise):
    if name == "E_beta pick":  # the lower CEC-IB cost of the beta = 1 fits from the two starts
        a = _get(cache, f"{data}|{draw}|CECIB labels|{frac:g}|{noise:g}")
        b = _get(cache, f"{data}|{draw}|CECIB kmeans++|{frac:g}|{noise:g}")
        if a is None or b is None:
            return None
        return dict(a, pick="labels") if a["cost"] <= b["cost"] else dict(b, pick="kmeans++")
    return _get(cache, f"{data}|{draw}|{method} {name}|{frac:g}|{noise:g}")


def _none_key(method, name):
    if method in ("CECIB", "C3L"):
        return "CEC"
    return f"SSGMM {name}" if name != "n_init=5" else "SSGMM n_init=5"


def _diffs(cache, data, draws, method, name, frac, noise):
    out = []
    for d in range(draws):
        a = _labelled(cache, data, d, method, name, frac, noise)
        b = _get(cache, f"{data}|{d}|{_none_key(method, name)}|none")
        if a is not None and b is not None:
            out.append(a["nmi"] - b["nmi"])
    return out


def _fmt(v):
    return f"{np.mean(v):+.3f} ({np.std(v):.3f})" if v else "-"


def _regime_row(cache, draws, data, X, y, pre, col):
    """(first cells of a regime row: data, n or d, min_size, n / (K min_size), k and NMI of plain CEC;
    {draw: plain-CEC record}) for the fits cached under ``pre``."""
    from ppclust.inference.cecib import min_size

    n, d = X.shape
    K = int(y.max()) + 1
    ms = min_size(n, d, 0.05)
    none = {dr: r for dr in range(draws) if (r := _get(cache, f"{pre}|{dr}|CEC|none"))}
    row = [
        data,
        n if col == "n" else d,
        f"{ms:g}",
        f"{n / (K * ms):.2f}",
        f"{np.mean([r['k'] for r in none.values()]):.1f}" if none else "-",
        f"{np.mean([r['nmi'] for r in none.values()]):.3f}" if none else "-",
    ]
    return row, none


def _tally(counts, key, v):
    """Add one data set's paired NMI changes ``v`` to the goal counts of ``key = (setting, noise)``
    (:func:`_summary`): [sets meeting the goal, sets, per-set mean changes]; the goal is a mean gain >= 0.05
    with clean labels (noise 0) and a mean change >= -0.02 with wrong ones."""
    c = counts.setdefault(key, [0, 0, []])
    if v:
        c[0] += np.mean(v) >= 0.05 if key[1] == 0 else np.mean(v) >= -0.02
        c[1] += 1
        c[2].append(np.mean(v))


def _summary(label, counts, names):
    """Goal counts per setting: {(name, noise): [sets meeting the goal, sets, per-set mean changes]}."""
    rows = []
    for nm in names:
        clean, wrong = counts.get((nm, 0.0)), counts.get((nm, 0.2))
        if clean and clean[1] and wrong:
            rows.append(
                [
                    nm,
                    f"{clean[0]}/{clean[1]}",
                    f"{np.mean(clean[2]):+.3f}",
                    f"{wrong[0]}/{wrong[1]}",
                    f"{np.mean(wrong[2]):+.3f}",
                ]
            )
    return md_table(
        [f"{label} setting", "clean gain >= 0.05", "mean clean", "20% wrong within 0.02", "mean 20% wrong"],
        rows,
    )


def tables(args, cache):
    from ppclust.inference.cecib import min_size

    draws = args.draws
    out = [
        "# Label benefit of CEC-IB, C3L and SemiSupervisedGMM on the panel (issue 20, session 10)",
        "",
        f"Written by `benchmarks/study_label_benefit.py` (draws={draws}, n_max={N_MAX}). {machine_info()}",
        "",
        "See the script's docstring for the questions and settings. Cells: mean (sd) over draws of the "
        "paired NMI difference to the method's no-label fit (CEC-IB / C3L: plain CEC from 2K clusters, the "
        "panel's 'none'; SemiSupervisedGMM: the same settings without labels).",
        "",
    ]
    # --- CEC-IB regime and start
    rows = []
    counts = {}
    names = ("default", "labels", "E_beta pick", "kmeans++", "labels beta=2")
    for data in DATASETS:
        X, y = panel_sample(data, N_MAX, 0)
        n, d = X.shape
        K = int(y.max()) + 1
        ms = min_size(n, d, 0.05)
        k_none = [r["k"] for dr in range(draws) if (r := _get(cache, f"{data}|{dr}|CEC|none"))]
        k_lab = [
            r["k"] for dr in range(draws) if (r := _labelled(cache, data, dr, "CECIB", "default", 0.1, 0))
        ]
        b0 = [
            r["beta0"]
            for dr in range(draws)
            if (r := cache.get(f"{data}|{dr}|beta0_true")) and r["beta0"] is not None
        ]
        row = [
            data,
            n,
            d,
            K,
            f"{ms:g}",
            f"{n / (K * ms):.2f}",
            f"{np.mean(k_none):.1f}" if k_none else "-",
            f"{np.mean(k_lab):.1f}" if k_lab else "-",
            f"{np.mean(b0):.3f} ({len(b0)})" if b0 else "singular",
        ]
        for frac, noise in SETTINGS:
            for nm in names:
                v = _diffs(cache, data, draws, "CECIB", nm, frac, noise)
                row.append(_fmt(v))
                _tally(counts, (nm, noise), v)
        picks = []
        for nm in ("default", "E_beta pick"):
            ch = [
                r.get("init", r.get("pick"))
                for dr in range(draws)
                if (r := _labelled(cache, data, dr, "CECIB", nm, 0.1, 0.0))
            ]
            picks.append(f"{sum(c == 'labels' for c in ch)}/{len(ch)}")
        row += picks
        rows.append(row)
    hdr = [
        "data",
        "n",
        "d",
        "K",
        "min_size",
        "n / (K min_size)",
        "k none",
        "k 10% labels",
        "beta0 true (draws)",
    ]
    hdr += [f"{nm} {int(100 * f)}%{' 20% wrong' if nz else ''}" for f, nz in SETTINGS for nm in names]
    hdr += ["labels start taken: default", "labels start taken: E_beta pick"]
    out += [
        "## CEC-IB: regime, start and beta (10% labels)",
        "",
        md_table(hdr, rows),
        "",
        "Summary (data sets where the goal holds: gain >= 0.05 with clean labels, change >= -0.02 with 20% "
        "wrong labels; mean over sets of the mean change):",
        "",
        _summary("CEC-IB", counts, names),
        "",
    ]
    # --- CEC-IB at n = N_LARGE
    rows, counts = [], {}
    for data in LARGE:
        pre = f"n{N_LARGE}|{data}"
        row, none = _regime_row(cache, draws, data, *panel_sample(data, N_LARGE, 0), pre, "n")
        for frac, noise in SETTINGS:
            for nm in ("default", "labels", "E_beta pick"):
                v = []
                for dr, b in none.items():
                    if nm == "E_beta pick":
                        la = _get(cache, f"{pre}|{dr}|CECIB labels|{frac:g}|{noise:g}")
                        km = _get(cache, f"{pre}|{dr}|CECIB kmeans++|{frac:g}|{noise:g}")
                        a = None if la is None or km is None else (la if la["cost"] <= km["cost"] else km)
                    else:
                        a = _get(cache, f"{pre}|{dr}|CECIB {nm}|{frac:g}|{noise:g}")
                    if a is not None:
                        v.append(a["nmi"] - b["nmi"])
                row.append(_fmt(v))
                _tally(counts, (nm, noise), v)
        rows.append(row)
    hdr = ["data", "n", "min_size", "n / (K min_size)", "k none", "NMI none"]
    hdr += [
        f"{nm} {int(100 * f)}%{' 20% wrong' if nz else ''}"
        for f, nz in SETTINGS
        for nm in ("default", "labels", "E_beta pick")
    ]
    out += [
        f"## CEC-IB at n_max = {N_LARGE} (the sets with more than 200 points)",
        "",
        md_table(hdr, rows),
        "",
        "Goal counts at this n (gain >= 0.05 clean / within 0.02 at 20% wrong): "
        + "; ".join(
            f"{nm}: {counts[(nm, 0.0)][0]}/{counts[(nm, 0.0)][1]} clean, "
            f"{counts[(nm, 0.2)][0]}/{counts[(nm, 0.2)][1]} wrong"
            for nm in ("default", "labels", "E_beta pick")
            if counts.get((nm, 0.0))
        ),
        "",
    ]
    # --- CEC-IB with d lowered by PCA
    rows = []
    for data in PCA_SETS:
        pre = f"pca{PCA_DIM}|{data}"
        row, none = _regime_row(cache, draws, data, *pca_sample(data, 0), pre, "d")
        for frac, noise in SETTINGS:
            v = [
                a["nmi"] - b["nmi"]
                for dr, b in none.items()
                if (a := _get(cache, f"{pre}|{dr}|CECIB default|{frac:g}|{noise:g}"))
            ]
            row.append(_fmt(v))
        rows.append(row)
    out += [
        f"## CEC-IB with d lowered to {PCA_DIM} by PCA (the four sets that miss, n_max = {N_MAX})",
        "",
        "A diagnostic, not a setting: the panel's subsample projected on its first principal components "
        "(re-standardised), so the size rule's d + 2 drops and n / (K min_size) rises.",
        "",
        md_table(
            [
                "data",
                "d",
                "min_size",
                "n / (K min_size)",
                "k none",
                "NMI none",
                "default 10%",
                "default 10% 20% wrong",
            ],
            rows,
        ),
        "",
    ]
    # --- SSGMM
    rows, summ = [], {}
    ss_names = ("prior=None", 'prior="default"', "n_init=5")
    for data in DATASETS:
        row = [data]
        for nm in ss_names:
            none = [
                r["nmi"]
                for dr in range(draws)
                if (r := _get(cache, f"{data}|{dr}|{_none_key('SSGMM', nm)}|none"))
            ]
            row.append(f"{np.mean(none):.3f}" if none else "-")
            for frac, noise in SETTINGS:
                v = _diffs(cache, data, draws, "SSGMM", nm, frac, noise)
                row.append(_fmt(v))
                _tally(summ, (nm, noise), v)
        rows.append(row)
    hdr = ["data"] + [f"{nm} {c}" for nm in ss_names for c in ("NMI none", "gain 10%", "change 20% wrong")]
    out += [
        "## SemiSupervisedGMM: maximum likelihood, MAP under the model's prior, restarts",
        "",
        md_table(hdr, rows),
        "",
        _summary("SSGMM", summ, ss_names),
        "",
    ]
    # --- C3L
    rows = []
    for data in C3L_SETS:
        for nm in ("default", "labels", "leakage=0.5", "J=m-1", "J=1"):
            row = [data, nm]
            for frac, noise in SETTINGS:
                row.append(_fmt(_diffs(cache, data, draws, "C3L", nm, frac, noise)))
                ks = [
                    r["k"] for dr in range(draws) if (r := _labelled(cache, data, dr, "C3L", nm, frac, noise))
                ]
                row.append(f"{np.mean(ks):.1f}" if ks else "-")
            k_none = [r["k"] for dr in range(draws) if (r := _get(cache, f"{data}|{dr}|CEC|none"))]
            row.append(f"{np.mean(k_none):.1f}" if k_none else "-")
            rows.append(row)
    out += [
        "## C3L on iris and breast_cancer",
        "",
        md_table(
            ["data", "C3L setting", "gain 10% clean", "k", "change 20% wrong", "k", "k plain CEC"], rows
        ),
        "",
    ]
    write_result("label_benefit_study.md", "\n".join(out))


if __name__ == "__main__":
    cached_study_main(sys.argv[1:], __doc__, CACHE, run, tables, draws=5, budget_s=1800.0)
