"""`PretrainJob`: one pretraining run resolved before it starts, the value `pretrain` takes.

    job = resolve_pretrain_job(config="pretrain/electra_base_two_phase", data="gs://b/r128/*",
                               phase_data={2: "gs://b/r512/*"}, model_dir="gs://b/run")
    job.stages[1].config.run.max_seq_length      # 512: every phase's config, validated
    result = pretrain(job)

The recipe is read from disk once (`config.read_recipe`: its includes, its `phases:`, the
overrides) and every phase's `ElectraConfig` is built and validated from it here, together with
everything about the call that can be refused without touching the data or TensorFlow. What
only the data can tell (the vocabulary's size and special ids, from metadata.json) is applied
to these configs by `pretrain` when it reads the records.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Mapping, Sequence

import tensorflow as tf

from electra_tf.config import ElectraConfig, Recipe, read_recipe
from electra_tf.errors import RunError
from electra_tf.training import phases
from electra_tf.training.device_flags import DeviceOptions

DEFAULT_CONFIG = "pretrain/demo"


@dataclasses.dataclass(frozen=True)
class PlannedStage:
    """One training run of a job: the whole run, or one phase of a phased recipe.

    `config` is the recipe's for this stage, validated, with the placeholder vocabulary of the
    recipe until the data's is applied. `data` / `eval_data` are shard patterns (None: the
    job's demonstration corpus, built when the job runs)."""

    label: str  # "" for a one-phase run, else e.g. "phase 2 of 2"
    model_dir: str
    config: ElectraConfig
    data: str | None
    eval_data: str | None

    @property
    def micro_batch(self) -> int:
        """The sequences of one training micro-batch (for `distribution.use_cpu_chains`)."""
        run = self.config.run
        return run.train_batch_size // run.gradient_accumulation_steps


@dataclasses.dataclass(frozen=True)
class PretrainJob:
    """Everything a `pretrain` call does, resolved: see `resolve_pretrain_job` for the fields'
    meanings. `recipe` holds the files as read and the user's overrides (with train_steps)."""

    recipe: Recipe
    model_dir: str
    stages: tuple[PlannedStage, ...]
    demo: bool  # the embedded demonstration corpus, built under model_dir/data
    vocab_file: str | None = None
    init_checkpoint: str | None = None
    assume_bert_vocabulary: bool = False
    devices: DeviceOptions = DeviceOptions()
    deterministic: bool = False
    export: bool = True
    stop_at_step: int | None = None

    @property
    def name(self) -> str:
        return self.recipe.name


def resolve_pretrain_job(*, config: str | None = None, data: str | None = None,
                         eval_data: str | None = None, vocab_file: str | None = None,
                         model_dir: str | None = None, train_steps: int | None = None,
                         overrides: Sequence[str] = (), init_checkpoint: str | None = None,
                         assume_bert_vocabulary: bool = False,
                         strategy: str | tf.distribute.Strategy = "auto", tpu: str | None = None,
                         mixed_precision: str = "none", jit_compile: bool | None = None,
                         cpu_devices: int = 0, cpu_chains: int = 0, deterministic: bool = False,
                         export: bool = True, stop_at_step: int | None = None,
                         phase_data: Mapping[int, str] | None = None,
                         phase_eval_data: Mapping[int, str] | None = None,
                         devices: DeviceOptions | None = None) -> PretrainJob:
    """Reads the recipe once and checks the call; `electra_tf.UserError` (one line) for
    anything that cannot work. Nothing is written and TensorFlow starts no runtime.

    The arguments are `pretrain`'s (see there); `devices` may replace the six device arguments
    (strategy, tpu, mixed_precision, jit_compile, cpu_devices, cpu_chains) as one value.
    """
    name = config or DEFAULT_CONFIG
    demo = data is None
    if demo and vocab_file is not None:
        raise RunError("--vocab_file without --data: give the TFRecords made with it (--data), "
                       "or neither to train on the embedded demonstration corpus")
    short_name = os.path.splitext(os.path.basename(name))[0]
    model_dir = model_dir or (f"runs/electra_{short_name}" if demo else None)
    if model_dir is None:
        raise RunError("--model_dir is required with --data")
    if tf.io.gfile.exists(model_dir) and not tf.io.gfile.isdir(model_dir):
        raise RunError(f"--model_dir {model_dir} is an existing file, not a directory")
    if stop_at_step is not None and stop_at_step < 1:
        raise RunError(f"stop_at_step must be a positive step, got {stop_at_step}")
    overrides = [*overrides, *([f"optimizer.train_steps={train_steps}"]
                               if train_steps is not None else [])]
    recipe = read_recipe(name, overrides)
    plan = _read_plan(recipe, demo, train_steps, stop_at_step, phase_data or {},
                      phase_eval_data or {})
    if plan is None:
        stages = (PlannedStage("", model_dir, recipe.build(), data, eval_data),)
    else:  # the phase's values, then the user's overrides
        stages = tuple(
            PlannedStage(phase.label(len(plan)),
                         phases.phase_directory(model_dir, phase.number, len(plan)),
                         recipe.build(defaults=phase.overrides), phase.data or data,
                         phase.eval_data or eval_data)
            for phase in plan)
        phases.check_lengths(plan, [stage.config.run.max_seq_length for stage in stages])
    devices = devices or DeviceOptions(strategy, tpu, mixed_precision, jit_compile, cpu_devices,
                                       cpu_chains)
    return PretrainJob(recipe, model_dir, stages, demo, vocab_file, init_checkpoint,
                       assume_bert_vocabulary, devices, deterministic, export, stop_at_step)


def _read_plan(recipe: Recipe, demo, train_steps, stop_at_step, phase_data,
               phase_eval_data) -> list[phases.Phase] | None:
    """The recipe's phases with the command line's records, or None for a one-phase recipe;
    RunError for what a phased run cannot take."""
    plan = phases.read_phases(recipe)
    if plan is None:
        if phase_data or phase_eval_data:
            raise RunError(f"--phase_data / --phase_eval_data: {recipe.name} has no phases: "
                           "give its records with --data")
        return None
    for given, why in ((demo, "needs --data: every phase trains on records built at its own "
                              "length (--phase_data N=... for a phase whose records differ)"),
                       (train_steps is not None, "takes its steps from each phase's "
                                                 "optimizer.train_steps, not --train_steps"),
                       (stop_at_step is not None, "cannot stop_at_step")):
        if given:
            raise RunError(f"{recipe.name} pretrains in {len(plan)} phases: it {why}")
    return phases.with_command_line_data(plan, phase_data, phase_eval_data)
