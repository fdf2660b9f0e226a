"""The ``ppclust`` command: ``methods``, ``fit``, ``demo``, ``reproduce``.

Every failure a user can cause (bad file, bad argument, bad data) becomes a one-line message on
stderr and exit code 2; outputs are written to a temporary folder and moved into place only when
complete, so a failed run never leaves a partial output, and ppclust never deletes or overwrites a
file it did not write (see ``ppclust._output``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ppclust._output import OutputDir
from ppclust._registry import METHODS
from ppclust._version import __version__
from ppclust.errors import PPClustError


class CLIError(PPClustError):
    """An error caused by the user's input: printed as one line, exit code 2."""


# ---------------------------------------------------------------------------------------------
# file readers
# ---------------------------------------------------------------------------------------------


def _read_table(path: str, what: str) -> np.ndarray:
    p = Path(path)
    if not p.is_file():
        raise CLIError(f"{what} file not found: {path}")
    try:
        if p.suffix == ".npy":
            return np.load(p, allow_pickle=False)
        with p.open() as fh:
            first = fh.readline()
        delim = "," if "," in first else None
        try:
            [float(t) for t in (first.split(delim) if delim else first.split())]
            skip = 0
        except ValueError:
            skip = 1  # a header line
        return np.loadtxt(p, delimiter=delim, skiprows=skip, ndmin=2)
    except (ValueError, OSError) as err:
        raise CLIError(f"cannot read {what} file {path}: {str(err).splitlines()[0]}") from err


def read_data(path: str) -> np.ndarray:
    X = np.asarray(_read_table(path, "data"), dtype=float)
    if X.ndim != 2 or X.shape[0] < 2:
        raise CLIError(f"data file {path} must hold a 2-D table with at least 2 rows, got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        bad = np.argwhere(~np.isfinite(X))[0]
        raise CLIError(f"data file {path} has a non-finite value at row {bad[0]}, column {bad[1]}")
    return X


def read_labels(path: str, n: int) -> np.ndarray:
    y = _read_table(path, "labels").ravel()
    if y.size != n:
        raise CLIError(f"labels file {path} has {y.size} entries but the data has {n} rows")
    if not np.all(np.equal(np.mod(y, 1), 0)):
        raise CLIError(f"labels file {path} must hold integers (-1 = unlabelled)")
    return y.astype(np.int64)


def read_links(path: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Links file: rows ``i,j,sign`` (0-based indices, sign +1 may-link / -1 may-not-link)."""
    t = _read_table(path, "links")
    if t.shape[1] != 3:
        raise CLIError(f"links file {path} must have 3 columns i,j,sign; got {t.shape[1]}")
    if not np.all(np.equal(np.mod(t, 1), 0)):
        raise CLIError(f"links file {path} must hold integers")
    t = t.astype(np.int64)
    if np.any((t[:, :2] < 0) | (t[:, :2] >= n)):
        r = int(np.argwhere((t[:, :2] < 0) | (t[:, :2] >= n))[0, 0])
        raise CLIError(f"links file {path}, row {r}: index out of range for {n} points: {tuple(t[r, :2])}")
    if not np.all(np.isin(t[:, 2], (-1, 1))):
        raise CLIError(f"links file {path}: sign must be +1 or -1")
    return t[t[:, 2] > 0, :2], t[t[:, 2] < 0, :2]


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


def cmd_methods(args) -> int:
    from ppclust._registry import available

    have = available()
    rows = [("method", "estimator", "side information", "inference", "paper", "status")]
    for name, m in METHODS.items():
        rows.append((name, m.estimator.split(":")[1], m.side_info, m.inference, m.paper,
                     "available" if name in have else "planned"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    return 0


def cmd_fit(args) -> int:
    from ppclust._registry import available

    if args.method not in METHODS:
        raise CLIError(f"unknown method {args.method!r}; choose one of: {', '.join(METHODS)}")
    if args.method not in available():
        raise CLIError(f"method {args.method!r} is planned but not available in this build")
    out = OutputDir(args.out, overwrite=args.overwrite)
    out.check()  # refuse before the (possibly long) fit, not after
    X = read_data(args.data)
    n = X.shape[0]
    y = read_labels(args.labels, n) if args.labels else None
    fit_kw = {}
    if args.links:
        ml, cl = read_links(args.links, n)
        fit_kw.update(must_link=ml, cannot_link=cl)
    if args.background:
        fit_kw["background"] = _read_table(args.background, "background")
        if fit_kw["background"].shape[0] != n:
            raise CLIError(f"background file has {fit_kw['background'].shape[0]} rows, data has {n}")
        if fit_kw["background"].shape[1] == 1:
            fit_kw["background"] = fit_kw["background"].ravel()
    params = _parse_params(args.param or [])
    cls = METHODS[args.method].load()
    try:
        est = cls(**params)
    except TypeError as err:
        raise CLIError(f"bad --param for {args.method}: {err}") from err
    t0 = time.perf_counter()
    try:
        est.fit(X, y, **fit_kw)
    except (ValueError, TypeError) as err:
        raise CLIError(f"{args.method}: {str(err).splitlines()[0]}") from err
    elapsed = time.perf_counter() - t0
    summary = {"method": args.method, "n_samples": n, "n_features": X.shape[1], "seconds": elapsed,
               "params": params, **fitted_summary(est)}
    with out.staging() as tmp:
        np.savetxt(tmp / "labels.csv", np.asarray(est.labels_, dtype=int), fmt="%d", header="label",
                   comments="")
        (tmp / "summary.json").write_text(json.dumps(summary, indent=2))
        if not args.no_plots:
            from ppclust import plot

            plot.save_fit_figures(est, X, tmp, **fit_kw)
    print(f"{args.method}: {summary.get('n_clusters_', '?')} clusters in {elapsed:.2f} s -> {args.out}")
    return 0


def cmd_demo(args) -> int:
    from ppclust.demo import run_demo

    return run_demo(out=args.out, quick=args.quick, overwrite=args.overwrite)


# paper -> (reproduction script under benchmarks/ with quick arguments, where it writes, slow-test filter)
REPRODUCTIONS = {
    "rdpmeans": (["reproduce_rdpmeans.py", "--trials", "2", "--out", "{out}/rdpmeans.md"], "dpmeans"),
    "cecib": (["reproduce_cecib.py", "--quick", "--out", "{out}/cecib.md"], "cecib"),
    "c3l": (["bench_c3l.py", "--reps", "3"], "c3l"),
    "ccib": (["bench_ccib.py", "--quick"], "ccib"),
    "smic": (["bench_smic.py", "--seeds", "1", "--skip-scaling", "--out", "{out}/smic.md"], "smic"),
    "ssgmm": (None, "ssgmm"),
    "tvclust": (None, "tvclust or small_variance"),
}


def cmd_reproduce(args) -> int:
    """Quick paper-vs-ppclust tables from the paper's reproduction script (or its slow tests)."""
    import subprocess

    if args.paper not in REPRODUCTIONS:
        raise CLIError(f"unknown paper {args.paper!r}; choose one of: {', '.join(REPRODUCTIONS)}")
    root = Path(__file__).resolve().parent.parent
    if not (root / "benchmarks").is_dir() or not (root / "tests").is_dir():
        raise CLIError("reproductions need the source checkout (benchmarks/ and tests/); run from the "
                       "repository")
    script, tests = REPRODUCTIONS[args.paper]
    if args.tests or script is None:
        cmd = [sys.executable, "-m", "pytest", str(root / "tests"), "-m", "slow", "-k", tests, "-q", "-s"]
        return subprocess.call(cmd, cwd=root)
    out = Path(args.out or tempfile.mkdtemp(prefix="ppclust-reproduce-")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    argv = [a.format(out=out) for a in script]
    env = dict(os.environ, PPCLUST_RESULTS_DIR=str(out),
               PYTHONPATH=os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p))
    print(f"running benchmarks/{argv[0]} (quick settings); tables go to {out}/", flush=True)
    rc = subprocess.call([sys.executable, str(root / "benchmarks" / argv[0]), *argv[1:]], cwd=root, env=env)
    if rc == 0:
        print(f"paper-vs-ppclust tables: {', '.join(sorted(p.name for p in out.glob('*.md')))} in {out}/")
    return rc


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ppclust", description="Clustering with side information (JAX/NumPyro).")
    p.add_argument("--version", action="version", version=f"ppclust {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("methods", help="list methods and the side information each accepts").set_defaults(
        func=cmd_methods)
    f = sub.add_parser("fit", help="fit one method to a CSV/NPY data file")
    f.add_argument("data", help="CSV (header optional) or .npy file, one row per point")
    f.add_argument("--method", required=True, help="see `ppclust methods`")
    f.add_argument("--labels", help="partial labels, one integer per row (-1 = unlabelled)")
    f.add_argument("--links", help="links, rows i,j,sign with 0-based indices and sign +1/-1")
    f.add_argument("--background", help="background partition/features (CCIB)")
    f.add_argument("--param", action="append", metavar="KEY=VALUE", help="estimator parameter (repeatable)")
    f.add_argument("--out", required=True, help="output folder (labels.csv, summary.json, figures)")
    f.add_argument("--overwrite", action="store_true",
                   help="allow a non-empty --out; replaces only the files ppclust writes, nothing else")
    f.add_argument("--no-plots", action="store_true", help="skip figures")
    f.set_defaults(func=cmd_fit)
    d = sub.add_parser("demo", help="run every available method on an embedded data set")
    d.add_argument("--out", default="ppclust-demo", help="output folder (default ppclust-demo)")
    d.add_argument("--overwrite", action="store_true",
                   help="allow a non-empty --out; replaces only the files the demo writes, nothing else")
    d.add_argument("--quick", action="store_true", help="smaller settings (used by the tests)")
    d.set_defaults(func=cmd_demo)
    r = sub.add_parser("reproduce", help="run a paper's reproduction (quick) and print paper-vs-ppclust")
    r.add_argument("paper", help=", ".join(REPRODUCTIONS))
    r.add_argument("--out", help="folder for the tables (default: a new temporary folder)")
    r.add_argument("--tests", action="store_true", help="run the paper's slow tests instead")
    r.set_defaults(func=cmd_reproduce)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (CLIError, PPClustError) as err:
        print(f"ppclust: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ppclust: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    os.environ.setdefault("TQDM_DISABLE", "0")
    sys.exit(main())
