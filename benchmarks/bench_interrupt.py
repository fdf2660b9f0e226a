"""Time to interrupt: SIGINT sent to a process while it fits, until its ``KeyboardInterrupt``.

For every estimator (and driver kind: the Gibbs sampler's compiled sweep with one and two chains, the
sub-cluster sampler, the variational fit, Hartigan and batch CEC-IB, C3L, CCIB's annealing, DP-means,
EM, SMIC), a child process (``tests/_interrupt_child.py``) fits a small copy first (the same compiled
programs), then a long fit on 3,000 points; 1.5 s into it the parent sends SIGINT and measures the
time until the child reports ``KeyboardInterrupt``, then whether the estimator was left unfitted and a
following fit worked. Goal: every answer within 1 s. Writes ``benchmarks/results/interrupt.md``: a row per
estimator with the load average, date and commit of its run; the rows of estimators not named in this
run are kept from the file.

Run: ``python -m benchmarks.bench_interrupt [name ...]`` (several minutes: each child compiles its
programs first).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._common import RESULTS, commit, machine_info, md_table, write_section
from tests._interrupt_child import ESTIMATORS, interrupt_child

HEADER = [
    "estimator",
    "seconds to KeyboardInterrupt",
    "left unfitted",
    "next fit works",
    "load, date, commit",
]


def earlier_rows(path: Path) -> dict:
    """The rows of the file's section by estimator (a row of the older four-column table gets the load,
    date and commit of the section's machine line)."""
    text = path.read_text() if path.exists() else ""
    m = re.search(r"load ([0-9.]+) \| ([0-9-]+ [0-9:]+) \| commit (\S+)", text)
    stamp = f"{m.group(1)}, {m.group(2)}, {m.group(3)}" if m else ""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] in ESTIMATORS:
            rows[cells[0]] = cells if len(cells) == len(HEADER) else cells[:4] + [stamp]
    return rows


def main(names=None):
    path = RESULTS / "interrupt.md"
    rows = earlier_rows(path)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names or ESTIMATORS:
            got = interrupt_child(name, Path(tmp) / f"{name}.stderr")
            answer = got["answer_s"]
            stamp = f"{os.getloadavg()[0]:.2f}, {time.strftime('%Y-%m-%d %H:%M')}, {commit()}"
            rows[name] = [
                name,
                "no answer in 60 s" if answer is None else round(answer, 2),
                got["fitted"] == "fitted []\n",
                bool(got["usable"]),
                stamp,
            ]
            print(rows[name], flush=True)
    text = "\n\n".join(
        [
            "## Time to interrupt a fit (SIGINT 1.5 s into a long fit, 3,000 points)",
            machine_info(),
            "Each row: the load average (1 min) when it was measured, its date and commit; the line above "
            "is the last run's.",
            md_table(HEADER, [rows[n] for n in ESTIMATORS if n in rows]),
        ]
    )
    write_section(path, "interrupt", text)


if __name__ == "__main__":
    main(sys.argv[1:])
