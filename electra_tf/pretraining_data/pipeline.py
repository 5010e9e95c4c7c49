"""The pretraining input pipeline: TFRecord shards -> masked, batched examples with static shapes.

files (shuffled each epoch) -> 4 interleaved reads -> shuffle (at least 2 batches) -> [skip to
resume] -> batch (drop_remainder) -> parse -> dynamic masking -> prefetch. Each shard of a build
samples the whole corpus (see `build_plan`), so this order mixes like the original's.

The stream is a pure function of the seed: file order, read order, shuffle buffer and masking
(stateless, keyed by (seed, batch index)) are all seeded. Resuming at batch k therefore skips
the first k batches' raw records, unparsed, and continues exactly as an uninterrupted run would.
Under a strategy, `make_distributed_dataset` builds one pipeline per input pipeline (host), each
reading its own subset of files.
"""

from __future__ import annotations

import os

import tensorflow as tf

from electra_tf.pretraining_data import pretraining_records as records
from electra_tf.pretraining_data.batch_growth import BatchGrowth, group_micro_batches
from electra_tf.pretraining_data.masking import mask_tokens, max_predictions_per_seq
from electra_tf.errors import UserError

MIN_RECORD_BYTES = 16  # length, its CRC, an empty payload and its CRC
MIN_SHUFFLE_BATCHES = 2  # the shuffle buffer holds at least this many batches


class DataError(UserError):
    """Pretraining data that cannot be read as asked."""


def list_shards(patterns: str) -> list[str]:
    """Sorted files matching a comma-separated list of globs (local or gs://)."""
    files = []
    for pattern in [p.strip() for p in patterns.split(",") if p.strip()]:
        if tf.io.gfile.isdir(pattern):
            pattern = os.path.join(pattern, "*.tfrecord*")
        files += [f for f in tf.io.gfile.glob(pattern)
                  if not f.endswith((".json", ".incomplete")) and not tf.io.gfile.isdir(f)]
    if not files:
        raise DataError(f"no TFRecord files match {patterns!r}")
    return sorted(set(files))


def read_data_metadata(files: list[str]) -> dict[str, dict]:
    """The metadata.json of each directory holding some of `files` (directories without one
    are left out)."""
    found = {}
    for directory in sorted({os.path.dirname(f) for f in files}):
        metadata = records.read_metadata(directory)
        if metadata is not None:
            found[directory] = metadata
    return found


def check_sequence_length(metadata_by_directory: dict[str, dict], max_seq_length: int) -> None:
    """DataError unless every build was made with the run's max_seq_length."""
    for directory, metadata in metadata_by_directory.items():
        built = metadata.get("max_seq_length")
        if built is not None and built != max_seq_length:
            raise DataError(f"the TFRecords in {directory} were built with max_seq_length {built}, "
                            f"but this run uses {max_seq_length}: rebuild the data or set "
                            f"run.max_seq_length={built}")


def find_unreadable_shard(files: list[str], max_seq_length: int) -> str | None:
    """The first of `files` that is corrupt or holds records of another shape, described.

    For error messages: tf.data's errors do not name the file. Reads every record, so it is
    only called after a read failed.
    """
    spec = records.feature_spec(max_seq_length)
    for path in files:
        try:
            for record in tf.data.TFRecordDataset(path).batch(1024):
                tf.io.parse_example(record, spec)
        except tf.errors.DataLossError as e:
            return f"{path} is corrupt or truncated ({e.message.splitlines()[0]})"
        except tf.errors.InvalidArgumentError:
            return (f"{path} does not hold input_ids/input_mask/segment_ids of length "
                    f"{max_seq_length} (run.max_seq_length)")
    return None


def make_dataset(files: list[str], batch_size: int, max_seq_length: int, objective, *,
                 seed: int = 0, training: bool = True, skip_batches: int = 0,
                 shuffle_buffer: int = 1000, input_context: tf.distribute.InputContext | None = None,
                 is_continuation=None):
    """Masked batches for the pretrainer: dict of int32/float32 tensors with static shapes.

    Args:
      files: TFRecord shards (see `list_shards`).
      batch_size: examples per batch of this pipeline (per replica under a strategy).
      max_seq_length: length the records were built with.
      objective: an `ObjectiveConfig` (mask rate, special ids, seed for masking).
      seed: shuffling seed; the stream is a pure function of it.
      shuffle_buffer: records in the shuffle buffer; at least 2 batches are used.
      training: shuffle and repeat forever; otherwise read once in order.
      skip_batches: batches this pipeline already consumed (resume).
      input_context: from `distribute_datasets_from_function`: read this pipeline's files only.
      is_continuation: bool [vocab_size], the pieces that continue a word
        (`word_masking.continuation_pieces`); needed by objective.masking whole_word and span.
    """
    if objective.masking != "token" and is_continuation is None:
        raise DataError(f"objective.masking {objective.masking} needs the vocabulary, to find "
                        "the words: give the run a vocab.txt (--vocab_file, or data whose "
                        "metadata.json names one)")
    if input_context is not None and input_context.num_input_pipelines > 1:
        if len(files) < input_context.num_input_pipelines:
            raise DataError(f"{len(files)} shards cannot feed {input_context.num_input_pipelines} "
                            "input pipelines: build the data with more shards")
        files = files[input_context.input_pipeline_id::input_context.num_input_pipelines]
    if training and not any(tf.io.gfile.stat(f).length >= MIN_RECORD_BYTES for f in files):
        # Repeating files that hold no record would loop forever without yielding a batch.
        raise DataError(f"no records in {', '.join(files[:3])}{' ...' if len(files) > 3 else ''}: "
                        "the shards are empty")
    dataset = tf.data.Dataset.from_tensor_slices(files)
    if training:
        dataset = dataset.shuffle(len(files), seed=seed, reshuffle_each_iteration=True).repeat()
    dataset = dataset.interleave(
        tf.data.TFRecordDataset, cycle_length=min(4, len(files)), block_length=1,
        num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if training:
        dataset = dataset.shuffle(max(shuffle_buffer, MIN_SHUFFLE_BATCHES * batch_size),
                                  seed=seed + 1, reshuffle_each_iteration=True)
    if skip_batches:
        dataset = dataset.skip(skip_batches * batch_size)  # raw records: cheap, exact
    dataset = dataset.batch(batch_size, drop_remainder=True)
    dataset = dataset.map(lambda batch: records.parse_batch(batch, max_seq_length),
                          num_parallel_calls=tf.data.AUTOTUNE)

    num_predictions = max_predictions_per_seq(objective.mask_prob, max_seq_length)
    specials = [objective.cls_token_id, objective.sep_token_id, objective.mask_token_id]
    pipeline_id = input_context.input_pipeline_id if input_context is not None else 0

    def mask(batch_index, batch):
        seed_pair = tf.stack([tf.cast(objective.seed * 1000 + pipeline_id, tf.int64), batch_index])
        masked = mask_tokens(batch["input_ids"], batch["input_mask"], seed_pair,
                             mask_prob=objective.mask_prob, max_predictions=num_predictions,
                             mask_token_id=objective.mask_token_id, special_token_ids=specials,
                             mask_token_rate=objective.mask_token_rate,
                             masking=objective.masking, is_continuation=is_continuation,
                             span_p=objective.span_p, span_max_words=objective.span_max_words)
        return {**batch, **masked}

    indices = tf.data.Dataset.range(skip_batches, tf.int64.max)
    dataset = tf.data.Dataset.zip(indices, dataset).map(mask, num_parallel_calls=tf.data.AUTOTUNE)
    options = tf.data.Options()
    options.deterministic = True
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    return dataset.with_options(options).prefetch(tf.data.AUTOTUNE)


def make_held_out_dataset(files: list[str], batch_size: int, max_seq_length: int, objective,
                          num_batches: int, is_continuation=None):
    """The first `num_batches` masked batches of `files` in order, cached, with a known length.

    The known length matters: Keras 3.15's `evaluate` runs one step past the end of a dataset of
    unknown cardinality and averages a zero into every Mean metric (2 batches reported 2/3 of
    their mean loss).
    """
    dataset = make_dataset(files, batch_size, max_seq_length, objective, training=False,
                           is_continuation=is_continuation).take(num_batches).cache()
    count = sum(1 for _ in dataset)
    return dataset.apply(tf.data.experimental.assert_cardinality(count))


def make_distributed_dataset(strategy, files, global_batch_size, max_seq_length, objective, *,
                             seed=0, skip_global_batches=0, shuffle_buffer=1000,
                             is_continuation=None, growth: BatchGrowth | None = None):
    """One pipeline per input pipeline (host) via `distribute_datasets_from_function`.

    With `growth` (a growing batch; `global_batch_size` is then its micro-batch) each update's
    batch is k(u) micro-batches (`batch_growth.group_micro_batches`), and
    `skip_global_batches` counts updates."""
    if global_batch_size % strategy.num_replicas_in_sync:
        raise DataError(f"global batch {global_batch_size} is not divisible by "
                        f"{strategy.num_replicas_in_sync} replicas")
    skip = (growth.micro_batches_before(skip_global_batches) if growth is not None
            else skip_global_batches)

    def dataset_fn(context):
        per_replica = context.get_per_replica_batch_size(global_batch_size)
        replicas_per_pipeline = strategy.num_replicas_in_sync // context.num_input_pipelines
        dataset = make_dataset(files, per_replica, max_seq_length, objective, seed=seed,
                               skip_batches=skip * replicas_per_pipeline,
                               shuffle_buffer=shuffle_buffer, input_context=context,
                               is_continuation=is_continuation)
        if growth is None:
            return dataset
        return group_micro_batches(dataset, growth, skip_global_batches,
                                   replicas_per_pipeline).prefetch(tf.data.AUTOTUNE)

    return strategy.distribute_datasets_from_function(dataset_fn)
