"""The ``ppclust`` command: ``methods``, ``fit``, ``demo``, ``reproduce``.

Every failure (bad file, bad argument, bad data, and any error raised deep inside a solver) becomes
one line on stderr and exit code 2, with no traceback; ``PPCLUST_DEBUG=1`` in the environment re-raises
it for developers. Outputs are written to a temporary folder and moved into place only when complete,
so a failed run never leaves a partial output or a temporary folder, and ppclust never deletes or
overwrites a file it did not write (see ``ppclust._output``).

Input files never lose a row silently (:func:`read_table`): a header is skipped only when every value
of the first line is non-numeric (or with ``--header``); the rows read are reported on stderr and as
``n_rows_read`` in ``summary.json``. ``-`` as a file name reads stdin.
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
from typing import NamedTuple

import numpy as np

from ppclust._output import OutputDir
from ppclust._registry import METHODS
from ppclust._version import __version__
from ppclust.errors import PPClustError, one_line

__all__ = ["main", "CLIError", "read_table", "read_data", "read_labels", "read_links", "read_background"]


class CLIError(PPClustError):
    """An error caused by the user's input: printed as one line, exit code 2.

    Examples
    --------
    >>> from ppclust.cli import CLIError
    >>> from ppclust.errors import PPClustError
    >>> issubclass(CLIError, PPClustError)
    True
    """


# ---------------------------------------------------------------------------------------------
# file readers
# ---------------------------------------------------------------------------------------------

STDIN = "-"


class Table(NamedTuple):
    """A numeric table read from a CSV/whitespace/NPY file (or stdin)."""

    values: np.ndarray  # float64 (n_rows, n_cols)
    header: list[str] | None  # the skipped header line's names, or None
    source: str  # the path, or "<stdin>"
    lines: np.ndarray | None  # 1-based file line of each row (text files), for messages


def _numeric(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _tokens(line: str, delim: str | None) -> list[str]:
    parts = line.split(delim) if delim else line.split()
    return [t.strip().strip('"').strip("'") for t in parts]


def _read_text(path: str, what: str) -> tuple[str, str]:
    if path == STDIN:
        return sys.stdin.read(), "<stdin>"
    p = Path(path)
    if p.is_dir():
        raise CLIError(f"{what} file {path} is a folder, not a file")
    if not p.is_file():
        raise CLIError(f"{what} file not found: {path}")
    try:
        return p.read_text(encoding="utf-8-sig"), path  # -sig: a byte-order mark is not part of a value
    except UnicodeDecodeError as err:
        raise CLIError(f"cannot read {what} file {path}: not a text (UTF-8) file; give CSV or .npy") from err
    except OSError as err:
        raise CLIError(f"cannot read {what} file {path}: {err.strerror or err}") from err


def read_table(path: str, what: str, header: bool | None = None) -> Table:
    r"""Read a numeric table from a text or ``.npy`` file (or stdin); never drops a data row silently.

    Parameters
    ----------
    path : str
        The file; ``"-"`` reads stdin. Text files hold one row per line, comma-, semicolon- or
        whitespace-separated (decided by the first row); blank lines and lines starting with ``#`` are
        skipped. ``.npy`` files have no header.
    what : str
        What the file holds (``"data"``, ``"labels"``, ...), for messages.
    header : bool or None, default None
        ``None`` (auto) takes the first row as a header only when **every** one of its values is
        non-numeric (``x,y``); a first row such as ``NA,1.0`` is data, and its ``NA`` is then reported as a
        non-numeric value. ``True`` / ``False`` force it.

    Returns
    -------
    Table
        ``values`` (float64, (n_rows, n_cols)), ``header`` (the skipped names or ``None``), ``source``
        and ``lines`` (the 1-based file line of each row of a text file).

    Raises
    ------
    CLIError
        Naming the file, row, column and value (rows and columns 0-based, like the indices in
        ``labels.csv`` and links files; the file's line number too).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "data.csv").write_text("x,y\n1,2\n3,4\n")
    >>> from ppclust.cli import read_table
    >>> t = read_table(str(folder / "data.csv"), "data")
    >>> t.values.tolist(), t.header
    ([[1.0, 2.0], [3.0, 4.0]], ['x', 'y'])
    """
    if path != STDIN and Path(path).suffix == ".npy" and Path(path).is_file():
        try:
            arr = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as err:
            raise CLIError(f"cannot read {what} file {path}: {str(err).splitlines()[0]}") from err
        if arr.dtype.kind not in "biuf" or arr.ndim > 2:
            raise CLIError(
                f"{what} file {path} must hold a numeric array of at most 2 dimensions, got dtype "
                f"{arr.dtype} and shape {arr.shape}"
            )
        values = np.asarray(arr, float)
        return Table(values if values.ndim == 2 else values.reshape(-1, 1), None, path, None)
    text, source = _read_text(path, what)
    rows = [(k + 1, ln.strip()) for k, ln in enumerate(text.splitlines())]
    rows = [(k, ln) for k, ln in rows if ln and not ln.startswith("#")]
    if not rows:
        return Table(np.zeros((0, 0)), None, source, np.zeros(0, int))
    first = rows[0][1]
    delim = "," if "," in first else (";" if ";" in first else None)
    first_tokens = _tokens(first, delim)
    names = None
    if header is True or (header is None and not any(_numeric(t) for t in first_tokens)):
        names, rows = first_tokens, rows[1:]
    if not rows:
        return Table(np.zeros((0, len(first_tokens))), names, source, np.zeros(0, int))
    lines = np.array([k for k, _ in rows])
    try:
        values = np.loadtxt(
            [ln for _, ln in rows], delimiter=delim, dtype=float, ndmin=2, comments=None, quotechar='"'
        )
    except ValueError as err:  # find the first offending value ourselves, with its row and column
        _explain_bad_row(rows, delim, what, source, header if names is None else True)
        raise CLIError(f"cannot read {what} file {source}: {str(err).splitlines()[0]}") from err
    return Table(values, names, source, lines)


def _explain_bad_row(rows, delim, what, source, header):
    width = len(_tokens(rows[0][1], delim))
    for r, (line, text) in enumerate(rows):
        tok = _tokens(text, delim)
        if len(tok) != width:
            raise CLIError(
                f"cannot read {what} file {source}: row {r} (line {line}) has {len(tok)} "
                f"column(s), the first row has {width}"
            )
        for c, t in enumerate(tok):
            if not _numeric(t):
                if r == 0 and header is None:
                    hint = (
                        "; the first line is data because some of its values are numbers (pass "
                        "--header if it is a header)"
                    )
                elif r == 0 and header is False:
                    hint = "; --no-header makes the first line data"
                else:
                    hint = "; fix or remove it (missing values must be removed or imputed before clustering)"
                raise CLIError(
                    f"{what} file {source}: non-numeric value {t!r} at row {r}, column {c} "
                    f"(0-based; line {line} of the file){hint}"
                )


def _check_finite(t: Table, what: str) -> None:
    bad = ~np.isfinite(t.values)
    if bad.any():
        r, c = (int(v) for v in np.argwhere(bad)[0])
        where = "" if t.lines is None else f" (0-based; line {int(t.lines[r])} of the file)"
        raise CLIError(
            f"{what} file {t.source} has a non-finite value at row {r}, column {c}{where}: "
            f"{t.values[r, c]}; remove or impute it ({int(bad.sum())} such value(s))"
        )


def _header_hint(t: Table) -> str:
    return (
        f" (its first line {','.join(t.header)!r} was read as a header; pass --no-header if it is data)"
        if t.header is not None
        else ""
    )


def read_data(path: str, header: bool | None = None) -> Table:
    r"""Read the data table: at least 2 rows, every value finite.

    Parameters
    ----------
    path : str
        The file (``"-"``: stdin), as :func:`read_table`.
    header : bool or None, default None
        As :func:`read_table`.

    Returns
    -------
    Table

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "data.csv").write_text("0.5 1\n2 3\n")
    >>> from ppclust.cli import read_data
    >>> read_data(str(folder / "data.csv")).values.shape
    (2, 2)
    """
    t = read_table(path, "data", header)
    X = t.values
    if X.ndim != 2 or X.shape[0] < 2:
        raise CLIError(
            f"data file {t.source} must hold a 2-D table with at least 2 rows, got shape "
            f"{X.shape}{_header_hint(t)}"
        )
    _check_finite(t, "data")
    return t


def _integers(t: Table, what: str) -> np.ndarray:
    _check_finite(t, what)
    frac = t.values != np.round(t.values)
    if frac.any():
        r, c = (int(v) for v in np.argwhere(frac)[0])
        raise CLIError(
            f"{what} file {t.source} must hold integers; got {t.values[r, c]} at row {r}, column {c}"
        )
    return t.values.astype(np.int64)


def read_labels(path: str, n: int, header: bool | None = None) -> np.ndarray:
    r"""Read partial labels: one integer per data row (-1 = unlabelled), in one column or one row.

    Parameters
    ----------
    path : str
        The file (``"-"``: stdin), as :func:`read_table`.
    n : int
        Number of data rows; the file must hold as many labels.
    header : bool or None, default None
        As :func:`read_table`.

    Returns
    -------
    labels : int64 ndarray of shape (n,)

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "labels.csv").write_text("label\n0\n-1\n1\n")
    >>> from ppclust.cli import read_labels
    >>> read_labels(str(folder / "labels.csv"), 3).tolist()
    [0, -1, 1]
    """
    t = read_table(path, "labels", header)
    if t.values.ndim == 2 and min(t.values.shape) > 1:
        raise CLIError(
            f"labels file {t.source} must have one column (one integer per data row), got shape "
            f"{t.values.shape}"
        )
    y = _integers(t, "labels").ravel()
    if y.size != n:
        raise CLIError(
            f"labels file {t.source} has {y.size} entries but the data has {n} rows{_header_hint(t)}"
        )
    return y


def read_links(path: str, n: int, header: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    r"""Read a links file: rows ``i,j,sign`` (0-based indices; sign +1 may-link, -1 may-not-link).

    Parameters
    ----------
    path : str
        The file (``"-"``: stdin), as :func:`read_table`.
    n : int
        Number of data rows; every index must lie in ``[0, n)``.
    header : bool or None, default None
        As :func:`read_table`.

    Returns
    -------
    must_link, cannot_link : int64 ndarray of shape (m, 2)
        The pairs with sign +1 and those with sign -1.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "links.csv").write_text("i,j,sign\n0,1,1\n1,2,-1\n")
    >>> from ppclust.cli import read_links
    >>> [a.tolist() for a in read_links(str(folder / "links.csv"), 3)]
    [[[0, 1]], [[1, 2]]]
    """
    t = read_table(path, "links", header)
    if t.values.size == 0:
        return np.zeros((0, 2), np.int64), np.zeros((0, 2), np.int64)
    if t.values.shape[1] != 3:
        raise CLIError(f"links file {t.source} must have 3 columns i,j,sign; got {t.values.shape[1]}")
    v = _integers(t, "links")
    out = (v[:, :2] < 0) | (v[:, :2] >= n)
    if out.any():
        r = int(np.argwhere(out)[0, 0])
        raise CLIError(
            f"links file {t.source}, row {r}: index out of range for {n} points: "
            f"{tuple(int(a) for a in v[r, :2])}"
        )
    if not np.all(np.isin(v[:, 2], (-1, 1))):
        r = int(np.argmax(~np.isin(v[:, 2], (-1, 1))))
        raise CLIError(f"links file {t.source}, row {r}: sign must be +1 or -1, got {v[r, 2]}")
    return v[v[:, 2] > 0, :2], v[v[:, 2] < 0, :2]


def read_background(path: str, n: int, header: bool | None = None) -> np.ndarray:
    r"""Read CCIB's background: a partition (one integer per row) or features (one row per data row).

    Parameters
    ----------
    path : str
        The file (``"-"``: stdin), as :func:`read_table`.
    n : int
        Number of data rows; the file must hold as many rows.
    header : bool or None, default None
        As :func:`read_table`.

    Returns
    -------
    background : ndarray of shape (n,) or (n, d)

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "background.csv").write_text("0\n1\n1\n")
    >>> from ppclust.cli import read_background
    >>> read_background(str(folder / "background.csv"), 3).tolist()
    [0.0, 1.0, 1.0]
    """
    t = read_table(path, "background", header)
    _check_finite(t, "background")
    if t.values.shape[0] != n:
        raise CLIError(
            f"background file {t.source} has {t.values.shape[0]} rows, the data has {n}{_header_hint(t)}"
        )
    return t.values.ravel() if t.values.shape[1] == 1 else t.values


def _parse_params(items: list[str]) -> dict:
    out = {}
    for item in items:
        if "=" not in item:
            raise CLIError(f"--param expects key=value, got {item!r}")
        k, v = item.split("=", 1)
        try:
            out[k] = json.loads(v)
        except json.JSONDecodeError:
            out[k] = v
    return out


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
    except (TypeError, ValueError):
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
    warmup(verbose=True)
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
    params = _parse_params(args.param or [])
    data = read_data(args.data, args.header)
    X = data.values
    n = X.shape[0]
    inputs = {"data": {"path": data.source, "n_rows_read": n, "header": data.header}}
    y = read_labels(args.labels, n, args.header) if args.labels else None
    if y is not None:
        inputs["labels"] = {"path": _shown(args.labels), "n_labelled": int(np.count_nonzero(y >= 0))}
    fit_kw = {}
    if args.links:
        ml, cl = read_links(args.links, n, args.header)
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
        est.fit(X, y, **fit_kw)
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
            tmp / "labels.csv", np.asarray(est.labels_, dtype=int), fmt="%d", header="label", comments=""
        )
        (tmp / "summary.json").write_text(json.dumps(summary, indent=2))
        if not args.no_plots:
            from ppclust import plot

            plot.save_fit_figures(est, X, tmp, **fit_kw)
    for msg in dict.fromkeys(f"{w.category.__name__}: {one_line(w.message)}" for w in caught):
        print(f"ppclust: warning: {msg}", file=sys.stderr)
    head = "no header" if data.header is None else f"header {','.join(data.header)!r} skipped"
    print(f"ppclust: read {n} rows x {X.shape[1]} columns from {data.source} ({head})", file=sys.stderr)
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
    f.add_argument("--labels", help="partial labels, one integer per row (-1 = unlabelled)")
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
    w.set_defaults(func=cmd_warmup)
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
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("ppclust: interrupted", file=sys.stderr)
        return 130
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
