"""ppclust vs peer libraries: clustering quality (NMI / ARI) and time to solution.

1. Unlabelled data: ``TVClust()`` without links vs scikit-learn's ``BayesianGaussianMixture``
   (truncated Dirichlet process, variational).
2. Noisy links from :func:`ppclust.datasets.sample_links`: ``TVClust`` and ``RDPMeans`` vs PCKMeans and
   MPCKMeans of the PyPI package ``active-semi-supervised-clustering`` (optional).
3. ``SMIC`` (3SMIC with links) vs gemclus ``LinearModel(gemini=ChiSquareGEMINI())`` (+
   ``add_mlcl_constraint``) on SMIC's selected kNN kernel (optional package ``gemclus``).

Data: iris and wine (``ppclust.datasets.load``, standardised) and Gaussian blobs
(``ppclust.datasets.make_blobs``, standardised). Each fit is timed twice on the same inputs: "first"
includes JIT compilation (ppclust; numba/none for the others), "second" is a refit of the same shape
(compiled code cached). Quality is from the first fit. Optional packages that are missing are skipped
with a note in the output. Writes ``benchmarks/results/compare.md`` (``--quick``: ``compare_quick.md``).

Usage::

    PYTHONPATH=. python benchmarks/bench_compare.py [--quick] [--parts 1,2,3]
"""

from __future__ import annotations

import argparse
import importlib
import time
import warnings

import numpy as np

from benchmarks._common import machine_info, md_table, write_result
from ppclust import datasets, metrics


def _std(X):
    sd = X.std(0)
    return (X - X.mean(0)) / np.where(sd > 0, sd, 1.0)


def load_sets(quick):
    n_blobs = 500 if quick else 2000
    out = []
    for name in ("iris", "wine"):
        X, y = datasets.load(name)
        out.append((name, _std(X), y))
    X, y = datasets.make_blobs(n_blobs, n_clusters=5, n_features=4, cluster_std=1.5, seed=0)
    out.append((f"blobs{n_blobs}", _std(X), y))
    return out


def optional(module):
    """Import an optional benchmark dependency; None (and a note) when missing or broken."""
    old = np.geterr()
    try:
        return importlib.import_module(module), None
    except Exception as e:  # noqa: BLE001 - any import failure means "skip"
        return None, f"`{module}` not usable ({type(e).__name__}: {e}); skipped"
    finally:  # active_semi_clustering's mpckmeans module calls np.seterr('raise') at import time
        np.seterr(**old)


def timed(make, X, fit_kw=None, twice=True):
    """Fit ``make()`` on X; returns (estimator of the first fit, seconds first, seconds second)."""
    fit_kw = fit_kw or {}
    t0 = time.perf_counter()
    est = make().fit(X, **fit_kw)
    t1 = time.perf_counter() - t0
    t2 = float("nan")
    if twice:
        t0 = time.perf_counter()
        make().fit(X, **fit_kw)
        t2 = time.perf_counter() - t0
    return est, t1, t2


def scores(y, labels):
    labels = np.asarray(labels)
    return int(len(np.unique(labels))), metrics.nmi(y, labels), metrics.ari(y, labels)


def tv_kw(cfg, n):
    big = n > cfg["tv_big_n"]
    return {
        "n_draws": cfg["tv_samples_big" if big else "tv_samples"],
        "n_warmup": cfg["tv_samples_big" if big else "tv_warmup"],
    }


def tv_name(cfg, n):
    kw = tv_kw(cfg, n)
    return f"TVClust({kw['n_draws']}+{kw['n_warmup']})"


def _sec(t):
    return "-" if np.isnan(t) else f"{t:.2f}"


# ----------------------------------------------------------------------------------------------- part 1
def part1(sets, cfg, notes):
    from sklearn.mixture import BayesianGaussianMixture

    from ppclust import TVClust

    rows = []
    for name, X, y in sets:
        n, d = X.shape
        K = len(np.unique(y))
        methods = {
            tv_name(cfg, n): lambda n=n: TVClust(**tv_kw(cfg, n), random_state=0),
            "BGMM-DP": lambda: BayesianGaussianMixture(
                n_components=cfg["bgmm_components"],
                weight_concentration_prior_type="dirichlet_process",
                max_iter=500,
                random_state=0,
            ),
        }
        for mname, make in methods.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est, t1, t2 = timed(make, X)
            labels = est.labels_ if hasattr(est, "labels_") else est.predict(X)
            k, nm, ar = scores(y, labels)
            rows.append([name, n, d, K, mname, k, nm, ar, _sec(t1), _sec(t2)])
            print(rows[-1], flush=True)
    return md_table(
        ["data", "n", "d", "true K", "method", "K found", "NMI", "ARI", "s first", "s second"], rows
    )


# ----------------------------------------------------------------------------------------------- part 2
def part2(sets, cfg, notes):
    from ppclust import RDPMeans, TVClust

    asc, why = optional("active_semi_clustering.semi_supervised.pairwise_constraints")
    if asc is None:
        notes.append(why)
    rows = []
    for name, X, y in sets:
        n = X.shape[0]
        K = len(np.unique(y))
        fracs = cfg["fracs_small"] if n <= 500 else cfg["fracs_large"]
        for frac in fracs:
            n_pairs = int(round(frac * n * (n - 1) / 2))
            for noise in cfg["noises"]:
                si = datasets.sample_links(y, n_pairs, noise=noise, seed=1)
                ml, cl = si.must_link, si.cannot_link
                kw = {"must_link": ml, "cannot_link": cl}
                methods = {
                    tv_name(cfg, n): (lambda n=n: TVClust(**tv_kw(cfg, n), random_state=0), kw),
                    "RDPMeans(lam_k=K)": (lambda K=K: RDPMeans(lam_k=K, random_state=0), kw),
                }
                if asc is not None:
                    lists = {"ml": [tuple(p) for p in ml.tolist()], "cl": [tuple(p) for p in cl.tolist()]}
                    methods["PCKMeans(K)"] = (lambda K=K: asc.PCKMeans(n_clusters=K), lists)
                    if n <= cfg["mpck_max_n"]:
                        methods["MPCKMeans(K)"] = (lambda K=K: asc.MPCKMeans(n_clusters=K), lists)
                for mname, (make, fkw) in methods.items():
                    np.random.seed(0)  # noqa: NPY002 - the peer package draws its init from the global NumPy state
                    try:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            twice = not mname.startswith("MPCK") and (frac, noise) == (fracs[0], 0.0)
                            est, t1, t2 = timed(make, X, fkw, twice=twice)
                    except Exception as e:  # noqa: BLE001 - report the peer's failure in the table
                        rows.append(
                            [
                                name,
                                n,
                                f"{100 * frac:g}%",
                                n_pairs,
                                noise,
                                mname,
                                f"error: {type(e).__name__}",
                                "-",
                                "-",
                                "-",
                                "-",
                            ]
                        )
                        print(rows[-1], flush=True)
                        continue
                    k, nm, ar = scores(y, est.labels_)
                    rows.append(
                        [name, n, f"{100 * frac:g}%", n_pairs, noise, mname, k, nm, ar, _sec(t1), _sec(t2)]
                    )
                    print(rows[-1], flush=True)
    if asc is not None and any(n > cfg["mpck_max_n"] for _, X, _ in sets for n in [X.shape[0]]):
        notes.append(
            f"MPCKMeans run only for n <= {cfg['mpck_max_n']} (pure-Python loops: minutes at n = 2000)."
        )
    return md_table(
        [
            "data",
            "n",
            "links (% of pairs)",
            "links",
            "noise",
            "method",
            "K found",
            "NMI",
            "ARI",
            "s first",
            "s second",
        ],
        rows,
    )


# ----------------------------------------------------------------------------------------------- part 3
def part3(sets, cfg, notes):
    from ppclust import SMIC

    gem, why = optional("gemclus")
    if gem is None:
        notes.append(why)
    else:
        from gemclus.gemini import ChiSquareGEMINI
        from gemclus.linear import LinearModel
    rows = []
    for name, X, y in sets:
        if X.shape[0] > cfg["smic_max_n"]:
            X, y = X[: cfg["smic_max_n"]], y[: cfg["smic_max_n"]]
            name = f"{name}[:{cfg['smic_max_n']}]"
        n = X.shape[0]
        K = len(np.unique(y))
        for frac in (0.0, *cfg["smic_fracs"]):
            n_pairs = int(round(frac * n * (n - 1) / 2))
            si = datasets.sample_links(y, n_pairs, seed=1)
            kw = {"must_link": si.must_link, "cannot_link": si.cannot_link} if n_pairs else {}
            est, t1, t2 = timed(lambda K=K: SMIC(n_clusters=K, random_state=0), X, kw, twice=False)
            k, nm, ar = scores(y, est.labels_)
            rows.append([name, n, f"{100 * frac:g}%", n_pairs, "SMIC (auto t, gamma)", k, nm, ar, _sec(t1)])
            print(rows[-1], flush=True)
            if gem is None:
                continue
            G = est.kernel_.K.toarray()

            def make(K=K, n_pairs=n_pairs, si=si):
                model = LinearModel(n_clusters=K, gemini=ChiSquareGEMINI(), random_state=0)
                if n_pairs:
                    model = gem.add_mlcl_constraint(
                        model,
                        si.must_link if len(si.must_link) else None,
                        si.cannot_link if len(si.cannot_link) else None,
                    )
                return model

            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    g, t1, _ = timed(make, G, twice=False)
            except Exception as e:  # noqa: BLE001 - report the peer's failure in the table
                rows.append(
                    [name, n, f"{100 * frac:g}%", n_pairs, "gemclus chi2", f"error: {e}", "-", "-", "-"]
                )
                print(rows[-1], flush=True)
                continue
            k, nm, ar = scores(y, g.predict(G))
            rows.append(
                [
                    name,
                    n,
                    f"{100 * frac:g}%",
                    n_pairs,
                    f"gemclus chi2 (t={est.n_neighbors_} kernel)",
                    k,
                    nm,
                    ar,
                    _sec(t1),
                ]
            )
            print(rows[-1], flush=True)
    return md_table(
        ["data", "n", "links (% of pairs)", "links", "method", "K found", "NMI", "ARI", "s"], rows
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small version (blobs n=500, fewer draws/settings)")
    ap.add_argument("--parts", default="1,2,3")
    ap.add_argument("--out", default=None, help="result file name under benchmarks/results")
    args = ap.parse_args(argv)
    q = args.quick
    cfg = {
        "tv_samples": 100 if q else 500,
        "tv_warmup": 100 if q else 500,
        "bgmm_components": 20,
        "fracs_small": (0.01,) if q else (0.01, 0.05),
        "fracs_large": (0.001,) if q else (0.0005, 0.001),
        "noises": (0.0, 0.1),
        "mpck_max_n": 200,
        "smic_max_n": 300,
        "tv_big_n": 1000,
        "tv_samples_big": 200,
        "smic_fracs": (0.01,) if q else (0.01, 0.05),
    }
    sets = load_sets(q)
    parts = {int(p) for p in args.parts.split(",")}
    notes, sections = [], []
    tv = (
        f"`TVClust(n_draws={cfg['tv_samples']}, n_warmup={cfg['tv_warmup']}, random_state=0)` "
        f"(`n_draws = n_warmup = {cfg['tv_samples_big']}` when n > {cfg['tv_big_n']}, to fit the time "
        "box; column 'TVClust(draws+warmup)')"
    )
    if 1 in parts:
        sections.append(
            "## 1. No side information: TVClust vs BayesianGaussianMixture (DP)\n\n"
            f"{tv} (2 chains, defaults otherwise) vs `BayesianGaussianMixture(n_components="
            f"{cfg['bgmm_components']}, weight_concentration_prior_type='dirichlet_process', "
            "max_iter=500, random_state=0)`; BGMM's K = distinct predicted labels.\n\n"
            + part1(sets, cfg, notes)
        )
    if 2 in parts:
        sections.append(
            "## 2. Links: TVClust, RDPMeans vs PCKMeans / MPCKMeans\n\n"
            "Links: `sample_links(y, round(frac * n(n-1)/2), noise, seed=1)`. "
            f"{tv}; `RDPMeans(lam_k=K, random_state=0)` (lambda from the true K); PCKMeans / "
            "MPCKMeans from `active-semi-supervised-clustering` with the true K (default w = 1, "
            "max_iter = 100). TVClust is not told K. 's second' only for the first "
            "setting of each data set.\n\n" + part2(sets, cfg, notes)
        )
    if 3 in parts:
        sections.append(
            "## 3. SMIC vs gemclus\n\n"
            "`SMIC(n_clusters=K, random_state=0)` with its automatic (t, gamma, eta) selection "
            "(time includes it); gemclus `LinearModel(n_clusters=K, gemini=ChiSquareGEMINI(), "
            "random_state=0)` (+ `add_mlcl_constraint(..., factor=1)` with links) fitted on the "
            "dense kNN kernel matrix SMIC selected (its time excludes kernel construction).\n\n"
            + part3(sets, cfg, notes)
        )
    text = (
        "# ppclust vs peer libraries: quality and time to solution\n\n"
        f"Generated by `benchmarks/bench_compare.py{' --quick' if q else ''}`. "
        f"Machine: {machine_info()}. "
        "Shared 2-core CPU: seconds are wall time under load from other jobs. 's first' includes JIT "
        "compilation for ppclust; 's second' refits the same shapes (compiled code cached).\n\n"
        + "\n\n".join(sections)
        + "\n"
    )
    if notes:
        text += "\n## Notes\n\n" + "\n".join(f"* {s}" for s in notes) + "\n"
    path = write_result(args.out or ("compare_quick.md" if q else "compare.md"), text)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
