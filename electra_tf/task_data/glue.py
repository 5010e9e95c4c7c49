"""The GLUE tasks: their table, readers for the GLUE download layout and TFDS, submission files.

The file readers follow the original's (reference notes section 3.3): TSV files as written by
`download_glue_data.py` (`CoLA/train.tsv`, `MNLI/dev_matched.tsv`, `diagnostic/diagnostic.tsv`,
...), read without quoting, with the original's column positions. Train and dev examples get
the guid "<split>-<row>"; test examples the id column the GLUE server expects back. Test labels
are None. `double_unordered` is only a flag here: doubling MRPC and STS-B train sets with the
pair swapped is left to the caller.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from typing import Sequence

from electra_tf.task_data.classification_data import (Example, TaskDataError, is_remote,
                                                 path_exists, read_table)

BINARY = ("0", "1")
NLI_THREE_WAY = ("contradiction", "entailment", "neutral")
NLI_TWO_WAY = ("entailment", "not_entailment")


@dataclasses.dataclass(frozen=True)
class GlueTask:
    """One GLUE task: where its files are, its labels, metric and fine-tuning defaults."""

    name: str
    directory: str
    labels: tuple[str, ...] | None
    label_range: tuple[float, float] | None
    metric: str
    default_epochs: float
    double_unordered: bool
    eval_splits: tuple[str, ...]
    test_splits: tuple[str, ...]
    tfds_name: str

    @property
    def is_regression(self) -> bool:
        return self.labels is None

    @property
    def splits(self) -> tuple[str, ...]:
        return ("train",) + self.eval_splits + self.test_splits


def _task(name, directory, labels, metric="accuracy", *, epochs=3.0, double_unordered=False,
          eval_splits=("dev",), test_splits=("test",), label_range=None) -> GlueTask:
    return GlueTask(name=name, directory=directory, labels=labels, label_range=label_range,
                    metric=metric, default_epochs=epochs, double_unordered=double_unordered,
                    eval_splits=eval_splits, test_splits=test_splits, tfds_name=f"glue/{name}")


GLUE_TASKS: dict[str, GlueTask] = {task.name: task for task in [
    _task("cola", "CoLA", BINARY, "mcc"),
    _task("sst2", "SST-2", BINARY),
    _task("mrpc", "MRPC", BINARY, "f1_accuracy", double_unordered=True),
    _task("stsb", "STS-B", None, "pearson_spearman", epochs=10.0, double_unordered=True,
          label_range=(0.0, 5.0)),
    _task("qqp", "QQP", BINARY, "f1_accuracy"),
    _task("mnli", "MNLI", NLI_THREE_WAY, eval_splits=("dev_matched", "dev_mismatched"),
          test_splits=("test_matched", "test_mismatched", "diagnostic")),
    _task("qnli", "QNLI", NLI_TWO_WAY),
    _task("rte", "RTE", NLI_TWO_WAY, epochs=10.0),
    _task("wnli", "WNLI", BINARY),
]}

_ALIASES = {"sst": "sst2", "sts": "stsb"}


def get_task(name: str | GlueTask) -> GlueTask:
    """The task for "cola", "glue/cola", "CoLA", "sst-2", "sst", "sts-b", "sts", ..."""
    if isinstance(name, GlueTask):
        return name
    key = re.sub(r"[-_\s]", "", name.strip().lower().removeprefix("glue/"))
    key = _ALIASES.get(key, key)
    if key not in GLUE_TASKS:
        raise TaskDataError(f"unknown GLUE task {name!r} (known: {', '.join(GLUE_TASKS)})")
    return GLUE_TASKS[key]


def resolve_split(task: str | GlueTask, split: str) -> str:
    """The split's file name stem; MNLI's "dev" is "dev_matched", as in the original."""
    task = get_task(task)
    if task.name == "mnli" and split == "dev":
        return "dev_matched"
    if split not in task.splits:
        raise TaskDataError(f"GLUE task {task.name} has no split {split!r} "
                            f"(splits: {', '.join(task.splits)})")
    return split


# ---------------------------------------------------------------------------------------------
# Files in the GLUE download layout


@dataclasses.dataclass(frozen=True)
class _Columns:
    """0-based column positions of one kind of GLUE file."""

    text_a: int
    text_b: int | None = None
    label: int | None = None
    id: int | None = None
    header: bool = True


_LABELLED_COLUMNS = {
    "cola": _Columns(3, label=1, header=False),
    "sst2": _Columns(0, label=1),
    "mrpc": _Columns(3, 4, label=0),
    "stsb": _Columns(-3, -2, label=-1),
    "qqp": _Columns(3, 4, label=5),
    "mnli": _Columns(8, 9, label=-1),
    "qnli": _Columns(1, 2, label=3),
    "rte": _Columns(1, 2, label=3),
    "wnli": _Columns(1, 2, label=3),
}
_TEST_COLUMNS = {
    "cola": _Columns(1, id=0),
    "sst2": _Columns(1, id=0),
    "mrpc": _Columns(3, 4, id=0),
    "stsb": _Columns(-2, -1, id=0),
    "qqp": _Columns(1, 2, id=0),
    "mnli": _Columns(8, 9, id=0),
    "qnli": _Columns(1, 2, id=0),
    "rte": _Columns(1, 2, id=0),
    "wnli": _Columns(1, 2, id=0),
}
_DIAGNOSTIC_COLUMNS = _Columns(1, 2, id=0)


def _columns(task: GlueTask, split: str) -> _Columns:
    if split == "diagnostic":
        return _DIAGNOSTIC_COLUMNS
    if split in task.test_splits:
        return _TEST_COLUMNS[task.name]
    return _LABELLED_COLUMNS[task.name]


def _isdir(path: str) -> bool:
    if is_remote(path):
        import tensorflow as tf
        return tf.io.gfile.isdir(path)
    return os.path.isdir(path)


def _describe_contents(directory: str) -> str:
    if not _isdir(directory):
        return "no such directory"
    if is_remote(directory):
        import tensorflow as tf
        names = sorted(name.rstrip("/") for name in tf.io.gfile.listdir(directory))
    else:
        names = sorted(os.listdir(directory))
    if not names:
        return "it is empty"
    shown = ", ".join(names[:12]) + (f", ... ({len(names)} entries)" if len(names) > 12 else "")
    return f"it holds: {shown}"


def task_directory(task: str | GlueTask, data_dir: str | os.PathLike) -> str:
    """`data_dir` itself, or its subdirectory for the task when it is the GLUE root."""
    task = get_task(task)
    data_dir = os.fspath(data_dir)
    for name in (task.directory, task.name):
        candidate = os.path.join(data_dir, name)
        if _isdir(candidate):
            return candidate
    return data_dir


def split_path(task: str | GlueTask, data_dir: str | os.PathLike, split: str) -> str:
    """The TSV file of a split; TaskDataError naming the file expected if it is not there.

    `data_dir` is the task's directory (`glue_data/MNLI`) or the GLUE root (`glue_data`). The
    diagnostic set (AX) is `diagnostic.tsv` in the task's directory, or
    `diagnostic/diagnostic.tsv` next to it, where `download_glue_data.py` puts it.
    """
    task = get_task(task)
    split = resolve_split(task, split)
    data_dir = os.fspath(data_dir)
    directory = task_directory(task, data_dir)
    filename = f"{split}.tsv"
    candidates = [os.path.join(directory, filename)]
    if split == "diagnostic":
        candidates += [os.path.join(os.path.dirname(directory.rstrip("/")), "diagnostic",
                                    filename),
                       os.path.join(data_dir, "diagnostic", filename)]
    for path in candidates:
        if path_exists(path) and not _isdir(path):
            return path
    if split == "diagnostic":
        raise TaskDataError(f"no {filename} for GLUE AX in {directory} or "
                            f"{os.path.dirname(candidates[1])} "
                            f"({_describe_contents(directory)})")
    raise TaskDataError(f"no {filename} for GLUE {task.directory} {split} in {directory} "
                        f"({_describe_contents(directory)})")


def read_glue_split(task: str | GlueTask, data_dir: str | os.PathLike, split: str) -> list[Example]:
    """The examples of one split of a GLUE task from its TSV file (see `split_path`).

    QQP's train file has a few lines with missing fields; those are skipped with a warning.
    Any other malformed line is a TaskDataError naming the file and line.
    """
    task = get_task(task)
    split = resolve_split(task, split)
    columns = _columns(task, split)
    return read_table(split_path(task, data_dir, split), text_a_column=columns.text_a,
                      text_b_column=columns.text_b, label_column=columns.label,
                      labels=task.labels, regression=task.is_regression,
                      label_range=task.label_range, split=split, file_format="tsv",
                      header=columns.header, id_column=columns.id,
                      skip_short_rows=task.name == "qqp")


# ---------------------------------------------------------------------------------------------
# TFDS

_TFDS_TEXT_FEATURES = {
    "cola": ("sentence", None),
    "sst2": ("sentence", None),
    "mrpc": ("sentence1", "sentence2"),
    "stsb": ("sentence1", "sentence2"),
    "qqp": ("question1", "question2"),
    "mnli": ("premise", "hypothesis"),
    "qnli": ("question", "sentence"),
    "rte": ("sentence1", "sentence2"),
    "wnli": ("sentence1", "sentence2"),
}
_TFDS_LABEL_NAMES = {
    "cola": {"unacceptable": "0", "acceptable": "1"},
    "sst2": {"negative": "0", "positive": "1"},
    "mrpc": {"not_equivalent": "0", "equivalent": "1"},
    "qqp": {"not_duplicate": "0", "duplicate": "1"},
    "wnli": {"not_entailment": "0", "entailment": "1"},
}
_TFDS_SPLITS = {"dev": "validation", "dev_matched": "validation_matched",
                "dev_mismatched": "validation_mismatched"}


def tfds_source(task: str | GlueTask, split: str) -> tuple[str, str]:
    """The TFDS dataset name and split of a GLUE split ("diagnostic" is `glue/ax` test)."""
    task = get_task(task)
    split = resolve_split(task, split)
    if split == "diagnostic":
        return "glue/ax", "test"
    return task.tfds_name, _TFDS_SPLITS.get(split, split)


def _tfds_label(task: GlueTask, value, names: Sequence[str] | None) -> str | float | None:
    if task.is_regression:
        return float(value)
    if int(value) < 0:
        return None
    name = names[int(value)]
    label = _TFDS_LABEL_NAMES.get(task.name, {}).get(name, name)
    if label not in task.labels:
        raise TaskDataError(f"TFDS {task.tfds_name} label {name!r} is not one of "
                            f"{', '.join(task.labels)}")
    return label


def _decode(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def read_tfds_split(task: str | GlueTask, split: str,
                    data_dir: str | None = None) -> list[Example]:
    """The examples of one split of a GLUE task from `tensorflow_datasets` (`glue/<task>`).

    Class indices are mapped to this module's label strings by class name (TFDS orders MNLI's
    classes differently). Test splits have no labels (None). The guid is TFDS's `idx` (the
    row of the GLUE file): "<split>-<idx>" as the file reader gives, or for test splits the
    bare `idx`, which is the GLUE test index.
    """
    import tensorflow_datasets as tfds

    task = get_task(task)
    split = resolve_split(task, split)
    name, tfds_split = tfds_source(task, split)
    try:
        dataset, info = tfds.load(name, split=tfds_split, data_dir=data_dir,
                                  shuffle_files=False, with_info=True)
    except (tfds.core.registered.DatasetNotFoundError, ValueError, KeyError) as e:
        first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise TaskDataError(f"cannot load TFDS dataset {name!r} split {tfds_split!r}: "
                            f"{first_line}") from None
    names = getattr(info.features["label"], "names", None)
    key_a, key_b = _TFDS_TEXT_FEATURES[task.name]
    labelled = split not in task.test_splits
    examples = []
    for record in tfds.as_numpy(dataset):
        index = int(record["idx"])
        examples.append(Example(
            guid=f"{split}-{index}" if labelled else str(index),
            text_a=_decode(record[key_a]),
            text_b=_decode(record[key_b]) if key_b else None,
            label=_tfds_label(task, record["label"], names) if labelled else None))
    if not examples:
        raise TaskDataError(f"TFDS dataset {name!r} split {tfds_split!r} holds no examples")
    return examples


# ---------------------------------------------------------------------------------------------
# GLUE server submission

SUBMISSION_FILES: dict[tuple[str, str], str] = {
    ("cola", "test"): "CoLA.tsv",
    ("sst2", "test"): "SST-2.tsv",
    ("mrpc", "test"): "MRPC.tsv",
    ("stsb", "test"): "STS-B.tsv",
    ("qqp", "test"): "QQP.tsv",
    ("mnli", "test_matched"): "MNLI-m.tsv",
    ("mnli", "test_mismatched"): "MNLI-mm.tsv",
    ("mnli", "diagnostic"): "AX.tsv",
    ("qnli", "test"): "QNLI.tsv",
    ("rte", "test"): "RTE.tsv",
    ("wnli", "test"): "WNLI.tsv",
}


def _submission_label(task: GlueTask, prediction) -> str:
    if task.is_regression:
        low, high = task.label_range
        value = float(prediction)
        if not math.isfinite(value):
            raise ValueError(f"GLUE {task.name} prediction {prediction!r} is not a number")
        return f"{min(max(value, low), high):.3f}"
    if not isinstance(prediction, str) or prediction not in task.labels:
        raise ValueError(f"GLUE {task.name} prediction {prediction!r} is not one of "
                         f"{', '.join(task.labels)}")
    return prediction


def write_submission(task: str | GlueTask, split: str, examples: Sequence[Example],
                     predictions: Sequence, output_dir: str | os.PathLike) -> str:
    """Writes the GLUE server's TSV for a test split (`id<TAB>label`); returns its path.

    `predictions` holds label strings, or for STS-B floats on the 0-5 scale (clipped to it and
    written with three decimals), one per example and in the same order.
    """
    task = get_task(task)
    split = resolve_split(task, split)
    if (task.name, split) not in SUBMISSION_FILES:
        submitted = ", ".join(s for t, s in SUBMISSION_FILES if t == task.name)
        raise ValueError(f"GLUE {task.name} split {split!r} is not submitted to the GLUE server "
                         f"(submitted splits: {submitted})")
    if len(examples) != len(predictions):
        raise ValueError(f"{len(examples)} examples but {len(predictions)} predictions "
                         f"for GLUE {task.name} {split}")
    lines = ["id\tlabel"] + [f"{example.guid}\t{_submission_label(task, prediction)}"
                             for example, prediction in zip(examples, predictions)]
    path = os.path.join(os.fspath(output_dir), SUBMISSION_FILES[task.name, split])
    _write_text(path, "\n".join(lines) + "\n")
    return path


def _write_text(path: str, text: str) -> None:
    if is_remote(path):
        import tensorflow as tf
        tf.io.gfile.makedirs(os.path.dirname(path))
        with tf.io.gfile.GFile(path, "w") as f:
            f.write(text)
        return
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)
