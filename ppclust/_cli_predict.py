"""``ppclust predict``: assign new points with a model saved by ``ppclust fit --save-model``.

The model file is a pickle of the fitted estimator (:func:`save_model`; a fitted TVClust stores no
n x n cache, see its ``__getstate__``). Pickles run code when read: load only files you wrote.
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import numpy as np

from ppclust._input_files import CLIError, read_data

__all__ = ["add_parser", "cmd_predict", "save_model", "load_model"]


def save_model(est, path) -> None:
    """Pickle a fitted estimator to ``path`` (what ``ppclust fit --save-model`` writes).

    Parameters
    ----------
    est : estimator
        A fitted ppclust estimator.
    path : str or Path
        The file to write.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from pathlib import Path
    >>> from ppclust import SemiSupervisedGMM
    >>> from ppclust._cli_predict import load_model, save_model
    >>> X = np.r_[np.zeros((5, 2)), np.ones((5, 2)) * 4] + np.random.default_rng(0).normal(size=(10, 2))
    >>> path = Path(tempfile.mkdtemp()) / "model.pkl"
    >>> save_model(SemiSupervisedGMM(2, random_state=0).fit(X), path)
    >>> load_model(path).predict(X).shape
    (10,)
    """
    Path(path).write_bytes(pickle.dumps(est, protocol=pickle.HIGHEST_PROTOCOL))


def load_model(path):
    """Read an estimator written by :func:`save_model` (a pickle: load only files you trust).

    Parameters
    ----------
    path : str or Path
        The model file.

    Returns
    -------
    estimator

    Raises
    ------
    CLIError
        When the file is missing or holds no fitted estimator with ``predict``.

    Examples
    --------
    See :func:`save_model`.

    >>> from ppclust._cli_predict import load_model
    >>> callable(load_model)
    True
    """
    p = Path(path)
    if not p.is_file():
        raise CLIError(f"--model {path}: no such file")
    try:
        est = pickle.loads(p.read_bytes())
    except Exception as err:  # noqa: BLE001 - any unreadable pickle is the same user error
        raise CLIError(f"--model {path}: not a model saved by `ppclust fit --save-model` ({err})") from err
    if not hasattr(est, "predict") or not hasattr(est, "labels_"):
        raise CLIError(f"--model {path}: not a fitted ppclust estimator")
    return est


def add_parser(sub) -> None:
    """Register ``ppclust predict`` on the CLI's sub-parsers.

    Parameters
    ----------
    sub : argparse sub-parsers
        ``build_parser``'s.

    Examples
    --------
    >>> import argparse
    >>> from ppclust._cli_predict import add_parser
    >>> sub = argparse.ArgumentParser().add_subparsers()
    >>> add_parser(sub)
    >>> sorted(sub.choices)
    ['predict']
    """
    p = sub.add_parser("predict", help="assign new points with a model saved by `ppclust fit --save-model`")
    p.add_argument("data", help="CSV/whitespace text (header optional) or .npy file, one row per new point")
    p.add_argument("--model", required=True, help="model file written by `ppclust fit --save-model`")
    p.add_argument("--out", required=True, help="CSV file to write: a label per row (and probabilities)")
    p.add_argument("--proba", action="store_true", help="also write predict_proba's columns")
    p.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    h = p.add_mutually_exclusive_group()
    h.add_argument(
        "--header", dest="header", action="store_true", default=None, help="the first line is a header"
    )
    h.add_argument("--no-header", dest="header", action="store_false", help="the first line is data")
    p.set_defaults(func=cmd_predict)


def cmd_predict(args) -> int:
    """Run ``ppclust predict``: read the model and the rows, write ``label`` (and ``p_0 ...``) per row.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed arguments.

    Returns
    -------
    int
        0 on success.

    Examples
    --------
    >>> from ppclust._cli_predict import cmd_predict
    >>> callable(cmd_predict)
    True
    """
    out = Path(args.out)
    if out.exists() and not args.overwrite:
        raise CLIError(f"--out {out} exists; pass --overwrite to replace it")
    est = load_model(args.model)
    data = read_data(args.data, args.header)
    X = data.values
    labels = np.asarray(est.predict(X), dtype=int)
    cols, header = [labels[:, None]], ["label"]
    if args.proba:
        prob = np.asarray(est.predict_proba(X))
        cols.append(prob)
        header += [f"p_{j}" for j in range(prob.shape[1])]
    table = np.hstack([c.astype(float) for c in cols])
    fmt = ["%d"] + ["%.6g"] * (table.shape[1] - 1)
    np.savetxt(out, table, fmt=fmt, delimiter=",", header=",".join(header), comments="")
    print(f"ppclust: predicted {len(labels)} rows with {type(est).__name__} -> {out}", file=sys.stderr)
    return 0
