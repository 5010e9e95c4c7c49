"""The benchmark commands run end to end and print their JSON lines."""

import json
import subprocess
import sys

import pytest

from electra_tf.config import load_config
from electra_tf.training.flops import pretraining_step_flops
from tests.run_helpers import run_in_process


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


def _json_lines(module, *args, own_process=True):
    """The JSON lines a benchmark command prints (it must succeed): run as `python -m`, or its
    main in this process."""
    if own_process:
        result = subprocess.run([sys.executable, "-m", module, *args], capture_output=True,
                                text=True, timeout=300)
    else:
        result = run_in_process(args, module=module)
    assert result.returncode == 0, result.stderr[-2000:]
    return [json.loads(l) for l in result.stdout.splitlines() if l.startswith("{")]


@pytest.mark.slow
def test_benchmark_prints_a_json_line():
    record = _json_lines("electra_tf.benchmark", "--size", "tiny", "--batch", "4", "--seq", "16",
                         "--steps", "2", "--warmup", "0")[-1]
    assert {"impl", "size", "batch", "seq", "median_step_s", "tokens_per_s",
            "model_gflop_per_s"} <= set(record)
    assert record["batch"] == 4 and record["seq"] == 16 and record["tokens_per_s"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("task,seq,steps", [("classify", 16, 3), ("infer", 16, 3), ("qa", 32, 2)])
def test_finetuning_benchmarks_print_a_json_line(task, seq, steps):
    record = _json_lines("electra_tf.benchmark", "--task", task, "--size", "tiny", "--batch", "2",
                         "--seq", str(seq), "--steps", str(steps), "--warmup", "0",
                         own_process=False)[-1]
    assert record["task"] == task and record["seq"] == seq and record["sequences_per_s"] > 0
    assert record["model_gflop_per_s"] > 0
    if task == "infer":
        assert record["latency_p99_ms"] >= record["latency_p50_ms"] > 0


@pytest.mark.slow
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


@pytest.mark.slow
def test_data_benchmark_prints_its_json_lines(tmp_path):
    """Vocabulary learning (ours and `tokenizers`' trainer, twice each), then the build,
    pipeline and tokenizer measures on one copy of the embedded corpus."""
    from electra_tf.data.vocab_learning import learn_vocabulary
    from tests.data.test_vocab_learning import random_word_lines

    (tmp_path / "corpus.txt").write_text(
        "".join(line + "\n\n" for line in random_word_lines(300)), encoding="utf-8")
    other_vocab = tmp_path / "other_vocab.txt"
    learn_vocabulary(random_word_lines(300, seed=1), 60, str(other_vocab))
    records = _json_lines("electra_tf.benchmark_data", "--vocab_corpus",
                          str(tmp_path / "corpus.txt"), "--vocab_size", "150",
                          "--learn_repeats", "2", "--compare_vocab_file", str(other_vocab),
                          "--copies", "1", "--num_processes", "1")
    by_measure = {}
    for record in records:
        by_measure.setdefault(record["measure"], []).append(record)
    (corpus,) = by_measure["vocab_corpus"]
    assert corpus["documents"] == 270 and corpus["held_out_documents"] == 30
    ours, hf = by_measure["learn_vocabulary"]
    assert ours["impl"].startswith("electra_tf") and hf["impl"].startswith("hf tokenizers")
    assert ours["identical_files"] and ours["size"] == hf["size"] == 150
    for record in (ours, hf):
        assert len(record["all_seconds"]) == 2 and record["seconds"] > 0
        assert 1 < record["held_out_tokens_per_word"] < 8
    (other,) = by_measure["held_out_tokens_per_word"]
    assert other["size"] == 60 and other["tokens_per_word"] > ours["held_out_tokens_per_word"]
    assert [r["processes"] for r in by_measure["build_pretraining_data"]] == [1]
    assert by_measure["input_pipeline"][0]["batches_per_s"] > 0
    assert [r["impl"].split()[0] for r in by_measure["tokenize"]] == ["electra_tf", "hf", "hf"]
