"""Task data for fine-tuning: a GLUE task (download layout or TFDS) or your own CSV/TSV/JSONL.

A `TaskData` is what a run needs from a task: its examples per split, what the labels mean,
the metric to report, and the original's per-task defaults (epochs, double_unordered).
"""

from __future__ import annotations

import dataclasses
import os
from typing import ClassVar

from electra_tf.task_data import glue
from electra_tf.task_data.classification_data import Example, TaskDataError, read_table
from electra_tf.task_data.classification_features import LabelSpace

TABLE_EXTENSIONS = (".tsv", ".csv", ".jsonl", ".json")


@dataclasses.dataclass
class TaskData:
    kind: ClassVar[str] = "classification"  # its entry in finetuning.kinds
    name: str  # "glue/mnli", "csv"
    label_space: LabelSpace
    metric: str  # a kind of electra_tf.evaluation.metrics.score
    default_epochs: float
    double_unordered: bool
    train: list[Example]
    eval_splits: dict[str, list[Example]]  # the first one selects the best checkpoint
    test_splits: dict[str, list[Example]] = dataclasses.field(default_factory=dict)
    glue_task: glue.GlueTask | None = None

    @property
    def directory_name(self) -> str:
        return self.name.replace("/", "_")


def load_glue_task(name: str, *, data_dir: str | None = None, use_tfds: bool = False,
                   tfds_data_dir: str | None = None, with_test: bool = False) -> TaskData:
    """A GLUE task from its download directory (e.g. GLUE/MNLI) or from TFDS `glue/<task>`."""
    task = glue.get_task(name)
    if use_tfds:
        def read(split):
            return glue.read_tfds_split(task, split, data_dir=tfds_data_dir)
    else:
        if not data_dir:
            raise TaskDataError(f"glue/{task.name} needs --data_dir (the GLUE download folder "
                                f"{task.directory}/) or --tfds")
        def read(split):
            return glue.read_glue_split(task, data_dir, split)
    label_space = LabelSpace(task.labels, task.label_range or (0.0, 1.0))
    return TaskData(
        name=f"glue/{task.name}", label_space=label_space, metric=task.metric,
        default_epochs=task.default_epochs, double_unordered=task.double_unordered,
        train=read("train"), eval_splits={split: read(split) for split in task.eval_splits},
        test_splits={split: read(split) for split in task.test_splits} if with_test else {},
        glue_task=task)


def _find_split_file(data_dir: str, split: str) -> str | None:
    for extension in TABLE_EXTENSIONS:
        path = os.path.join(data_dir, split + extension)
        if os.path.exists(path):
            return path
    return None


def load_table_task(*, data_dir: str | None = None, train_file: str | None = None,
                    dev_file: str | None = None, test_file: str | None = None,
                    text_a_column: str, text_b_column: str | None = None, label_column: str,
                    labels: list[str] | None = None, regression: bool = False,
                    label_range: tuple[float, float] = (0.0, 1.0),
                    with_test: bool = False) -> TaskData:
    """Your own task: CSV, TSV or JSON Lines files (train.*, dev.*, test.* in data_dir, or
    explicit files), columns by header name or index, and the label names or a regression range."""
    if not labels and not regression:
        raise TaskDataError("the csv task needs --labels (the label names, in order) or --regression")
    if labels and regression:
        raise TaskDataError("give either --labels or --regression, not both")
    if not text_a_column or label_column is None:
        raise TaskDataError("the csv task needs --text_a_column and --label_column")
    if data_dir:
        train_file = train_file or _find_split_file(data_dir, "train")
        dev_file = dev_file or _find_split_file(data_dir, "dev")
        test_file = test_file or _find_split_file(data_dir, "test")
        for split, path in (("train", train_file), ("dev", dev_file)):
            if path is None:
                raise TaskDataError(f"{data_dir} has no {split} file ({split}.tsv, {split}.csv or "
                                    f"{split}.jsonl); it holds: "
                                    f"{', '.join(sorted(os.listdir(data_dir))) or 'nothing'}")
    if not train_file or not dev_file:
        raise TaskDataError("the csv task needs --data_dir, or --train_file and --dev_file")
    label_names = tuple(labels) if labels else None
    low, high = label_range
    if regression and not high > low:
        raise TaskDataError(f"--label_range needs min < max, got {low} {high}")

    def read(path, split, labelled=True):
        return read_table(path, text_a_column=text_a_column, text_b_column=text_b_column,
                          label_column=label_column if labelled else None, labels=label_names,
                          regression=regression, split=split)

    test_splits = {}
    if with_test:
        if not test_file:
            raise TaskDataError("--do_predict needs a test file (test.* in --data_dir or --test_file)")
        test_splits["test"] = read(test_file, "test", labelled=False)
    return TaskData(
        name="csv", label_space=LabelSpace(label_names, (low, high)),
        metric="pearson_spearman" if regression else "accuracy", default_epochs=3.0,
        double_unordered=False, train=read(train_file, "train"),
        eval_splits={"dev": read(dev_file, "dev")}, test_splits=test_splits)
