"""A batch that grows during pretraining (Cramming's ramp), in whole micro-batches.

`run.initial_train_batch_size` b0 and `run.batch_growth_steps` N: the first update takes b0
sequences, and the batch grows linearly, one micro-batch at a time (the micro-batch m is
`train_batch_size / gradient_accumulation_steps`), until it reaches `train_batch_size` at
update N; every later update takes `train_batch_size`. With k0 = b0 / m and K the accumulation
steps, update u accumulates

    k(u) = min(K, k0 + floor(u * (K - k0 + 1) / N))

micro-batches: K - k0 + 1 stages of equal length. The pipeline makes micro-batches as always
(one stream, one masking per micro-batch) and `group_micro_batches` joins each update's k(u) of
them into one batch of k(u) * m rows; the pretrainer's train step cuts it back into micro-batches
of m (`micro_batch_rows`), so an update costs k(u) micro-batches of compute and memory stays at
one micro-batch's activations. The learning-rate schedule counts updates, as without growth.

Resuming at update s skips `micro_batches_before(s)` micro-batches of the stream, so a resumed
run sees exactly the batches of an uninterrupted one.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import tensorflow as tf


@dataclasses.dataclass(frozen=True)
class BatchGrowth:
    """The growth schedule in micro-batches: `initial` micro-batches at update 0, `final`
    (the accumulation steps) from update `steps` on."""

    micro_batch: int  # sequences per micro-batch (global, over all replicas)
    initial: int  # k0
    final: int  # K
    steps: int  # N

    @classmethod
    def from_run(cls, run) -> "BatchGrowth | None":
        """The schedule of a validated `RunConfig`, or None when its batch does not grow."""
        if not run.batch_growth_steps:
            return None
        micro_batch = run.train_batch_size // run.gradient_accumulation_steps
        return cls(micro_batch, run.initial_train_batch_size // micro_batch,
                   run.gradient_accumulation_steps, run.batch_growth_steps)

    def micro_batches_at(self, update: int) -> int:
        """k(update): the micro-batches of update `update` (counted from 0)."""
        return int(self.schedule[update]) if update < self.steps else self.final

    def micro_batches_before(self, update: int) -> int:
        """The micro-batches the updates 0 .. update - 1 consumed."""
        grown = min(update, self.steps)
        return int(self._consumed[grown]) + max(0, update - self.steps) * self.final

    def sequences_before(self, update: int) -> int:
        """The sequences the updates 0 .. update - 1 trained on."""
        return self.micro_batches_before(update) * self.micro_batch

    def batch_at(self, update: int) -> int:
        """The global batch of update `update`."""
        return self.micro_batches_at(update) * self.micro_batch

    @functools.cached_property
    def schedule(self) -> np.ndarray:
        """k(u) for u in 0 .. steps - 1."""
        updates = np.arange(self.steps, dtype=np.int64)
        return np.minimum(self.final,
                          self.initial + updates * (self.final - self.initial + 1) // self.steps)

    @functools.cached_property
    def _consumed(self) -> np.ndarray:
        """[steps + 1]: the micro-batches before each update of the growth, and after it."""
        return np.concatenate([[0], np.cumsum(self.schedule)])


def group_micro_batches(micro_batches: tf.data.Dataset, growth: BatchGrowth, start: int,
                        replicas_per_pipeline: int = 1) -> tf.data.Dataset:
    """The stream of one input pipeline's micro-batches (each a dict of [m_r, ...] tensors,
    m_r the per-replica micro-batch), from update `start` on, as one element per replica and
    update: k(u) consecutive micro-batches joined into [k(u) * m_r, ...].

    Under `distribute_datasets_from_function` a pipeline feeding R replicas hands its elements
    to them in turn, so update u takes R consecutive elements, each of k(u) micro-batches."""
    schedule = np.repeat(growth.schedule, replicas_per_pipeline)  # k per element in growth
    first_element = start * replicas_per_pipeline
    sizes = schedule[first_element:]
    # Micro-batch i (counted from `start`) belongs to element searchsorted(bounds, i, "right") - 1
    # while the batch grows, and to one of the full-size elements after that.
    bounds = tf.constant(np.concatenate([[0], np.cumsum(sizes)]), tf.int64)
    grown_elements = tf.constant(len(sizes), tf.int64)
    final = tf.constant(growth.final, tf.int64)

    def element_of(index, _):
        in_growth = tf.searchsorted(bounds, [index], side="right")[0] - 1
        after = grown_elements + (index - bounds[-1]) // final
        return tf.where(index < bounds[-1], tf.cast(in_growth, tf.int64), after)

    sizes_then_final = tf.constant(np.append(sizes, growth.final), tf.int64)

    def size_of(element):
        return tf.gather(sizes_then_final, tf.minimum(element, grown_elements))

    def join(element, window):
        joined = window.map(lambda _, batch: batch).batch(size_of(element))
        return joined.map(lambda batch: tf.nest.map_structure(
            lambda value: tf.reshape(value, [-1, *value.shape[2:]]), batch))

    indexed = tf.data.Dataset.zip(tf.data.Dataset.range(tf.int64.max), micro_batches)
    return indexed.group_by_window(element_of, join, window_size_func=size_of)
