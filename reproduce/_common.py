"""The benchmark helpers (``benchmarks._common``) writing into ``reproduce/results/``."""

from __future__ import annotations

import os
from pathlib import Path

from benchmarks import _common
from benchmarks._common import machine_info, md_table, timed_labels, write_section

__all__ = [
    "RESULTS",
    "machine_info",
    "md_table",
    "timed_labels",
    "write_json",
    "write_result",
    "write_section",
]

# `ppclust reproduce` points this elsewhere so that a quick run never overwrites the committed tables
RESULTS = Path(os.environ.get("PPCLUST_RESULTS_DIR") or Path(__file__).resolve().parent / "results")


def write_result(name: str, text: str) -> Path:
    """Write ``text`` to ``reproduce/results/<name>``."""
    return _common.write_result(name, text, folder=RESULTS)


def write_json(name: str, data: dict, script: str, merge: bool = False) -> Path:
    """``reproduce._common.write_json`` into ``reproduce/results/``."""
    return _common.write_json(name, data, script, merge=merge, folder=RESULTS)
