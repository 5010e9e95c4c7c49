"""What every kind of fine-tuning task shares: the contract a kind fills in (`TaskKind`, the job
it featurizes, `TaskJob`), the options that say where its data is and how to export it, the
error of a run that cannot go on, and the input helpers of in-memory features.

The kinds themselves (`classification.py`, `question_answering.py`, `tagging.py`) each define
a `KIND`; `kinds.py` is the registry that lists them.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Protocol, Sequence

import numpy as np
import tensorflow as tf

from electra_tf.config import FinetuneConfig
from electra_tf.errors import UserError
from electra_tf.models.task_model import INPUT_NAMES
from electra_tf.text.vocab_files import load_tokens


class FinetuneError(UserError):
    """A fine-tuning run that cannot start or finish as asked."""


class TaskJob(Protocol):
    """One task featurized for a run: what `runner.run_trial` needs, whatever the task kind."""

    name: str  # "glue/mnli", "squad/v2.0"
    headline: str  # the dev metric that selects "best" and summarizes trials
    metric_names: tuple  # training metrics on the progress lines
    default_epochs: float
    num_train: int  # training features (windows for SQuAD)

    def build_model(self): ...
    def train_dataset(self, batch_size: int, seed: int, skip_batches: int = 0): ...
    def evaluate(self, model, batch_size: int, output_dir: str | None = None
                 ) -> dict[str, dict[str, float]]: ...  # output_dir: prediction files, if any
    def card(self) -> dict: ...  # task.json: the kind, the task and what rebuilds the model
    def export(self, model, export_dir: str, with_tokenizer: bool) -> str: ...
    def write_predictions(self, model, output_dir: str, batch_size: int) -> dict[str, str]: ...


@dataclasses.dataclass(frozen=True)
class TaskOptions:
    """Where a task's data is and how to read it (`load_task`'s keyword arguments); each kind
    reads the options it knows."""

    data_dir: str | None = None
    use_tfds: bool = False
    tfds_data_dir: str | None = None
    train_file: str | None = None
    dev_file: str | None = None
    test_file: str | None = None
    predict_file: str | None = None
    text_a_column: str | None = None
    text_b_column: str | None = None
    label_column: str | None = None
    labels: Sequence[str] | None = None
    regression: bool = False
    label_range: tuple[float, float] = (0.0, 1.0)
    tag_column: int = -1
    with_test: bool = False


@dataclasses.dataclass(frozen=True)
class ExportOptions:
    """How to write a fine-tuned model's SavedModel (`export_savedmodel`'s flags)."""

    with_tokenizer: bool = False
    with_examples: bool = True
    vocab_file: str | None = None
    max_seq_length: int | None = None  # None: the run's finetune.max_seq_length
    jit_compile: bool = False  # the forward pass XLA-compiled (electra_tf.export.savedmodel)


@dataclasses.dataclass(frozen=True)
class TaskKind:
    """One kind of task, everything about it in one place.

    `load`, `make_job`, the model and its export are all a run, `electra_tf.load` and
    `export_savedmodel` need; a run's task card (task.json, from `TaskJob.card`) names the kind
    and holds what `model_arguments` and `export` read back.
    """

    name: str  # the task card's "kind"
    task_names: tuple[str, ...]  # names `load_task` takes
    load: Callable[[str, TaskOptions], Any]  # (task name, options) -> the task's data
    make_job: Callable[[Any, FinetuneConfig, str, str], TaskJob]  # (task, config, vocab, work dir)
    model_class: type
    model_arguments: Callable[[dict, FinetuneConfig], dict]  # (card, config) -> constructor kwargs
    export: Callable[[Any, str, dict, FinetuneConfig, ExportOptions], str]  # -> export path
    default_max_seq_length: int | None = None  # the original's for this kind, if not the recipe's
    name_prefixes: tuple[str, ...] = ()  # families of names ("glue/") whose loader checks the rest

    def handles(self, task_name: str) -> bool:
        return task_name in self.task_names or any(task_name.startswith(prefix)
                                                   for prefix in self.name_prefixes)

    def build_model(self, card: dict, config: FinetuneConfig):
        """The model a run with this card and config trains (unbuilt, weights fresh)."""
        return self.model_class(config.model, **self.model_arguments(card, config))


def check_vocabulary(vocab_file: str, config: FinetuneConfig) -> list[str]:
    vocabulary = load_tokens(vocab_file)
    if len(vocabulary) > config.model.vocab_size:
        raise FinetuneError(f"{vocab_file} has {len(vocabulary)} tokens, more than the model's "
                            f"vocab_size {config.model.vocab_size}: not the model's vocabulary")
    return vocabulary


def batched_inputs(features: dict, batch_size: int) -> tuple[tf.data.Dataset, int]:
    """The int inputs of every row, padded to whole batches (static shapes); (dataset, rows)."""
    n = len(features["input_ids"])
    padded = -(-n // batch_size) * batch_size
    inputs = {name: np.pad(features[name], [(0, padded - n), (0, 0)]) for name in INPUT_NAMES}
    return tf.data.Dataset.from_tensor_slices(inputs).batch(batch_size, drop_remainder=True), n


def shuffled_batches(dataset: tf.data.Dataset, buffer: int, batch_size: int, seed: int,
                     skip_batches: int = 0) -> tf.data.Dataset:
    """Shuffled anew each epoch (a pure function of the seed, so a resumed run skips exactly
    what was consumed), repeated, static batches."""
    return (dataset.shuffle(buffer, seed=seed, reshuffle_each_iteration=True).repeat()
            .batch(batch_size, drop_remainder=True).skip(skip_batches)
            .prefetch(tf.data.AUTOTUNE))
