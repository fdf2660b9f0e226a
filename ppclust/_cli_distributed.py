"""``ppclust fit``'s options for rows spread over processes (:mod:`ppclust.distributed`).

``--coordinator HOST:PORT --num-processes P --process-id I`` start JAX's multi-process runtime
(``jax.distributed.initialize``) before the fit; each process reads its own data file (and labels file),
or ``--rows START:STOP`` of a shared one, and writes the labels of its own rows to its own ``--out``
folder. A links file holds *global* row indices (process ``i``'s rows come after those of processes
``0 .. i-1``; with ``--rows`` ranges that tile a shared file in process order, the file's own rows), and
every process reads the same complete one. On CPU the processes talk over gloo.
"""

from __future__ import annotations

import argparse

import numpy as np

from ppclust._input_files import CLIError

__all__ = [
    "add_arguments",
    "initialize",
    "select_rows",
    "total_rows",
    "to_global",
    "local_labels",
    "is_distributed",
]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the multi-process options to ``fit``'s parser.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        ``fit``'s parser.

    Examples
    --------
    >>> import argparse
    >>> p = argparse.ArgumentParser()
    >>> add_arguments(p)
    >>> p.parse_args(["--rows", "0:10"]).rows
    '0:10'
    """
    g = parser.add_argument_group("rows spread over processes (see docs/distributed.md)")
    g.add_argument("--coordinator", metavar="HOST:PORT", help="address of process 0's coordination service")
    g.add_argument("--num-processes", type=int, metavar="P", help="number of processes")
    g.add_argument("--process-id", type=int, metavar="I", help="this process's id, 0..P-1")
    g.add_argument("--rows", metavar="START:STOP", help="fit only these rows of the data (and labels) file")


def is_distributed(args) -> bool:
    """Whether ``--coordinator`` was given.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments.

    Returns
    -------
    bool

    Examples
    --------
    >>> import argparse
    >>> is_distributed(argparse.Namespace(coordinator=None))
    False
    """
    return getattr(args, "coordinator", None) is not None


def initialize(args) -> None:
    """Start ``jax.distributed`` when ``--coordinator`` is given (all three options are then required).

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments.

    Examples
    --------
    >>> import argparse
    >>> initialize(argparse.Namespace(coordinator=None, num_processes=None, process_id=None))
    """
    given = [args.coordinator is not None, args.num_processes is not None, args.process_id is not None]
    if not any(given):
        return
    if not all(given):
        raise CLIError("--coordinator, --num-processes and --process-id go together")
    if not 0 <= args.process_id < args.num_processes:
        raise CLIError(f"--process-id must lie in [0, {args.num_processes}), got {args.process_id}")
    import jax

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=args.coordinator, num_processes=args.num_processes, process_id=args.process_id
    )


def select_rows(args, X, y):
    """The rows ``--rows START:STOP`` of the data and the labels (all of them without the option).

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments.
    X : ndarray of shape (n, d)
        The data read.
    y : ndarray of shape (n,) or None
        The labels read.

    Returns
    -------
    (X, y)

    Examples
    --------
    >>> import argparse, numpy as np
    >>> X, y = select_rows(argparse.Namespace(rows="1:3"), np.arange(8.0).reshape(4, 2), None)
    >>> X.tolist(), y
    ([[2.0, 3.0], [4.0, 5.0]], None)
    """
    if getattr(args, "rows", None) is None:
        return X, y
    try:
        start, stop = (int(v) for v in args.rows.split(":"))
    except ValueError:
        raise CLIError(f"--rows must be START:STOP (integers), got {args.rows!r}") from None
    if not 0 <= start < stop <= X.shape[0]:
        raise CLIError(f"--rows {args.rows} is not a range of the {X.shape[0]} rows read")
    return X[start:stop], None if y is None else y[start:stop]


def total_rows(args, n_local: int) -> int:
    """The number of rows that link indices refer to: every process's rows when distributed.

    Collective when ``--coordinator`` is given (every process must call it, as every process reads the
    links file).

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments.
    n_local : int
        This process's rows (after ``--rows``).

    Returns
    -------
    int
        The sum of all processes' row counts, or ``n_local`` without ``--coordinator``.

    Examples
    --------
    >>> import argparse
    >>> total_rows(argparse.Namespace(coordinator=None), 7)
    7
    """
    if not is_distributed(args):
        return n_local
    from ppclust import distributed

    return int(distributed.row_counts(n_local).sum())


def to_global(args, X, y):
    """This process's rows as global arrays (:func:`ppclust.distributed.process_rows`) when distributed.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments.
    X : ndarray of shape (n_i, d)
        This process's rows.
    y : ndarray of shape (n_i,) or None
        Their labels.

    Returns
    -------
    (X, y)
        Global arrays, or the inputs unchanged without ``--coordinator``.

    Examples
    --------
    >>> import argparse, numpy as np
    >>> to_global(argparse.Namespace(coordinator=None), np.zeros((2, 1)), None)[0].shape
    (2, 1)
    """
    if not is_distributed(args):
        return X, y
    from ppclust import distributed

    Xg = distributed.process_rows(X)
    return Xg, None if y is None else distributed.process_labels(y, like=Xg)


def local_labels(labels) -> np.ndarray:
    """This process's rows of a fitted ``labels_`` (all of them for a one-process fit), as int NumPy.

    Parameters
    ----------
    labels : array
        The estimator's ``labels_``.

    Returns
    -------
    ndarray of int

    Examples
    --------
    >>> local_labels(np.array([0, 1])).tolist()
    [0, 1]
    """
    from ppclust import distributed

    return np.asarray(distributed.local(labels), dtype=int)
