"""Time to interrupt: SIGINT sent to a process while it fits, until its ``KeyboardInterrupt``.

For every estimator (and driver kind: the Gibbs sampler's compiled sweep with one and two chains, the
sub-cluster sampler, the variational fit, Hartigan and batch CEC-IB, C3L, CCIB's annealing, DP-means,
EM, SMIC), a child process (``tests/_interrupt_child.py``) fits a small copy first (the same compiled
programs), then a long fit on 3,000 points; 1.5 s into it the parent sends SIGINT and measures the
time until the child reports ``KeyboardInterrupt``, then whether the estimator was left unfitted and a
following fit worked. Goal: every answer within 1 s. Writes ``benchmarks/results/interrupt.md``.

Run: ``python -m benchmarks.bench_interrupt [name ...]`` (several minutes: each child compiles its
programs first).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from benchmarks._common import RESULTS, machine_info, md_table, write_section
from tests._interrupt_child import ESTIMATORS, interrupt_child


def main(names=None):
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names or ESTIMATORS:
            got = interrupt_child(name, Path(tmp) / f"{name}.stderr")
            answer = got["answer_s"]
            rows.append(
                [
                    name,
                    "no answer in 60 s" if answer is None else round(answer, 2),
                    got["fitted"] == "fitted []\n",
                    bool(got["usable"]),
                ]
            )
            print(rows[-1], flush=True)
    text = "\n\n".join(
        [
            "## Time to interrupt a fit (SIGINT 1.5 s into a long fit, 3,000 points)",
            machine_info(),
            md_table(["estimator", "seconds to KeyboardInterrupt", "left unfitted", "next fit works"], rows),
        ]
    )
    write_section(RESULTS / "interrupt.md", "interrupt", text)


if __name__ == "__main__":
    main(sys.argv[1:])
