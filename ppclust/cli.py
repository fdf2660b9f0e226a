"""The ``ppclust`` command: ``methods``, ``fit``, ``demo``, ``reproduce``.

Every failure (bad file, bad argument, bad data, and any error raised deep inside a solver) becomes
one line on stderr and exit code 2, with no traceback; ``PPCLUST_DEBUG=1`` in the environment re-raises
it for developers. Outputs are written to a temporary folder and moved into place only when complete,
so a failed or interrupted run (Ctrl-C, SIGTERM, SIGHUP) never leaves a partial output or a temporary
folder, and ppclust never deletes or overwrites a file it did not write (see ``ppclust._output``).

Input files never lose a row silently (:func:`read_table`): a header is skipped only when every value
of the first line is non-numeric (or with ``--header``); the rows read are reported on stderr and as
``n_rows_read`` in ``summary.json``. ``-`` as a file name reads stdin. A labels file keeps its empty
cells as unlabelled points and may give classes by name (:func:`read_labels_named`). ``.npy`` files are
loaded with ``allow_pickle=False``; a file that is not one is named for what it is.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from ppclust import _cli_distributed, _cli_predict, _cli_query, _cli_stability
from ppclust._input_files import (
    STDIN,
    CLIError,
    Labels,
    Table,
    parse_params,
    read_background,
    read_data,
    read_labels,
    read_labels_named,
    read_links,
    read_table,
)
from ppclust._output import OutputDir, exit_on_signals
from ppclust._registry import METHODS
from ppclust._version import __version__
from ppclust.errors import PPClustError, one_line

__all__ = [
    "main",
    "CLIError",
    "read_table",
    "read_data",
    "read_labels",
    "read_labels_named",
    "Labels",
    "Table",
    "read_links",
    "read_background",
]


def _jsonable(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        return float(v)
    if isinstance(v, (int, str, bool)) or v is None:
        return v
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items() if _jsonable(x) is not _SKIP}
    try:  # some containers (xarray DataTree) define __array__ only to raise
        arr = np.asarray(v) if hasattr(v, "__array__") else None
    except (TypeError, ValueError, RuntimeError):  # RuntimeError: rows spread over processes
        return _SKIP
    if arr is not None and arr.ndim == 0 and arr.dtype.kind in "iuf":
        return arr.item()
    return _SKIP


_SKIP = object()


def fitted_summary(est) -> dict:
    """All scalar (or dict-of-scalar) fitted attributes of an estimator, JSON-ready."""
    out = {}
    for name in dir(est):
        if not name.endswith("_") or name.startswith("_"):
            continue
        try:
            v = getattr(est, name)
        except Exception:  # noqa: BLE001 - attribute properties may legitimately fail
            continue
        j = _jsonable(v)
        if j is not _SKIP:
            out[name] = j
    return out


# ---------------------------------------------------------------------------------------------
# commands
# ---------------------------------------------------------------------------------------------


def cmd_warmup(args) -> int:
    from ppclust._jax import cache_dir
    from ppclust._warmup import warmup

    where = cache_dir()
    print(f"ppclust warmup: compiling into {where or 'nothing (PPCLUST_CACHE_DIR=off)'}", flush=True)
    warmup(jobs=args.jobs, verbose=True)
    return 0


def cmd_methods(args) -> int:
    from ppclust._registry import available

    have = available()
    rows = [("method", "estimator", "side information", "inference", "paper", "status")]
    for name, m in METHODS.items():
        rows.append(
            (
                name,
                m.estimator.split(":")[1],
                m.side_info,
                m.inference,
                m.paper,
                "available" if name in have else "planned",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    return 0


def _shown(path: str) -> str:
    return "<stdin>" if path == STDIN else path


def cmd_fit(args) -> int:
    from ppclust._registry import available

    if args.method not in METHODS:
        raise CLIError(f"unknown method {args.method!r}; choose one of: {', '.join(METHODS)}")
    if args.method not in available():
        raise CLIError(f"method {args.method!r} is planned but not available in this build")
    files = {"data": args.data, "labels": args.labels, "links": args.links, "background": args.background}
    if sum(v == STDIN for v in files.values()) > 1:
        raise CLIError("only one input file can be read from stdin ('-')")
    out = OutputDir(args.out, overwrite=args.overwrite)
    out.check()  # refuse before the (possibly long) fit, not after
    params = parse_params(args.param)
    _cli_distributed.initialize(args)
    data = read_data(args.data, args.header)
    X = data.values
    n = X.shape[0]
    inputs = {"data": {"path": data.source, "n_rows_read": n, "header": data.header}}
    labels = read_labels_named(args.labels, n, args.header) if args.labels else None
    y = None if labels is None else labels.y
    if labels is not None:
        inputs["labels"] = {"path": _shown(args.labels), "n_labelled": int(np.count_nonzero(y >= 0))}
        if labels.classes is not None:
            inputs["labels"]["classes"] = labels.classes
    fit_kw = {}
    X_own, y_own = _cli_distributed.select_rows(args, X, y)
    if args.links:  # global row indices when distributed: the rows of every process
        ml, cl = read_links(args.links, _cli_distributed.total_rows(args, X_own.shape[0]), args.header)
        fit_kw.update(must_link=ml, cannot_link=cl)
        inputs["links"] = {"path": _shown(args.links), "n_must_link": len(ml), "n_cannot_link": len(cl)}
    if args.background:
        fit_kw["background"] = read_background(args.background, n, args.header)
        inputs["background"] = {"path": _shown(args.background)}
    cls = METHODS[args.method].load()
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:  # shown as one line each, after a success
        warnings.simplefilter("always")
        try:
            est = cls(**params)
        except TypeError as err:
            raise CLIError(f"bad --param for {args.method}: {err}") from err
        args.fitting = True  # an error from here on is the estimator's: main() prefixes the method
        X_fit, y_fit = _cli_distributed.to_global(args, X_own, y_own)
        est.fit(X_fit, partial_labels=y_fit, **fit_kw)  # y: the user's side information, not a scoring target
        args.fitting = False
    elapsed = time.perf_counter() - t0
    summary = {
        "method": args.method,
        "n_samples": n,
        "n_features": X.shape[1],
        "n_rows_read": n,
        "inputs": inputs,
        "seconds": elapsed,
        "params": params,
        **fitted_summary(est),
    }
    with out.staging() as tmp:
        np.savetxt(
            tmp / "labels.csv",
            _cli_distributed.local_labels(est.labels_),
            fmt="%d",
            header="label",
            comments="",
        )
        (tmp / "summary.json").write_text(json.dumps(summary, indent=2))
        if not args.no_plots and not _cli_distributed.is_distributed(args) and args.rows is None:
            from ppclust import plot

            plot.save_fit_figures(est, X, tmp, **fit_kw)
    if args.save_model:
        _cli_predict.save_model(est, args.save_model)
    for msg in dict.fromkeys(f"{w.category.__name__}: {one_line(w.message)}" for w in caught):
        print(f"ppclust: warning: {msg}", file=sys.stderr)
    head = "no header" if data.header is None else f"header {','.join(data.header)!r} skipped"
    print(f"ppclust: read {n} rows x {X.shape[1]} columns from {data.source} ({head})", file=sys.stderr)
    if labels is not None and labels.classes is not None:
        codes = ", ".join(f"{name}={code}" for name, code in labels.classes.items())
        print(f"ppclust: labels given as {len(labels.classes)} class names, coded {codes}", file=sys.stderr)
    print(f"{args.method}: {summary.get('n_clusters_', '?')} clusters in {elapsed:.2f} s -> {args.out}")
    return 0


def cmd_demo(args) -> int:
    from ppclust.demo import run_demo

    return run_demo(out=args.out, quick=args.quick, overwrite=args.overwrite)


# paper -> (reproduction script under reproduce/ with quick arguments, where it writes, slow-test filter)
REPRODUCTIONS = {
    "rdpmeans": (["rdpmeans.py", "--trials", "2", "--out", "{out}/rdpmeans.md"], "dpmeans"),
    "cecib": (["cecib.py", "--quick", "--out", "{out}/cecib.md"], "cecib"),
    "c3l": (["c3l.py", "--reps", "3"], "c3l"),
    "ccib": (["ccib.py", "--quick"], "ccib"),
    "smic": (["smic.py", "--seeds", "1", "--skip-scaling", "--out", "{out}/smic.md"], "smic"),
    "ssgmm": (None, "ssgmm"),
    "bayesian-ssgmm": (None, "ssgmm"),
    "tvclust": (None, "tvclust or small_variance"),
}


def cmd_reproduce(args) -> int:
    """Quick paper-vs-ppclust tables from the paper's reproduction script (or its slow tests)."""
    import subprocess

    if args.paper not in REPRODUCTIONS:
        raise CLIError(f"unknown paper {args.paper!r}; choose one of: {', '.join(REPRODUCTIONS)}")
    root = Path(__file__).resolve().parent.parent
    if not (root / "reproduce").is_dir() or not (root / "tests").is_dir():
        raise CLIError(
            "reproductions need the source checkout (reproduce/ and tests/); run from the repository"
        )
    script, tests = REPRODUCTIONS[args.paper]
    if args.tests or script is None:
        cmd = [sys.executable, "-m", "pytest", str(root / "tests"), "-m", "slow", "-k", tests, "-q", "-s"]
        return subprocess.call(cmd, cwd=root)
    out = Path(args.out or tempfile.mkdtemp(prefix="ppclust-reproduce-")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    argv = [a.format(out=out) for a in script]
    env = dict(
        os.environ,
        PPCLUST_RESULTS_DIR=str(out),
        PYTHONPATH=os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p),
    )
    print(f"running reproduce/{argv[0]} (quick settings); tables go to {out}/", flush=True)
    rc = subprocess.call([sys.executable, str(root / "reproduce" / argv[0]), *argv[1:]], cwd=root, env=env)
    if rc == 0:
        print(f"paper-vs-ppclust tables: {', '.join(sorted(p.name for p in out.glob('*.md')))} in {out}/")
    return rc


_FIT_EPILOG = """\
input files: comma-, semicolon- or whitespace-separated text (lines starting with # and blank lines
are skipped) or .npy. A first line is a header only when every value on it is non-numeric (or with
--header); a first line such as 'NA,1.0' is data, and its NA is an error naming row and column.
Rows and columns in messages are 0-based, like the indices in labels.csv and links files.

errors: every failure is one line on stderr and exit code 2; nothing is written.
PPCLUST_DEBUG=1 in the environment re-raises the error with its traceback (for developers)."""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ppclust", description="Clustering with side information (JAX/NumPyro).")
    p.add_argument("--version", action="version", version=f"ppclust {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("methods", help="list methods and the side information each accepts").set_defaults(
        func=cmd_methods
    )
    f = sub.add_parser(
        "fit",
        help="fit one method to a CSV/NPY data file",
        epilog=_FIT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    f.add_argument(
        "data", help="CSV/whitespace text (header optional) or .npy file, one row per point; '-' reads stdin"
    )
    f.add_argument("--method", required=True, help="see `ppclust methods`")
    f.add_argument(
        "--labels",
        help="partial labels, one per data row: integers or class names (-1 or an empty cell = unlabelled)",
    )
    f.add_argument("--links", help="links, rows i,j,sign with 0-based indices and sign +1/-1")
    f.add_argument("--background", help="background partition/features (CCIB)")
    f.add_argument("--param", action="append", metavar="KEY=VALUE", help="estimator parameter (repeatable)")
    f.add_argument("--out", required=True, help="output folder (labels.csv, summary.json, figures)")
    f.add_argument(
        "--overwrite",
        action="store_true",
        help="allow a non-empty --out; replaces only the files ppclust writes, nothing else",
    )
    f.add_argument("--no-plots", action="store_true", help="skip figures")
    f.add_argument("--save-model", metavar="PATH", help="pickle the fitted estimator (for `ppclust predict`)")
    _cli_distributed.add_arguments(f)
    h = f.add_mutually_exclusive_group()
    h.add_argument(
        "--header",
        dest="header",
        action="store_true",
        default=None,
        help="the first line of every input file is a header (default: auto, a header only "
        "when every value on the first line is non-numeric)",
    )
    h.add_argument(
        "--no-header", dest="header", action="store_false", help="the first line of every input file is data"
    )
    f.set_defaults(func=cmd_fit)
    _cli_query.add_parser(sub)
    d = sub.add_parser("demo", help="run every available method on an embedded data set")
    d.add_argument("--out", default="ppclust-demo", help="output folder (default ppclust-demo)")
    d.add_argument(
        "--overwrite",
        action="store_true",
        help="allow a non-empty --out; replaces only the files the demo writes, nothing else",
    )
    d.add_argument("--quick", action="store_true", help="smaller settings (used by the tests)")
    d.set_defaults(func=cmd_demo)
    r = sub.add_parser("reproduce", help="run a paper's reproduction (quick) and print paper-vs-ppclust")
    r.add_argument("paper", help=", ".join(REPRODUCTIONS))
    r.add_argument("--out", help="folder for the tables (default: a new temporary folder)")
    r.add_argument("--tests", action="store_true", help="run the paper's slow tests instead")
    r.set_defaults(func=cmd_reproduce)
    w = sub.add_parser(
        "warmup",
        help="compile the numba kernels into the per-user cache folder (run once "
        "after installing: a first fit then loads them instead of compiling)",
    )
    w.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="processes compiling at once (default: one per group of kernels, at most the CPU count)",
    )
    w.set_defaults(func=cmd_warmup)
    _cli_predict.add_parser(sub)
    _cli_stability.add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the ``ppclust`` command line.

    Every error is one line on stderr and exit code 2 (``PPCLUST_DEBUG=1`` re-raises it instead).

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0 on success, 2 on an error.

    Examples
    --------
    >>> from ppclust.cli import main
    >>> main(["methods"])  # doctest: +ELLIPSIS
    method ...
    0
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with exit_on_signals():  # SIGTERM/SIGHUP unwind like Ctrl-C: nothing half-written is left
            return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("ppclust: interrupted", file=sys.stderr)
        return 130
    except SystemExit as stop:
        if isinstance(stop.code, int) and stop.code > 128:  # raised by exit_on_signals
            print(f"ppclust: interrupted (signal {stop.code - 128})", file=sys.stderr)
            return stop.code
        raise
    except Exception as err:  # noqa: BLE001 - the one place every failure becomes one line
        if os.environ.get("PPCLUST_DEBUG", "") not in ("", "0"):
            raise
        msg = one_line(err)
        where = f"{args.method}: " if getattr(args, "fitting", False) else ""
        if not isinstance(err, (PPClustError, ValueError, TypeError, OSError)):
            # not a validated input error: name the type, and say how to see where it came from
            msg = f"{type(err).__name__}: {msg} (unexpected; set PPCLUST_DEBUG=1 to see the traceback)"
        elif not msg:
            msg = type(err).__name__
        print(f"ppclust: error: {where}{msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    os.environ.setdefault("TQDM_DISABLE", "0")
    sys.exit(main())
