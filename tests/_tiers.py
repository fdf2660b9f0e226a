"""The two tiers of the test suite: ``make test`` runs everything not marked ``slow``; ``make reproduce``
runs the ``slow`` tier (paper reproductions, benchmarks' claims, and the long parametrisations).

A parametrised check runs its first (canonical) values in the fast tier and the others in the slow one:
each distinct covariance type, backend or size compiles programs of its own, and the fast tier keeps one
compiled configuration per check.
"""

from __future__ import annotations

import pytest


def fast_first(values, n_fast: int = 1, *, unpack: bool = False) -> list:
    """``values`` for ``pytest.mark.parametrize``, the first ``n_fast`` in the fast tier, the rest ``slow``.

    ``unpack=True`` when the parametrisation has several argument names (each value a tuple of them).
    """
    out = []
    for i, v in enumerate(values):
        if i < n_fast:
            out.append(v)
        else:
            out.append(
                pytest.param(*v, marks=pytest.mark.slow)
                if unpack
                else pytest.param(v, marks=pytest.mark.slow)
            )
    return out
