"""``ppclust demo``: every available method on one embedded real data set, one table, one folder.

The data set is scikit-learn's copy of the wine data (178 points, 13 features, 3 cultivars; ships
with scikit-learn, so the demo is offline). Features are standardised. From the true classes we
sample noisy links (10% of signs flipped) and partial labels (20% of points, 5% of them wrong),
then run each method with the side information it accepts.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from ppclust._registry import METHODS, available
from ppclust.errors import one_line

__all__ = ["run_demo"]


@dataclass
class DemoRun:
    method: str
    params: dict
    uses: str  # "links" | "labels" | "none" | "background"
    extra: dict = field(default_factory=dict)


def demo_plan(quick: bool) -> list[DemoRun]:
    s = 0.4 if quick else 1.0
    return [
        DemoRun(
            "tvclust", dict(n_draws=int(300 * s), n_warmup=int(200 * s), n_chains=2, random_state=0), "links"
        ),
        DemoRun("dpmeans", dict(random_state=0), "none"),
        DemoRun("rdpmeans", dict(random_state=0), "links"),
        DemoRun("ssgmm", dict(n_clusters=3, n_init=4, random_state=0), "labels"),
        DemoRun(
            "bayesian-ssgmm",
            dict(n_clusters=3, n_draws=int(100 * s), n_warmup=int(100 * s), n_chains=2, random_state=0),
            "labels",
        ),
        DemoRun("cecib", dict(n_clusters=6, beta=1.0, n_init=5 if quick else 10, random_state=0), "labels"),
        # k-means++ seeding (the CEC package default): the paper's random partition starts every
        # cluster near the hyperplane and often ends far worse on wine
        DemoRun(
            "c3l", dict(n_clusters=6, leakage=0.05, n_init=5, init="k-means++", random_state=0), "labels2"
        ),
        DemoRun("ccib", dict(n_clusters=3, random_state=0), "background"),
        # quick mode skips SMIC's model-selection grid (t, gamma, eta) and uses its middle values
        DemoRun(
            "smic",
            dict(n_clusters=3, random_state=0) | (dict(n_neighbors=5, gamma=1.0, eta=0.0) if quick else {}),
            "links",
        ),
    ]


def _progress(msg: str):
    print(msg, file=sys.stderr, flush=True)


def run_demo(out: str = "ppclust-demo", quick: bool = False, seed: int = 0, overwrite: bool = False) -> int:
    """Run every available method on the standardised wine data and write one table and figures to ``out``.

    Parameters
    ----------
    out : str, default "ppclust-demo"
        The output folder (:class:`ppclust._output.OutputDir`: never overwrites what ppclust did not write).
    quick : bool, default False
        Fewer draws, restarts and no model-selection grid: a quick check that everything runs.
    seed : int, default 0
        Seed of the sampled side information.
    overwrite : bool, default False
        Replace the files of the same name this run writes.

    Returns
    -------
    int
        The exit code: 0 when every method ran, 1 when one failed (its row of the table says why).

    Examples
    --------
    >>> from ppclust.demo import run_demo
    >>> run_demo("ppclust-demo", quick=True)  # doctest: +SKIP
    0
    """
    from ppclust import datasets, metrics, plot
    from ppclust._output import OutputDir

    dest = OutputDir(out, overwrite=overwrite)
    dest.check()  # refuse a non-empty folder before running anything

    X, y = datasets.load("wine")
    X = (X - X.mean(0)) / X.std(0)
    n = len(y)
    side = datasets.sample_links(y, n_pairs=2 * n, noise=0.1, seed=seed)
    y_part = datasets.sample_labels(y, fraction=0.2, noise=0.05, seed=seed)
    ml, cl = side.must_link, side.cannot_link
    # C3L separates two categories: class 0 against the rest, from the same partial labels
    y2 = np.where(y_part < 0, -1, (y_part > 0).astype(int))
    # CCIB's background: a partition we do NOT want to find again (here: the sign of the first
    # principal component, a nuisance split)
    background = (plot.project_2d(X)[:, 1] > 0).astype(int)

    print(f"ppclust demo: wine, n={n}, d={X.shape[1]}, {len(np.unique(y))} classes")
    print(
        f"  side information: {len(ml)} may-links + {len(cl)} may-not-links (10% flipped); "
        f"{int((y_part >= 0).sum())} partial labels (5% wrong)"
    )
    have = available()
    rows, partitions, failures = [], {"truth": y}, 0
    extras: dict = {}
    for run in demo_plan(quick):
        if run.method not in have:
            continue
        _progress(f"  running {run.method} ...")
        cls = METHODS[run.method].load()
        est = cls(**run.params)
        t0 = time.perf_counter()
        try:
            if run.uses == "links":
                est.fit(X, must_link=ml, cannot_link=cl)
            elif run.uses == "labels":
                est.fit(X, y_part)
            elif run.uses == "labels2":
                est.fit(X, y2)
            elif run.uses == "background":
                est.fit(X, background=background)
            else:
                est.fit(X)
        except Exception as err:  # noqa: BLE001 - the demo reports and continues
            failures += 1
            rows.append(
                (
                    run.method,
                    run.uses,
                    "-",
                    "-",
                    "-",
                    "-",
                    f"{time.perf_counter() - t0:.1f}",
                    f"FAILED: {type(err).__name__}: {one_line(err)}",
                )
            )
            continue
        dt = time.perf_counter() - t0
        lab = np.asarray(est.labels_)
        partitions[run.method] = lab
        f1 = metrics.pairwise_f1(y, lab)[2]
        rows.append(
            (
                run.method,
                run.uses,
                str(len(np.unique(lab))),
                f"{metrics.nmi(y, lab):.3f}",
                f"{metrics.ari(y, lab):.3f}",
                f"{f1:.3f}",
                f"{dt:.1f}",
                "",
            )
        )
        if run.method == "tvclust":
            extras["tvclust"] = est
    header = ("method", "side info", "K", "NMI", "ARI", "F", "seconds", "")
    table = [header, *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table]
    print("\n".join(lines))

    with dest.staging() as tmp:
        # stand-alone figures (plot.render): pyplot's backend and figure list are left alone
        plot.render(plot.plot_data_links, X, y, ml, cl, title="wine (PCA) with sampled links").savefig(
            tmp / "data_links.png", dpi=110
        )
        ncols = min(4, len(partitions))
        plot.render(
            plot.plot_partitions, X, partitions, figsize=(3.2 * ncols, 3.0 * -(-len(partitions) // ncols))
        ).savefig(tmp / "partitions.png", dpi=110)
        tv = extras.get("tvclust")
        if tv is not None:
            if getattr(tv, "psm_", None) is not None:
                plot.render(plot.plot_psm, tv.psm_, tv.labels_).savefig(tmp / "psm.png", dpi=110)
            post = getattr(tv, "posterior_", None)
            if post is not None:
                plot.render(
                    plot.plot_trace, np.asarray(post["posterior"]["n_clusters"]), figsize=(6.0, 2.6)
                ).savefig(tmp / "trace_n_clusters.png", dpi=110)
                post.to_netcdf(tmp / "tvclust_posterior.nc")
        md = [
            "# ppclust demo",
            "",
            f"wine data, n = {n}; {len(ml)} may-links and {len(cl)} may-not-links "
            "(10% flipped); 20% partial labels (5% wrong).",
            "",
            "| " + " | ".join(header[:-1]) + " |",
            "|" + "---|" * (len(header) - 1),
        ]
        md += ["| " + " | ".join(r[:-1]) + " |" for r in rows]
        md += [
            "",
            "Figures: `data_links.png`, `partitions.png`"
            + (", `psm.png`, `trace_n_clusters.png`; posterior: `tvclust_posterior.nc`" if tv else ""),
        ]
        (tmp / "report.md").write_text("\n".join(md) + "\n")
        records = [dict(zip(header[:-1], r[:-1], strict=True)) for r in rows]
        (tmp / "table.json").write_text(json.dumps(records, indent=2))
    print(f"wrote {out}/ (report.md, figures)")
    return 1 if failures else 0
