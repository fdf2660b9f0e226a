"""Write the README's "at a glance" block from the results files (no number is typed by hand).

Reads ``reproduce/results/benefit.md`` (the side-information benefit panel's goal table) and
``reproduce/results/CLAIMS.md`` (the claim ledger), ``benchmarks/results/hartigan.md`` (the Hartigan engine
against the authors' CEC-IB program), ``benchmarks/results/subcluster.md`` (the sub-cluster sampler's
throughput) and ``benchmarks/results/gpu_check.json`` (the GPU check, when one has run), and replaces the
lines between
``<!-- glance:start -->`` and ``<!-- glance:end -->`` in ``README.md``.

Usage::

    python benchmarks/readme_glance.py           # rewrite the README block
    python benchmarks/readme_glance.py --check   # exit 1 when the README block is stale
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"  # speed
REPRODUCE = ROOT / "reproduce" / "results"  # accuracy and the claim ledger
START, END = "<!-- glance:start -->", "<!-- glance:end -->"
SIDE = {
    "TVClust": "noisy links",
    "RDPMeans": "noisy links",
    "SMIC": "links",
    "SemiSupervisedGMM": "partial labels",
    "BayesianSemiSupervisedGMM": "partial labels",
    "CECIB": "partial labels",
    "C3L": "partial labels",
}


def _rows(text: str, header_start: str) -> list[list[str]]:
    """The body rows of the first Markdown table whose header line starts with ``header_start``."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(header_start):
            out = []
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                out.append([c.strip() for c in row.strip().strip("|").split("|")])
            return out
    raise ValueError(f"no table starting with {header_start!r}")


def accuracy_rows() -> list[str]:
    """Per method: mean NMI over the panel's data sets without and with the largest clean budget."""
    text = (REPRODUCE / "benefit.md").read_text()
    goals = text[text.index("## Goals") :]
    by_method: dict[str, list[tuple[str, float, float]]] = {}
    for r in _rows(goals, "| method | data | draws | NMI none"):
        by_method.setdefault(r[0], []).append((r[1], float(r[3]), float(r[4])))
    out = []
    for method, vals in by_method.items():
        none = statistics.fmean(v[1] for v in vals)
        best = statistics.fmean(v[2] for v in vals)
        out.append(f"| {method} | {SIDE.get(method, '')} | {none:.3f} | {best:.3f} | {len(vals)} |")
    return out


def speed_rows() -> list[str]:
    """The Hartigan engine's CPU-time ratio to the authors' program, the sub-cluster throughput, and
    :func:`gpu_rows`."""
    rows = _rows((RESULTS / "hartigan.md").read_text(), "| n | d | k_init | restarts | ppclust wall s")
    ratios = [float(r[10].rstrip("x")) for r in rows]
    dims = sorted({int(r[1]) for r in rows})
    sub = (RESULTS / "subcluster.md").read_text()
    block = sub[sub.index("<!-- subcluster-d2:start -->") : sub.index("<!-- subcluster-d2:end -->")]
    first = _rows(block, "| sampler | point-updates/s")[0]
    rate = float(first[1].replace(",", "")) / 1e6
    ratio = re.search(r"/ numba collapsed: ([\d.]+)x", block).group(1)
    n = re.search(r"n = ([\d,]+), d = (\d+)", block)
    return [
        f"| CEC-IB / C3L Hartigan engine, CPU time against the authors' Java program | "
        f"{min(ratios):.1f}x-{max(ratios):.1f}x faster | {len(rows)} sizes, d = {dims[0]} ... {dims[-1]} | "
        "`hartigan.md` |",
        f"| TVClust sub-cluster sampler | {rate:.1f} M point-updates/s, {ratio}x the collapsed sweep | "
        f"n = {n.group(1)}, d = {n.group(2)}, 2 cores | `subcluster.md` |",
        *gpu_rows(),
    ]


def gpu_rows() -> list[str]:
    """The GPU check's agreement count and sub-cluster throughput (none when no GPU check has run)."""
    path = RESULTS / "gpu_check.json"
    if not path.exists():
        return []
    res = json.loads(path.read_text())
    if res.get("reduced"):
        return []
    agree = [r for r in res["agreement"] if "ari" in r]
    same = sum(r["ari"] == 1.0 for r in agree)
    device = f"one GPU ({res.get('device_kind') or res['device']})"
    out = [
        "| every estimator and algorithm on a GPU (XLA) against the CPU | "
        f"{same} of {len(agree)} partitions identical (ARI 1) | {res['sizes']['agree_n']} points, same seed, "
        f"{device} | `gpu_check.md` |"
    ]
    for r in res["subcluster"]:
        if "point_sweeps_per_s" in r:
            out.append(
                f"| TVClust sub-cluster sampler on a GPU | {r['point_sweeps_per_s'] / 1e6:.1f} M "
                f"point-updates/s | n = {r['n']:,}, d = {r['d']}, {device} | `gpu_check.md` |"
            )
            break
    return out


def claims_line() -> str:
    text = (REPRODUCE / "CLAIMS.md").read_text()
    m = re.search(r"\*\*(\d+) claims: (\d+) reproduced or explained", text)
    return (
        f"Of the papers' {m.group(1)} measurable claims, {m.group(2)} are reproduced or explained with a "
        "script-written number (the claim ledger, `reproduce/results/CLAIMS.md`)."
    )


def block() -> str:
    lines = [
        START,
        "| method | side information | mean NMI without | mean NMI with the largest clean budget | "
        "data sets (200 points each) |",
        "|---|---|---|---|---|",
        *accuracy_rows(),
        "",
        "| speed | result | setting | results file |",
        "|---|---|---|---|",
        *speed_rows(),
        "",
        claims_line(),
        END,
    ]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when the README block is stale")
    args = ap.parse_args(argv)
    readme = ROOT / "README.md"
    text = readme.read_text()
    i, j = text.index(START), text.index(END) + len(END)
    new = text[:i] + block() + text[j:]
    if args.check:
        if new != text:
            print(
                "README.md's glance block is stale: run python benchmarks/readme_glance.py", file=sys.stderr
            )
            return 1
        return 0
    readme.write_text(new)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
