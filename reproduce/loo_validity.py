"""When PSIS-LOO of a TVClust fit can be trusted, and the K-fold alternative beside it
-> results/loo_validity.md, results/loo_validity.json.

For every data set of the side-information benefit panel (``reproduce/benefit.py``: iris, wine,
breast_cancer, digits (PCA to 10), vehicle, segment, satimage, penbased), on the panel's own first
subsample (at most ``--n-max`` points, features standardised):

* **LOO**: one TVClust fit (collapsed Gibbs, ``--sweeps`` warm-up and ``--sweeps`` kept sweeps per chain,
  ``--chains`` chains), its pointwise log-likelihood (``TVClust.compute_log_likelihood``: the collapsed
  leave-one-out predictive, ``ppclust.posterior.loo_log_predictive``) and ArviZ's ``az.loo``: the share of
  Pareto k values above 0.7 (and above ArviZ's sample-size threshold ``good_k`` and above 1), elpd_loo per
  point and p_loo. An ``az.loo`` that raises is recorded with its message.
* **K-fold**: ``--folds`` folds (shuffled, the same seed); each fold's TVClust (same settings) is fitted on
  the other rows and scores the held-out rows with ``score_samples`` (log posterior predictive density,
  averaged over the kept draws); elpd_kfold per point is their mean over all rows, with its standard error.

Both are expected log predictive densities per point in the units of the standardised features, so they
are comparable: LOO conditions on n - 1 points, K-fold on (1 - 1/folds) n, so K-fold is a little lower.
With ``--links m``, ``m * n`` clean random links (``datasets.sample_links``) go to the LOO fit, and each
fold keeps the links between its training rows.

Run: ``PYTHONPATH=. python reproduce/loo_validity.py [--n-max 200] [--sweeps 150] [--folds 5]``.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np

from ppclust import TVClust, datasets
from reproduce._common import RESULTS, machine_info, write_json, write_result
from reproduce.benefit import DATASETS, panel_sample

#: settings a saved row must share to be kept
SAME = ("n_max", "sweeps", "chains", "folds", "seed")
K_HIGH = 0.7  # Vehtari et al. (2024, JMLR): above it the importance-sampling estimate is unreliable


def _links(y, m, seed):
    if m <= 0:
        return None, None
    side = datasets.sample_links(y, int(round(m * len(y))), 0.0, seed=seed)
    return side.must_link, side.cannot_link


def _fit(X, ml, cl, args, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = TVClust(
            n_draws=args.sweeps,
            n_warmup=args.sweeps,
            n_chains=args.chains,
            progress_bar=False,
            random_state=seed,
        )
        return est.fit(X, must_link=ml, cannot_link=cl)


def psis(ll):
    """Pareto-smoothed log weights and k per point (ArviZ's ``psislw``, r_eff = 1); a point whose largest
    importance ratios tie (ArviZ: "All tail values are the same") keeps its raw weights and gets k = -inf.

    A tie means the largest ratio 1 / p(x_i | x_-i, z_-i) is shared by the whole tail (at least
    min(S / 5, 3 sqrt(S)) of the S draws): the ratios are bounded by a value that many draws attain, so
    plain importance sampling is already stable there and there is no tail to smooth.
    """
    from arviz_stats.base import array_stats
    from scipy.special import logsumexp

    lw, k = np.empty_like(ll), np.empty(ll.shape[-1])
    for i in range(ll.shape[-1]):
        try:
            lw[..., i], k[i] = array_stats.psislw(ll[..., i], r_eff=1.0, axis=(0, 1))
        except ValueError as err:
            if "tail values are the same" not in str(err):
                raise
            lw[..., i], k[i] = -ll[..., i] - logsumexp(-ll[..., i]), -np.inf  # normalised, as psislw's
    return lw, k


def loo(X, ml, cl, args, seed):
    """One fit, its pointwise log-likelihood, az.loo as it is and az.loo with :func:`psis`'s weights."""
    import arviz as az
    import xarray as xr

    t0 = time.perf_counter()
    est = _fit(X, ml, cl, args, seed)
    est.compute_log_likelihood()
    row = {"K": int(est.n_clusters_), "validity": est.posterior_.attrs.get("loo_validity", "")}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            az.loo(est.posterior_)
        row["az_loo_error"] = None
    except Exception as err:  # noqa: BLE001 - ArviZ's failure is a result here ("All tail values ...")
        row["az_loo_error"] = f"{type(err).__name__}: {err}"
    da = next(iter(est.posterior_["log_likelihood"].ds.data_vars.values()))
    ll = np.asarray(da.transpose("chain", "draw", ...).values, np.float64)
    lw, k = psis(ll)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = az.loo(
            est.posterior_,
            reff=1.0,
            log_weights=xr.DataArray(lw, dims=da.transpose("chain", "draw", ...).dims),
            pareto_k=xr.DataArray(np.where(np.isfinite(k), k, 0.0), dims=da.dims[-1:]),
        )
    n = k.size
    row.update(
        elpd_per_point=float(res.elpd) / n,
        se_per_point=float(res.se) / n,
        p_loo=float(res.p),
        good_k=float(res.good_k),
        share_tied=float(np.mean(~np.isfinite(k))),
        share_k_above_0_7=float(np.mean(k > K_HIGH)),
        share_k_above_good_k=float(np.mean(k > res.good_k)),
        share_k_above_1=float(np.mean(k > 1.0)),
        max_k=float(np.max(k[np.isfinite(k)])) if np.isfinite(k).any() else float("nan"),
        share_k_nan=float(np.mean(np.isnan(k))),
        draws=int(ll.shape[0] * ll.shape[1]),
        seconds=time.perf_counter() - t0,
    )
    return row


def _within(pairs, pos):
    """The pairs with both rows in a training fold, as positions in it (``pos``: -1 outside)."""
    if pairs is None or len(pairs) == 0:
        return None
    p = pos[np.asarray(pairs)]
    return p[(p >= 0).all(1)]


def kfold(X, y, ml, cl, args, seed):
    """Held-out score_samples of ``args.folds`` fits, one per fold."""
    from sklearn.model_selection import KFold

    t0 = time.perf_counter()
    n = len(X)
    score = np.full(n, np.nan)
    for train, test in KFold(args.folds, shuffle=True, random_state=seed).split(X):
        pos = np.full(n, -1)
        pos[train] = np.arange(train.size)

        est = _fit(X[train], _within(ml, pos), _within(cl, pos), args, seed)
        score[test] = est.score_samples(X[test])
    return {
        "elpd_per_point": float(score.mean()),
        "se_per_point": float(score.std(ddof=1) / np.sqrt(n)),
        "seconds": time.perf_counter() - t0,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--n-max", type=int, default=200)
    ap.add_argument("--sweeps", type=int, default=100, help="warm-up and kept sweeps per chain")
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument(
        "--links", type=float, nargs="+", default=[0.0, 1.0], help="clean random links per point (0: none)"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--name", default="loo_validity")
    ap.add_argument("--report-only", action="store_true", help="rewrite the .md from the .json")
    args = ap.parse_args(argv)
    if args.report_only:
        saved = json.loads((RESULTS / f"{args.name}.json").read_text())
        for k, v in saved["settings"].items():
            if k != "_run":
                setattr(args, k, v)
        rows = {k: v for k, v in saved["results"].items() if k != "_run"}  # write_json's stamp
        write_result(f"{args.name}.md", report(args, rows, saved["settings"].get("_run", {})))
        return
    settings = {k: v for k, v in vars(args).items() if k not in ("name", "report_only")}
    path = RESULTS / f"{args.name}.json"
    results = {}
    if path.exists():  # rows of a run with the same settings are kept (a run adds link levels or sets)
        saved = json.loads(path.read_text())
        if all(saved["settings"].get(k) == settings[k] for k in SAME):
            results = {k: v for k, v in saved["results"].items() if k != "_run"}  # write_json's stamp
    for name in args.datasets:
        for m in args.links:
            key = name if m == 0 else f"{name} + {m:g} links/point"
            if key in results:
                continue
            X, y = panel_sample(name, args.n_max, 0)
            ml, cl = _links(y, m, args.seed)
            results[key] = {
                "data": name,
                "links": m,
                "n": int(len(X)),
                "d": int(X.shape[1]),
                "classes": int(y.max()) + 1,
                "loo": loo(X, ml, cl, args, args.seed),
                "kfold": kfold(X, y, ml, cl, args, args.seed),
            }
            print(key, results[key], flush=True)
            settings["links"] = sorted({r.get("links", 0.0) for r in results.values()})  # after every row
            write_json(args.name, {"settings": settings, "results": results}, "reproduce/loo_validity.py")
            write_result(f"{args.name}.md", report(args, results))


def _f(x):
    return "-" if x is None or not np.isfinite(x) else f"{x:.2f}"


def report(args, results, run=None):
    valid = [n for n, r in results.items() if r["loo"]["share_k_above_0_7"] == 0]
    mostly = [n for n, r in results.items() if 0 < r["loo"]["share_k_above_0_7"] <= 0.1]
    lines = [
        "# PSIS-LOO of TVClust fits: Pareto k per data set, and the K-fold alternative",
        "",
        f"Written by `reproduce/loo_validity.py`. {(run or {}).get('machine') or machine_info()}",
        "",
        f"Settings: the benefit panel's first subsample of each set (at most n_max = {args.n_max} points, "
        f"features standardised), TVClust at its defaults except {args.sweeps} warm-up + {args.sweeps} kept "
        f"sweeps x {args.chains} chains (collapsed Gibbs), seed {args.seed}; "
        + "no links, or (rows '+ m links/point') m * n clean random links (`datasets.sample_links`)"
        + f"; K-fold: {args.folds} shuffled folds, one fit per fold with the same settings, held-out "
        "`score_samples`. Densities per point, in the units of the standardised features.",
        "",
        "Columns: `az.loo` as is (its error, if any); then PSIS per point with ArviZ's `psislw` (r_eff = 1), "
        "where a point whose largest importance ratios all tie (ArviZ's 'All tail values are the same') "
        "keeps its raw weights (bounded ratios: nothing to smooth) and is counted as *tied*; the shares of "
        "Pareto k above 0.7, above ArviZ's sample-size threshold good_k and above 1; elpd_loo per point "
        "from `az.loo` with those weights; elpd of the K-fold held-out `score_samples` per point. With links "
        "the two differ in what they condition on: LOO keeps every link observed (a point's links to the "
        "others inform its leave-one-out predictive), `score_samples` scores a held-out row without its "
        "links, so K-fold is lower there by what the links tell about the held-out points.",
        "",
        "| data set | n | d | K fitted | az.loo as is | tied | k > 0.7 | k > good_k | k > 1 | max k "
        "| elpd_loo / n | p_loo | elpd_kfold / n (se) | LOO - K-fold |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    order = {d: i for i, d in enumerate(DATASETS)}
    rows = sorted(
        results.items(), key=lambda kv: (order.get(kv[1].get("data", kv[0]), 99), kv[1].get("links", 0))
    )
    for name, r in rows:
        lo, kf = r["loo"], r["kfold"]
        as_is = "raises: " + lo["az_loo_error"].split(": ", 1)[-1][:40] if lo["az_loo_error"] else "runs"
        lines.append(
            f"| {name} | {r['n']} | {r['d']} | {lo['K']} | {as_is} | {lo['share_tied']:.1%} "
            f"| {lo['share_k_above_0_7']:.1%} | {lo['share_k_above_good_k']:.1%} (good_k {lo['good_k']:.2f}) "
            f"| {lo['share_k_above_1']:.1%} | {_f(lo['max_k'])} | {lo['elpd_per_point']:.3f} "
            f"| {lo['p_loo']:.1f} | {kf['elpd_per_point']:.3f} ({kf['se_per_point']:.3f}) "
            f"| {lo['elpd_per_point'] - kf['elpd_per_point']:+.3f} |"
        )
    lines += [
        "",
        f"PSIS-LOO valid (no Pareto k above 0.7) on {len(valid)} of {len(results)} fits"
        + (f" ({', '.join(valid)})" if valid else "")
        + f"; at most 10% of the points above 0.7 on {len(mostly)} more"
        + (f" ({', '.join(mostly)})" if mostly else "")
        + ". A point above 0.7 has an unreliable LOO term (its leave-one-out posterior differs from the full "
        "one: with many small clusters one point decides whether a cluster exists), and p_loo near n says "
        "the same for the whole fit. There, compare fits by the K-fold column (held-out `score_samples`); "
        "the tree's `loo_validity` attribute:",
        "",
        "> " + next(iter(results.values()))["loo"].get("validity", ""),
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
