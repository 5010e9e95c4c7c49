"""Fine-tuning from Python: the one orchestrator (`finetune_tasks`) that `run_finetuning`
parses its flags into, and notebooks call directly.

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
import tensorflow as tf

from electra_tf.config import (FinetuneConfig, apply_dict, layerwise_decay_for_width,
                               learning_rate_for_width, load_config)
from electra_tf.errors import RunError
from electra_tf.finetuning import kinds, runner, tasks
from electra_tf.finetuning.common import TaskOptions
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


# The recipe without --config: it learns on small models and small training sets too.
DEFAULT_CONFIG = "finetune/default"


def resolve_finetune_config(source=None, config: str = DEFAULT_CONFIG, overrides=(),
                            task: str | None = None, model_config=None) -> FinetuneConfig:
    """The recipe with the init checkpoint's model sizes, then the task's own defaults (as the
    original: max_seq_length 512 for SQuAD), then overrides; checked to fit the checkpoint.

    A recipe (with its includes and overrides) that names no optimizer.learning_rate gets
    `learning_rate_for_width` of the resolved model's hidden size, and one that names no
    optimizer.layerwise_lr_decay `layerwise_decay_for_width` (0.9 for Large), so the default
    recipe fits a Small, Base or Large checkpoint as the original's switches do. Without a
    source, `model_config` (a built model's sizes) plays the checkpoint's part."""
    base = FinetuneConfig()
    model_config = source.model_config if source is not None else model_config
    if model_config is not None:
        base = apply_dict(base, {"model": dataclasses.asdict(model_config)},
                          "the init checkpoint" if source is not None else "the model")
    overrides = [*kinds.task_overrides(task), *overrides]
    unset = object()  # tells whether the recipe named a value: resolve once with none in base
    probe = load_config(config, overrides=overrides, base=dataclasses.replace(
        base, optimizer=dataclasses.replace(base.optimizer, learning_rate=unset,
                                            layerwise_lr_decay=unset)), validate=False)
    by_width = {"learning_rate": learning_rate_for_width(probe.model.hidden_size),
                "layerwise_lr_decay": layerwise_decay_for_width(probe.model.hidden_size)}
    chosen = {key: value for key, value in by_width.items()
              if getattr(probe.optimizer, key) is unset}
    base = dataclasses.replace(base, optimizer=dataclasses.replace(base.optimizer, **chosen))
    resolved = load_config(config, overrides=overrides, base=base)
    if source is not None:
        check_fits(source, resolved.model)
    return resolved


def train_micro_batch(config: FinetuneConfig) -> int:
    """The examples of one training micro-batch (for `use_cpu_chains`)."""
    return config.finetune.train_batch_size // max(1, config.finetune.gradient_accumulation_steps)


def _unchecked_micro_batch(config: str, overrides, task: str | None) -> int:
    """`train_micro_batch` of the recipe with the task's defaults and the overrides, read
    before the checkpoint that `resolve_finetune_config` checks them against."""
    return train_micro_batch(load_config(config, overrides=[*kinds.task_overrides(task),
                                                            *overrides],
                                         base=FinetuneConfig(), validate=False))


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
            config: str = DEFAULT_CONFIG, overrides=(), do_predict: bool = False,
            **task_options) -> PreparedTask:
    """Resolves the config for `task` (a name for `load_task`, with its `task_options`, or a
    loaded task) and the encoder `source` (None: from scratch), then loads the task: everything
    that can be refused is refused here, before any training."""
    resolved = resolve_finetune_config(source, config, overrides, _task_name(task))
    if isinstance(task, str):
        task = load_task(task, with_test=do_predict, **task_options)
    return PreparedTask(task, resolved, source)


def finetune(task: str | tasks.TaskData, *, model_dir: str, **options) -> dict:
    """Fine-tunes on one task (a name for `load_task`, or a loaded task) into `model_dir`;
    returns its report. `finetune_tasks` with a single task: the same options, the same steps."""
    return finetune_tasks([task], model_dir=model_dir, **options)[0]


@callbacks.with_preemption  # one SIGTERM handler for every task, the caller's put back after
def finetune_tasks(task_list: Sequence[str | tasks.TaskData], *, model_dir: str,
                   init_checkpoint: str | None = None, config: str = DEFAULT_CONFIG,
                   overrides: Sequence[str] = (), vocab_file: str | None = None,
                   num_trials: int = 1, strategy: str | tf.distribute.Strategy | None = "auto",
                   tpu: str | None = None, mixed_precision: str = "none",
                   jit_compile: bool | None = None, cpu_devices: int = 0, cpu_chains: int = 0,
                   export: bool = True, with_tokenizer: bool = False, do_predict: bool = False,
                   preemption: callbacks.Preemption | None = None,
                   on_report: Callable[[dict, str], None] | None = None,
                   **task_options) -> list[dict]:
    """Fine-tunes on each task in turn from `init_checkpoint` (None: from scratch); the one
    orchestrator behind `run_finetuning` and `finetune`. Returns the reports, one per task
    that ran; a preempted task (SIGTERM) ends the list, and calling again resumes.

    One task trains in `model_dir`, several each in `model_dir/<task>`. `task_options` are
    `load_task`'s (data_dir, use_tfds, train_file, labels, ...). In order:
      1. the machine, before anything runs a TensorFlow op: `cpu_devices` logical CPUs and
         `cpu_chains` chains of ops (0 picks, `distribution.use_cpu_chains`);
      2. every task's config and data, so that whatever can be refused is refused before any
         training;
      3. the strategy (`strategy`, a name or a made one; `tpu`), XLA (`jit_compile`, None:
         on TPUs and GPUs only) and the dtype policy of `mixed_precision` ("none", "bf16",
         "fp16"), the caller's policy put back after;
      4. `num_trials` trials per task; `on_report(report, task_model_dir)` after each task.
    """
    if not model_dir:
        raise RunError("--model_dir is required")
    if num_trials < 1:
        raise RunError(f"--num_trials must be at least 1, got {num_trials}")
    if not task_list:
        raise RunError("no task to fine-tune on")
    strategy = strategy or "auto"
    overrides = list(overrides) + ([f"finetune.vocab_file={vocab_file}"] if vocab_file else [])
    distribution.split_cpu(cpu_devices)
    distribution.use_cpu_chains(cpu_chains, strategy, tpu, micro_batches=[
        _unchecked_micro_batch(config, overrides, _task_name(task)) for task in task_list])
    source = resolve_source(init_checkpoint) if init_checkpoint else None
    prepared = [prepare(task, source=source, config=config, overrides=overrides,
                        do_predict=do_predict, **task_options) for task in task_list]
    if isinstance(strategy, str):
        strategy = distribution.make_strategy(strategy, tpu)
    jit_compile = distribution.use_xla(strategy, jit_compile)
    distribution.warn_if_bfloat16_is_slow(strategy, mixed_precision)
    previous_policy = keras.mixed_precision.dtype_policy()
    keras.mixed_precision.set_dtype_policy(distribution.DTYPE_POLICIES[mixed_precision])
    reports = []
    try:  # the models keep their policy; the caller's global one is left as it was
        for each in prepared:
            task_dir = model_dir if len(prepared) == 1 else os.path.join(
                model_dir, each.task.directory_name)
            report = runner.run_trials(
                each.task, each.config, task_dir, source=each.source, num_trials=num_trials,
                strategy=strategy, jit_compile=jit_compile, export=export,
                with_tokenizer=with_tokenizer, do_predict=do_predict, preemption=preemption)
            reports.append(report)
            if on_report is not None:
                on_report(report, task_dir)
            if report["status"] != "finished":
                break
    finally:
        keras.mixed_precision.set_dtype_policy(previous_policy)
    return reports


def _task_name(task: str | tasks.TaskData) -> str | None:
    return task if isinstance(task, str) else getattr(task, "name", None)
