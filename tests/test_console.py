"""The console: no TensorFlow start-up lines by default, back with -v 1; the showcase of
replaced tokens; progress ETAs. The demo's own console (no start-up lines, its showcase) is
checked on the README's demo run, in test_run_pretraining.py."""

import os
import re
import types

import numpy as np
import pytest

from electra_tf.console import requested_verbosity
from electra_tf.evaluation import replaced_tokens
from tests.run_helpers import (MARKED_REPLACEMENT, REPO, SPECIALS, VOCAB_SIZE, run_command,
                               start_up_lines, write_records)

# ---- the entry points' output ------------------------------------------------------------------

def test_every_command_sets_its_console_up():
    """Each module that ends in console.run(main) (a command) calls console.setup(__name__),
    which keeps TensorFlow's start-up and library notes out of its output."""
    commands, missing = [], []
    for directory, _, names in os.walk(os.path.join(REPO, "electra_tf")):
        for name in names:
            path = os.path.join(directory, name)
            source = open(path).read() if name.endswith(".py") else ""
            if "console.run(main)" in source:
                commands.append(path)
                if not re.search(r"^console\.setup\(__name__", source, re.MULTILINE):
                    missing.append(os.path.relpath(path, REPO))
    assert len(commands) >= 15 and missing == []

@pytest.mark.slow
def test_errors_still_show_at_default_verbosity(tmp_path):
    result = run_command("electra_tf.run_pretraining", "--data", tmp_path / "none" / "*.tfrecord",
                         "--model_dir", tmp_path / "run")
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1].startswith("error: no TFRecord files match")
    assert start_up_lines(result) == []


@pytest.mark.slow
def test_verbosity_1_brings_tensorflow_lines_back(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("The cat sat on the mat.\nA dog ran far.\n\nThe dog sat.\n" * 5)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(SPECIALS + ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "far", "."]) + "\n")
    result = run_command("electra_tf.build_pretraining_dataset", "--corpus", corpus,
                         "--vocab_file", vocab, "--output_dir", tmp_path / "out",
                         "--max_seq_length", 16, "--num_processes", 1, "--verbosity=1")
    assert result.returncode == 0, result.stderr[-3000:]
    assert start_up_lines(result)
    assert "examples" in result.stdout


def test_requested_verbosity_reads_absl_forms():
    assert requested_verbosity([]) is None
    assert requested_verbosity(["--verbosity=1"]) == 1
    assert requested_verbosity(["--verbosity", "2"]) == 2
    assert requested_verbosity(["-v", "1", "--data", "x"]) == 1
    assert requested_verbosity(["-v=-1"]) == -1
    assert requested_verbosity(["-v", "1", "--verbosity=0"]) == 0  # the last one, as absl
    assert requested_verbosity(["--", "-v", "1"]) is None
    assert requested_verbosity(["--verbosity=debug"]) is None  # absl refuses it itself


def test_library_notes_are_dropped_but_their_errors_and_our_lines_kept():
    import logging

    from electra_tf.console import _DropLibraryNotes

    def record(level, path):
        return logging.LogRecord("absl", level, path, 1, "message", None, None)

    tensorflow_file = "/usr/lib/python3.11/site-packages/tensorflow/python/saver.py"
    keep = _DropLibraryNotes().filter
    assert not keep(record(logging.INFO, tensorflow_file))
    assert not keep(record(logging.WARNING, tensorflow_file))
    assert keep(record(logging.ERROR, tensorflow_file))
    assert keep(record(logging.INFO, os.path.join(REPO, "electra_tf", "training", "callbacks.py")))
    assert keep(record(logging.INFO, "/x/site-packages/tensorflow_datasets/core/load.py"))


# ---- the showcase ------------------------------------------------------------------------------

VOCABULARY = SPECIALS + ["the", "cat", "sat", "on", "mat", "play", "##ing", "##ed", "dog"]


def _detections():
    #            [CLS] the cat sat on the mat [SEP] play ##ing [SEP] [PAD]
    original = [2, 5, 6, 7, 8, 5, 9, 3, 10, 11, 3, 0]
    corrupted = [2, 5, 13, 7, 8, 5, 9, 3, 10, 12, 3, 0]  # cat -> dog, ##ing -> ##ed
    probability = [0.1, 0.2, 0.97, 0.71, 0.1, 0.1, 0.3, 0.6, 0.2, 0.87, 0.4, 0.9]
    return replaced_tokens.Detections(
        original_ids=np.array([original]), corrupted_ids=np.array([corrupted]),
        replaced_probability=np.array([probability]),
        input_mask=np.array([[1] * 11 + [0]]))


def test_format_marks_replacements_and_false_alarms_and_joins_wordpieces():
    text = replaced_tokens.format_detections(_detections(), VOCABULARY)
    assert text.splitlines() == [
        "legend: [original→sample p] the generator's replacement, p the discriminator's "
        "probability of \"replaced\"; {token p} a false alarm (not replaced, p > 0.5)",
        "1. the [cat→dog 0.97] {sat 0.71} on the mat [SEP] play[##ing→##ed 0.87]",
        "replaced tokens: 2, mean p 0.92, 2 above 0.5; other tokens: 6, mean p 0.27, 1 above 0.5",
    ]


def test_format_wraps_between_words_and_cuts_long_examples():
    text = replaced_tokens.format_detections(_detections(), VOCABULARY, width=24,
                                             max_tokens=7, threshold=0.9)  # [CLS] ... mat
    assert text.splitlines()[1:] == [
        "1. the [cat→dog 0.97]",
        "   sat on the mat …",
        "replaced tokens: 1, mean p 0.97, 1 above 0.9; other tokens: 5, mean p 0.28, 0 above 0.9",
    ]


@pytest.mark.slow
def test_show_replaced_tokens_of_a_tiny_model_is_deterministic(tmp_path):
    import keras

    from electra_tf.config import ModelConfig, ObjectiveConfig
    from electra_tf.models import ElectraPretrainer

    keras.utils.set_random_seed(0)
    config = ModelConfig(vocab_size=VOCAB_SIZE, embedding_size=16, hidden_size=32, num_layers=1,
                         num_heads=2, intermediate_size=64, max_position_embeddings=32)
    model = ElectraPretrainer(config, ObjectiveConfig(pad_token_id=0, cls_token_id=2,
                                                      sep_token_id=3, mask_token_id=4))
    data = write_records(tmp_path / "records", num_files=1, per_file=8)
    batch = replaced_tokens.read_examples(data, model, num_examples=2, max_seq_length=32)
    vocabulary = SPECIALS + [f"w{i}" for i in range(VOCAB_SIZE - len(SPECIALS))]

    text = replaced_tokens.show_replaced_tokens(model, batch, vocabulary, num_examples=2)
    assert text == replaced_tokens.show_replaced_tokens(model, batch, vocabulary, num_examples=2)
    assert MARKED_REPLACEMENT.search(text)
    assert re.search(r"^1\. ", text, re.MULTILINE) and re.search(r"^2\. ", text, re.MULTILINE)
    assert not re.search(r"^3\. ", text, re.MULTILINE)
    with pytest.raises(ValueError, match="no replaced-token discriminator"):
        replaced_tokens.detect_replacements(types.SimpleNamespace(discriminator=None), batch)


# ---- progress ----------------------------------------------------------------------------------

def test_progress_eta_leaves_out_the_first_step(monkeypatch):
    from electra_tf.training import callbacks

    clock, lines = iter([0.0, 30.0, 39.0]), []
    monkeypatch.setattr(callbacks.time, "perf_counter", lambda: next(clock))
    monkeypatch.setattr(callbacks.logging, "info", lambda fmt, *args: lines.append(fmt % args))
    progress = callbacks.ProgressLogger(total_steps=100, initial_step=0, every=10,
                                        global_batch_size=8)
    progress.set_model(types.SimpleNamespace(optimizer=types.SimpleNamespace(learning_rate=0.1),
                                             reset_metrics=lambda: None))
    progress.on_train_begin()  # t=0
    progress.on_train_batch_end(0, {"loss": 1.0})  # step 1 ends at t=30: it traced and compiled
    progress.on_train_batch_end(9, {"loss": 1.0})  # step 10 at t=39: 1 s per step since then
    assert len(lines) == 1 and lines[0].startswith("step 10/100  loss 1.0000")
    assert lines[0].endswith("ETA 0:01:30")  # 90 steps left; from t=0 it would say 0:05:51
