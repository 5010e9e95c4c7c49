"""The training loop every run shares, pretraining and each fine-tuning trial alike.

    seed -> build and compile the model under the strategy -> resume from the newest checkpoint
    (or initialise the weights) -> fit the remaining steps with the checkpoint-and-guard
    callback (periodic checkpoints, SIGTERM saves and stops, a non-finite loss stops without
    saving), progress lines with TensorBoard scalars, and the run's own evaluations

What differs between runs is a parameter: the model, the optimizer, the data, the
initialisation and the extra callbacks. What happens after the loop (errors, exports,
reports) is the caller's; `LoopResult.status` says how the loop ended.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import keras
from absl import logging

from electra_tf.training import callbacks, checkpointing


@dataclasses.dataclass
class LoopResult:
    model: keras.Model
    checkpoint: checkpointing.RunCheckpoint  # `.latest`: the newest checkpoint saved
    start: int  # the step this call resumed from (0: a fresh run)
    step: int  # the step it stopped at
    status: str  # "finished", "preempted" (SIGTERM, saved) or "non_finite" (not saved)
    progress: callbacks.ProgressLogger  # `.last_values`: the last logged metrics


def run_training(*, strategy, seed: int, build_model: Callable[[], keras.Model],
                 make_optimizer: Callable[[], keras.optimizers.Optimizer], jit_compile: bool,
                 checkpoint_dir: str, keep_checkpoint_max: int, total_steps: int,
                 save_checkpoints_steps: int, log_every_steps: int,
                 global_batch_size: int | Callable[[int], int],
                 tensorboard_dir: str, preemption: callbacks.Preemption,
                 make_dataset: Callable[[int], object], describe: Callable[[int], str],
                 initialize: Callable[[keras.Model], None] | None = None,
                 make_callbacks: Callable[[keras.Model, int], list] | None = None,
                 metric_names: tuple[str, ...] | None = None,
                 steps_per_execution: int = 1,
                 on_restored: Callable[[int], None] | None = None) -> LoopResult:
    """Trains `build_model()` to `total_steps`, resuming from `checkpoint_dir`.

    Args:
      make_dataset: start step -> the training batches from there on (already skipped).
      describe: start step -> the line logged before training.
      initialize: called on a fresh run (nothing to resume), e.g. to load pretrained weights.
      make_callbacks: (model, start step) -> the run's own callbacks (evaluations), after the
        checkpoint guard and the progress lines.
      metric_names: the progress lines' metrics (None: the pretraining line).
      on_restored: start step -> None, once the newest checkpoint is restored (or there is
        none), before anything else is written: where a run writes its config.yaml, so that a
        rerun whose checkpoint does not fit leaves the old one describing the files.
    """
    keras.utils.set_random_seed(seed)  # initial weights and dropout
    with strategy.scope():
        model = build_model()
        model.compile(optimizer=make_optimizer(), jit_compile=jit_compile,
                      steps_per_execution=steps_per_execution)
        checkpoint = checkpointing.RunCheckpoint(model, checkpoint_dir, keep_checkpoint_max)
        start = checkpoint.restore_latest()
    if on_restored is not None:
        on_restored(start)
    if start:
        logging.info("resuming from %s at step %d", checkpoint.latest, start)
    elif initialize is not None:
        initialize(model)
    guard = callbacks.CheckpointAndGuard(checkpoint, save_checkpoints_steps, start, preemption)
    progress = callbacks.ProgressLogger(total_steps, start, log_every_steps, global_batch_size,
                                        tensorboard_dir, metric_names=metric_names)
    run_callbacks = [guard, progress, *(make_callbacks(model, start) if make_callbacks else [])]
    if start < total_steps:
        logging.info("%s", describe(start))
        model.fit(make_dataset(start), steps_per_epoch=total_steps - start, epochs=1, verbose=0,
                  shuffle=False, callbacks=run_callbacks)
    else:
        guard.status = "finished"
    return LoopResult(model=model, checkpoint=checkpoint, start=start, step=guard.batches,
                      status=guard.status, progress=progress)
