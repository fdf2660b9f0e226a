"""Where evidence lives: ``benchmarks/`` (speed) and ``reproduce/`` (paper reproductions, the benefit panel,
the claim ledger) are tools run from a checkout; the library, its tests and its notebooks never import them,
no one-off ``study_*`` script stays in the tree (its conclusion is a decision record in ``docs/decisions/``),
and no generated cache is committed (no tracked JSON file over 300 KB)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
IMPORT = re.compile(r"^\s*(?:from|import)\s+(?:benchmarks|reproduce)\b", re.MULTILINE)


def _tracked() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [f for f in out.stdout.split("\0") if f and (ROOT / f).is_file()]


def _sources(name: str) -> str:
    text = (ROOT / name).read_text(encoding="utf-8")
    if name.endswith(".ipynb"):
        cells = json.loads(text)["cells"]
        return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return text


def test_import_pattern():
    assert IMPORT.search("from benchmarks import bench_benefit as bb")
    assert IMPORT.search("    from reproduce.rdpmeans import run")
    assert IMPORT.search("import reproduce.claims")
    assert not IMPORT.search("from ppclust import datasets  # see benchmarks/results")
    assert not IMPORT.search("from reproducer import x")


def test_library_tests_and_notebooks_do_not_import_evidence_scripts():
    bad = [
        f
        for f in _tracked()
        if f.startswith(("ppclust/", "tests/", "notebooks/"))
        and f.endswith((".py", ".ipynb"))
        and IMPORT.search(_sources(f))
    ]
    assert not bad, f"import from benchmarks/ or reproduce/ in: {bad}"


def test_no_study_scripts():
    assert not [f for f in _tracked() if Path(f).name.startswith("study_")]


def test_no_committed_json_over_300_kb():
    big = {f: (ROOT / f).stat().st_size for f in _tracked() if f.endswith(".json")}
    assert not {f: s for f, s in big.items() if s > 300_000}
