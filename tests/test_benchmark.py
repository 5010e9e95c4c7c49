"""The benchmark command runs end to end and prints one JSON line with its fields."""

import json
import subprocess
import sys

import pytest

from electra_tf.config import load_config
from electra_tf.training.flops import pretraining_step_flops


def test_flop_count_of_electra_small():
    model = load_config("model/small").model
    # Hand count, forward: discriminator 12 x (8*256^2 + 4*256*1024 + 4*128*256) + projection
    # 2*128*256 + head 2*256^2 + 2*256 per token; generator (width 64) 12 x (8*64^2 + 4*64*256
    # + 4*128*64) + 2*128*64 per token; MLM head 2*64*128 + 2*128*30522 per masked slot.
    disc = 12 * (8 * 256**2 + 4 * 256 * 1024 + 4 * 128 * 256) + 2 * 128 * 256 + 2 * 256**2 + 2 * 256
    gen = 12 * (8 * 64**2 + 4 * 64 * 256 + 4 * 128 * 64) + 2 * 128 * 64
    head = 2 * 64 * 128 + 2 * 128 * 30522
    expected = 3 * (32 * 128 * (disc + gen) + 32 * 19 * head)
    assert pretraining_step_flops(model, 32, 128, 19) == expected


def test_benchmark_prints_a_json_line():
    result = subprocess.run(
        [sys.executable, "-m", "electra_tf.benchmark", "--size", "tiny", "--batch", "4",
         "--seq", "16", "--steps", "2", "--warmup", "0"],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    line = [l for l in result.stdout.splitlines() if l.startswith("{")][-1]
    record = json.loads(line)
    assert {"impl", "size", "batch", "seq", "median_step_s", "tokens_per_s",
            "model_gflop_per_s"} <= set(record)
    assert record["batch"] == 4 and record["seq"] == 16 and record["tokens_per_s"] > 0


@pytest.mark.parametrize("task", ["classify", "infer"])
def test_finetuning_benchmarks_print_a_json_line(task):
    result = subprocess.run(
        [sys.executable, "-m", "electra_tf.benchmark", "--task", task, "--size", "tiny",
         "--batch", "2", "--seq", "16", "--steps", "3", "--warmup", "0"],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    record = json.loads([l for l in result.stdout.splitlines() if l.startswith("{")][-1])
    assert record["task"] == task and record["sequences_per_s"] > 0
    if task == "infer":
        assert record["latency_p99_ms"] >= record["latency_p50_ms"] > 0
