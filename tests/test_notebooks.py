"""Every notebook runs top to bottom offline with small settings (PPCLUST_NOTEBOOK_FULL unset).

``make reproduce`` runs them with PPCLUST_NOTEBOOK_FULL=1 (the full versions).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(path, as_version=4)
    env_full = os.environ.get("PPCLUST_NOTEBOOK_FULL", "")
    os.environ.setdefault("MPLBACKEND", "Agg")
    # the kernel imports this checkout's ppclust even where it is not installed (dev venvs)
    root = str(path.parent.parent)
    if root not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    client = nbclient.NotebookClient(nb, timeout=900 if env_full else 300, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, errors
