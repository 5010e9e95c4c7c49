"""Checkpoints of a pretraining run: weights by Keras path, optimizer state, batches consumed."""

from __future__ import annotations

import tensorflow as tf

from electra_tf.errors import CheckpointError  # raised here; callers import it from here too


def weights_by_path(model) -> dict:
    """The checkpoint's `weights` entry: every model weight keyed by its Keras path."""
    return {v.path: v for v in model.weights}


def save_weights(model, directory: str) -> str:
    """Writes only the weights (as `restore_weights` and `--init_checkpoint` read them)."""
    checkpoint = tf.train.Checkpoint(weights=weights_by_path(model))
    return tf.train.CheckpointManager(checkpoint, directory, max_to_keep=1).save(0)


class RunCheckpoint:
    """A `tf.train.CheckpointManager` over the model's weights, its optimizer and the input position.

    Variables are keyed by their Keras paths (`weights/discriminator.Slayer_0...`), which are
    stable and readable; they include the dropout seed generators' states, so a resumed run draws
    the same dropout masks as an uninterrupted one. `batches_seen` counts global batches consumed, so the input pipeline can resume
    exactly where it stopped (optimizer.iterations does not count steps that loss scaling skipped).
    """

    def __init__(self, model, directory: str, max_to_keep: int = 5):
        self.model = model
        self.batches_seen = tf.Variable(0, dtype=tf.int64, trainable=False, name="batches_seen")
        weight_ids = {id(v) for v in model.weights}
        # Seed-generator paths carry a process-wide counter; their order in the model is stable.
        seeds = [v for v in model.variables if id(v) not in weight_ids]
        self.checkpoint = tf.train.Checkpoint(
            weights=weights_by_path(model),
            dropout_seeds={str(i): v for i, v in enumerate(seeds)},
            optimizer=model.optimizer, batches_seen=self.batches_seen)
        self.manager = tf.train.CheckpointManager(self.checkpoint, directory, max_to_keep=max_to_keep)

    @property
    def latest(self) -> str | None:
        return self.manager.latest_checkpoint

    def restore_latest(self) -> int:
        """Restores the newest checkpoint (if any); returns the global batches it had consumed."""
        if self.latest is None:
            return 0
        self.model.optimizer.build(self.model.trainable_variables)
        try:
            self.checkpoint.restore(self.latest).assert_existing_objects_matched()
        except (ValueError, AssertionError, tf.errors.OpError) as e:
            raise CheckpointError(f"{self.latest} does not fit this model: {first_line(e)}") from None
        return int(self.batches_seen.numpy())

    def save(self, batches_seen: int) -> str:
        self.batches_seen.assign(batches_seen)
        return self.manager.save(checkpoint_number=batches_seen)


def restore_weights(model, path: str) -> None:
    """Loads only the model weights of a checkpoint (e.g. to continue from a converted one)."""
    if tf.io.gfile.isdir(path):
        path = tf.train.latest_checkpoint(path) or path
    checkpoint = tf.train.Checkpoint(weights=weights_by_path(model))
    try:
        checkpoint.restore(path).expect_partial().assert_existing_objects_matched()
    except (ValueError, AssertionError, tf.errors.OpError) as e:
        raise CheckpointError(f"cannot initialise from {path}: {first_line(e)}") from None


def first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
