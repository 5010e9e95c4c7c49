"""The test helpers' own behaviour where a failing test depends on it to say what went wrong."""

import signal

from tests.run_helpers import run_cli

CRASH = "import numpy, os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"


def test_a_crashed_command_keeps_its_traceback_and_loses_the_extension_module_list(tmp_path):
    (tmp_path / "crash_on_purpose.py").write_text(CRASH)
    crashed = run_cli([], module="crash_on_purpose",
                      env={"PYTHONPATH": str(tmp_path), "PYTHONFAULTHANDLER": "1"})
    assert crashed.returncode == -signal.SIGSEGV
    assert "Fatal Python error: Segmentation fault" in crashed.stderr
    assert "crash_on_purpose.py\", line 2 in <module>" in crashed.stderr
    assert "Extension modules" not in crashed.stderr and "(total: " not in crashed.stderr
