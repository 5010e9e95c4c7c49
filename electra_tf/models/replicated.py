"""What every ELECTRA Keras model needs under a tf.distribute strategy."""

import keras
import tensorflow as tf


def cross_replica_sum(value):
    """Sums `value` over the replicas of the current strategy (identity with one replica)."""
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return value
    return context.all_reduce(tf.distribute.ReduceOp.SUM, value)


class ReplicatedModel(keras.Model):
    """A model that creates its variables in `__init__` and trains with dict batches.

    `gradient_accumulation_steps` (k, default 1): each training step's batch runs as k
    micro-batches of batch / k (`accumulation.py`) and makes one optimizer update, equal to
    the update of the whole batch; set it before `fit` (`run.gradient_accumulation_steps`,
    `finetune.gradient_accumulation_steps`).

    `micro_batch_rows` (m, default None): when set, k is not fixed but read from each batch,
    rows / m (a batch that grows during pretraining, `pretraining_data/batch_growth.py`).

    `parallel_chains` (c, default 1): each micro-batch runs as c slices, independent chains of
    ops side by side in one step (`accumulation.py`), the same update; on a CPU, with
    TensorFlow's intra-op threads set to cores / c before it starts (`--cpu_chains`,
    `electra_tf.training.distribution.use_cpu_chains`), a faster one. Set it before `fit`."""

    gradient_accumulation_steps = 1
    micro_batch_rows = None
    parallel_chains = 1

    def micro_batches_of(self, batch_rows):
        """k for a batch of `batch_rows` rows (a scalar tensor): the fixed
        `gradient_accumulation_steps`, or rows / `micro_batch_rows` when that is set."""
        if self.micro_batch_rows is None:
            return self.gradient_accumulation_steps
        return batch_rows // self.micro_batch_rows

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        # Keras pulls a batch and averages it across replicas to trace a build, which fails on
        # dict batches under MultiWorkerMirroredStrategy; these models are built in __init__, so
        # only the optimizer is left to build.
        if self.optimizer is not None and not self.optimizer.built:
            with self.distribute_strategy.scope():
                self.optimizer.build(self.trainable_variables)

    def logged(self, results):
        """Step results as Keras logs them: Keras averages logged values over axis 0 across
        workers under MultiWorkerMirroredStrategy, so give them one there."""
        if isinstance(self.distribute_strategy, tf.distribute.MultiWorkerMirroredStrategy):
            return {name: tf.reshape(value, [1]) for name, value in results.items()}
        return results
