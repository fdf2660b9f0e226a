"""The ``ppclust query`` command: write the next pairs (or points) worth asking about.

``ppclust query --method tvclust data.csv --links links.csv -n 20 --out next_pairs.csv`` fits the method
with the links answered so far and writes the ``n`` most informative unasked pairs
(:class:`ppclust.active.ActiveLearner`) as ``i,j`` rows (0-based, the indices of the links file). Add a
``sign`` column with the answers (+1 same cluster, -1 different; leave out the pairs you could not judge)
and append those rows to the links file: ``ppclust fit ... --links links.csv`` and the next ``ppclust
query`` read them back. A label-based method (cecib, c3l, ssgmm, bayesian-ssgmm) writes ``row`` instead:
the points to label next. The output file is written beside its destination and moved into place only when
complete; an existing file is never replaced without ``--overwrite``.
"""

from __future__ import annotations

import argparse
import inspect
from pathlib import Path

import numpy as np

from ppclust._input_files import CLIError, parse_params, read_data, read_labels, read_links
from ppclust._output import write_file
from ppclust._registry import METHODS, available
from ppclust.errors import OutputExistsError

__all__ = ["add_parser", "cmd_query"]


def add_parser(sub) -> argparse.ArgumentParser:
    """Register ``ppclust query`` on the ``ppclust`` command's sub-parsers.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        ``build_parser``'s sub-parsers.

    Returns
    -------
    argparse.ArgumentParser
        The ``query`` parser.

    Examples
    --------
    >>> import argparse
    >>> from ppclust._cli_query import add_parser
    >>> sub = argparse.ArgumentParser().add_subparsers()
    >>> add_parser(sub).parse_args(["d.csv", "--method", "tvclust", "--out", "q.csv"]).n
    20
    """
    q = sub.add_parser(
        "query",
        help="write the next pairs to ask about (i,j rows) given the links answered so far",
        description=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    q.add_argument("data", help="CSV/whitespace text (header optional) or .npy file, one row per point")
    q.add_argument("--method", required=True, help="see `ppclust methods` (information: tvclust)")
    q.add_argument("--links", help="links answered so far, rows i,j,sign (sign +1/-1)")
    q.add_argument("--labels", help="partial labels so far (label-based methods; -1 or empty = unlabelled)")
    q.add_argument("-n", type=int, default=20, help="how many pairs (or points) to write (default 20)")
    q.add_argument(
        "--strategy",
        default="information",
        choices=("information", "uncertainty", "random"),
        help="information gain (default; tvclust), co-clustering closest to 1/2, or random",
    )
    q.add_argument("--param", action="append", metavar="KEY=VALUE", help="estimator parameter (repeatable)")
    q.add_argument("--seed", type=int, default=0, help="seed of the candidates and the fit (default 0)")
    q.add_argument("--out", required=True, help="the CSV file to write (i,j rows, or row for labels)")
    q.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    h = q.add_mutually_exclusive_group()
    h.add_argument("--header", dest="header", action="store_true", default=None, help="inputs have a header")
    h.add_argument("--no-header", dest="header", action="store_false", help="inputs have no header")
    q.set_defaults(func=cmd_query)
    return q


def cmd_query(args) -> int:
    """Run ``ppclust query`` (see the module docstring); returns the exit code.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed arguments of :func:`add_parser`'s parser.

    Returns
    -------
    int
        0 on success.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from ppclust.cli import main
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "x.csv").write_text("\\n".join(f"{i % 2 * 5 + i * 0.01},0" for i in range(12)))
    >>> main(["query", str(folder / "x.csv"), "--method", "rdpmeans", "--strategy", "random",
    ...       "-n", "3", "--out", str(folder / "next.csv")])  # doctest: +ELLIPSIS
    ppclust query: wrote 3 pairs to ...next.csv
    0
    >>> (folder / "next.csv").read_text().splitlines()[0]
    'i,j'
    """
    from ppclust.active import ActiveLearner

    if args.method not in METHODS:
        raise CLIError(f"unknown method {args.method!r}; choose one of: {', '.join(METHODS)}")
    if args.method not in available():
        raise CLIError(f"method {args.method!r} is planned but not available in this build")
    if args.n < 1:
        raise CLIError(f"-n must be >= 1, got {args.n}")
    out = Path(args.out)
    if out.exists() and not args.overwrite:  # refuse before the fit
        raise OutputExistsError(f"output file {str(out)!r} exists; choose another name or pass --overwrite")
    X = read_data(args.data, args.header).values
    n = X.shape[0]
    kw = {}
    if args.links:
        kw["must_link"], kw["cannot_link"] = read_links(args.links, n, args.header)
    if args.labels:
        kw["partial_labels"] = read_labels(args.labels, n, args.header)
    params = parse_params(args.param)
    cls = METHODS[args.method].load()
    try:
        est = cls(**params)
    except TypeError as err:
        raise CLIError(f"bad --param for {args.method}: {err}") from err
    if "progress_bar" in est.get_params() and "progress_bar" not in params:
        est.set_params(progress_bar=False)
    if "random_state" in est.get_params() and "random_state" not in params:
        est.set_params(random_state=args.seed)
    args.fitting = True
    learner = ActiveLearner(est, strategy=args.strategy, random_state=args.seed)
    if not _takes_links(est) and ("must_link" in kw):
        raise CLIError(f"method {args.method!r} takes labels, not links; pass --labels")
    learner.fit(X, **kw)
    args.fitting = False
    q = learner.suggest(args.n)
    if q.ndim == 2:
        text = "i,j\n" + "".join(f"{a},{b}\n" for a, b in q.tolist())
    else:
        text = "row\n" + "".join(f"{r}\n" for r in np.asarray(q).tolist())
    write_file(out, text, args.overwrite, suffix=".csv")
    what = "pairs" if q.ndim == 2 else "rows"
    print(f"ppclust query: wrote {len(q)} {what} to {out}", flush=True)
    return 0


def _takes_links(est) -> bool:
    """Whether ``est.fit`` takes links (pairs are asked) rather than labels only (points are labelled)."""
    return "must_link" in inspect.signature(est.fit).parameters
