"""Fine-tuning from Python: the one orchestrator (`finetune_tasks`) that `run_finetuning`
hands its flags to, resolved into a `job.FinetuneJob`, and notebooks call directly.

    from electra_tf.finetuning import build_classifier, finetune

    report = finetune("glue/rte", data_dir="glue_data/RTE", init_checkpoint="runs/small",
                      model_dir="runs/small_rte", num_trials=3)
    model = build_classifier("runs/small", num_labels=2)   # pretrained encoder + fresh head
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence

import keras

from electra_tf.config import (FinetuneConfig, Recipe, apply_dict, layerwise_decay_for_width,
                               learning_rate_for_width, read_recipe, with_fine_tuning_dropout)
from electra_tf.finetuning import kinds, runner, tasks
from electra_tf.finetuning.common import TaskOptions
from electra_tf.finetuning.job import (DEFAULT_CONFIG, FinetuneJob, resolve_finetune_job,
                                       task_name)
from electra_tf.finetuning.source import EncoderSource, check_fits, resolve_source, restore_encoder
from electra_tf.models.classifier import ElectraClassifier
from electra_tf.training import callbacks, distribution


def build_classifier(init_checkpoint: str, num_labels: int = 2, regression: bool = False,
                     **kwargs) -> ElectraClassifier:
    """An `ElectraClassifier` whose encoder holds the weights of a run or converted directory."""
    source = resolve_source(init_checkpoint)
    model = ElectraClassifier(source.model_config, num_labels, regression=regression, **kwargs)
    restore_encoder(model.encoder, source)
    return model


def resolve_finetune_config(source=None, config: str | Recipe = DEFAULT_CONFIG, overrides=(),
                            task: str | None = None, model_config=None) -> FinetuneConfig:
    """The recipe (a name, or one already read with its overrides) with the init checkpoint's
    model sizes, then the task's own defaults (as the original: max_seq_length 512 for SQuAD),
    then `overrides`; checked to fit the checkpoint.

    A recipe (with its includes and overrides) that names no optimizer.learning_rate gets
    `learning_rate_for_width` of the resolved model's hidden size, and one that names no
    optimizer.layerwise_lr_decay `layerwise_decay_for_width` (0.9 for Large), so the default
    recipe fits a Small, Base or Large checkpoint as the original's switches do. Without a
    source, `model_config` (a built model's sizes) plays the checkpoint's part."""
    recipe = config if isinstance(config, Recipe) else read_recipe(config)
    recipe = dataclasses.replace(recipe, overrides=(*recipe.overrides, *overrides))
    base = FinetuneConfig()
    model_config = source.model_config if source is not None else model_config
    if model_config is not None:
        # the checkpoint's sizes, dropout on (the fine-tuning recipe may set it otherwise)
        base = apply_dict(base, {"model": dataclasses.asdict(with_fine_tuning_dropout(
            model_config))}, "the init checkpoint" if source is not None else "the model")
    task_defaults = kinds.task_overrides(task)
    hidden_size = recipe.build(base, task_defaults, validate=False).model.hidden_size
    by_width = {"learning_rate": learning_rate_for_width(hidden_size),
                "layerwise_lr_decay": layerwise_decay_for_width(hidden_size)}
    chosen = {key: value for key, value in by_width.items()
              if not recipe.sets(f"optimizer.{key}", task_defaults)}
    base = dataclasses.replace(base, optimizer=dataclasses.replace(base.optimizer, **chosen))
    resolved = recipe.build(base, task_defaults)
    if source is not None:
        check_fits(source, resolved.model)
    return resolved


def load_task(name: str, **options):
    """A task by name: `glue/<task>` (files or TFDS), `csv` (your own files),
    `squad/v1.1` / `squad/v2.0` (the official JSON files or TFDS), `mrqa` (MRQA JSON Lines)
    or `chunk` / `ner` (CoNLL files or TFDS conll2003). `options` are `common.TaskOptions`'
    fields (data_dir, use_tfds, train_file, text_a_column, labels, with_test, ...); each kind
    reads the ones it knows."""
    return kinds.load_task_with_options(name, TaskOptions(**options))


@dataclasses.dataclass
class PreparedTask:
    """A task with everything checked before training: its data, the resolved config and the
    encoder it starts from (None: from scratch)."""

    task: object  # TaskData, SquadTask, TaggingTask
    config: FinetuneConfig
    source: EncoderSource | None


def prepare(task: str | tasks.TaskData, *, source: EncoderSource | None,
            config: str | Recipe = DEFAULT_CONFIG, overrides=(), do_predict: bool = False,
            **task_options) -> PreparedTask:
    """Resolves the config for `task` (a name for `load_task`, with its `task_options`, or a
    loaded task) and the encoder `source` (None: from scratch), then loads the task: everything
    that can be refused is refused here, before any training."""
    resolved = resolve_finetune_config(source, config, overrides, task_name(task))
    if isinstance(task, str):
        task = load_task(task, with_test=do_predict, **task_options)
    return PreparedTask(task, resolved, source)


def finetune(task: str | tasks.TaskData, *, model_dir: str, **options) -> dict:
    """Fine-tunes on one task (a name for `load_task`, or a loaded task) into `model_dir`;
    returns its report. `finetune_tasks` with a single task: the same options, the same steps."""
    return finetune_tasks([task], model_dir=model_dir, **options)[0]


@callbacks.with_preemption  # one SIGTERM handler for every task, the caller's put back after
def finetune_tasks(tasks_or_job: Sequence[str | tasks.TaskData] | FinetuneJob, *,
                   preemption: callbacks.Preemption | None = None,
                   on_report: Callable[[dict, str], None] | None = None,
                   **options) -> list[dict]:
    """Fine-tunes on each task in turn; the one orchestrator behind `run_finetuning` and
    `finetune`. Returns the reports, one per task that ran; a preempted task (SIGTERM) ends the
    list, and calling again resumes. `on_report(report, task_model_dir)` runs after each task.

    `tasks_or_job` is a `FinetuneJob` (`job.resolve_finetune_job`), or a list of tasks with
    that function's keyword arguments as `options`: model_dir (one task trains in it, several
    each in `model_dir/<task>`), init_checkpoint (None: from scratch), config (the recipe,
    default finetune/default), overrides, vocab_file, num_trials, strategy (a name or a made
    one), tpu, mixed_precision ("none", "bf16", "fp16"), jit_compile (None: XLA on TPUs and
    GPUs only), cpu_devices, cpu_chains (0 picks, `distribution.use_cpu_chains`), export,
    with_tokenizer, do_predict, and `load_task`'s options (data_dir, use_tfds, train_file,
    labels, ...). In order:
      1. the machine, before anything runs a TensorFlow op: logical CPUs and chains of ops;
      2. the encoder source, every task's config and data, so that whatever can be refused is
         refused before any training;
      3. the strategy, XLA and the dtype policy, the caller's policy put back after;
      4. `num_trials` trials per task.
    """
    if isinstance(tasks_or_job, FinetuneJob):
        if options:
            raise TypeError(f"finetune_tasks(job) takes no other options, got {sorted(options)}")
        job = tasks_or_job
    else:
        job = resolve_finetune_job(tasks_or_job, **options)
    devices = job.devices
    distribution.split_cpu(devices.cpu_devices)
    distribution.use_cpu_chains(devices.cpu_chains, devices.strategy, devices.tpu,
                                micro_batches=job.micro_batches())
    source = resolve_source(job.init_checkpoint) if job.init_checkpoint else None
    task_options = dataclasses.asdict(job.task_options)
    task_options.pop("with_test")  # do_predict
    prepared = [prepare(task, source=source, config=job.recipe, do_predict=job.do_predict,
                        **task_options) for task in job.tasks]
    strategy = devices.strategy
    if isinstance(strategy, str):
        strategy = distribution.make_strategy(strategy, devices.tpu)
    jit_compile = distribution.use_xla(strategy, devices.jit_compile)
    distribution.warn_if_bfloat16_is_slow(strategy, devices.mixed_precision)
    previous_policy = keras.mixed_precision.dtype_policy()
    keras.mixed_precision.set_dtype_policy(distribution.DTYPE_POLICIES[devices.mixed_precision])
    reports = []
    try:  # the models keep their policy; the caller's global one is left as it was
        for each in prepared:
            task_dir = job.model_dir if len(prepared) == 1 else os.path.join(
                job.model_dir, each.task.directory_name)
            report = runner.run_trials(
                each.task, each.config, task_dir, source=each.source,
                num_trials=job.num_trials, strategy=strategy, jit_compile=jit_compile,
                export=job.export, with_tokenizer=job.with_tokenizer,
                do_predict=job.do_predict, preemption=preemption)
            reports.append(report)
            if on_report is not None:
                on_report(report, task_dir)
            if report["status"] != "finished":
                break
    finally:
        keras.mixed_precision.set_dtype_policy(previous_policy)
    return reports
