"""The two cases that opened issue 20, at the size they were reported, old defaults against today's ->
results/issue_cases_study.md (+ .json).

The benefit panel (``bench_benefit.py``) subsamples every data set to 200 points per draw for CPU budget;
the issue's two failures were seen on larger samples. This script re-runs both as the issue describes
them, on several random draws (subsample, side information and seed), and fits each draw twice: with the
defaults of the session that saw the failure and with today's defaults (every other parameter at its
default). Nothing here is tuned: the settings below were written down from the issue before any run.

* **TVClust on handwriting digits**: 1500 points of scikit-learn's digits (uniform subsample), PCA to
  6 dimensions, standardised; links: none, 1500 and 6000 clean uniformly random pairs, and 1500 pairs
  with 10% of the signs flipped. "old": ``kappa0=1`` (spec 2.8's value, the default before session 6)
  and ``link_noise=None`` (the neutral Beta(1, 10) / Beta(10, 1) link prior, the default before
  session 10). "now": the estimator's defaults (``kappa0=None`` -> 0.01, ``link_noise="auto"``, a prior
  that says one link in ten is wrong). "now, link_noise=0.01": the defaults with the user saying the
  links are clean (added after the first draw's run showed the default's prior holding p near 0.9).
  The issue saw ARI 0.68 without links, 0.69 with 1500 clean pairs (posterior mean p 0.81, ~20
  clusters) and 0.83 with 6000.
* **CEC-IB on satimage**: 3000 points of KEEL's satimage (uniform subsample), standardised, d = 36,
  6 classes; 10% of the points labelled, clean and with 20% wrong labels; ``n_clusters = 2K = 12``.
  "old": ``beta=1, init="kmeans++", cap_clusters=False`` (the paper's start, the authors' program's
  behaviour: what the issue ran). "now": the defaults (``beta="auto"``, ``init="auto"``,
  ``cap_clusters=True``); "now, init='labels'": the label-seeded start always (``init="auto"`` takes it
  only when its plain-CEC cost is the lower; added after the first draws' run). 'none' is plain CEC
  (``beta=0``) under each setting's start rule. The issue saw
  NMI 0.584 with labels against 0.586 without (the authors' program: 0.596). The semi-supervised GMM
  (true K, defaults) and C3L (defaults) run on the same draws for reference.

Each (draw, case, setting) is one fit; fits are cached in the JSON as they finish, so an interrupted run
resumes. Run: ``PYTHONPATH=. python benchmarks/study_issue_cases.py [--draws 5] [--budget-s 3000]``.
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
from benchmarks.bench_benefit import load, standardise
from ppclust import datasets, metrics

N_DIGITS, PCA_DIM, N_SAT, LABEL_FRACTION = 1500, 6, 3000, 0.10
LINK_CELLS = (
    ("none", 0, 0.0),
    ("1500 clean", 1500, 0.0),
    ("6000 clean", 6000, 0.0),
    ("1500, 10% flipped", 1500, 0.1),
)
LABEL_CELLS = (
    ("none", 0.0, 0.0),
    ("10% clean", LABEL_FRACTION, 0.0),
    ("10%, 20% wrong", LABEL_FRACTION, 0.2),
)
TV_SETTINGS = {
    "old": dict(kappa0=1.0, link_noise=None),
    "now": {},
    "now, link_noise=0.01": dict(link_noise=0.01),
}
CEC_SETTINGS = {
    "old": dict(beta=1.0, init="kmeans++", cap_clusters=False),
    "now": {},
    "now, init='labels'": dict(init="labels"),
}
CACHE = RESULTS / "issue_cases_study.json"


def digits_draw(draw):
    from sklearn.decomposition import PCA

    X, y = datasets.load("digits")
    idx = np.random.default_rng(2000 + draw).choice(len(y), N_DIGITS, replace=False)
    X = PCA(PCA_DIM, random_state=0).fit_transform(X[idx].astype(float))
    return standardise(X), y[idx].astype(np.int64)


def satimage_draw(draw):
    """The panel's loader (uniform subsample, every column standardised) at n = N_SAT."""
    return load("satimage", N_SAT, seed=3000 + draw)


#: what the last fit reported besides its labels (TVClust's posterior means of p and q)
EXTRA: dict = {}


def fit_tvclust(X, side, setting, seed):
    from ppclust import TVClust

    est = TVClust(**TV_SETTINGS[setting], random_state=seed, progress_bar=False)
    if side is None:
        est.fit(X)
    else:
        est.fit(X, must_link=side.must_link, cannot_link=side.cannot_link)
        EXTRA.update(p=float(est.p_), q=float(est.q_))
    return est.labels_


def fit_labels(method, X, labels, K, setting, seed):
    from ppclust import C3L, CECIB, SemiSupervisedGMM

    if method == "CECIB":
        kw = dict(CEC_SETTINGS[setting])
        if labels is None:  # plain CEC; a label-seeded start has no labels to seed from: the default start
            kw.update(beta=0.0)
            if kw.get("init") == "labels":
                del kw["init"]
        return CECIB(2 * K, **kw, random_state=seed, progress_bar=False).fit(X, labels).labels_
    if method == "C3L":
        if labels is None:  # C3L's no-label point is plain CEC (its start rule: the defaults')
            return CECIB(2 * K, beta=0.0, random_state=seed, progress_bar=False).fit(X).labels_
        return C3L(2 * K, random_state=seed, progress_bar=False).fit(X, labels).labels_
    return SemiSupervisedGMM(K, random_state=seed, progress_bar=False).fit(X, labels).labels_


def fit_cell(cache, k, y, fit, *args):
    """Fit the cell ``k`` (``fit(*args)`` returns labels), score it against ``y``, cache it and save."""
    EXTRA.clear()
    lab, rec = timed_labels(fit, *args)
    if lab is not None:
        rec.update(nmi=metrics.nmi(y, lab), ari=metrics.ari(y, lab), k=int(len(np.unique(lab))), **EXTRA)
    cache[k] = rec
    CACHE.write_text(json.dumps(cache, indent=0, sort_keys=True))
    print(k, rec, flush=True)


def cells(draws):
    """Every fit of the study, draw by draw: ``(key, y, fit, args)``, data built once per draw."""
    for draw in range(draws):
        X, y = digits_draw(draw)
        for setting in TV_SETTINGS:
            for name, m, noise in LINK_CELLS:
                seed = 11 * draw + m + int(100 * noise)
                side = datasets.sample_links(y, m, noise, seed=seed) if m else None
                yield f"digits|{draw}|TVClust|{setting}|{name}", y, fit_tvclust, (X, side, setting, draw)
        X, y = satimage_draw(draw)
        for method, settings in (("CECIB", CEC_SETTINGS), ("SemiSupervisedGMM", ("now",)), ("C3L", ("now",))):
            for setting in settings:
                for name, frac, noise in LABEL_CELLS:
                    labels = None
                    if frac:
                        labels = datasets.sample_labels(y, frac, noise, seed=13 * draw + int(100 * noise))
                        labels = labels.astype(np.int64)
                    yield (
                        f"satimage|{draw}|{method}|{setting}|{name}",
                        y,
                        fit_labels,
                        (method, X, labels, int(y.max()) + 1, setting, draw),
                    )


def run(args, cache):
    t0 = time.time()
    for k, y, fit, fit_args in cells(args.draws):
        if k in cache:
            continue
        if budget_spent(t0, args.budget_s):
            return
        fit_cell(cache, k, y, fit, *fit_args)


def cell_values(cache, data, method, setting, name, draws, metric):
    """The values of ``metric`` in one cell over the draws present (failed fits left out); the notebook
    reads the study's JSON through it."""
    return [
        r[metric]
        for d in range(draws)
        if (r := cache.get(f"{data}|{d}|{method}|{setting}|{name}"))
        and "error" not in r
        and r.get(metric) is not None
    ]


_METRICS = ("nmi", "ari", "k", "p", "q", "s")


def _fmt(v, nd=3):
    return f"{np.mean(v):.{nd}f} ({np.std(v):.{nd}f}; {len(v)})" if v else "-"


def _gain(cache, data, method, setting, name, base, draws):
    """Mean (sd) over draws of the same-draw NMI difference of cell ``name`` against ``base``."""
    out = []
    for d in range(draws):
        a = cache.get(f"{data}|{d}|{method}|{setting}|{name}")
        b = cache.get(f"{data}|{d}|{method}|{setting}|{base}")
        if a and b and "nmi" in a and "nmi" in b:
            out.append(a["nmi"] - b["nmi"])
    return f"{np.mean(out):+.3f} ({np.std(out):.3f})" if out else "-"


def tables(args, cache):
    draws = args.draws
    out = [
        "# The issue's two cases at their size (issue 20)",
        "",
        f"Written by `benchmarks/study_issue_cases.py` (draws={draws}). {machine_info()}",
        "",
        "See the script's docstring for the settings (fixed from the issue's text before any run). "
        "Cells: mean (sd; draws) over random draws (subsample, side information, seed); gains are "
        "means (sd) of same-draw NMI differences against 'none' under the same setting.",
        "",
        f"## TVClust, digits: n = {N_DIGITS}, PCA to {PCA_DIM} dimensions, 10 classes",
        "",
        "Issue: ARI 0.68 without links, 0.69 with 1500 clean pairs (p 0.81, ~20 clusters), 0.83 with 6000.",
        "",
    ]
    rows = []
    for setting in TV_SETTINGS:
        for name, _, _ in LINK_CELLS:
            c = {m: cell_values(cache, "digits", "TVClust", setting, name, draws, m) for m in _METRICS}
            gain = _gain(cache, "digits", "TVClust", setting, name, "none", draws) if name != "none" else ""
            rows.append(
                [
                    setting,
                    name,
                    _fmt(c["ari"]),
                    _fmt(c["nmi"]),
                    gain,
                    _fmt(c["k"], 1),
                    _fmt(c["p"]),
                    _fmt(c["q"]),
                    _fmt(c["s"], 1),
                ]
            )
    out += [
        md_table(
            [
                "defaults",
                "links",
                "ARI",
                "NMI",
                "NMI gain",
                "clusters",
                "posterior p",
                "posterior q",
                "seconds",
            ],
            rows,
        ),
        "",
    ]
    out += [
        f"## CEC-IB (and the label peers), satimage: n = {N_SAT}, d = 36, 6 classes, "
        f"{LABEL_FRACTION:.0%} labelled",
        "",
        "Issue: CEC-IB NMI 0.584 with 10% clean labels against 0.586 without (the authors' program 0.596).",
        "",
    ]
    rows = []
    for method, settings in (("CECIB", CEC_SETTINGS), ("SemiSupervisedGMM", ("now",)), ("C3L", ("now",))):
        for setting in settings:
            for name, _, _ in LABEL_CELLS:
                c = {m: cell_values(cache, "satimage", method, setting, name, draws, m) for m in _METRICS}
                gain = _gain(cache, "satimage", method, setting, name, "none", draws)
                gain = "" if name == "none" else gain
                rows.append(
                    [
                        method,
                        setting,
                        name,
                        _fmt(c["nmi"]),
                        _fmt(c["ari"]),
                        gain,
                        _fmt(c["k"], 1),
                        _fmt(c["s"], 1),
                    ]
                )
    header = ["method", "defaults", "labels", "NMI", "ARI", "NMI gain", "clusters", "seconds"]
    out += [md_table(header, rows), ""]
    out += [
        "## Reading (hand-written; the numbers are in the tables above)",
        "",
        "* TVClust: the clusters column is the point estimate's K. Without links the Gaussian mixture "
        "splits each digit class into several clusters under either default (the classes are not "
        "Gaussian in these 6 dimensions; the panel's split study found the same on segment and "
        "penbased: the model's own log joint prefers the split). A clean may-link between two pieces "
        "of a class costs log(p / (1 - q)) nats, and of random pairs only about one in K (the number of "
        "classes) is a may-link, so each class holds few of them and they move few points. The "
        "default prior says one link in ten is wrong with the weight of the links themselves, so p "
        "stays near its prior mean; told that the links are clean (link_noise=0.01) the sampler "
        "charges more per crossed may-link, and the gain grows. With 6000 pairs the links win under "
        "every setting.",
        "* CEC-IB: labels give no gain at this size under any of its settings. Its label term "
        "(eq. 10) reads only the labelled points, so the cheapest way to lower it is to move the few "
        "labelled points that disagree with their cluster, not the cluster's boundary; the labels "
        "can act only through the start, and at n = 3000 the k-means++ start has the lower CEC "
        "cost, which init='auto' follows. The semi-supervised GMM, whose labelled points fix their "
        "component's responsibilities in every M-step, and C3L, whose labels set a hyperplane that "
        "every point feels, gain on the same draws.",
        "",
    ]
    errs = sorted({r["error"] for r in cache.values() if "error" in r})
    if errs:
        out += ["Failed fits: " + "; ".join(errs), ""]
    write_result("issue_cases_study.md", "\n".join(out))


def main(argv=None):
    cached_study_main(argv, __doc__, CACHE, run, tables, draws=5, budget_s=3000.0)


if __name__ == "__main__":
    main()
