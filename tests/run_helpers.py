"""Fixtures for the run_pretraining tests: synthetic TFRecord shards, a vocabulary, a CLI runner."""

import os
import subprocess
import sys

import numpy as np
import tensorflow as tf

from electra_tf.data import pretraining_records as records

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
VOCAB_SIZE = 120
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_vocab(path, tokens=None):
    tokens = tokens if tokens is not None else SPECIALS + [f"w{i}" for i in range(VOCAB_SIZE - 5)]
    with open(path, "w") as f:
        f.write("".join(t + "\n" for t in tokens))
    return str(path)


def write_records(directory, num_files=3, per_file=64, seq_len=32, seed=0):
    """Shards of [CLS] topic-structured tokens [SEP] (ids 2 and 3), padded to seq_len."""
    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(seed)
    for shard in range(num_files):
        path = os.path.join(directory, f"pretrain_data.tfrecord-{shard}-of-{num_files}")
        with tf.io.TFRecordWriter(path) as writer:
            for _ in range(per_file):
                length = int(rng.integers(8, seq_len + 1))
                topic = int(rng.integers(0, 10))
                ids = np.zeros(seq_len, np.int64)
                ids[:length] = 5 + 11 * topic + rng.integers(0, 11, size=length)
                ids[0], ids[length - 1] = 2, 3
                mask = (np.arange(seq_len) < length).astype(np.int64)
                writer.write(records.serialize_example(ids, np.zeros(seq_len), seq_len,
                                                       input_mask=mask))
    return os.path.join(directory, "*.tfrecord*")


def cli_args(data, vocab, model_dir, steps, *extra):
    """run_pretraining flags for a tiny, fast run on the fixture data."""
    return ["--config", "pretrain/demo", "--data", data, "--vocab_file", vocab,
            "--model_dir", str(model_dir), "--train_steps", str(steps),
            "--override", "run.max_seq_length=32", "--override", "run.train_batch_size=8",
            "--override", "run.log_every_steps=5", "--override", "run.save_checkpoints_steps=10",
            "--override", "model.max_position_embeddings=64", *extra]


def run_cli(args, timeout=300, env=None, module="electra_tf.run_pretraining"):
    """Runs `python -m module args`; returns the CompletedProcess (text mode)."""
    full_env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", **(env or {}))
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, env=full_env)
