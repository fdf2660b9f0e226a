"""No tracked file but ``CHANGELOG.md`` narrates development history (round, session or issue numbers).

History belongs in the changelog and in git; a results file says what was measured, on which machine and
commit, and a docstring or comment states the contract. The patterns match narration ("session 12",
"round 3", "issue 20", "issue #20", "issue-20") and leave references to other projects' trackers alone
("numba/numba#4807", "dpmmpython#3": facts about peers), command-line flags (``--rounds 3``) and
"round to 3 decimals". ``tests/test_architecture.py`` applies the same patterns to ``ppclust/``.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PATTERNS = {
    "session N": re.compile(r"\bsessions?(?:\s+|-)\d+", re.I),
    "round N": re.compile(r"(?<![-\w])rounds?(?:\s+|-)\d+\b(?!\s*(?:decimal|digit|significant|place))", re.I),
    "issue N": re.compile(r"\bissues?(?:\s+|-)#?\d+", re.I),
}

# the changelog narrates by design; these two files hold the patterns and their examples
# tests/durations.json: generated, test node ids (parameter values such as "session 12" are data)
EXEMPT = {"CHANGELOG.md", "tests/durations.json", "tests/test_architecture.py", "tests/test_history.py"}

# files whose owners have yet to rewrite their narration (each entry must still have a hit: the list only
# shrinks)
PENDING: set[str] = set()


def history_hits(text: str) -> list[tuple[int, str, str]]:
    """(line number, pattern name, matched text) of every narration hit in ``text``."""
    return [
        (i, name, m.group(0))
        for i, line in enumerate(text.splitlines(), 1)
        for name, pattern in PATTERNS.items()
        for m in pattern.finditer(line)
    ]


def _tracked_text_files() -> dict[str, str]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    files = {}
    for name in filter(None, out.split("\0")):
        path = ROOT / name
        if not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:  # binary (figures)
            continue
        files[name] = data.decode("utf-8", errors="replace")
    return files


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("the default since session 8", "session N"),
        ("sessions 5-7 ran 100 sweeps", "session N"),
        ("merged session-11 code", "session N"),
        ("tuned in round 3", "round N"),
        ("the two failures that opened issue 20", "issue N"),
        ("see issue #36", "issue N"),
        ("Goals (issue-19)", "issue N"),
    ],
)
def test_patterns_catch_narration(text, kind):
    assert [h[1] for h in history_hits(text)] == [kind]


@pytest.mark.parametrize(
    "text",
    [
        "numba/numba#4807 keeps the cache stale",
        "dpmmpython#3",
        "python -m benchmarks.ab_tvclust_sweep --rounds 3",
        "`--int32-rounds 2`",
        "round to 3 decimals",
        "a session of a notebook kernel",
        "issues a warning when 2 links conflict",
    ],
)
def test_patterns_leave_facts_alone(text):
    assert history_hits(text) == []


def test_no_tracked_file_narrates_history():
    files = _tracked_text_files()
    bad = {
        name: hits[:5]
        for name, text in files.items()
        if name not in EXEMPT | PENDING and (hits := history_hits(text))
    }
    assert not bad, f"development history outside CHANGELOG.md (file: line, pattern, text): {bad}"


def test_pending_entries_still_narrate():
    files = _tracked_text_files()
    fixed = sorted(p for p in PENDING if p not in files or not history_hits(files[p]))
    assert not fixed, f"remove from PENDING (no history left): {fixed}"
