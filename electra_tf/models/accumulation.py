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

`chains` (c) cuts each micro-batch again, into c slices whose losses are summed under one tape:
c independent chains of ops, forward and backward, joined only where their gradients are
added, which TensorFlow's executor runs side by side on its inter-op threads. That is for CPUs:
with one intra-op thread per chain (TensorFlow's intra-op threads set to cores / c) every op
runs on one core without a thread pool's synchronization, and ELECTRA-Small's training steps
ran 1.11-1.16x as fast on two cores (docs/performance.md, "Two chains on two cores").
"""

from __future__ import annotations

import tensorflow as tf


def split_micro_batches(batch, num_micro_batches: int, parts: str = "micro-batches"):
    """The nest `batch` of [B, ...] tensors with each tensor as [k, B / k, ...]; ValueError
    when k does not divide a static B (naming the k `parts`)."""
    def split(value):
        value = tf.convert_to_tensor(value)
        rows = value.shape[0]
        if rows is not None and isinstance(num_micro_batches, int) and rows % num_micro_batches:
            raise ValueError(f"{num_micro_batches} {parts} need a per-replica batch (or "
                             f"micro-batch) that {num_micro_batches} divides; got {rows} rows")
        return tf.reshape(value, tf.concat([[num_micro_batches, -1], tf.shape(value)[1:]], 0))
    return tf.nest.map_structure(split, batch)


def accumulated_gradients(loss_fn, batch, num_micro_batches: int, variables, chains: int = 1):
    """(gradients, sums): the gradients of `loss_fn`'s loss with respect to `variables` and
    its other outputs (a nest of scalars), each summed over the k micro-batches of `batch`,
    each micro-batch run as `chains` slices side by side. k is an int, or a scalar tensor
    when it varies from batch to batch (a growing batch).

    `loss_fn(micro_batch) -> (loss, nest of scalars)`. A variable without a gradient on the
    first micro-batch gets None, as `tape.gradient` gives it."""
    if isinstance(num_micro_batches, int) and num_micro_batches == 1:
        with tf.GradientTape() as tape:
            loss, sums = _chained(loss_fn, batch, chains)
        return tape.gradient(loss, variables), sums
    micro_batches = split_micro_batches(batch, num_micro_batches)

    def run(index):
        piece = tf.nest.map_structure(lambda value: value[index], micro_batches)
        with tf.GradientTape() as tape:
            loss, sums = _chained(loss_fn, piece, chains)
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


def _chained(loss_fn, batch, chains):
    """`loss_fn`'s (loss, sums) over `batch`, computed as the sums of its values on `chains`
    consecutive slices of the batch (each its own chain of ops); ValueError when `chains`
    does not divide a static batch."""
    if chains == 1:
        return loss_fn(batch)
    pieces = split_micro_batches(batch, chains, "parallel chains")
    results = [loss_fn(tf.nest.map_structure(lambda value: value[index], pieces))
               for index in range(chains)]
    return (tf.add_n([loss for loss, _ in results]),
            tf.nest.map_structure(lambda *values: tf.add_n(list(values)),
                                  *[sums for _, sums in results]))
