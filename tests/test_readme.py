"""The README as a newcomer meets it: short, and its numbers are the results files' numbers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_readme_is_short():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 150


def test_readme_glance_block_matches_the_results_files():
    """``benchmarks/readme_glance.py --check`` rewrites the block in memory and fails when it differs."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "readme_glance.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr


def test_readme_links_exist():
    text = (ROOT / "README.md").read_text()
    for target in (
        "LICENSE",
        "CONTRIBUTING.md",
        "CHANGELOG.md",
        "ARCHITECTURE.md",
        "docs/decisions/",
        "notebooks/",
    ):
        assert f"]({target})" in text, target
        assert (ROOT / target).exists(), target
