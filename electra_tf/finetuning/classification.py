"""The classification / regression kind of task (GLUE, csv): features in memory, the original's
[CLS] head, GLUE metrics, the classifier SavedModel and GLUE submission files.

A job is what `runner.run_trial` drives; every task kind provides one (`common.TaskJob`) and
declares itself in a `KIND` (`common.TaskKind`), listed in `kinds.py`.
"""

from __future__ import annotations

import os

import numpy as np
import tensorflow as tf

from electra_tf.config import FinetuneConfig
from electra_tf.evaluation.metrics import HEADLINE, score
from electra_tf.export.classifier import export_classifier
from electra_tf.finetuning import tasks
from electra_tf.finetuning.common import (ExportOptions, TaskKind, TaskOptions, batched_inputs,
                                          check_vocabulary, shuffled_batches)
from electra_tf.models.classifier import ElectraClassifier
from electra_tf.models.task_model import INPUT_NAMES
from electra_tf.task_data import glue
from electra_tf.task_data.classification_features import featurize, swap_pairs
from electra_tf.text.vocab_files import load_special_ids, make_file_tokenizer


def train_dataset(features: dict, batch_size: int, seed: int, skip_batches: int = 0):
    inputs = {name: features[name] for name in INPUT_NAMES}
    n = len(features["labels"])
    return shuffled_batches(tf.data.Dataset.from_tensor_slices((inputs, features["labels"])), n,
                            batch_size, seed, skip_batches)


def predict(model, features: dict, batch_size: int) -> np.ndarray:
    """Model outputs for every example; padded to whole batches, then trimmed."""
    dataset, n = batched_inputs(features, batch_size)
    return np.asarray(model.predict(dataset, verbose=0))[:n]


class ClassificationJob:
    """A `TaskData` (examples) featurized in memory, with everything a trial needs."""

    def __init__(self, task, config: FinetuneConfig, vocab_file: str):
        check_vocabulary(vocab_file, config)
        tokenizer = make_file_tokenizer(vocab_file, lower_case=config.finetune.lower_case)
        ids = load_special_ids(vocab_file)
        run = config.finetune

        def features(examples):
            return featurize(examples, tokenizer, ids, run.max_seq_length, task.label_space)

        train = list(task.train)
        if task.double_unordered and run.double_unordered:
            train += swap_pairs(train)
        self.task, self.config, self.vocab_file = task, config, vocab_file
        self.train = features(train)
        self.eval_splits = {k: features(v) for k, v in task.eval_splits.items()}
        self.test_splits = {k: features(v) for k, v in task.test_splits.items()}
        self.name = task.name
        self.headline = HEADLINE[task.metric]
        self.default_epochs = task.default_epochs
        self.num_train = len(self.train["labels"])
        regression = task.label_space.regression
        self.metric_names = ("loss",) if regression else ("loss", "accuracy")

    def build_model(self):
        return KIND.build_model(self.card(), self.config)

    def train_dataset(self, batch_size: int, seed: int, skip_batches: int = 0):
        return train_dataset(self.train, batch_size, seed, skip_batches)

    def evaluate(self, model, batch_size: int, output_dir: str | None = None
                 ) -> dict[str, dict[str, float]]:
        """The task's metrics (x100, as the original reports them) on every dev split
        (GLUE dev predictions are not written: `output_dir` is unused)."""
        results = {}
        space = self.task.label_space
        for split, features in self.eval_splits.items():
            outputs = predict(model, features, batch_size)
            if space.regression:
                results[split] = score(self.task.metric, space.decode_regression(features["labels"]),
                                       space.decode_regression(outputs))
            else:
                results[split] = score(self.task.metric, features["labels"], outputs.argmax(-1),
                                       num_labels=space.num_labels)
        return results

    def is_pair(self) -> bool:
        return any(e.text_b is not None for e in self.task.train[:100])

    def card(self) -> dict:
        """task.json: what `export_savedmodel` needs to rebuild and export the checkpoint."""
        space = self.task.label_space
        return {"task": self.name, "kind": "classification",
                "labels": list(space.labels) if space.labels else None,
                "label_range": list(space.label_range), "pair": self.is_pair()}

    def export(self, model, export_dir: str, with_tokenizer: bool) -> str:
        return KIND.export(model, export_dir, self.card(), self.config,
                           ExportOptions(with_tokenizer=with_tokenizer, vocab_file=self.vocab_file))

    def write_predictions(self, model, output_dir: str, batch_size: int) -> dict[str, str]:
        """Test-set predictions: GLUE submission files for GLUE tasks, else test.tsv (id, label)."""
        written = {}
        space, task = self.task.label_space, self.task
        for split, examples in task.test_splits.items():
            outputs = predict(model, self.test_splits[split], batch_size)
            if space.regression:
                labels = [float(v) for v in space.decode_regression(outputs)]
            else:
                labels = [space.labels[i] for i in outputs.argmax(-1)]
            if task.glue_task is not None:
                written[split] = glue.write_submission(task.glue_task, split, examples, labels,
                                                       output_dir)
            else:
                path = os.path.join(output_dir, f"{split}.tsv")
                with tf.io.gfile.GFile(path, "w") as f:
                    f.write("id\tlabel\n" + "".join(f"{e.guid}\t{label}\n"
                                                    for e, label in zip(examples, labels)))
                written[split] = path
        return written


def _load(name: str, options: TaskOptions) -> tasks.TaskData:
    if name == "csv":
        return tasks.load_table_task(
            data_dir=options.data_dir, train_file=options.train_file, dev_file=options.dev_file,
            test_file=options.test_file, text_a_column=options.text_a_column,
            text_b_column=options.text_b_column, label_column=options.label_column,
            labels=options.labels, regression=options.regression,
            label_range=options.label_range, with_test=options.with_test)
    return tasks.load_glue_task(name, data_dir=options.data_dir, use_tfds=options.use_tfds,
                                tfds_data_dir=options.tfds_data_dir, with_test=options.with_test)


def _model_arguments(card: dict, config: FinetuneConfig) -> dict:
    labels = card.get("labels")
    return {"num_labels": len(labels) if labels else 1, "regression": labels is None,
            "dropout": config.finetune.head_dropout,
            "loss_reduction": config.finetune.loss_reduction}


def _export(model, export_dir: str, card: dict, config: FinetuneConfig,
            options: ExportOptions) -> str:
    return export_classifier(
        model, export_dir, task=card["task"], label_names=card["labels"],
        label_range=tuple(card["label_range"]), with_examples=options.with_examples,
        with_tokenizer=options.with_tokenizer, pair=card["pair"], vocab_file=options.vocab_file,
        lower_case=config.finetune.lower_case,
        max_seq_length=options.max_seq_length or config.finetune.max_seq_length,
        jit_compile=options.jit_compile)


KIND = TaskKind(
    name="classification",
    task_names=(*(f"glue/{name}" for name in glue.GLUE_TASKS), "csv"),
    name_prefixes=("glue/",),  # load_glue_task names the GLUE tasks for an unknown one
    load=_load,
    make_job=lambda task, config, vocab_file, work_dir: ClassificationJob(task, config, vocab_file),
    model_class=ElectraClassifier,
    model_arguments=_model_arguments,
    export=_export,
)
