"""Every notebook runs top to bottom through a real Jupyter kernel (nbclient + ipykernel, the inline
backend a user gets) with small settings, without an error, and every plotting cell shows a figure.

``make notebooks`` runs the same executor (``notebooks/_run.py``) with full settings and writes the
outputs into the committed notebooks.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def _runner():
    spec = importlib.util.spec_from_file_location("_notebook_runner", NOTEBOOKS / "_run.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


RUN = _runner()


def test_every_notebook_has_a_generator_and_is_committed():
    assert RUN.NAMES == sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))


def test_plotting_cell_detector():
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("plot.plot_psm(psm)"),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_code_cell("fig, ax = plt.subplots()"),
    ]
    nb.cells[2].outputs = [nbformat.v4.new_output("display_data", data={"image/png": "iVBOR"})]
    assert RUN.plotting_cells_without_image(nb) == [0]


def _runs_in_a_kernel_and_shows_its_figures(name, tmp_path):
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    import shutil

    import nbformat

    src = NOTEBOOKS / f"{name}.ipynb"
    path = tmp_path / src.name  # execute a copy: the committed notebook keeps its full-mode outputs
    shutil.copy(src, path)
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:  # run from the sources only
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.write(nb, path)
    full = os.environ.get("PPCLUST_NOTEBOOK_FULL") == "1"  # make reproduce
    nb = RUN.execute(path, full=full, timeout=1800 if full else 900, cwd=NOTEBOOKS)
    errors = [
        o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]
    assert not errors, errors
    assert RUN.plotting_cells_without_image(nb) == []
    assert (
        sum(
            "image/png" in o.get("data", {})
            for c in nb.cells
            if c.cell_type == "code"
            for o in c.get("outputs", [])
        )
        >= 1
    )


def _notebook_tests(name):
    """A test class for one notebook. ``make test`` distributes by scope (``--dist loadscope``, in collection
    order): a test file goes to one worker whole, a class on its own, so one class per notebook spreads the
    notebooks, the longest tests of the suite, over the workers, and the doctest modules collected after
    ``tests/`` fill the end of the run."""

    @pytest.mark.notebook
    class Notebook:
        pytestmark = [pytest.mark.core] if name in CORE_NOTEBOOKS else []

        def test_runs_in_a_kernel_and_shows_its_figures(self, tmp_path):
            _runs_in_a_kernel_and_shows_its_figures(name, tmp_path)

    Notebook.__name__ = Notebook.__qualname__ = f"TestNotebook_{name}"
    return Notebook


#: The notebook ``make test`` runs whatever it costs (``core``): the teacher's small-variance asymptotics
#: (RDP-means, DP-means and the Gibbs sampler in one kernel); the others run in ``make test-all``.
CORE_NOTEBOOKS = ("small_variance_asymptotics",)

for _name in RUN.NAMES:
    globals()[f"TestNotebook_{_name}"] = _notebook_tests(_name)
