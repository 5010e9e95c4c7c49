"""The pretraining record format: one definition for every writer and reader.

A build directory holds shards `pretrain_data.tfrecord-<i>-of-<n>` of tf.train.Examples with
three int64 features of length max_seq_length (the original's contract): `input_ids` (padded
with [PAD]), `input_mask` (1 on real tokens) and `segment_ids` (0 for [CLS] A [SEP] and the
padding, 1 for B [SEP]); and `metadata.json`, written last, so a directory with metadata holds a
finished build. The metadata records what a run must agree with: the sequence length, the
vocabulary (size, sha256, the ids of [PAD] [UNK] [CLS] [SEP] [MASK]) and the tokenization.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Sequence

SHARD_PREFIX = "pretrain_data.tfrecord"
METADATA_FILE = "metadata.json"
FEATURES = ("input_ids", "input_mask", "segment_ids")
FORMAT = "electra_tf pretraining examples v1"


def shard_name(index: int, num_shards: int) -> str:
    return f"{SHARD_PREFIX}-{index}-of-{num_shards}"


def serialize_example(input_ids: Sequence[int], segment_ids: Sequence[int], max_seq_length: int,
                      pad_id: int = 0, input_mask: Sequence[int] | None = None) -> bytes:
    """A serialized tf.train.Example of the three features, padded to max_seq_length.

    `input_mask` defaults to 1 for every given id; byte-identical for the same inputs.
    """
    import tensorflow as tf

    padding = max_seq_length - len(input_ids)
    if padding < 0:
        raise ValueError(f"example of length {len(input_ids)} exceeds {max_seq_length}")
    if input_mask is None:
        input_mask = [1] * len(input_ids)

    def feature(values, pad):
        return tf.train.Feature(int64_list=tf.train.Int64List(
            value=[int(v) for v in values] + [pad] * padding))

    return tf.train.Example(features=tf.train.Features(feature={
        "input_ids": feature(input_ids, pad_id),
        "input_mask": feature(input_mask, 0),
        "segment_ids": feature(segment_ids, 0),
    })).SerializeToString(deterministic=True)  # map order: sorted keys, byte-identical


def feature_spec(max_seq_length: int) -> dict:
    """`tf.io.parse_example` spec: the three int64 features of length max_seq_length."""
    import tensorflow as tf
    return {name: tf.io.FixedLenFeature([max_seq_length], tf.int64) for name in FEATURES}


def parse_batch(records, max_seq_length: int) -> dict:
    """Serialized examples [batch] -> dict of int32 [batch, max_seq_length]."""
    import tensorflow as tf
    parsed = tf.io.parse_example(records, feature_spec(max_seq_length))
    return {name: tf.cast(value, tf.int32) for name, value in parsed.items()}


def read_examples(paths: Sequence[str], max_seq_length: int):
    """A tf.data.Dataset of parsed examples (dicts of int64 [max_seq_length]), in file order."""
    import tensorflow as tf
    spec = feature_spec(max_seq_length)
    return tf.data.TFRecordDataset(list(paths)).map(lambda x: tf.io.parse_single_example(x, spec))


def vocab_sha256(path: str) -> str:
    import tensorflow as tf
    with tf.io.gfile.GFile(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def read_metadata(directory: str) -> dict | None:
    """The metadata of the build in `directory`, None when it has none."""
    import tensorflow as tf
    path = os.path.join(directory, METADATA_FILE)
    if not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path) as f:
        return json.load(f)


def write_metadata(directory: str, metadata: dict) -> None:
    """Writes metadata.json atomically (a reader never sees half of it)."""
    import tensorflow as tf
    path = os.path.join(directory, METADATA_FILE)
    with tf.io.gfile.GFile(path + ".incomplete", "w") as f:
        f.write(json.dumps({"format": FORMAT, **metadata}, indent=1) + "\n")
    tf.io.gfile.rename(path + ".incomplete", path, overwrite=True)
