"""All set partitions of a few items, shared by the exact-enumeration tests (sampler and point estimate)."""

from __future__ import annotations

import numpy as np


def set_partitions(n: int, dtype=np.int32) -> np.ndarray:
    """All set partitions of range(n) as restricted-growth label vectors, shape (Bell(n), n)."""
    out = []

    def rec(prefix, m):
        if len(prefix) == n:
            out.append(list(prefix))
            return
        for k in range(m + 1):
            rec(prefix + [k], max(m, k + 1))

    rec([0], 1)
    return np.array(out, dtype=dtype)
