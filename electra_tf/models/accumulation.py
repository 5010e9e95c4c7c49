"""Gradient accumulation: one optimizer update from k micro-batches of one batch, in sequence.

`accumulated_gradients(loss_fn, batch, k, variables)` cuts every tensor of `batch` (a nest of
[B, ...] tensors, B this replica's part of the update's batch) into k consecutive slices of
B / k rows, runs `loss_fn(micro_batch)` on each, and returns the sum of the gradients of its
loss and the sums of its other outputs. The slices run one after the other in a
`tf.while_loop`, so only one micro-batch's activations are alive at a time: that is the memory
saving. The update equals the whole batch's when `loss_fn`'s losses add up to the whole
batch's loss, i.e. when every mean divides by a denominator counted over the whole batch (and
all replicas) before the loop; the models' `train_step`s do that. With k = 1 it is one
`GradientTape` over the batch, the plain training step.
"""

from __future__ import annotations

import tensorflow as tf


def split_micro_batches(batch, num_micro_batches: int):
    """The nest `batch` of [B, ...] tensors with each tensor as [k, B / k, ...]; ValueError
    when k does not divide a static B."""
    def split(value):
        value = tf.convert_to_tensor(value)
        rows = value.shape[0]
        if rows is not None and rows % num_micro_batches:
            raise ValueError(f"gradient accumulation over {num_micro_batches} micro-batches "
                             f"needs a per-replica batch that it divides; got {rows} rows")
        return tf.reshape(value, tf.concat([[num_micro_batches, -1], tf.shape(value)[1:]], 0))
    return tf.nest.map_structure(split, batch)


def accumulated_gradients(loss_fn, batch, num_micro_batches: int, variables):
    """(gradients, sums): the gradients of `loss_fn`'s loss with respect to `variables` and
    its other outputs (a nest of scalars), each summed over the k micro-batches of `batch`.

    `loss_fn(micro_batch) -> (loss, nest of scalars)`. A variable without a gradient on the
    first micro-batch gets None, as `tape.gradient` gives it."""
    if num_micro_batches == 1:
        with tf.GradientTape() as tape:
            loss, sums = loss_fn(batch)
        return tape.gradient(loss, variables), sums
    micro_batches = split_micro_batches(batch, num_micro_batches)

    def run(index):
        piece = tf.nest.map_structure(lambda value: value[index], micro_batches)
        with tf.GradientTape() as tape:
            loss, sums = loss_fn(piece)
        return tape.gradient(loss, variables), sums

    first, sums = run(0)
    present = [i for i, gradient in enumerate(first) if gradient is not None]
    dense = [tf.convert_to_tensor(first[i]) for i in present]  # IndexedSlices -> dense

    def body(index, totals, sums):
        gradients, more = run(index)
        totals = [total + tf.convert_to_tensor(gradients[i]) for total, i in zip(totals, present)]
        return index + 1, totals, tf.nest.map_structure(tf.add, sums, more)

    _, dense, sums = tf.while_loop(
        lambda index, *_: index < num_micro_batches, body, (tf.constant(1), dense, sums),
        parallel_iterations=1)
    gradients = [None] * len(first)
    for i, total in zip(present, dense):
        gradients[i] = total
    return gradients, sums
