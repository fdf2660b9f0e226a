"""Write the generated pages of the documentation (run by ``docs/conf.py`` at every build).

Nothing written here is typed by hand: every number and figure comes from a file a script wrote.

* ``docs/gallery/``: the notebooks of ``notebooks/`` copied as they are (rendered from their stored
  outputs; ``nb_execution_mode = "off"``) and an index page listing them.
* ``docs/generated/claims.md``: "Reproducing the papers", the claim ledger ``reproduce/results/CLAIMS.md``
  included verbatim.
* ``docs/generated/benchmarks.md``: one section per speed-benchmark results file of
  ``benchmarks/results/``, included verbatim,
  with the figures the benchmark wrote beside it (``<name>.png``, ``<name>_*.png``).
* ``docs/generated/_include/methods-table.md`` (the registry of methods) and ``cli-help.md`` (the CLI help),
  included by the user guide.
* ``docs/generated/_include/toc-decisions.md``: the landing page's toctree of ``docs/decisions/``.
* ``docs/generated/api-inference.md`` and ``api-models.md``: one ``automodule`` section per public
  module of ``ppclust.inference`` and ``ppclust.models``, found by ``pkgutil`` so that a module added,
  renamed or removed is picked up without editing the docs.

Files are rewritten only when their content changes, so incremental builds stay incremental.
``python docs/_generate.py`` runs it alone.
"""

from __future__ import annotations

import json
import pkgutil
import re
import shutil
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
GALLERY = DOCS / "gallery"
GENERATED = DOCS / "generated"

# Where the results files live: benchmarks/results/ (speed benchmarks only) and reproduce/results/
# (paper reproductions, the benefit panel, the claim ledger).
SPEED_RESULTS = ROOT / "benchmarks" / "results"
REPRODUCE_RESULTS = ROOT / "reproduce" / "results"

# The speed benchmarks' results files first, in this order (stems of benchmarks/results/<stem>.md; a stem
# without a file is skipped), then every other .md there.
SPEED = [
    "scaling",
    "compare",
    "first_fit",
    "memory",
    "hartigan",
    "bench_dpmeans",
    "tvclust",
    "subcluster",
    "point_estimate",
    "ssgmm",
    "tvclust_summary",
    "compiles",
]

HEADING = re.compile(r"^(#{1,6})\s", re.MULTILINE)
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if not dst.exists() or dst.read_bytes() != src.read_bytes():
        shutil.copyfile(src, dst)


def _rel(path: Path, start: Path) -> str:
    """POSIX path of ``path`` relative to the folder ``start`` (for MyST include / image paths)."""
    import os

    return Path(os.path.relpath(path, start)).as_posix()


def _min_heading(text: str) -> int:
    levels = [len(m.group(1)) for m in HEADING.finditer(FENCE.sub("", text))]
    return min(levels, default=1)


def _include(src: Path, page: Path, level: int) -> str:
    """A MyST include of ``src`` whose top heading becomes ``level`` (1 = the page title)."""
    offset = max(0, level - _min_heading(src.read_text(encoding="utf-8")))
    return f"```{{include}} {_rel(src, page.parent)}\n:heading-offset: {offset}\n```\n"


# --------------------------------------------------------------------------------------------------
def gallery() -> list[str]:
    """Copy notebooks/*.ipynb into docs/gallery/ and write its index; returns the notebook stems."""
    GALLERY.mkdir(parents=True, exist_ok=True)
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    for old in GALLERY.glob("*.ipynb"):
        if old.name not in {nb.name for nb in notebooks}:
            old.unlink()
    entries = []
    for nb in notebooks:
        _copy(nb, GALLERY / nb.name)
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        first = next(("".join(c["source"]) for c in cells if c["cell_type"] == "markdown"), "")
        title = next((ln.lstrip("# ").strip() for ln in first.splitlines() if ln.startswith("# ")), nb.stem)
        entries.append((nb.stem, title))
    lines = [
        "# Gallery",
        "",
        "The notebooks of `notebooks/`, rendered with the outputs and figures stored in them (nothing is",
        "executed when the documentation is built). `make notebooks` re-executes them with their full",
        "settings and writes the outputs back.",
        "",
    ]
    lines += [f"* [{title}]({stem}.ipynb)" for stem, title in entries]
    lines += ["", "```{toctree}", ":hidden:", "", *[stem for stem, _ in entries], "```", ""]
    _write(GALLERY / "index.md", "\n".join(lines))
    return [stem for stem, _ in entries]


def claims() -> None:
    page = GENERATED / "claims.md"
    ledger = REPRODUCE_RESULTS / "CLAIMS.md"
    text = [
        "# Reproducing the papers",
        "",
        "Each measurable claim of the five papers ppclust implements, the paper's value, the tolerance,",
        "ppclust's number and its status. The ledger below is written by a script from the JSON files the",
        "reproduction scripts write and from the JUnit reports of the slow tests; it is included here as",
        f"it is (`{ledger.relative_to(ROOT).as_posix()}`). `make reproduce` runs the reproductions and",
        "rewrites it.",
        "",
        _include(ledger, page, 2),
    ]
    _write(page, "\n".join(text))


def benchmarks() -> None:
    page = GENERATED / "benchmarks.md"
    results = SPEED_RESULTS
    stems = [s for s in SPEED if (results / f"{s}.md").exists()]
    stems += sorted(p.stem for p in results.glob("*.md") if p.stem not in stems)
    text = [
        "# Benchmarks",
        "",
        "Speed benchmarks (`make bench`). Each section is one results file of `benchmarks/results/`,",
        "included as its benchmark script wrote it (the machine, load, date and commit are in the file),",
        "followed by the figures the script drew.",
        "",
    ]
    for stem in stems:
        src = results / f"{stem}.md"
        text += [f"## `{stem}.md`", "", _include(src, page, 3)]
        figures = sorted(results.glob(f"{stem}.png")) + sorted(results.glob(f"{stem}_*.png"))
        for fig in figures:
            _copy(fig, GENERATED / "figures" / fig.name)
            text += [f"```{{image}} figures/{fig.name}", f":alt: {fig.name}", "```", ""]
    _write(page, "\n".join(text))


def _public_modules(package: str) -> list[str]:
    import importlib

    pkg = importlib.import_module(package)
    return sorted(
        f"{package}.{m.name}" for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_")
    )


def solver_pages() -> None:
    pages = {
        "api-inference": (
            "ppclust.inference",
            "Solvers",
            "The solvers: pure jitted functions over arrays (a `build(...)` returning `init` and `step`,"
            " and a `fit`), one module per method. The estimators call them; use them directly to run a"
            " solver inside your own JAX code.",
        ),
        "api-models": (
            "ppclust.models",
            "Models",
            "The probabilistic models: log joints, priors and NumPyro models, read by the solvers.",
        ),
    }
    for name, (package, title, intro) in pages.items():
        text = [f"# {title}: `{package}`", "", intro, ""]
        for mod in _public_modules(package):
            own, again = _own_names(mod)
            text += [f"## `{mod}`", "", "```{eval-rst}", f".. automodule:: {mod}"]
            if own is None:
                text += ["   :members:"]
            elif own:
                text += [f"   :members: {', '.join(own)}"]
            text += ["```", ""]
            if again:
                text += [
                    "Also exported here: "
                    + ", ".join(f"{{py:obj}}`{n} <{home}>`" for n, home in again)
                    + ".",
                    "",
                ]
        _write(GENERATED / f"{name}.md", "\n".join(text))


def _own_names(module: str) -> tuple[list[str] | None, list[tuple[str, str]]]:
    """The ``__all__`` names a module defines, and those it re-exports from another ppclust module
    (with their home). A re-exported class is documented where it is defined: two entries of one
    class would both claim its canonical name (Sphinx: "duplicate object description").
    ``(None, [])`` for a module without ``__all__``."""
    import importlib

    mod = importlib.import_module(module)
    if not hasattr(mod, "__all__"):
        return None, []
    own, again = [], []
    for name in mod.__all__:
        obj = getattr(mod, name)
        home = getattr(obj, "__module__", None) if callable(obj) else None
        if isinstance(home, str) and home.startswith("ppclust") and home != module:
            again.append((name, f"{home}.{getattr(obj, '__qualname__', name)}"))
        else:
            own.append(name)
    return own, again


def methods_table() -> None:
    """The table of methods, from the one registry the CLI and the demo read (``ppclust._registry``)."""
    from ppclust._registry import METHODS

    rows = [
        "| `ppclust fit --method` | estimator | side information | inference | paper |",
        "|---|---|---|---|---|",
    ]
    for m in METHODS.values():
        cls = m.estimator.split(":")[1]
        rows.append(f"| `{m.name}` | {{class}}`~ppclust.{cls}` | {m.side_info} | {m.inference} | {m.paper} |")
    _write(GENERATED / "_include" / "methods-table.md", "\n".join(rows) + "\n")


def cli_help() -> None:
    """``ppclust --help`` and every sub-command's ``--help``, as argparse prints them."""
    import os

    os.environ["COLUMNS"] = "100"  # the same line width wherever the docs are built
    from ppclust.cli import build_parser

    parser = build_parser()
    text = ["```text", "$ ppclust --help", parser.format_help().rstrip(), "```", ""]
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, sp in sub.choices.items():
        text += [
            f"### `ppclust {name}`",
            "",
            "```text",
            f"$ ppclust {name} --help",
            sp.format_help().rstrip(),
            "```",
            "",
        ]
    _write(GENERATED / "_include" / "cli-help.md", "\n".join(text))


def decisions() -> None:
    """The toctree of the decision records ``docs/decisions/`` (written by hand, one per default), for
    the landing page; empty while there are none. ``decisions/README.md`` is their index."""
    folder = DOCS / "decisions"
    records = sorted(p.stem for p in folder.glob("[0-9]*.md")) if folder.is_dir() else []
    text = []
    if (folder / "README.md").exists():
        text += [
            "```{toctree}",
            ":maxdepth: 1",
            ":caption: Decision records",
            "",
            "decisions/README",
            "```",
            "",
        ]
    if records:
        text += ["```{toctree}", ":hidden:", "", *[f"decisions/{r}" for r in records], "```", ""]
    _write(GENERATED / "_include" / "toc-decisions.md", "\n".join(text))


def main() -> None:
    gallery()
    claims()
    benchmarks()
    solver_pages()
    methods_table()
    cli_help()
    decisions()


if __name__ == "__main__":
    main()
