"""The registry of task kinds: classification and regression (GLUE, csv), extractive QA (SQuAD,
MRQA) and token tagging (CoNLL chunking and named entities).

Each kind declares its data reading, job (features, metrics, decoding), model and export in
its own module as a `common.TaskKind`; `run_finetuning`, the Python API (`load_task`,
`finetune`), `electra_tf.load` and `export_savedmodel` look kinds up here. A new kind is one
new module and one entry in `KINDS`.
"""

from __future__ import annotations

from electra_tf.finetuning import classification, question_answering, tagging
from electra_tf.finetuning.common import TaskKind, TaskOptions
from electra_tf.task_data.classification_data import TaskDataError

KINDS: dict[str, TaskKind] = {kind.name: kind for kind in (
    classification.KIND,
    question_answering.KIND,
    tagging.KIND,
)}


def task_names() -> list[str]:
    """Every task name `load_task` takes."""
    return [name for kind in KINDS.values() for name in kind.task_names]


def kind_for_task_name(task_name: str) -> TaskKind:
    for kind in KINDS.values():
        if kind.handles(task_name):
            return kind
    raise TaskDataError(f"unknown task {task_name!r}; choose from {', '.join(task_names())}")


def kind_of(task) -> TaskKind:
    """The kind of a loaded task (`TaskData`, `SquadTask`, `TaggingTask`: their `kind`)."""
    return KINDS[task.kind]


def kind_named(name: str) -> TaskKind | None:
    """The kind a task card names (None: not a known kind)."""
    return KINDS.get(name)


def load_task_with_options(name: str, options: TaskOptions):
    """The task's data, read by its kind."""
    return kind_for_task_name(name).load(name, options)


def task_overrides(task_name: str | None) -> list[str]:
    """Config values a task's kind changes from the recipe's, before the user's overrides (the
    original's per-kind settings: SQuAD reads windows of 512 tokens, tagging 256)."""
    if task_name is None:
        return []
    kind = next((k for k in KINDS.values() if k.handles(task_name)), None)
    if kind is None or kind.default_max_seq_length is None:
        return []
    return [f"finetune.max_seq_length={kind.default_max_seq_length}"]
