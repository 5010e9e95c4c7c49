"""The attention-products benchmark: one line per batched product, TensorFlow's rate and which
kernels ran."""

import json
import os
import subprocess
import sys

import pytest

from tests.run_helpers import REPO
from tools.perf.timing import gflop_per_s, median_seconds


def test_median_seconds_calls_once_untimed_then_takes_the_median():
    """With a scripted clock that each call advances by a known duration, the result is the
    median of the timed calls' durations: not their mean (5 here), and not a median that counts
    the far longer warm-up call (6.5)."""
    durations = iter([100.0, 2.0, 9.0, 4.0])
    now = [0.0]

    def call():
        now[0] += next(durations)

    assert median_seconds(call, repeats=3, clock=lambda: now[0]) == 4.0
    assert next(durations, None) is None


def test_median_seconds_and_gflop_per_s_run_on_the_real_clock():
    calls = []
    assert median_seconds(lambda: calls.append(1), repeats=3) >= 0
    assert len(calls) == 4
    assert 0 < gflop_per_s(1, lambda: None, repeats=3)  # 1 FLOP: four significant digits


@pytest.mark.slow
def test_command_prints_one_line_per_product():
    environ = {**os.environ, "TF_ENABLE_ONEDNN_OPTS": "0"}
    result = subprocess.run(
        [sys.executable, "-m", "tools.perf.attention_matmuls", "--batch", "2",
         "--seq", "64", "--heads", "2", "--head_size", "32", "--repeats", "2", "--chain", "2"],
        capture_output=True, text=True, timeout=300, cwd=REPO, check=True, env=environ)
    records = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [r["product"] for r in records] == [
        "scores Q K^T", "context P V", "probabilities' gradient dC V^T",
        "values' gradient P^T dC"]
    assert all(r["tf_gflop_per_s"] > 0 and r["seq"] == 64 and r["chain"] == 2 for r in records)
    assert all(r["onednn"] is False for r in records)  # the environment's choice, reported
