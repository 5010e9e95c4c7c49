"""The paired-exports benchmark: its requests, its alternating timing, and the command end to end
on two tiny exports."""

import json

import numpy as np
import pytest
import tensorflow as tf

from tests.run_helpers import run_in_process
from tests.test_export_xla import exporter_of
from tools.perf.serving_calls import requests, time_alternately


def test_requests_fill_ids_masks_and_segments():
    signature = tf.function(lambda input_ids, input_mask, segment_ids: {"x": input_ids},
                            input_signature=[tf.TensorSpec([None, None], tf.int32, name=name)
                                             for name in ("input_ids", "input_mask",
                                                          "segment_ids")]
                            ).get_concrete_function()
    inputs = requests(signature, batch=3, seq=5)
    assert {name: tensor.shape for name, tensor in inputs.items()} == {
        name: (3, 5) for name in ("input_ids", "input_mask", "segment_ids")}
    ids = inputs["input_ids"].numpy()
    assert inputs["input_ids"].dtype == tf.int32 and ids.min() >= 5 and ids.max() < 100
    assert (inputs["input_mask"].numpy() == 1).all() and (inputs["segment_ids"].numpy() == 0).all()


def test_each_call_is_timed_once_a_round_in_turns():
    order = []
    times_a, times_b = time_alternately(lambda: order.append("a"), lambda: order.append("b"), 4)
    assert len(times_a) == len(times_b) == 4
    assert order[:6] == ["a", "b"] * 3  # untimed warm-up
    assert order[6:] == ["a", "b", "b", "a", "a", "b", "b", "a"]


@pytest.mark.slow
def test_paired_exports_command_compares_two_exports(tmp_path):
    export = exporter_of("classifier")
    plain = export(str(tmp_path / "plain"), False)
    transposed = export(str(tmp_path / "transposed"), False, "float32", True)
    result = run_in_process(["--a", plain, "--b", transposed, "--batch", "3", "--seq", "8",
                             "--requests", "2"], module="tools.perf.paired_exports")
    assert result.returncode == 0, result.stderr[-2000:]
    record = json.loads([line for line in result.stdout.splitlines() if line.startswith("{")][-1])
    assert (record["a"], record["b"], record["batch"], record["seq"], record["requests"]) == (
        plain, transposed, 3, 8, 2)
    assert record["a_p50_ms"] > 0 and record["b_p50_ms"] > 0 and record["b_speed_vs_a"] > 0
    assert np.isclose(record["a_tokens_per_s"], 24000 / record["a_p50_ms"], rtol=0.02)
    # the same weights, the feed-forward kernel read transposed: float32 rounding apart
    assert 0 <= record["max_abs_difference"] < 1e-5
    assert "cpu" in record and "cpu_flags" in record
