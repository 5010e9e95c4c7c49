"""The test helpers' own behaviour where a failing test depends on it to say what went wrong."""

import signal
import subprocess
import sys

from tests.run_helpers import without_extension_module_list

CRASH = "import numpy, os, signal; os.kill(os.getpid(), signal.SIGSEGV)"


def test_a_crash_report_keeps_its_traceback_and_loses_the_extension_module_list():
    crashed = subprocess.run([sys.executable, "-X", "faulthandler", "-c", CRASH],
                             capture_output=True, text=True, timeout=60)
    assert crashed.returncode == -signal.SIGSEGV
    assert "Extension modules: numpy" in crashed.stderr

    report = without_extension_module_list(crashed.stderr)
    assert "Extension modules" not in report and "(total: " not in report
    assert "Fatal Python error: Segmentation fault" in report
    assert 'File "<string>", line 1 in <module>' in report
    assert len(report) < len(crashed.stderr) - len("Extension modules: numpy")
