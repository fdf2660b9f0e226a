"""The ``ppclust stability`` command: refit a method per seed (and prior setting) and report whether the
runs agree.

``ppclust stability --method tvclust data.csv --links links.csv --seeds 0 1 2 --out report.json`` fits the
method once per seed with the same side information (:func:`ppclust.stability.stability_report`) and
writes a JSON report: the verdict, one row per run (seed, setting, K of the point estimate, posterior mean
and 95% interval of K for samplers, lowest ARI to another run, whether its estimate lies in every other
run's credible ball), the pairwise ARI matrix and the split R-hat of K over all chains. ``--prior
kappa0=0.01 --prior kappa0=1`` adds prior settings (each ``--prior`` one setting: comma-separated
``key=value`` parameters); ``--param`` sets parameters of every run. Exit code 0 whatever the verdict
(read ``stable`` in the report); an existing file is never replaced without ``--overwrite``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from ppclust._input_files import CLIError, parse_params, read_data, read_labels, read_links
from ppclust._output import write_file
from ppclust._registry import METHODS, available
from ppclust.errors import OutputExistsError

__all__ = ["add_parser", "cmd_stability", "report_dict"]


def add_parser(sub) -> argparse.ArgumentParser:
    """Register ``ppclust stability`` on the ``ppclust`` command's sub-parsers.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        ``build_parser``'s sub-parsers.

    Returns
    -------
    argparse.ArgumentParser
        The ``stability`` parser.

    Examples
    --------
    >>> import argparse
    >>> from ppclust._cli_stability import add_parser
    >>> sub = argparse.ArgumentParser().add_subparsers()
    >>> add_parser(sub).parse_args(["d.csv", "--method", "tvclust", "--out", "r.json"]).seeds
    [0, 1, 2]
    """
    s = sub.add_parser(
        "stability",
        help="refit a method per seed and prior setting; write whether the runs agree (JSON)",
        description=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("data", help="CSV/whitespace text (header optional) or .npy file, one row per point")
    s.add_argument("--method", required=True, help="see `ppclust methods` (a method with random_state)")
    s.add_argument("--links", help="links, rows i,j,sign with 0-based indices and sign +1/-1")
    s.add_argument("--labels", help="partial labels, one per data row (-1 or empty = unlabelled)")
    s.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds (default 0 1 2)")
    s.add_argument(
        "--prior",
        action="append",
        metavar="KEY=VALUE[,KEY=VALUE]",
        help="one prior setting (repeatable: one run per seed and setting)",
    )
    s.add_argument(
        "--param", action="append", metavar="KEY=VALUE", help="parameter of every run (repeatable)"
    )
    s.add_argument("--out", required=True, help="the JSON file to write")
    s.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    h = s.add_mutually_exclusive_group()
    h.add_argument("--header", dest="header", action="store_true", default=None, help="inputs have a header")
    h.add_argument("--no-header", dest="header", action="store_false", help="inputs have no header")
    s.set_defaults(func=cmd_stability)
    return s


def report_dict(report) -> dict:
    """A :class:`~ppclust.stability.StabilityReport` as JSON-ready lists (NaN as ``None``).

    Parameters
    ----------
    report : StabilityReport
        The report.

    Returns
    -------
    dict
        ``verdict``, ``stable``, ``runs`` (:meth:`~ppclust.stability.StabilityReport.to_frame`'s columns),
        ``ari``, ``ball_distance``, ``ball_radius``, ``ball_prob``, ``r_hat``, ``ess_bulk``,
        ``r_hat_setting``, ``ess_setting``, ``settings``, ``ari_min`` and ``convergence_warnings``.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust import DPMeans
    >>> from ppclust._cli_stability import report_dict
    >>> from ppclust.stability import stability_report
    >>> X = np.r_[np.zeros((10, 2)), np.full((10, 2), 6.0)] + np.random.default_rng(0).normal(size=(20, 2))
    >>> out = report_dict(stability_report(DPMeans(), X, seeds=(0, 1)))
    >>> out["stable"], out["runs"]["n_clusters"], out["r_hat"]
    (True, [2, 2], None)
    """

    def clean(v):
        arr = np.asarray(v)
        if arr.dtype.kind == "f":
            return np.where(np.isfinite(arr), arr, None).tolist() if arr.ndim else _num(float(arr))
        return arr.tolist()

    return {
        "verdict": report.verdict,
        "stable": bool(report.stable),
        "runs": {k: clean(v) for k, v in report.to_frame().items()},
        "ari": clean(report.ari),
        "ball_distance": clean(report.ball_distance),
        "ball_radius": clean(report.ball_radius),
        "ball_prob": _num(report.ball_prob),
        "r_hat": _num(report.r_hat),
        "ess_bulk": _num(report.ess_bulk),
        "r_hat_setting": clean(report.r_hat_setting),
        "ess_setting": clean(report.ess_setting),
        "settings": report.settings,
        "ari_min": report.ari_min,
        "convergence_warnings": list(report.convergence_warnings),
    }


def _num(x):
    x = float(x)
    return x if np.isfinite(x) else None


def cmd_stability(args) -> int:
    """Run ``ppclust stability`` (see the module docstring); returns the exit code.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed arguments of :func:`add_parser`'s parser.

    Returns
    -------
    int
        0 on success, whatever the verdict.

    Examples
    --------
    >>> import json, tempfile
    >>> from pathlib import Path
    >>> from ppclust.cli import main
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "x.csv").write_text("\\n".join(f"{i % 2 * 6 + i * 0.01},0" for i in range(12)))
    >>> main(["stability", str(folder / "x.csv"), "--method", "dpmeans", "--seeds", "0", "1",
    ...       "--out", str(folder / "r.json")])  # doctest: +ELLIPSIS
    ppclust stability: stable: 2 runs agree ... -> ...r.json
    0
    >>> json.loads((folder / "r.json").read_text())["runs"]["seed"]
    [0, 1]
    """
    from ppclust.stability import stability_report

    if args.method not in METHODS:
        raise CLIError(f"unknown method {args.method!r}; choose one of: {', '.join(METHODS)}")
    if args.method not in available():
        raise CLIError(f"method {args.method!r} is planned but not available in this build")
    out = Path(args.out)
    if out.exists() and (out.is_dir() or not args.overwrite):  # refuse before the fits
        raise OutputExistsError(f"output file {str(out)!r} exists; choose another name or pass --overwrite")
    if not out.resolve().parent.is_dir():
        raise CLIError(f"folder {str(out.resolve().parent)!r} of the output file does not exist")
    X = read_data(args.data, args.header).values
    n = X.shape[0]
    kw = {}
    if args.links:
        kw["must_link"], kw["cannot_link"] = read_links(args.links, n, args.header)
    y = read_labels(args.labels, n, args.header) if args.labels else None
    params = parse_params(args.param)
    priors = [parse_params(p.split(",")) for p in args.prior] if args.prior else None
    try:
        est = METHODS[args.method].load()(**params)
    except TypeError as err:
        raise CLIError(f"bad --param for {args.method}: {err}") from err
    if "progress_bar" in est.get_params() and "progress_bar" not in params:
        est.set_params(progress_bar=False)
    unknown = sorted({k for p in priors or [] for k in p} - set(est.get_params()))
    if unknown:
        raise CLIError(f"--prior names parameters {args.method} does not have: {', '.join(unknown)}")
    args.fitting = True
    report = stability_report(est, X, y, seeds=args.seeds, priors=priors, **kw)
    args.fitting = False
    text = json.dumps({"method": args.method, **report_dict(report)}, indent=1, default=str) + "\n"
    write_file(out, text, args.overwrite, suffix=".json")  # beside the destination, moved in when complete
    print(f"ppclust stability: {report.verdict} -> {out}", flush=True)
    return 0
