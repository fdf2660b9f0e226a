"""Parameter-validation matrix: every estimator against a set of bad and edge values.

For each (estimator, parameter, value) the script records what ``fit`` does *before reading the data*
(``fit(None)``: a parameter error must come first): "rejected" with scikit-learn's message, or
"accepted" (the value is valid; the data error about ``X=None`` follows). No solver runs, so the
whole matrix takes seconds. Writes ``reproduce/results/params_matrix.md``.

    python -m reproduce.probe_params
"""

from __future__ import annotations

import math
import time
import warnings

from ppclust._registry import METHODS
from reproduce._common import md_table, write_result

VALUES = [0, -1, 2.5, math.nan, math.inf, -0.5, "sequentiel", None]


def probe():
    rows, counts = [], {"rejected": 0, "accepted": 0, "other": 0}
    for info in METHODS.values():
        cls = info.load()
        for param in sorted(cls._parameter_constraints):
            for value in VALUES:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        cls(**{param: value}).fit(None)
                        outcome, msg = "other", "fit(None) succeeded"
                    except Exception as err:  # noqa: BLE001  (the matrix records every outcome)
                        text = str(err)
                        if f"'{param}' parameter of {cls.__name__}" in text:
                            outcome, msg = "rejected", text
                        elif "`X`" in text:
                            outcome, msg = "accepted", "valid value (then: X=None rejected)"
                        else:
                            outcome, msg = "other", f"{type(err).__name__}: {text}"
                counts[outcome] += 1
                rows.append([cls.__name__, param, repr(value), outcome, msg.replace("|", "/")[:150]])
    return rows, counts


def main():
    t0 = time.perf_counter()
    rows, counts = probe()
    sec = time.perf_counter() - t0
    text = (
        "# Parameter validation matrix\n\n"
        f"`python -m reproduce.probe_params`: {len(rows)} probes (every constructor parameter of the "
        f"{len(METHODS)} estimators x values {', '.join(map(repr, VALUES))}) in {sec:.1f} s; "
        f"rejected before reading X: {counts['rejected']}, accepted as valid: {counts['accepted']}, "
        f"anything else: {counts['other']} (must be 0).\n\n"
        + md_table(["estimator", "parameter", "value", "outcome", "message"], rows)
        + "\n"
    )
    path = write_result("params_matrix.md", text)
    print(f"{counts} -> {path}")
    return counts


if __name__ == "__main__":
    main()
