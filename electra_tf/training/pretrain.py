"""`pretrain(...)`: one pretraining run, the function behind `run_pretraining` and the notebooks.

    import electra_tf

    result = electra_tf.pretrain(model_dir="runs/demo", train_steps=200)   # the demo corpus
    result = electra_tf.pretrain(config="pretrain/electra_small", data="gs://b/shards/*",
                                 model_dir="gs://b/run", strategy="tpu", mixed_precision="bf16")
    print(result.held_out[-1])        # (step, {"disc_auc": ..., ...})

Calling it again with the same `model_dir` continues from the newest checkpoint, at the exact
batch where the last call stopped. The keyword arguments are resolved into one `PretrainJob`
first (`training.pretrain_job`: the recipe read once, every phase's config validated); inputs
that cannot work raise `electra_tf.UserError` there, before anything is written.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from typing import Any, Sequence

import keras
import tensorflow as tf
from absl import logging

from electra_tf import run_directory, run_lock
from electra_tf.config import ElectraConfig, ObjectiveConfig, check_accumulation, load_config
from electra_tf.pretraining_data import pipeline, run_vocabulary, word_masking
from electra_tf.pretraining_data.batch_growth import BatchGrowth
from electra_tf.pretraining_data import builder as pretraining_data, corpus
from electra_tf.text import vocab_learning
from electra_tf.errors import RunError
from electra_tf.export import export_discriminator
from electra_tf.export.staging import write_staged
from electra_tf.models import build_pretrainer
from electra_tf.models.replicated import ReplicatedModel
from electra_tf.training import callbacks, checkpointing, distribution, loop, phases
from electra_tf.training.curves import plot_pretraining_curves
from electra_tf.training.optimizer import create_optimizer
from electra_tf.training.pretrain_job import PlannedStage, PretrainJob, resolve_pretrain_job

DEMO_VOCAB_SIZE = 2500  # about what the embedded corpus supports at min_frequency 10


@dataclasses.dataclass
class PretrainResult:
    """What a `pretrain` call did.

    `status` is "finished" or "preempted" (SIGTERM: a checkpoint was saved; call again to go
    on). `last_metrics` holds the last progress line's training metrics, `held_out` the
    (step, metrics) of every held-out evaluation. `curves` is the PNG of the whole run's curves
    drawn from its TensorBoard events (None when preempted, or without matplotlib). `model` is
    the trained `ElectraPretrainer`.
    """

    model_dir: str
    status: str
    step: int
    checkpoint: str | None
    export_dir: str | None
    config: ElectraConfig
    last_metrics: dict[str, float]
    held_out: list[tuple[int, dict[str, float]]]
    seconds: float
    curves: str | None = None
    model: Any = dataclasses.field(repr=False, default=None)
    phase: str = ""  # a phased recipe's: e.g. "phase 2 of 2" (its model_dir is that phase's)


def prepare_demo_data(run_dir: str) -> tuple[str, str, str]:
    """Builds (once) the embedded corpus, its vocabulary and TFRecords under run_dir/data: every
    10th document held out for evaluation. Returns (train glob, held-out glob, vocab.txt)."""
    data_dir = run_directory.demo_data_dir(run_dir)
    vocab_file = os.path.join(data_dir, run_directory.VOCAB)
    records_dir = os.path.join(data_dir, "tfrecords")
    held_out_dir = os.path.join(data_dir, "heldout_tfrecords")
    if not all(os.path.exists(os.path.join(d, "metadata.json")) for d in (records_dir, held_out_dir)):
        text_dir, held_out_text_dir = (os.path.join(data_dir, name) for name in ("text", "heldout_text"))
        paths = corpus.write_embedded_corpus(text_dir, held_out_dir=held_out_text_dir)
        logging.info("demo corpus: %d files under %s", len(paths), text_dir)
        lines = [line for document in corpus.read_documents(text_dir) for line in document]
        vocab_learning.learn_vocabulary(lines, DEMO_VOCAB_SIZE, vocab_file)
        for text, records in ((held_out_text_dir, held_out_dir), (text_dir, records_dir)):
            summary = pretraining_data.build_pretraining_data(
                corpus=text, vocab_file=vocab_file, output_dir=records, max_seq_length=128,
                overwrite=True)
            logging.info("demo data: %s", summary.line())
    return (os.path.join(records_dir, "*.tfrecord*"), os.path.join(held_out_dir, "*.tfrecord*"),
            vocab_file)


def _user_settings(config, overrides: Sequence[str]) -> dict[str, int]:
    """Vocabulary-related config values the user set: through an override, or (special ids) a
    config file. Recipes' model.vocab_size is a placeholder for the data's, not a setting."""
    keys = {override.split("=", 1)[0].strip() for override in overrides}
    settings = {}
    if "model.vocab_size" in keys:
        settings["model.vocab_size"] = config.model.vocab_size
    for field in run_vocabulary.CONFIG_TOKEN_FIELDS:
        value = getattr(config.objective, field)
        if f"objective.{field}" in keys or value != getattr(ObjectiveConfig, field):
            settings[f"objective.{field}"] = value
    return settings


def with_data_vocabulary(config: ElectraConfig, overrides: Sequence[str],
                         metadata_by_directory: dict[str, dict], vocab_file: str | None = None,
                         assume_bert_vocabulary: bool = False) -> ElectraConfig:
    """`config` (a recipe with `overrides` applied) with the vocabulary size and special ids of
    the data (see `electra_tf.pretraining_data.run_vocabulary`), checked against everything
    the user set."""
    vocabulary = run_vocabulary.resolve(metadata_by_directory,
                                        vocab_file or config.run.vocab_file,
                                        assume_bert_vocabulary)
    settings = _user_settings(config, overrides)
    run_vocabulary.check_user_settings(vocabulary, settings)
    logging.info("vocabulary: %s", vocabulary.describe())
    ids = vocabulary.ids
    config = dataclasses.replace(
        config,
        model=dataclasses.replace(config.model, vocab_size=settings.get("model.vocab_size",
                                                                        vocabulary.size)),
        objective=dataclasses.replace(config.objective, pad_token_id=ids.pad,
                                      cls_token_id=ids.cls, sep_token_id=ids.sep,
                                      mask_token_id=ids.mask),
        run=dataclasses.replace(config.run, vocab_file=vocabulary.vocab_file or ""))
    return config.validate()


def resolve_pretrain_config(config: str, overrides: Sequence[str],
                            metadata_by_directory: dict[str, dict], vocab_file: str | None = None,
                            assume_bert_vocabulary: bool = False) -> ElectraConfig:
    """The recipe `config` with the overrides, then the data's vocabulary (`with_data_vocabulary`)."""
    return with_data_vocabulary(load_config(config, overrides=list(overrides)), overrides,
                                metadata_by_directory, vocab_file, assume_bert_vocabulary)


def check_model_dir(model_dir: str, config: ElectraConfig) -> None:
    """Refuses a model_dir whose checkpoints came from another model or objective."""
    if not tf.io.gfile.exists(run_directory.config_file(model_dir)):
        return
    previous = run_directory.read_config(model_dir)
    current = config.to_dict()
    for section in ("model", "objective"):
        old, new = previous.get(section, {}), current[section]
        changed = sorted(k for k in new if k in old and old[k] != new[k] and k != "vocab_file")
        if changed:
            key = changed[0]
            raise RunError(f"{model_dir} holds a run with a different config ({section}.{key} was "
                           f"{old[key]!r}, now {new[key]!r}); use another --model_dir or the same "
                           "config. Nothing was changed.")


def held_out_batch_size(run) -> int:
    """The held-out evaluation's batch: the training micro-batch (train_batch_size over
    gradient_accumulation_steps), so it fits wherever training does."""
    return run.train_batch_size // run.gradient_accumulation_steps


def _check_eval_records(eval_files: list[str], batch: int) -> None:
    records = sum(1 for _ in tf.data.TFRecordDataset(eval_files).take(batch))
    if records < batch:  # evaluation drops partial batches: it would have nothing to read
        raise RunError(f"--eval_data holds {records} records, fewer than one held-out batch of "
                       f"{batch} (run.train_batch_size / run.gradient_accumulation_steps): "
                       "give more held-out records or a smaller batch")


@dataclasses.dataclass
class _Stage:
    """A `PlannedStage` with its data read: the config with the data's vocabulary, and the
    shard files."""

    label: str  # "" for a one-phase run, else e.g. "phase 2 of 2"
    model_dir: str
    config: ElectraConfig
    files: list[str]
    eval_files: list[str]


@callbacks.with_preemption
def pretrain(job: PretrainJob | None = None, *,
             preemption: callbacks.Preemption | None = None, **options) -> PretrainResult:
    """Pretrains ELECTRA (or the configured objective) and returns a `PretrainResult`.

    `job` is a `PretrainJob` from `resolve_pretrain_job`; without one, `options` are that
    function's keyword arguments: `pretrain(**options)` is `pretrain(resolve_pretrain_job(
    **options))`. The options:

      config: recipe, a path or a name under configs/ (default "pretrain/demo"). A recipe with
        `phases:` (e.g. pretrain/electra_base_two_phase) trains them one after the other
        (`electra_tf.training.phases`); the result is the last phase's.
      data: TFRecord shards of `build_pretraining_dataset` (glob, comma-separated globs or a
        directory; local or gs://). None: build the embedded demonstration corpus, with its own
        vocabulary and held-out split, under `model_dir`/data. In phases: the records of every
        phase that names none.
      eval_data: held-out shards for the discriminator's AUC and the losses every
        run.eval_every_steps steps and at the end (the demo holds out every 10th document).
      vocab_file: vocab.txt the data was built with; checked against the data's metadata.json,
        needed only for data without one.
      model_dir: run directory (checkpoints, TensorBoard, curves.png, config.yaml, export).
        Default runs/electra_<config name> for the demo; required with `data`.
      train_steps: total steps (overrides optimizer.train_steps; not for a phased recipe).
      overrides: "section.key=value" strings, e.g. "run.train_batch_size=64" (in phases: on
        top of every phase's own values).
      init_checkpoint: start from these weights with a fresh optimizer (ignored on resume).
      assume_bert_vocabulary: for data with neither metadata nor vocab_file: BERT's uncased ids.
      strategy: "auto", "one_device", "mirrored", "multi_worker", "tpu", or a
        `tf.distribute.Strategy` made by the caller (a notebook that already has its TPU).
      tpu: TPU name or grpc:// address for strategy "tpu"/"auto".
      mixed_precision: "none", "bf16" or "fp16".
      jit_compile: XLA for the train step (None: on TPU and GPU, off on CPU).
      cpu_devices: split the CPU into this many logical devices (before TensorFlow starts).
      cpu_chains: run each step's batch as this many chains of ops, with cores / chains
        intra-op threads (`distribution.use_cpu_chains`; before TensorFlow starts). 0: two
        on a two-core CPU where TensorFlow has not started yet, else one.
      deterministic: TensorFlow op determinism (bitwise-reproducible runs and resumes).
      export: write the discriminator's SavedModel under model_dir/export/<step>.
      stop_at_step: stop (and save) at this step, with the learning-rate schedule of the whole
        train_steps: a piece of a longer run, continued by calling again with a later step or
        None. The result's status is "finished" when the step is reached. Not for phases.
      phase_data, phase_eval_data: {phase number: shards} replacing a phase's records.
    `preemption`: a `callbacks.Preemption` installed earlier (SIGTERM during setup is kept).
    """
    if job is None:
        job = resolve_pretrain_job(**options)
    elif options:
        raise TypeError(f"pretrain(job) takes no other options, got {sorted(options)}")
    started = time.time()
    devices = job.devices
    distribution.split_cpu(devices.cpu_devices)
    distribution.use_cpu_chains(devices.cpu_chains, devices.strategy, devices.tpu,
                                [stage.micro_batch for stage in job.stages])
    if job.deterministic:
        tf.config.experimental.enable_op_determinism()
    strategy = devices.strategy
    if isinstance(strategy, str):
        strategy = distribution.make_strategy(strategy, devices.tpu)
    # One writer per run directory: the chief's lock (other workers write under workers/).
    is_chief = strategy.extended.should_checkpoint
    with run_lock.hold(job.model_dir) if is_chief else contextlib.nullcontext():
        return _run_stages(job, strategy, preemption, started)


def _run_stages(job: PretrainJob, strategy, preemption, started) -> PretrainResult:
    """Reads and checks every stage's data, then trains the stages in turn."""
    devices = job.devices
    planned = job.stages
    vocab_file = job.vocab_file
    if job.demo:
        data, eval_data, vocab_file = prepare_demo_data(job.model_dir)
        planned = tuple(dataclasses.replace(stage, data=data, eval_data=stage.eval_data or eval_data)
                        for stage in planned)
    stages = [_read_data(stage, job.recipe.overrides, vocab_file, job.assume_bert_vocabulary)
              for stage in planned]  # every phase is checked before the first one trains
    _check_phase_progress(stages)
    for each in stages:
        check_accumulation(each.config.run.train_batch_size,
                           each.config.run.gradient_accumulation_steps, "run",
                           strategy.num_replicas_in_sync, ReplicatedModel.parallel_chains)
    distribution.warn_if_bfloat16_is_slow(strategy, devices.mixed_precision)
    previous_policy = keras.mixed_precision.dtype_policy()
    keras.mixed_precision.set_dtype_policy(distribution.DTYPE_POLICIES[devices.mixed_precision])
    try:  # the model keeps its policy; the caller's global one is left as it was
        for index, each in enumerate(stages):
            last = index == len(stages) - 1
            if not last and _phase_done(each):
                logging.info("%s is done (%s)", each.label, each.model_dir)
                continue
            start_from = job.init_checkpoint if index == 0 else run_directory.checkpoints_dir(
                stages[index - 1].model_dir)
            result = _train(each, job, strategy, start_from, job.export and last, preemption,
                            started)
            if last or result.status != "finished":
                return result
    finally:
        keras.mixed_precision.set_dtype_policy(previous_policy)


def _read_data(stage: PlannedStage, overrides: Sequence[str], vocab_file: str | None,
               assume_bert_vocabulary: bool) -> _Stage:
    """The stage's shards, its config with their vocabulary, both checked against the run
    directory and the held-out batch."""
    files = pipeline.list_shards(stage.data)
    eval_files = pipeline.list_shards(stage.eval_data) if stage.eval_data else []
    metadata = pipeline.read_data_metadata(files + eval_files)
    config = with_data_vocabulary(stage.config, overrides, metadata, vocab_file,
                                  assume_bert_vocabulary)
    pipeline.check_sequence_length(metadata, config.run.max_seq_length)
    if eval_files:
        _check_eval_records(eval_files, held_out_batch_size(config.run))
    check_model_dir(stage.model_dir, config)
    return _Stage(stage.label, stage.model_dir, config, files, eval_files)


def _phase_done(stage: _Stage) -> bool:
    checkpoints = run_directory.checkpoints_dir(stage.model_dir)
    return phases.checkpoint_step(checkpoints) >= stage.config.optimizer.train_steps


def _check_phase_progress(stages: list[_Stage]) -> None:
    """No phase has checkpoints while an earlier one is unfinished (a directory mixed from two
    runs)."""
    for earlier, later in zip(stages, stages[1:]):
        if (phases.checkpoint_step(run_directory.checkpoints_dir(later.model_dir))
                and not _phase_done(earlier)):
            raise RunError(f"{later.model_dir} has checkpoints of {later.label}, but "
                           f"{earlier.label} in {earlier.model_dir} did not reach its step "
                           f"{earlier.config.optimizer.train_steps}: not one phased run; use "
                           "another --model_dir. Nothing was changed.")


def _word_continuations(config):
    """The vocabulary's continuation pieces, for whole-word and span masking (else None)."""
    if config.objective.masking == "token":
        return None
    if not config.run.vocab_file or not tf.io.gfile.exists(config.run.vocab_file):
        raise RunError(f"objective.masking {config.objective.masking} needs the vocabulary, to "
                       "find the words: give --vocab_file (or data whose metadata.json names a "
                       "vocab.txt that exists)")
    return word_masking.continuation_pieces_of(config.run.vocab_file)


def _train(stage: _Stage, job: PretrainJob, strategy, init_checkpoint, export, preemption,
           started) -> PretrainResult:
    config, model_dir, files, eval_files = (stage.config, stage.model_dir, stage.files,
                                            stage.eval_files)
    config_name, stop_at_step = job.name, job.stop_at_step
    is_chief = strategy.extended.should_checkpoint  # False only on non-chief multi-worker tasks
    write_dir = model_dir
    if not is_chief:  # collective saves need every worker; only the chief's copy is kept
        resolver = strategy.cluster_resolver
        write_dir = os.path.join(model_dir, "workers", f"{resolver.task_type}_{resolver.task_id}")
    tf.io.gfile.makedirs(write_dir)

    def write_config(start):  # once the checkpoint, if any, restored: config.yaml describes it
        if is_chief:
            run_directory.write_config(model_dir, config)

    jit_compile = distribution.use_xla(strategy, job.devices.jit_compile)
    is_continuation = _word_continuations(config)
    schedule_steps = config.optimizer.train_steps
    total = min(schedule_steps, stop_at_step or schedule_steps)  # where this call stops
    evaluation = None

    def initialize(model):
        if init_checkpoint:
            checkpointing.restore_weights(model, init_checkpoint)
            logging.info("initialised weights from %s", init_checkpoint)

    def held_out_evaluation(model, start):
        nonlocal evaluation
        if not eval_files:
            return []
        held_out = pipeline.make_held_out_dataset(
            eval_files, held_out_batch_size(config.run), config.run.max_seq_length,
            config.objective, config.run.eval_batches, is_continuation=is_continuation)
        evaluation = callbacks.HeldOutEvaluation(
            held_out, total, start, config.run.eval_every_steps,
            os.path.join(run_directory.tensorboard_dir(write_dir), "heldout"))
        return [evaluation]

    growth = BatchGrowth.from_run(config.run)

    def training_data(start):
        return pipeline.make_distributed_dataset(
            strategy, files, growth.micro_batch if growth else config.run.train_batch_size,
            config.run.max_seq_length, config.objective, seed=config.objective.seed,
            skip_global_batches=start, shuffle_buffer=config.run.shuffle_buffer,
            is_continuation=is_continuation, growth=growth)

    def describe(start):
        accumulation = config.run.gradient_accumulation_steps
        micro = (f" ({accumulation} micro-batches of "
                 f"{config.run.train_batch_size // accumulation} per update)"
                 if accumulation > 1 else "")
        if growth is not None:
            micro += (f", growing from {config.run.initial_train_batch_size} (now "
                      f"{growth.batch_at(start)}) to step {growth.steps}")
        chains = ReplicatedModel.parallel_chains  # distribution.use_cpu_chains
        micro += f", {chains} chains side by side" if chains > 1 else ""
        return (f"training {config_name}{f' {stage.label}' if stage.label else ''} "
                f"({type(strategy).__name__}, "
                f"{'XLA' if jit_compile else 'no XLA'}) from step {start} to {total}"
                f"{f' of {schedule_steps}' if total < schedule_steps else ''} on "
                f"{strategy.num_replicas_in_sync} replica(s), global batch "
                f"{config.run.train_batch_size}{micro}")

    def build_model():
        model = build_pretrainer(config.model, config.objective)
        model.gradient_accumulation_steps = config.run.gradient_accumulation_steps
        if growth is not None:
            model.micro_batch_rows = growth.micro_batch // strategy.num_replicas_in_sync
        return model

    try:
        result = loop.run_training(
            strategy=strategy, seed=config.objective.seed,
            build_model=build_model,
            make_optimizer=lambda: create_optimizer(config.optimizer), jit_compile=jit_compile,
            steps_per_execution=config.run.steps_per_execution,
            checkpoint_dir=run_directory.checkpoints_dir(write_dir),
            keep_checkpoint_max=config.run.keep_checkpoint_max, total_steps=total,
            save_checkpoints_steps=config.run.save_checkpoints_steps,
            log_every_steps=config.run.log_every_steps,
            global_batch_size=growth.sequences_before if growth else config.run.train_batch_size,
            tensorboard_dir=run_directory.tensorboard_dir(write_dir), preemption=preemption,
            make_dataset=training_data, describe=describe, initialize=initialize,
            on_restored=write_config,
            make_callbacks=held_out_evaluation)
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as e:
        logging.info("reading the data failed; looking for the shard that fails")
        culprit = pipeline.find_unreadable_shard(files + eval_files, config.run.max_seq_length)
        if culprit is None:
            raise
        raise RunError(f"cannot read the TFRecord data: {culprit}") from e
    model, run_checkpoint = result.model, result.checkpoint
    if result.start >= total:
        logging.info("%s is already at step %d of %d", run_checkpoint.latest, result.start, total)

    if result.status == "non_finite":
        raise RunError(f"the loss became non-finite at step {result.step}; stopped without "
                       "saving. Last good checkpoint: "
                       f"{run_checkpoint.latest or 'none was saved yet'}")
    export_dir = curves = None
    if result.status == "preempted":
        logging.info("preempted: saved %s; rerun the same command to continue", run_checkpoint.latest)
    elif is_chief:
        if export:
            export_dir = write_staged(
                os.path.join(run_directory.export_dir(model_dir), str(result.step)),
                lambda staging: export_discriminator(model, staging))
        curves = plot_pretraining_curves(model_dir)
    return PretrainResult(
        model_dir=model_dir, status=result.status, step=result.step,
        checkpoint=run_checkpoint.latest, export_dir=export_dir, config=config,
        last_metrics=result.progress.last_values,
        held_out=evaluation.history if evaluation else [], seconds=time.time() - started,
        curves=curves, model=model, phase=stage.label)
