"""`FinetuneJob`: a fine-tuning call resolved before it starts, the value `finetune_tasks` takes.

    job = resolve_finetune_job(["glue/rte", "glue/mrpc"], model_dir="runs/glue",
                               init_checkpoint="runs/small", data_dir="glue_data", num_trials=3)
    job.micro_batches()         # [32, 32]: what `distribution.use_cpu_chains` splits
    reports = finetune_tasks(job)

The recipe is read from disk once (`config.read_recipe`: its includes and the user's
overrides); each task's `FinetuneConfig` is built from it when the encoder it starts from is
known (`api.resolve_finetune_config`: the checkpoint's sizes, the task kind's defaults, the
learning rate by width), without reading the recipe again.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from electra_tf.config import FinetuneConfig, Recipe, read_recipe
from electra_tf.errors import RunError
from electra_tf.finetuning import kinds
from electra_tf.finetuning.common import TaskOptions
from electra_tf.training.device_flags import DeviceOptions

# The recipe without --config: it learns on small models and small training sets too.
DEFAULT_CONFIG = "finetune/default"


def task_name(task) -> str | None:
    """A task's name: the name given, or a loaded task's `name` (None if it has none)."""
    return task if isinstance(task, str) else getattr(task, "name", None)


def train_micro_batch(config: FinetuneConfig) -> int:
    """The examples of one training micro-batch (for `use_cpu_chains`)."""
    return config.finetune.train_batch_size // max(1, config.finetune.gradient_accumulation_steps)


@dataclasses.dataclass(frozen=True)
class FinetuneJob:
    """Everything a `finetune_tasks` call does, resolved: see `resolve_finetune_job`.

    `tasks` are names for `api.load_task` (read with `task_options`) or loaded tasks; one task
    trains in `model_dir`, several each in `model_dir/<task>`."""

    tasks: tuple[Any, ...]
    model_dir: str
    recipe: Recipe
    init_checkpoint: str | None = None
    num_trials: int = 1
    devices: DeviceOptions = DeviceOptions()
    export: bool = True
    with_tokenizer: bool = False
    do_predict: bool = False
    task_options: TaskOptions = TaskOptions()

    def micro_batches(self) -> list[int]:
        """Each task's training micro-batch, from the recipe with the task's defaults and the
        overrides, before the checkpoint that the configs are checked against is read."""
        return [train_micro_batch(self.recipe.build(
            FinetuneConfig(), kinds.task_overrides(task_name(task)), validate=False))
            for task in self.tasks]


def resolve_finetune_job(task_list: Sequence, *, model_dir: str | None,
                         init_checkpoint: str | None = None, config: str | None = None,
                         overrides: Sequence[str] = (), vocab_file: str | None = None,
                         num_trials: int = 1, strategy: Any = "auto", tpu: str | None = None,
                         mixed_precision: str = "none", jit_compile: bool | None = None,
                         cpu_devices: int = 0, cpu_chains: int = 0, export: bool = True,
                         with_tokenizer: bool = False, do_predict: bool = False,
                         devices: DeviceOptions | None = None, **task_options) -> FinetuneJob:
    """Reads the recipe once and checks the call; `electra_tf.UserError` (one line) for
    anything that cannot work. Nothing is read but the recipe, nothing is written.

    The arguments are `api.finetune_tasks`' (see there); `devices` may replace the six device
    arguments as one value; `task_options` are `common.TaskOptions`' fields.
    """
    if not model_dir:
        raise RunError("--model_dir is required")
    if num_trials < 1:
        raise RunError(f"--num_trials must be at least 1, got {num_trials}")
    if not task_list:
        raise RunError("no task to fine-tune on")
    overrides = [*overrides, *([f"finetune.vocab_file={vocab_file}"] if vocab_file else [])]
    devices = devices or DeviceOptions(strategy or "auto", tpu, mixed_precision, jit_compile,
                                       cpu_devices, cpu_chains)
    return FinetuneJob(tuple(task_list), model_dir,
                       read_recipe(config or DEFAULT_CONFIG, overrides), init_checkpoint,
                       num_trials, devices, export, with_tokenizer, do_predict,
                       TaskOptions(**task_options, with_test=do_predict))
