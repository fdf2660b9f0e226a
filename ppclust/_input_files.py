"""The ``ppclust`` command's input files (data, labels, links, background), read so that no row is lost.

Text files (comma-, semicolon- or whitespace-separated, or stdin as ``-``) and ``.npy`` arrays.
:func:`read_table` never drops a data row silently: a header is skipped only when every value of the
first line is non-numeric (or with ``header=True``), and a bad value is named with its 0-based row,
column and the file's line. ``.npy`` files are recognised by their header, whatever their name, and
loaded with ``allow_pickle=False`` (ppclust never unpickles); a file named ``.npy`` that is not one (a
CSV, a pickle, an ``.npz`` archive) is an error naming what it is. A labels file keeps its empty cells
as unlabelled points, in row order, and may give classes by name (:func:`read_labels_named`). Every
failure is a :class:`CLIError`, which the command prints as one line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ppclust.errors import PPClustError

__all__ = [
    "CLIError",
    "STDIN",
    "Table",
    "Labels",
    "read_table",
    "read_data",
    "read_labels",
    "read_labels_named",
    "read_links",
    "read_background",
    "parse_params",
]


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
    r"""A numeric table read from a CSV/whitespace/NPY file (or stdin), as :func:`read_table` returns it.

    Parameters
    ----------
    values : ndarray of shape (n_rows, n_cols)
        The values, float64.
    header : list of str or None
        The skipped header line's names, or None.
    source : str
        The path, or ``"<stdin>"``.
    lines : ndarray of shape (n_rows,) or None
        The 1-based file line of each row (text files), for messages.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.cli import Table
    >>> Table(np.zeros((2, 1)), ["x"], "data.csv", np.array([2, 3])).header
    ['x']
    """

    values: np.ndarray
    header: list[str] | None
    source: str
    lines: np.ndarray | None


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


_NPY_MAGIC = b"\x93NUMPY"


def _head(path: str, n: int = 64) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(n)
    except OSError:
        return b""


def _is_npy(path: str) -> bool:
    return _head(path, len(_NPY_MAGIC)) == _NPY_MAGIC


def _real_format(head: bytes) -> str:
    """What a file that is not an ``.npy`` array really is, from its first bytes (for messages)."""
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return (
            "a zip archive (an .npz file?); ppclust reads one array: save it with "
            "np.save('data.npy', arrays['name']), or as CSV"
        )
    if head[:1] == b"\x80" and head[1:2] in tuple(bytes([v]) for v in range(2, 6)):
        return (
            "a Python pickle, which ppclust never loads (unpickling can run any code); save the array "
            "with np.save('data.npy', np.asarray(X, dtype=float)), or as CSV"
        )
    if not head:
        return "empty"
    if _looks_like_text(head):
        return "a text file (CSV?), not a NumPy array, despite its .npy name; rename it to .csv"
    return "not a NumPy array file (no .npy header); give a CSV/text file or an .npy written by np.save"


def _looks_like_text(head: bytes) -> bool:
    for cut in range(4):  # the first bytes may end inside a multi-byte character
        try:
            text = head[: len(head) - cut].decode("utf-8-sig")
        except UnicodeDecodeError:
            continue
        return all(c.isprintable() or c in "\r\n\t" for c in text)
    return False


def _read_npy(path: str, what: str) -> Table:
    """An ``.npy`` file, loaded with ``allow_pickle=False``; anything else is named for what it is."""
    head = _head(path)
    if not head.startswith(_NPY_MAGIC):
        raise CLIError(f"cannot read {what} file {path}: the file is {_real_format(head)}")
    try:
        arr = np.load(path, allow_pickle=False)
    except ValueError as err:
        if "allow_pickle" in str(err) or "pickle" in str(err).lower():
            raise CLIError(
                f"cannot read {what} file {path}: it holds Python objects (dtype object), which ppclust "
                "never unpickles; save a numeric array: np.save('data.npy', np.asarray(X, dtype=float))"
            ) from None
        raise CLIError(f"cannot read {what} file {path}: {str(err).splitlines()[0]}") from err
    except OSError as err:
        raise CLIError(f"cannot read {what} file {path}: {str(err).splitlines()[0]}") from err
    if arr.dtype.kind not in "biuf" or arr.ndim > 2:
        raise CLIError(
            f"{what} file {path} must hold a numeric array of at most 2 dimensions, got dtype "
            f"{arr.dtype} and shape {arr.shape}"
        )
    values = np.asarray(arr, float)
    return Table(values if values.ndim == 2 else values.reshape(-1, 1), None, path, None)


def parse_params(items) -> dict:
    """The ``--param key=value`` options as keyword arguments: each value read as JSON, else kept a string.

    Parameters
    ----------
    items : list of str or None
        ``key=value`` strings.

    Returns
    -------
    params : dict

    Raises
    ------
    CLIError
        An item without ``=``.

    Examples
    --------
    >>> from ppclust._input_files import parse_params
    >>> parse_params(["n_clusters=3", "init=k-means++", "beta=0.5"])
    {'n_clusters': 3, 'init': 'k-means++', 'beta': 0.5}
    """
    out = {}
    for item in items or []:
        if "=" not in item:
            raise CLIError(f"--param expects key=value, got {item!r}")
        k, v = item.split("=", 1)
        try:
            out[k] = json.loads(v)
        except json.JSONDecodeError:
            out[k] = v
    return out


def read_table(path: str, what: str, header: bool | None = None) -> Table:
    r"""Read a numeric table from a text or ``.npy`` file (or stdin); never drops a data row silently.

    Parameters
    ----------
    path : str
        The file; ``"-"`` reads stdin. Text files hold one row per line, comma-, semicolon- or
        whitespace-separated (decided by the first row); blank lines and lines starting with ``#`` are
        skipped. ``.npy`` files (recognised by their header, whatever their name) have no header and are
        loaded with ``allow_pickle=False``: ppclust never unpickles. A file named ``.npy`` that is not
        one (a CSV, a pickle, an ``.npz``) is an error naming what it is.
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
    if path != STDIN and Path(path).is_file() and (Path(path).suffix.lower() == ".npy" or _is_npy(path)):
        return _read_npy(path, what)
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


class Labels(NamedTuple):
    r"""Partial labels read from a file, with the class names they were given as (:func:`read_labels_named`).

    Parameters
    ----------
    y : int64 ndarray of shape (n,)
        The labels, ``-1`` = unlabelled.
    classes : dict of str to int, or None
        Class name -> integer code, when the file holds names; None for integer labels.
    header : str or None
        The skipped header, or None.
    source : str
        The path, or ``"<stdin>"``.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.cli import Labels
    >>> Labels(np.array([0, -1]), {"cat": 0}, None, "y.csv").classes
    {'cat': 0}
    """

    y: np.ndarray
    classes: dict[str, int] | None
    header: str | None
    source: str


def _cell(text: str) -> str:
    return text.strip().strip('"').strip("'").strip()


def _is_int_label(token: str) -> bool:
    return _numeric(token) and np.isfinite(float(token))


def read_labels(path: str, n: int, header: bool | None = None) -> np.ndarray:
    r"""Read partial labels: one per data row (-1 or an empty cell = unlabelled), integers or class names.

    As :func:`read_labels_named`, without the class names.

    Parameters
    ----------
    path : str
        The file (``"-"``: stdin).
    n : int
        Number of data rows; the file must hold as many labels.
    header : bool or None, default None
        As :func:`read_labels_named`.

    Returns
    -------
    labels : int64 ndarray of shape (n,)

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "labels.csv").write_text("label\n0\n\n1\n")
    >>> from ppclust.cli import read_labels
    >>> read_labels(str(folder / "labels.csv"), 3).tolist()
    [0, -1, 1]
    """
    return read_labels_named(path, n, header).y


def read_labels_named(path: str, n: int, header: bool | None = None) -> Labels:
    r"""Read partial labels: one per data row, as integers (``-1`` = unlabelled) or class names.

    Text files hold one label per line (a column), or all labels on one line (a row, comma-, semicolon-
    or whitespace-separated). An **empty cell is an unlabelled point**: a blank line inside the column
    is a row, so the rows keep their order (blank lines after the last label are ignored beyond the
    ``n`` rows). Labels are either all integers (``-1`` = unlabelled) or all class names (strings; ``-1``
    still means unlabelled), which are coded ``0, 1, ...`` in sorted order of the names. Lines starting
    with ``#`` are skipped; ``.npy`` files hold integers.

    Parameters
    ----------
    path : str
        The file (``"-"``: stdin).
    n : int
        Number of data rows; the file must hold as many labels.
    header : bool or None, default None
        ``None`` (auto): the first line is a header when it is not a number and the labels after it are
        integers, or when the file holds one label more than the data has rows. ``True`` / ``False`` force it.

    Returns
    -------
    Labels
        ``y`` (int64 of shape (n,)), ``classes`` (``{name: code}`` or ``None`` for integer labels),
        ``header`` and ``source``.

    Raises
    ------
    CLIError
        Naming the file, the 0-based row and the file's line of the first bad value, or the count.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "labels.csv").write_text("species\nsetosa\n\nvirginica\nsetosa\n")
    >>> from ppclust.cli import read_labels_named
    >>> lab = read_labels_named(str(folder / "labels.csv"), 4)
    >>> lab.y.tolist(), lab.classes
    ([0, -1, 1, 0], {'setosa': 0, 'virginica': 1})
    """
    if path != STDIN and Path(path).is_file() and (Path(path).suffix.lower() == ".npy" or _is_npy(path)):
        t = _read_npy(path, "labels")
        if min(t.values.shape) > 1:
            raise CLIError(
                f"labels file {t.source} must have one column (one label per data row), got shape "
                f"{t.values.shape}"
            )
        y = _integers(t, "labels").ravel()
        if y.size != n:
            raise CLIError(f"labels file {t.source} has {y.size} entries but the data has {n} rows")
        return Labels(y, None, None, t.source)
    text, source = _read_text(path, "labels")
    rows = [(k + 1, ln.strip()) for k, ln in enumerate(text.splitlines()) if not ln.strip().startswith("#")]

    def trimmed(rs):  # blank lines after the last label are not rows beyond the n needed
        rs = list(rs)
        while len(rs) > n and not rs[-1][1]:
            rs.pop()
        return rs

    names = None
    if rows and rows[0][1]:
        first = _split_cells(rows[0][1])
        rest = [c for _, t in rows[1:] for c in _split_cells(t) if c]
        # a first line of names is a header when integers follow, or when it is not one of the class
        # names below and the file then holds exactly n labels (or only then)
        fits = len(trimmed(rows[1:])) == n
        is_header = header is True or (
            header is None
            and not any(_numeric(c) or not c for c in first)
            and (
                all(_numeric(c) for c in rest)
                or (fits and (not set(first) & set(rest) or len(trimmed(rows)) != n))
            )
        )
        if is_header:
            names, rows = ",".join(first), rows[1:]
    rows = trimmed(rows)
    if len(rows) == 1 and n > 1:  # all labels on one line
        cells = [(rows[0][0], c) for c in _split_cells(rows[0][1])]
    else:
        cells = []
        for k, t in rows:
            parts = _split_cells(t) if any(d in t for d in ",;\t") else [_cell(t)]
            if len(parts) > 1:
                raise CLIError(
                    f"labels file {source} must have one column (one label per data row); line {k} has "
                    f"{len(parts)} columns"
                )
            cells.append((k, parts[0] if parts else ""))
    hint = ""
    if names is not None:
        hint = f" (its first line {names!r} was read as a header; pass --no-header if it is data)"
    if len(cells) != n:
        raise CLIError(f"labels file {source} has {len(cells)} entries but the data has {n} rows{hint}")
    tokens = [c for _, c in cells]
    given = [(r, k, c) for r, (k, c) in enumerate(cells) if c and c != "-1"]
    numeric = [g for g in given if _is_int_label(g[2])]
    if len(numeric) == len(given):  # integers (or nothing labelled)
        y = np.full(n, -1, np.int64)
        for r, k, c in given:
            v = float(c)
            if v != round(v):
                raise CLIError(
                    f"labels file {source} must hold integers; got {c} at row {r}, column 0 (0-based; "
                    f"line {k} of the file); give integers (-1 = unlabelled) or class names"
                )
            y[r] = int(v)
        return Labels(y, None, names, source)
    if numeric:  # a mix of numbers and names: name the first value of the minority kind
        if 2 * len(numeric) >= len(given):
            r, k, c = next(g for g in given if not _is_int_label(g[2]))
            kind, among = "non-numeric value", "integer labels"
        else:
            (r, k, c), kind, among = numeric[0], "number", "class names"
        raise CLIError(
            f"labels file {source}: {kind} {c!r} at row {r}, column 0 (0-based; line {k} of the file) "
            f"among {among}; labels are all integers or all class names (-1 or an empty cell = "
            f"unlabelled){hint}"
        )
    classes = {c: code for code, c in enumerate(sorted({c for _, _, c in given}))}
    y = np.array([classes.get(c, -1) for c in tokens], np.int64)
    return Labels(y, classes, names, source)


def _split_cells(text: str) -> list[str]:
    delim = "," if "," in text else (";" if ";" in text else ("\t" if "\t" in text else None))
    return [_cell(t) for t in (text.split(delim) if delim else text.split())]


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
