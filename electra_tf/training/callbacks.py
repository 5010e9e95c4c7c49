"""Keras callbacks of a pretraining run: checkpoints (with preemption and NaN guards), progress."""

from __future__ import annotations

import functools
import math
import os
import signal
import time
from typing import Callable

import keras
import numpy as np
import tensorflow as tf
from absl import logging


def _scalar(value) -> float:
    """A logged value as a float (multi-worker runs log 1-element arrays)."""
    return float(np.asarray(value).reshape(-1)[0])


def write_scalars(writer, step: int, values: dict) -> None:
    """TensorBoard scalars at `step`, flushed (a no-op without a writer)."""
    if writer is None:
        return
    with writer.as_default(step=step):
        for name, value in values.items():
            tf.summary.scalar(name, value)
    writer.flush()


def read_scalars(log_dir: str) -> dict[str, tuple[list[int], list[float]]]:
    """The scalars `write_scalars` wrote to one TensorBoard directory (not its subdirectories:
    a run's held-out ones are under `heldout/`), as {tag: (steps, values)} in step order. A step
    written again (a resumed run) keeps its newest value."""
    points: dict[str, dict[int, tuple[float, float]]] = {}  # tag -> step -> (wall time, value)
    for path in tf.io.gfile.glob(os.path.join(log_dir, "events.out.tfevents.*")):
        # tf.data, not tf.compat.v1.train.summary_iterator (deprecated: a warning on each call);
        # a record cut short by a writer still writing is left out, as TensorBoard does
        for record in tf.data.TFRecordDataset(path).ignore_errors():
            event = tf.compat.v1.Event.FromString(record.numpy())
            for value in event.summary.value:
                by_step = points.setdefault(value.tag, {})
                point = (event.wall_time, float(tf.make_ndarray(value.tensor)))
                by_step[event.step] = max(by_step.get(event.step, point), point)
    return {tag: (sorted(by_step), [by_step[step][1] for step in sorted(by_step)])
            for tag, by_step in points.items()}


class Preemption:
    """Remembers a SIGTERM from the moment it is created, so none is lost before training starts."""

    def __init__(self):
        self.requested = False
        self._previous = signal.signal(signal.SIGTERM, self._on_sigterm)

    def _on_sigterm(self, signum, frame):
        self.requested = True

    def restore(self):
        signal.signal(signal.SIGTERM, self._previous or signal.SIG_DFL)


def with_preemption(run):
    """Decorates a run function taking `preemption=None`: without one given, the call installs
    its own `Preemption` (SIGTERM saves and stops) and puts the caller's handler back after."""

    @functools.wraps(run)
    def wrapper(*args, preemption=None, **kwargs):
        if preemption is not None:
            return run(*args, preemption=preemption, **kwargs)
        preemption = Preemption()
        try:
            return run(*args, preemption=preemption, **kwargs)
        finally:
            preemption.restore()

    return wrapper


class CheckpointAndGuard(keras.callbacks.Callback):
    """Saves every `every` global batches, on SIGTERM, and at the end, unless the loss went bad.

    A non-finite loss stops training without saving, so the last checkpoint stays the last good
    one; SIGTERM (preemption) saves and stops cleanly. `status` tells the caller which happened.
    """

    def __init__(self, run_checkpoint, every: int, initial_batches: int, preemption: Preemption):
        super().__init__()
        self.run_checkpoint = run_checkpoint
        self.every = every
        self.batches = initial_batches
        self.preemption = preemption
        self.status = "running"
        self.last_saved = None

    def on_train_begin(self, logs=None):
        self._initial = self.batches

    def on_train_batch_end(self, batch, logs=None):
        self.batches = self._initial + batch + 1
        loss = _scalar((logs or {}).get("loss", 0.0))
        if not math.isfinite(loss):
            self.status = "non_finite"
            self.model.stop_training = True
            logging.error("loss became %s at step %d; stopping without saving (last good "
                          "checkpoint: %s)", loss, self.batches, self.run_checkpoint.latest)
            return
        if self.preemption.requested:
            self.status = "preempted"
            self._save()
            self.model.stop_training = True
        elif self.batches % self.every == 0:
            self._save()

    def on_train_end(self, logs=None):
        if self.status == "running":
            self.status = "finished"
            if self.last_saved != self.batches:
                self._save()

    def _save(self):
        path = self.run_checkpoint.save(self.batches)
        self.last_saved = self.batches
        logging.info("saved checkpoint %s", path)


# Pretraining metrics in log lines, in this order, when the objective reports them: a uniform
# generator has no MLM loss, the Table 5 MLM variants (objective.variant) report their own.
VARIANT_METRICS = ("replace_mlm_loss", "replace_mlm_accuracy", "all_tokens_mlm_loss",
                   "all_tokens_mlm_accuracy", "copy_gate_mean")
PRETRAINING_LINE_METRICS = ("loss", "mlm_loss", "mlm_accuracy", "disc_loss", "disc_auc",
                            *VARIANT_METRICS)


class ProgressLogger(keras.callbacks.Callback):
    """Every `every` steps: a log line (losses, accuracies, AUC, LR, sequences/s, ETA) and
    TensorBoard scalars at the true global step. Metrics are averages since the last line.

    The ETA is the time per step since the first step ended (that step also traces and
    compiles the train function, often longer than dozens of steps), times the steps left.
    `global_batch_size`: the sequences of a step, or for a batch that grows, the function
    step -> the sequences trained on before it (`BatchGrowth.sequences_before`).
    """

    def __init__(self, total_steps: int, initial_step: int, every: int,
                 global_batch_size: int | Callable[[int], int],
                 log_dir: str | None = None, metric_names: tuple[str, ...] | None = None):
        super().__init__()
        self.metric_names = metric_names  # None: the pretraining line (losses, accuracies, AUC)
        self.total_steps = total_steps
        self.step = initial_step
        self.initial_step = initial_step
        self.every = every
        self.global_batch_size = global_batch_size
        self.writer = tf.summary.create_file_writer(log_dir) if log_dir else None
        self.last_values = {}

    def _sequences(self, steps: int) -> int:
        """The sequences of the `steps` steps up to self.step."""
        if callable(self.global_batch_size):
            return (self.global_batch_size(self.step)
                    - self.global_batch_size(self.step - steps))
        return steps * self.global_batch_size

    def on_train_begin(self, logs=None):
        self._start = self._last = time.perf_counter()
        self._last_step = self.step
        self._first_end = None  # (time, step) when the first call of the train function ended

    def on_train_batch_end(self, batch, logs=None):
        self.step = self.initial_step + batch + 1
        if self._first_end is None:
            self._first_end = (time.perf_counter(), self.step)
        if self.step % self.every and self.step != self.total_steps:
            return
        now = time.perf_counter()
        values = {k: _scalar(v) for k, v in (logs or {}).items()}
        values["learning_rate"] = _scalar(self.model.optimizer.learning_rate)
        steps = self.step - self._last_step
        values["sequences_per_second"] = self._sequences(steps) / max(now - self._last, 1e-9)
        eta = int(self._seconds_per_step(now) * (self.total_steps - self.step))
        names = self.metric_names
        if names is None:  # the pretraining line: what this objective reports, in a fixed order
            names = [name for name in PRETRAINING_LINE_METRICS if name in values]
        logging.info("step %d/%d  %s  lr %.2e  seq/s %.1f  ETA %d:%02d:%02d", self.step,
                     self.total_steps, "  ".join(f"{name} {values.get(name, math.nan):.4f}"
                                                 for name in names),
                     values["learning_rate"], values["sequences_per_second"],
                     eta // 3600, eta // 60 % 60, eta % 60)
        write_scalars(self.writer, self.step, values)
        self.last_values = values
        self._last, self._last_step = now, self.step
        self.model.reset_metrics()

    def _seconds_per_step(self, now: float) -> float:
        first_time, first_step = self._first_end
        if self.step > first_step:
            return (now - first_time) / (self.step - first_step)
        return (now - self._start) / max(self.step - self.initial_step, 1)


class HeldOutEvaluation(keras.callbacks.Callback):
    """Every `every` steps (0: only at the end) and at the last step: the model's metrics on a
    fixed held-out dataset, as a log line and TensorBoard scalars under `log_dir`.

    Held-out discriminator AUC is the number to watch in pretraining: the training AUC mixes
    many steps of a moving generator, and is measured on data the model has seen.
    """

    def __init__(self, dataset, total_steps: int, initial_step: int, every: int,
                 log_dir: str | None = None):
        super().__init__()
        self.dataset = dataset
        self.total_steps = total_steps
        self.initial_step = initial_step
        self.every = every
        self.writer = tf.summary.create_file_writer(log_dir) if log_dir else None
        self.history = []  # (step, metrics) of every evaluation

    def on_train_batch_end(self, batch, logs=None):
        step = self.initial_step + batch + 1
        if step != self.total_steps and not (self.every and step % self.every == 0):
            return
        values = self.model.evaluate(self.dataset, verbose=0, return_dict=True)
        values = {name: _scalar(value) for name, value in values.items()}
        self.model.reset_metrics()  # the training averages start afresh after an evaluation
        self.history.append((step, values))
        logging.info("held-out at step %d: %s", step, "  ".join(
            f"{name} {values[name]:.4f}"
            for name in ("disc_auc", "disc_loss", "disc_recall", "mlm_loss", "mlm_accuracy",
                         *VARIANT_METRICS)
            if name in values))
        write_scalars(self.writer, step, values)
