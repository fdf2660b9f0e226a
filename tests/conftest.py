"""Shared pytest setup: JAX persistent compilation cache, the ../shared reference folder."""

from __future__ import annotations

import os
from pathlib import Path

import jax
import pytest

_CACHE = Path(__file__).resolve().parent.parent / ".jax_cache"
jax.config.update("jax_compilation_cache_dir", str(_CACHE))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)

SHARED = Path(os.environ.get("PPCLUST_SHARED", Path(__file__).resolve().parent.parent.parent / "shared"))


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """Path to ../shared (golden reference outputs); skips with a reason when it is absent."""
    if not (SHARED / "reference").is_dir():
        pytest.skip(f"golden reference folder {SHARED / 'reference'} not found (only CI has ../shared)")
    return SHARED
