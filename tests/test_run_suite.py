"""``tests/run_suite.py`` (make test's runner): a crashed worker, and only that, earns one more run."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("run_suite", Path(__file__).with_name("run_suite.py"))
run_suite = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_suite)

REPORT = "worker 'gw0' crashed while running 'tests/test_demo.py::test_demo'"
CRASH = (
    f"{REPORT}\n"
    "FAILED tests/test_demo.py::test_demo - worker 'gw0' crashed while running 'tests/test_demo.py::..."
)


def test_only_crashes_earn_a_second_run():
    assert run_suite.only_crashes(f"...\n{CRASH}\n1 failed, 900 passed")
    # a real failure beside the crash is final
    assert not run_suite.only_crashes(f"{CRASH}\nFAILED tests/test_x.py::test_y - assert 0\n")
    assert not run_suite.only_crashes(f"{CRASH}\nERROR tests/test_x.py::test_y - ValueError\n")
    assert not run_suite.only_crashes("900 passed\n")  # nothing failed: nothing to repeat
    # a test whose own message quotes a crash is still a failure of that test
    assert not run_suite.only_crashes("FAILED tests/test_x.py::test_y - AssertionError: worker crashed\n")


def test_a_crash_whose_summary_line_is_truncated_still_earns_a_second_run():
    # what CI printed (80 columns): the summary line cut before "crashed"; the FAILURES section names the test
    out = (
        "[gw1] node down: Not properly terminated\n"
        "worker 'gw1' crashed while running 'tests/test_demo.py::test_quick_demo_runs_every_method'\n"
        "FAILED tests/test_demo.py::test_quick_demo_runs_every_method - worker 'gw1' c...\n"
        "1 failed, 1037 passed, 9 skipped, 25 xfailed"
    )
    assert run_suite.only_crashes(out)
    # a second, real failure in another test is final
    assert not run_suite.only_crashes(out + "\nFAILED tests/test_x.py::test_y - assert 0\n")
