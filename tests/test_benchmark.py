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


def _json_lines(module, *args):
    """The JSON lines a benchmark command prints (it must succeed)."""
    result = subprocess.run([sys.executable, "-m", module, *args], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return [json.loads(l) for l in result.stdout.splitlines() if l.startswith("{")]


def test_benchmark_prints_a_json_line():
    record = _json_lines("electra_tf.benchmark", "--size", "tiny", "--batch", "4", "--seq", "16",
                         "--steps", "2", "--warmup", "0")[-1]
    assert {"impl", "size", "batch", "seq", "median_step_s", "tokens_per_s",
            "model_gflop_per_s"} <= set(record)
    assert record["batch"] == 4 and record["seq"] == 16 and record["tokens_per_s"] > 0


@pytest.mark.parametrize("task,seq,steps", [("classify", 16, 3), ("infer", 16, 3), ("qa", 32, 2)])
def test_finetuning_benchmarks_print_a_json_line(task, seq, steps):
    record = _json_lines("electra_tf.benchmark", "--task", task, "--size", "tiny", "--batch", "2",
                         "--seq", str(seq), "--steps", str(steps), "--warmup", "0")[-1]
    assert record["task"] == task and record["seq"] == seq and record["sequences_per_s"] > 0
    assert record["model_gflop_per_s"] > 0
    if task == "infer":
        assert record["latency_p99_ms"] >= record["latency_p50_ms"] > 0


def test_squad_pipeline_benchmark_prints_its_json_lines():
    # 300 questions: two featurization chunks, so the 2-process build really uses a pool.
    records = _json_lines("electra_tf.benchmark_squad", "--size", "tiny", "--num_examples", "300",
                          "--predict_examples", "12", "--max_seq_length", "256", "--batch", "4",
                          "--num_workers", "2")
    by_measure = {}
    for record in records:
        by_measure.setdefault(record["measure"], []).append(record)
    assert by_measure["examples"][0]["examples"] == 300
    assert by_measure["examples"][0]["long_paragraphs"] > 0
    featurize = by_measure["featurize"] + by_measure["write_training_records"]
    assert [r["processes"] for r in featurize] == [1, 1, 2]
    assert len({r["windows"] for r in featurize}) == 1  # the same windows however built
    for record in featurize:
        assert record["windows"] > record["examples"] == 300 and record["examples_per_s"] > 0
    (predict,) = by_measure["predict"]
    assert predict["examples"] == 12 and predict["features"] >= 12
    assert predict["features_per_s"] > 0 and predict["model_features_per_s"] > 0
