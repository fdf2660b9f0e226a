"""The tiers of the test suite.

* ``make test`` (CI) runs the **core** tier: every test not marked ``slow`` whose last recorded run took at
  most :data:`CORE_BUDGET_S` seconds (set-up, call and tear-down; :data:`DURATIONS`), and every test marked
  ``core`` whatever it costs: the mission's checks (each method's golden run, exact enumeration or replay, a
  notebook through a kernel per kind of user, the CLI in a subprocess). A test that has no recorded time yet
  runs in the core tier.
* ``make test-all`` adds the **extended** tier: the tests over the budget (further parametrisations, sizes,
  end-to-end runs of contracts the core tier checks once). ``make durations`` runs it and records every
  test's time into :data:`DURATIONS`.
* ``make reproduce`` runs the ``slow`` tier (paper reproductions, benchmarks' claims, the long
  parametrisations).

A parametrised check runs its first (canonical) values in the fast tiers and the others in the slow one:
each distinct covariance type, backend or size compiles programs of its own, and the fast tiers keep one
compiled configuration per check.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

#: Recorded seconds of each test (set-up + call + tear-down) by node id, written by ``make durations``.
DURATIONS = Path(__file__).resolve().parent / "durations.json"

#: A test recorded over this many seconds runs in ``make test-all`` only, unless it is marked ``core``.
CORE_BUDGET_S = 2.0


def recorded_durations() -> dict[str, float]:
    """The seconds :data:`DURATIONS` records for each test node id (empty when there is no file)."""
    try:
        return json.loads(DURATIONS.read_text())["seconds"]
    except (OSError, ValueError, KeyError):
        return {}


def mark_extended(items, durations: dict[str, float], budget: float = CORE_BUDGET_S) -> int:
    """Mark ``extended`` each collected item recorded over ``budget`` and marked neither ``core`` nor
    ``slow``; the doctests of a ``ppclust`` module count as one unit (their total), since the first of them
    compiles the programs the others use. Returns the number of items marked."""
    modules: dict[str, float] = {}  # a module's doctests share their compiled programs: one unit
    for nodeid, seconds in durations.items():
        if not nodeid.startswith("tests/"):
            module = nodeid.split("::")[0]
            modules[module] = modules.get(module, 0.0) + seconds
    marked = 0
    for item in items:
        if item.get_closest_marker("core") or item.get_closest_marker("slow"):
            continue
        seconds = durations.get(item.nodeid, 0.0)
        if not item.nodeid.startswith("tests/"):
            seconds = modules.get(item.nodeid.split("::")[0], seconds)
        if seconds > budget:
            item.add_marker(pytest.mark.extended)
            marked += 1
    return marked


def write_durations(seconds: dict[str, float], setups: dict[str, float], path: Path = DURATIONS) -> None:
    """Merge ``seconds`` (node id -> seconds of this run) into ``path``: the tests of this run get their new
    time, the others keep theirs.

    ``setups`` holds each test's set-up seconds. A set-up over the budget is charged to every test of the
    same file: a module or class fixture runs for the first test that needs it, and whichever test of the
    file comes first in the core tier would pay it there."""
    seconds = dict(seconds)
    for nodeid, setup in setups.items():
        if setup > CORE_BUDGET_S:
            module = nodeid.split("::")[0] + "::"
            for other in seconds:
                if other.startswith(module):
                    seconds[other] = max(seconds[other], setup)
    old = recorded_durations() if path == DURATIONS else {}
    old.update({k: round(v, 2) for k, v in seconds.items()})
    doc = {
        "about": "seconds per test (set-up + call + tear-down) of the last `make durations` run; "
        "tests/_tiers.py reads it to choose the core tier of `make test`",
        "seconds": dict(sorted(old.items())),
    }
    path.write_text(json.dumps(doc, indent=0) + "\n")


def fast_first(values, n_fast: int = 1, *, unpack: bool = False, core: bool = False) -> list:
    """``values`` for ``pytest.mark.parametrize``, the first ``n_fast`` in the fast tiers, the rest ``slow``.

    ``unpack=True`` when the parametrisation has several argument names (each value a tuple of them);
    ``core=True`` marks the first ``n_fast`` ``core`` (a mission check: ``make test`` runs it whatever it
    costs).
    """
    out = []
    for i, v in enumerate(values):
        mark = pytest.mark.slow if i >= n_fast else pytest.mark.core if core else None
        if mark is None:
            out.append(v)
        else:
            out.append(pytest.param(*v, marks=mark) if unpack else pytest.param(v, marks=mark))
    return out
