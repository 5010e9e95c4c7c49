"""The soak script (tools/soak.py): a pretraining run killed at random moments, one kill while
a checkpoint is written, ends with every variable equal to an uninterrupted run's. It replaces
the suite's single-SIGKILL resume test: the same check, with more kills."""

import subprocess
import sys

import pytest

from tests.run_helpers import REPO


@pytest.mark.slow
def test_a_run_killed_twice_ends_identical_to_one_never_killed(tmp_path):
    # seed 4: the first kill comes after step 10 (its draws: step 10 of 5..35, 0.3 of a line's
    # interval), leaving checkpoints to come for the second kill to land in
    result = subprocess.run([sys.executable, "tools/soak.py", "--kills", "2", "--train_steps", "40",
                             "--seed", "4", "--work_dir", str(tmp_path / "soak")],
                            cwd=REPO, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0].startswith("uninterrupted run: 40 steps in ")
    assert lines[1].startswith("kill 1/2: killed in training (after step ") and lines[2].startswith(
        "kill 2/2: killed while a checkpoint was written (after step "), lines
    assert lines[-1] == ("identical: max abs difference 0 over every variable of the final "
                         "checkpoints")


def test_the_difference_covers_every_variable_and_names_the_largest():
    import numpy as np

    sys.path.insert(0, REPO)
    from tools.soak import max_difference

    expected = {"a": np.zeros(3, np.float32), "b": np.array([1, 2], np.int64)}
    assert max_difference(expected, dict(expected))[0] == 0.0
    assert max_difference(expected, {"a": np.zeros(3), "b": np.array([1, 5])}) == (3.0, "b")
    assert max_difference(expected, {"a": np.zeros(3)})[0] == float("inf")
