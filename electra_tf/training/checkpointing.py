"""Checkpoints of a pretraining run: weights by Keras path, optimizer state, batches consumed."""

from __future__ import annotations

import os

import tensorflow as tf
from absl import logging

from electra_tf import run_directory
from electra_tf.errors import CheckpointError  # raised here; callers import it from here too
from electra_tf.errors import disk_full_error, is_disk_full

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
        """The checkpoint the run stands on: the one restored, until a newer one is saved."""
        return self.manager.latest_checkpoint if self.restored is None else self.restored

    restored: str | None = None

    def restore_latest(self) -> int:
        """Restores the newest checkpoint that reads (if any); returns the global batches it
        had consumed.

        A newest checkpoint whose files cannot be read (torn by a full disk or a killed copy)
        is passed over for the one before it, with one warning naming both; nothing is
        deleted. CheckpointError when none reads (naming each and why), or when one reads
        but does not fit the model (that is not a torn file: no older one is tried)."""
        candidates = list(reversed(self.manager.checkpoints))  # newest first
        if not candidates:
            return 0
        self.model.optimizer.build(self.model.trainable_variables)
        unreadable = []
        for path in candidates:
            try:
                self.checkpoint.restore(path).assert_existing_objects_matched()
            except (ValueError, AssertionError, IndexError, tf.errors.OpError) as e:
                why = unreadable_because(path)
                if why is None:  # the files read: another model's checkpoint, not a torn one
                    raise CheckpointError(f"{path} does not fit this model: {first_line(e)}") \
                        from None
                unreadable.append((path, why))
                continue
            if unreadable:
                logging.warning("%s cannot be read (%s); resuming from %s, the newest checkpoint "
                                "that reads", ", ".join(p for p, _ in unreadable),
                                unreadable[0][1], path)
            self.restored = path
            return int(self.batches_seen.numpy())
        raise CheckpointError(
            "no checkpoint in " + os.path.dirname(candidates[0]) + " can be read: "
            + "; ".join(f"{os.path.basename(p)}: {why}" for p, why in unreadable)
            + ". Nothing was deleted: restore the files, or start over in another --model_dir")

    def save(self, batches_seen: int) -> str:
        """Writes checkpoint `ckpt-<batches_seen>`; it becomes the newest (in the directory's
        `checkpoint` state file, replaced whole) only once its files are complete.

        DiskFullError when the disk fills: this save's partial files are removed, and the
        newest complete checkpoint stays the one a rerun resumes from."""
        self.batches_seen.assign(batches_seen)
        kept = self.latest
        try:
            path = self.manager.save(checkpoint_number=batches_seen)
        except (tf.errors.OpError, OSError) as e:
            if not is_disk_full(e):
                raise
            prefix = os.path.join(self.manager.directory,
                                  f"{run_directory.CHECKPOINT_NAME}-{batches_seen}")
            _remove_unpublished(prefix, self.manager.checkpoints)
            raise disk_full_error(
                f"checkpoint {prefix}", self.manager.directory,
                f"removed its partial files. The last complete checkpoint is "
                f"{kept or 'none (nothing was saved yet)'}: free some space and run again "
                "to resume from it") from None
        self.restored = None
        return path


def _remove_unpublished(prefix: str, published) -> None:
    """Removes the files of a save of `prefix` that failed (its index, data shards and
    TensorFlow's `<prefix>_temp` staging directory), unless `prefix` is a published checkpoint."""
    if prefix in published:
        return
    for path in tf.io.gfile.glob(prefix + ".*") + tf.io.gfile.glob(prefix + "_temp*"):
        if tf.io.gfile.isdir(path):
            tf.io.gfile.rmtree(path)
        else:
            tf.io.gfile.remove(path)


def unreadable_because(path: str) -> str | None:
    """Why a checkpoint's files cannot be read whole (None: they can): its index opened and
    every tensor read. Torn files (cut short by a full disk or a killed copy) fail here: "not
    an sstable", "Read less bytes than requested", a missing shard."""
    try:
        reader = tf.train.load_checkpoint(path)
        for name in reader.get_variable_to_shape_map():
            reader.get_tensor(name)
    except (tf.errors.OpError, IndexError, ValueError, OSError) as e:
        return first_line(e)
    return None


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
