"""Execute the notebooks through a real Jupyter kernel (nbclient + ipykernel, inline backend), as a user
runs them. One definition shared by ``make notebooks`` and ``tests/test_notebooks.py``.

``python notebooks/_run.py [--full] [--write] [name ...]``: regenerate each notebook from its
``_make_<name>.py``, execute it (``--full``: ``PPCLUST_NOTEBOOK_FULL=1``) and, with ``--write``, save it
with its outputs and figures. Run from anywhere; the kernel imports this checkout's ppclust.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
NAMES = sorted(p.stem.removeprefix("_make_") for p in HERE.glob("_make_*.py"))
#: A code cell draws a figure when it calls matplotlib or ppclust.plot (``plot.x(``, ``plot_x(``,
#: ``scatter_partition(``); such a cell must leave an image/png output.
PLOTTING = re.compile(r"\bplt\.|\bplot\.\w+\(|\bplot_\w+\(|\bscatter_partition\(")


def kernel_env(full: bool) -> dict:
    """Environment of the kernel: this checkout first on the path, the inline backend, no progress bars
    (they would be stored in the outputs), the test suite's compilation cache."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    env["PPCLUST_PROGRESS"] = "0"
    env.setdefault("PPCLUST_CACHE_DIR", str(ROOT / ".jax_cache" / "ppclust"))
    env.pop("PPCLUST_NOTEBOOK_FULL", None)
    if full:
        env["PPCLUST_NOTEBOOK_FULL"] = "1"
    return env


def generate(name: str) -> Path:
    """Write ``notebooks/<name>.ipynb`` (no outputs) from ``notebooks/_make_<name>.py``."""
    import nbformat

    subprocess.run([sys.executable, str(HERE / f"_make_{name}.py")], cwd=ROOT, check=True)
    path = HERE / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    for i, cell in enumerate(nb.cells):  # stable ids: regenerating gives no diff
        cell.id = f"cell-{i:02d}"
    nbformat.write(nb, path)
    return path


def execute(path: Path, *, full: bool = False, timeout: int = 1200, cwd: Path | None = None):
    """Execute a notebook in a fresh kernel; returns the executed ``nbformat`` node (raises on error).

    The kernel starts in ``cwd`` (default: the notebook's folder), as Jupyter starts it beside the notebook;
    a copy executed elsewhere passes ``cwd=notebooks/`` so that it finds the checkout's result files."""
    import nbclient
    import nbformat

    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                     record_timing=False, resources={"metadata": {"path": str(cwd or path.parent)}})
    client.execute(env=kernel_env(full))
    return nb


def plotting_cells_without_image(nb) -> list[int]:
    """Indices of code cells that plot (``PLOTTING``) but produced no image/png output."""
    missing = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or not PLOTTING.search(cell.source):
            continue
        if not any("image/png" in out.get("data", {}) for out in cell.get("outputs", [])):
            missing.append(i)
    return missing


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=NAMES, help=f"notebooks (default: all of {NAMES})")
    ap.add_argument("--full", action="store_true", help="PPCLUST_NOTEBOOK_FULL=1")
    ap.add_argument("--write", action="store_true", help="save the executed notebooks with their outputs")
    args = ap.parse_args(argv)
    import nbformat

    status = 0
    for name in args.names:
        t0 = time.perf_counter()
        path = generate(name)
        nb = execute(path, full=args.full)
        missing = plotting_cells_without_image(nb)
        if missing:
            print(f"{name}: plotting cells without a figure: {missing}", file=sys.stderr)
            status = 1
        if args.write:
            nbformat.write(nb, path)
        print(f"{name}: executed in {time.perf_counter() - t0:.0f} s" + (" (written)" if args.write else ""))
    return status


if __name__ == "__main__":
    sys.exit(main())
