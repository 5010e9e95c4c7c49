"""The study's two pretraining runs at equal FLOPs, and the encoders they leave.

ELECTRA runs `checkpoints[-1]` steps into output_dir/pretrain/electra, saving every
`checkpoints[0]` steps and keeping them all; the MLM baseline (`objective.electra_objective=
false`: the same encoder trained as a masked LM, saved under the `generator` scope) runs the
same FLOPs into output_dir/pretrain/mlm, with checkpoints at the same fractions of its run
(`plan.mlm_plan`). FLOPs per step: `electra_tf.training.flops.pretraining_step_flops` (matmuls,
forward and backward; ELECTRA's generator included), counted per sequence while a batch grows.
"""

from __future__ import annotations

import os

from absl import logging

from electra_tf import run_directory
from electra_tf.pretraining_data import pipeline
from electra_tf.pretraining_data.batch_growth import BatchGrowth
from electra_tf.pretraining_data.masking import max_predictions_per_seq
from electra_tf.study import plan
from electra_tf.study.data import StudyData
from electra_tf.study.plan import StudyError
from electra_tf.training.flops import pretraining_step_flops
from electra_tf.training.pretrain import RunError, pretrain, resolve_pretrain_config

MLM_OVERRIDE = "objective.electra_objective=false"


def objective_run_dir(output_dir: str, objective: str) -> str:
    return os.path.join(output_dir, "pretrain", objective)


def _overrides(objective: str, user_overrides) -> list[str]:
    return list(user_overrides) + ([MLM_OVERRIDE] if objective == "mlm" else [])


def _resolved_config(config_name: str, overrides, data: StudyData):
    """The run's config as `pretrain` will resolve it (vocabulary size and ids from the data)."""
    files = pipeline.list_shards(data.records)
    if data.heldout_records:
        files += pipeline.list_shards(data.heldout_records)
    return resolve_pretrain_config(config_name, overrides, pipeline.read_data_metadata(files),
                                   data.vocab_file)


def step_flops(config) -> float:
    """Matmul FLOPs of one training step of a resolved pretraining config."""
    seq, batch = config.run.max_seq_length, config.run.train_batch_size
    predictions = max_predictions_per_seq(config.objective.mask_prob, seq)
    return float(pretraining_step_flops(config.model, batch, seq, predictions,
                                        electra=config.objective.electra_objective))


def plan_runs(config_name: str, user_overrides, data: StudyData, checkpoints: tuple[int, ...],
              objectives: tuple[str, ...], schedule_steps: int | None = None
              ) -> list[plan.PretrainingPlan]:
    """The runs of `objectives`, the MLM's at the FLOPs of ELECTRA's `checkpoints`, their
    learning rates scheduled over `schedule_steps` ELECTRA steps (None: the last checkpoint).
    Checked before anything trains: a bad override fails here."""
    electra_config = _resolved_config(config_name, _overrides("electra", user_overrides), data)
    electra_flops = step_flops(electra_config)
    growth = BatchGrowth.from_run(electra_config.run)
    runs = []
    if "electra" in objectives:
        runs.append(plan.electra_plan(checkpoints, electra_flops, schedule_steps, growth))
    if "mlm" in objectives:
        mlm_flops = step_flops(_resolved_config(config_name, _overrides("mlm", user_overrides),
                                                data))
        runs.append(plan.mlm_plan(checkpoints, electra_flops, mlm_flops, schedule_steps, growth))
    return runs


def checkpoint_path(run_dir: str, step: int) -> str:
    return run_directory.step_checkpoint(run_dir, step)


def _missing_steps(run_dir: str, run: plan.PretrainingPlan) -> list[int]:
    """The steps of the run's encoders whose checkpoint is not on disk."""
    import tensorflow as tf

    return [step for step in run.encoder_steps
            if not tf.io.gfile.exists(checkpoint_path(run_dir, step) + ".index")]


def pretrain_all(runs: list[plan.PretrainingPlan], config_name: str, user_overrides,
                 data: StudyData, output_dir: str, preemption,
                 pretraining_from: str | None = None) -> list[plan.Encoder] | None:
    """Trains (or resumes) each run; returns its encoders, or None when SIGTERM stopped a run
    (its checkpoint is saved: run the study again to continue). With `pretraining_from` (a
    study of the same pretraining settings, `reuse.check_pretraining_compatible`), the encoders
    are that study's checkpoints, which must all be there: nothing is trained."""
    encoders = []
    for run in runs:
        run_dir = objective_run_dir(pretraining_from or output_dir, run.objective)
        missing = _missing_steps(run_dir, run)
        if pretraining_from and missing:
            raise StudyError(f"--pretraining_from {pretraining_from}: {run_dir}/checkpoints "
                             f"lacks the {run.objective} checkpoints of steps "
                             f"{', '.join(map(str, missing))}: finish that study's pretraining "
                             "first (rerun it, with --pretrain_only to stop there)")
        if not missing:
            logging.info("%s pretraining is finished (%s); keeping it", run.objective, run_dir)
        else:
            logging.info("pretraining %s: %d steps (%.3g FLOPs each; learning rate scheduled "
                         "over %d) into %s, encoders at steps %s", run.objective, run.train_steps,
                         run.step_flops, run.schedule_steps, run_dir,
                         ", ".join(map(str, run.encoder_steps)))
            overrides = _overrides(run.objective, user_overrides) + [
                f"run.save_checkpoints_steps={run.save_every}",
                f"run.keep_checkpoint_max={run.keep}"]
            if run.growth is not None:  # the MLM's batch grows over the same share of its run
                overrides.append(f"run.batch_growth_steps={run.growth.steps}")
            result = pretrain(config=config_name, data=data.records,
                              eval_data=data.heldout_records, vocab_file=data.vocab_file,
                              model_dir=run_dir, train_steps=run.schedule_steps,
                              stop_at_step=run.train_steps, overrides=overrides, export=False,
                              preemption=preemption)
            if result.status != "finished":
                return None
            missing = _missing_steps(run_dir, run)
            if missing:  # e.g. more than one preemption saved extra checkpoints in between
                raise RunError(f"{run_dir}/checkpoints lacks the checkpoints of steps "
                               f"{', '.join(map(str, missing))} (deleted to keep "
                               f"{run.keep}); pretrain again in a new --output_dir")
        encoders += [plan.Encoder(run.objective, step, run.flops(step),
                                  checkpoint_path(run_dir, step)) for step in run.encoder_steps]
    return encoders
