"""The token-tagging job of a fine-tuning run: CoNLL chunking (the original's `chunk` task) and
named entities in the same layout (`ner`), from files or TFDS `conll2003`.

As the original (`finetune/tagging/`): tags read as spans and re-encoded as BIOES, the tag set
sorted over the splits, only the first piece of each word tagged, windows of 256 tokens, 3
epochs, span-level F1 over the words that truncation kept (the headline), token accuracy beside.

Layout added to the run directory:
  <trial>/predictions/dev/<split>.txt  after every evaluation: `word gold predicted` lines
      (BIOES tags; a blank line between sentences; conlleval and seqeval read it); words cut by
      truncation are predicted "O"
  <trial>/predictions/test.txt         with --do_predict: `word predicted` lines
"""

from __future__ import annotations

import dataclasses
import os
from typing import ClassVar

import numpy as np
import tensorflow as tf
from absl import logging

from electra_tf.config import FinetuneConfig
from electra_tf.task_data.classification_data import TaskDataError
from electra_tf.task_data.tagging import (TaggedSentence, TagSpace, featurize_tagging,
                                     predicted_word_tags, read_conll, read_tfds_conll, to_bioes)
from electra_tf.text.vocab_files import load_special_ids, make_file_tokenizer
from electra_tf.evaluation.tagging_metrics import tagging_scores
from electra_tf.export.tagger import export_tagger
from electra_tf.finetuning.common import (ExportOptions, TaskKind, TaskOptions, batched_inputs,
                                          check_vocabulary, shuffled_batches)
from electra_tf.models.tagger import ElectraTagger
from electra_tf.models.task_model import INPUT_NAMES

# Task name -> the TFDS conll2003 feature holding its tags. (TFDS has CoNLL-2003, whose chunk
# column is not CoNLL-2000, the original's chunking data: give those files with --data_dir.)
TAGGING_TASKS = {"chunk": "chunks", "ner": "ner"}
DEFAULT_MAX_SEQ_LENGTH = 256  # the original's for chunking; also ours for ner
TFDS_NAME = "conll2003"
TFDS_SPLITS = {"train": "train", "dev": "validation", "test": "test"}


@dataclasses.dataclass
class TaggingTask:
    """A tagging task's sentences per split and its BIOES tag set."""

    kind: ClassVar[str] = "tagging"  # its entry in finetuning.kinds
    name: str  # "chunk" or "ner"
    train: list[TaggedSentence]
    eval_splits: dict[str, list[TaggedSentence]]
    tag_space: TagSpace
    test_splits: dict[str, list[TaggedSentence]] = dataclasses.field(default_factory=dict)
    default_epochs: float = 3.0

    @property
    def directory_name(self) -> str:
        return self.name


def _split_file(data_dir: str, split: str) -> str | None:
    path = os.path.join(data_dir, f"{split}.txt")
    return path if tf.io.gfile.exists(path) else None


def load_tagging_task(name: str, *, data_dir=None, train_file=None, dev_file=None,
                      test_file=None, tag_column: int = -1, use_tfds=False, tfds_data_dir=None,
                      with_test=False) -> TaggingTask:
    """`chunk` or `ner` from CoNLL files (train.txt, dev.txt and, for --do_predict, test.txt in
    `data_dir`, or explicit files; the tag in column `tag_column`, the word in the first) or
    from TFDS `conll2003`."""
    if name not in TAGGING_TASKS:
        raise TaskDataError(f"unknown tagging task {name!r}; choose from "
                            f"{', '.join(TAGGING_TASKS)}")
    if use_tfds:
        def read(split, labelled=True):
            sentences = read_tfds_conll(TFDS_NAME, TFDS_SPLITS[split], TAGGING_TASKS[name],
                                        data_dir=tfds_data_dir)
            return sentences if labelled else [TaggedSentence(s.words, None) for s in sentences]
        sources = {split: f"TFDS {TFDS_NAME}/{TFDS_SPLITS[split]}" for split in TFDS_SPLITS}
    else:
        if data_dir:
            if not tf.io.gfile.isdir(data_dir):
                raise TaskDataError(f"--data_dir {data_dir} is not a directory")
            train_file = train_file or _split_file(data_dir, "train")
            dev_file = dev_file or _split_file(data_dir, "dev")
            test_file = test_file or _split_file(data_dir, "test")
            for split, path in (("train", train_file), ("dev", dev_file)):
                if path is None:
                    raise TaskDataError(
                        f"{data_dir} has no {split}.txt (CoNLL layout: one word a line, the tag "
                        f"in the last column); it holds: "
                        f"{', '.join(sorted(tf.io.gfile.listdir(data_dir))) or 'nothing'}")
        if not train_file or not dev_file:
            raise TaskDataError(f"{name} needs --data_dir (train.txt, dev.txt), --train_file "
                                "and --dev_file, or --tfds")
        sources = {"train": train_file, "dev": dev_file, "test": test_file}

        def read(split, labelled=True):
            return read_conll(sources[split], tag_column=tag_column, labelled=labelled)

    train, dev = read("train"), read("dev")
    test_splits = {}
    if with_test:
        if not sources["test"]:
            raise TaskDataError("--do_predict needs a test file (test.txt in --data_dir or "
                                "--test_file)")
        # A test file's tags, if it has any, are not read: predictions only.
        test_splits["test"] = read("test", labelled=False)
    tag_space = TagSpace.from_sentences(train, {sources["dev"]: dev},
                                        train_source=sources["train"])
    return TaggingTask(name, train, {"dev": dev}, tag_space, test_splits)


def predict_tag_ids(model, features: dict, batch_size: int, chunk_rows: int = 1024) -> np.ndarray:
    """The most likely tag id at every position, int [n, L]; logits are reduced `chunk_rows`
    sentences at a time, so [n, L, num_tags] floats are never all in memory."""
    rows = []
    n = len(features["input_ids"])
    for start in range(0, n, chunk_rows):
        chunk = {name: features[name][start:start + chunk_rows] for name in INPUT_NAMES}
        dataset, count = batched_inputs(chunk, batch_size)
        rows.append(np.asarray(model.predict(dataset, verbose=0))[:count].argmax(-1))
    return np.concatenate(rows) if rows else np.zeros([0, 0], np.int64)


def _write_conll(path: str, sentences, *columns) -> None:
    """One `word column...` line per word, a blank line after each sentence."""
    with tf.io.gfile.GFile(path, "w") as f:
        for k, sentence in enumerate(sentences):
            for i, word in enumerate(sentence.words):
                f.write(" ".join([word, *(column[k][i] for column in columns)]) + "\n")
            f.write("\n")


def _whole_sentences(tags: list[list[str]], sentences) -> list[list[str]]:
    """Predicted tags of the kept words, padded with "O" for the words truncation cut."""
    return [t + ["O"] * (len(s.words) - len(t)) for t, s in zip(tags, sentences)]


class TaggingJob:
    """A `TaggingTask` featurized in memory for a run (see `runner.TaskJob`)."""

    def __init__(self, task: TaggingTask, config: FinetuneConfig, vocab_file: str):
        check_vocabulary(vocab_file, config)
        tokenizer = make_file_tokenizer(vocab_file, lower_case=config.finetune.lower_case)
        ids = load_special_ids(vocab_file)
        length = config.finetune.max_seq_length

        def features(split, sentences):
            result = featurize_tagging(sentences, tokenizer, ids, length, task.tag_space)
            kept = int((result["word_positions"] >= 0).sum())
            words = sum(len(s.words) for s in sentences)
            if kept < words:
                logging.warning("%s: %d of %d words are beyond max_seq_length %d and not "
                                "tagged (nor scored, as the original)", split, words - kept,
                                words, length)
            return result

        self.task, self.config, self.vocab_file = task, config, vocab_file
        self.train = features("train", task.train)
        self.eval_splits = {k: features(k, v) for k, v in task.eval_splits.items()}
        self.test_splits = {k: features(k, v) for k, v in task.test_splits.items()}
        self.name = task.name
        self.headline = "f1"
        self.metric_names = ("loss", "accuracy")
        self.default_epochs = task.default_epochs
        self.num_train = len(task.train)

    def build_model(self):
        return KIND.build_model(self.card(), self.config)

    def train_dataset(self, batch_size: int, seed: int, skip_batches: int = 0):
        inputs = {name: self.train[name] for name in INPUT_NAMES}
        labels = {name: self.train[name] for name in ("tags", "tag_mask")}
        return shuffled_batches(tf.data.Dataset.from_tensor_slices((inputs, labels)),
                                self.num_train, batch_size, seed, skip_batches)

    def predict_tags(self, model, features: dict, batch_size: int) -> list[list[str]]:
        """BIOES tags of each sentence's kept words (a prefix of its words)."""
        return predicted_word_tags(predict_tag_ids(model, features, batch_size),
                                   features["word_positions"], self.task.tag_space)

    def evaluate(self, model, batch_size: int, output_dir: str | None = None
                 ) -> dict[str, dict[str, float]]:
        """Span precision / recall / F1 and token accuracy (x100) on every dev split, over the
        words that truncation kept; with `output_dir`, the `word gold predicted` files there."""
        results = {}
        for split, sentences in self.task.eval_splits.items():
            predicted = self.predict_tags(model, self.eval_splits[split], batch_size)
            gold = [to_bioes(s.tags) for s in sentences]
            results[split] = tagging_scores([g[:len(p)] for g, p in zip(gold, predicted)],
                                            predicted)
            if output_dir:
                tf.io.gfile.makedirs(output_dir)
                _write_conll(os.path.join(output_dir, f"{split}.txt"), sentences, gold,
                             _whole_sentences(predicted, sentences))
        return results

    def card(self) -> dict:
        return {"task": self.name, "kind": "tagging", "tags": list(self.task.tag_space.labels)}

    def export(self, model, export_dir: str, with_tokenizer: bool) -> str:
        return KIND.export(model, export_dir, self.card(), self.config,
                           ExportOptions(with_tokenizer=with_tokenizer, vocab_file=self.vocab_file))

    def write_predictions(self, model, output_dir: str, batch_size: int) -> dict[str, str]:
        """`word predicted` files (BIOES) for the test splits."""
        written = {}
        for split, sentences in self.task.test_splits.items():
            predicted = self.predict_tags(model, self.test_splits[split], batch_size)
            written[split] = os.path.join(output_dir, f"{split}.txt")
            _write_conll(written[split], sentences, _whole_sentences(predicted, sentences))
        return written


def _load(name: str, options: TaskOptions) -> TaggingTask:
    return load_tagging_task(name, data_dir=options.data_dir, train_file=options.train_file,
                             dev_file=options.dev_file, test_file=options.test_file,
                             tag_column=options.tag_column, use_tfds=options.use_tfds,
                             tfds_data_dir=options.tfds_data_dir, with_test=options.with_test)


def _model_arguments(card: dict, config: FinetuneConfig) -> dict:
    return {"num_tags": len(card["tags"]), "loss_reduction": config.finetune.loss_reduction}


def _export(model, export_dir: str, card: dict, config: FinetuneConfig,
            options: ExportOptions) -> str:
    return export_tagger(model, export_dir, task=card["task"], tag_names=card["tags"],
                         with_examples=options.with_examples,
                         with_tokenizer=options.with_tokenizer, vocab_file=options.vocab_file,
                         lower_case=config.finetune.lower_case,
                         max_seq_length=options.max_seq_length or config.finetune.max_seq_length,
                         jit_compile=options.jit_compile)


KIND = TaskKind(
    name="tagging",
    task_names=tuple(TAGGING_TASKS),
    load=_load,
    make_job=lambda task, config, vocab_file, work_dir: TaggingJob(task, config, vocab_file),
    model_class=ElectraTagger,
    model_arguments=_model_arguments,
    export=_export,
    default_max_seq_length=DEFAULT_MAX_SEQ_LENGTH,
)
