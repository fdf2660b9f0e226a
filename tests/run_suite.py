"""``make test``'s pytest run, once more when only a worker process crashed.

pytest-xdist (3.8) hangs when a crashed worker is replaced under ``--dist loadfile`` and the file it died
in has one test left (pytest-dev/pytest-xdist#1323 and #1327: the replacement waits for a second item that
never comes), so one crash of a worker process (a fatal signal in a native library, not a failed
assertion) turned a CI run into a 90-minute timeout with no summary. Here workers are never replaced
(``--max-worker-restart=0``): a crash ends the run at once, with the crashed test named and the dying
worker's stack printed (faulthandler). When every failure of the run is such a crash, the whole suite
runs once more in fresh processes and its result is the result, with a banner saying so; any real
failure (an assertion, an error) is final. (The crashes seen so far had one cause, since fixed: a
worker's compiled XLA programs passed the kernel's limit on memory mappings; see the
``_release_compiled_programs`` fixture in ``tests/conftest.py``. The retry stays as a net.)
Usage: ``python tests/run_suite.py <pytest arguments>``.
"""

from __future__ import annotations

import re
import subprocess
import sys

_CRASH = re.compile(r"worker '?\w+'? crashed while running '?([^'\s]+)'?")
_FAILURE = re.compile(r"^(FAILED|ERROR) (\S+)")


def only_crashes(output: str) -> bool:
    """Whether the run's summary lists failures and every one of them is a crashed worker.

    The short summary truncates each line to the terminal's width (80 columns in CI, whose output is not
    a terminal), so a long test id leaves ``FAILED <id> - worker 'gw1' c...``: a failed test counts as a
    crash when the report's own line ``worker 'gw1' crashed while running '<id>'`` (printed in full in the
    FAILURES section) names its id."""
    crashed = set(_CRASH.findall(output))
    failed = [m.group(2) for line in output.splitlines() if (m := _FAILURE.match(line))]
    return bool(failed) and all(test in crashed for test in failed)


def run(args: list[str]) -> tuple[int, str]:
    """pytest with ``args`` (workers never replaced), its output streamed and returned."""
    cmd = [sys.executable, "-m", "pytest", "--max-worker-restart=0", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        lines.append(line)
    return proc.wait(), "".join(lines)


def main(args: list[str]) -> int:
    rc, out = run(args)
    if rc != 0 and only_crashes(out):
        crashed = [line for line in out.splitlines() if _FAILURE.match(line)]
        print(
            "\n"
            + "=" * 100
            + "\nA worker process crashed (no test failed):\n  "
            + "\n  ".join(crashed)
            + "\nThe suite runs once more in fresh processes; its result is the result.\n"
            + "=" * 100,
            flush=True,
        )
        rc, _ = run(args)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
