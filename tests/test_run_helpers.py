"""The test helpers' own behaviour where a failing test depends on it to say what went wrong."""

import os
import signal

import keras
import pytest

from tests.run_helpers import needs_a_process, run_cli, run_in_process

CRASH = "import numpy, os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"


def test_a_crashed_command_keeps_its_traceback_and_loses_the_extension_module_list(tmp_path):
    (tmp_path / "crash_on_purpose.py").write_text(CRASH)
    crashed = run_cli([], module="crash_on_purpose",
                      env={"PYTHONPATH": str(tmp_path), "PYTHONFAULTHANDLER": "1"})
    assert crashed.returncode == -signal.SIGSEGV
    assert "Fatal Python error: Segmentation fault" in crashed.stderr
    assert "crash_on_purpose.py\", line 2 in <module>" in crashed.stderr
    assert "Extension modules" not in crashed.stderr and "(total: " not in crashed.stderr


CHANGES_THE_PROCESS = """\
import os
import keras
from absl import flags

flags.DEFINE_string("name", "x", "what to print")


def main(argv):
    os.environ["RUN_HELPERS_PROBE"] = flags.FLAGS.name
    os.environ.pop("RUN_HELPERS_KEPT")
    keras.config.set_dtype_policy("mixed_bfloat16")
    os.chdir("/")
    print("hello", flags.FLAGS.name)
"""


def test_what_an_in_process_run_changes_in_the_process_is_put_back(tmp_path, monkeypatch):
    """The docs test runs dozens of commands in one process: the environment, the working
    directory and the dtype policy one of them sets must not reach the next."""
    (tmp_path / "changes_the_process.py").write_text(CHANGES_THE_PROCESS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("RUN_HELPERS_KEPT", "1")
    before = (dict(os.environ), os.getcwd(), keras.config.dtype_policy().name)
    result = run_in_process(["--name", "y"], module="changes_the_process", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hello y\n"
    assert (dict(os.environ), os.getcwd(), keras.config.dtype_policy().name) == before


def test_flags_that_change_the_process_for_good_need_a_process_of_their_own():
    assert needs_a_process(["--cpu_devices=2", "--model_dir", "x", "--help"]) == [
        "--cpu_devices=2", "--help"]
    assert needs_a_process(["--model_dir", "x"]) == []
    with pytest.raises(ValueError, match="run_cli"):
        run_in_process(["--deterministic"])
