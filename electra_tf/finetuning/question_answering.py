"""The SQuAD job of a fine-tuning run: windows streamed to a TFRecord file, the joint span head,
prediction a chunk at a time (featurize -> in-graph beam -> n-best decoding), the official
scores, the prediction files and the QA SavedModel.

Layout added to the run directory:
  features/train.tfrecord (+ .json: settings and count; reused by reruns with the same settings)
  <trial>/predictions/dev/predictions.json, nbest_predictions.json, null_odds.json (v2.0) and
      predictions_at_threshold.json (v2.0: "" where the null logit is above qa.null_threshold)
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import os
from typing import ClassVar

import numpy as np
import tensorflow as tf
from absl import logging

from electra_tf.config import FinetuneConfig
from electra_tf.task_data import squad
from electra_tf.task_data.squad_features import (QAFeaturizer, featurize_in_chunks, training_dataset,
                                            write_training_records)
from electra_tf.evaluation import squad_metrics
from electra_tf.evaluation.squad_decoding import (RawResult, apply_null_threshold, decode_example,
                                                  write_prediction_files)
from electra_tf.export.question_answerer import export_question_answerer
from electra_tf.finetuning.common import (ExportOptions, TaskKind, TaskOptions, batched_inputs,
                                          check_vocabulary)
from electra_tf.models.question_answerer import ElectraQuestionAnswerer
from electra_tf.models.question_answers import BEAM_OUTPUTS
from electra_tf.models.task_model import INPUT_NAMES

QA_TASKS = ("squad/v1.1", "squad/v2.0", "mrqa")
DEFAULT_MAX_SEQ_LENGTH = 512  # the original's for every QA task (384 also works)
SHUFFLE_BUFFER = 10000


@dataclasses.dataclass
class SquadTask:
    """A SQuAD task's examples: training, and the dev set with its official JSON (for scoring)."""

    kind: ClassVar[str] = "qa"  # its entry in finetuning.kinds
    name: str  # "squad/v1.1", "squad/v2.0" or "mrqa"
    train: list
    dev: list
    dev_json: dict
    default_epochs: float = 2.0

    @property
    def version(self) -> str:
        """The scoring rules: MRQA's official script is a clone of SQuAD v1.1's."""
        return "v1.1" if self.name == "mrqa" else self.name.split("/")[1]

    @property
    def directory_name(self) -> str:
        return self.name.replace("/", "_").replace(".", "")


def _find(data_dir: str, split: str, version: str) -> str:
    names = ([f"{split}.jsonl", f"{split}.jsonl.gz"] if version == "mrqa"
             else [f"{split}.json", f"{split}-{version}.json"])
    for name in names:
        if tf.io.gfile.exists(os.path.join(data_dir, name)):
            return os.path.join(data_dir, name)
    raise squad.SquadDataError(f"{data_dir} has no {' or '.join(names)}; give --train_file and "
                               "--predict_file")


def load_squad_task(name: str, *, train_file=None, predict_file=None, data_dir=None,
                    use_tfds=False, tfds_data_dir=None) -> SquadTask:
    """`squad/v1.1` or `squad/v2.0` from the official JSON files (`train_file`, `predict_file`,
    or train.json / dev.json (or train-v1.1.json ...) in `data_dir`) or from TFDS; `mrqa` from
    MRQA 2019 JSON Lines files (.jsonl or .jsonl.gz; train.jsonl / dev.jsonl in `data_dir`)."""
    if name not in QA_TASKS:
        raise squad.SquadDataError(f"unknown QA task {name!r}; choose from {', '.join(QA_TASKS)}")
    version = "mrqa" if name == "mrqa" else name.split("/")[1]
    if use_tfds and version == "mrqa":
        raise squad.SquadDataError("mrqa reads the shared task's JSON Lines files: give "
                                   "--train_file and --predict_file or --data_dir, not --tfds")
    if use_tfds:
        train, _ = squad.read_tfds_squad(version, "train", tfds_data_dir)
        dev, dev_json = squad.read_tfds_squad(version, "dev", tfds_data_dir)
        return SquadTask(name, train, dev, dev_json)
    if data_dir:
        train_file = train_file or _find(data_dir, "train", version)
        predict_file = predict_file or _find(data_dir, "dev", version)
    if not train_file or not predict_file:
        raise squad.SquadDataError(f"{name} needs --train_file and --predict_file (the official "
                                   "JSON files), --data_dir, or --tfds")
    if version == "mrqa":
        return SquadTask(name, squad.read_mrqa_jsonl(train_file, is_training=True),
                         squad.read_mrqa_jsonl(predict_file, is_training=False),
                         squad.mrqa_answers_json(predict_file))
    dev_json = squad.load_squad_json(predict_file, with_answers=True)
    return SquadTask(name, squad.read_squad(train_file, version=version, is_training=True),
                     squad.read_squad(dev_json, version=version, is_training=False), dev_json)


def predict_examples(model, examples, featurizer: QAFeaturizer, batch_size: int, *,
                     n_best_size: int = 20, max_answer_length: int = 30, lower_case: bool = True,
                     chunk_examples: int = 2000):
    """(predictions {qid: text}, nbest {qid: [...]}, null_odds {qid: float}) for every example,
    using all its windows; a chunk of examples is featurized, predicted and decoded at a time."""
    predictions, nbest, null_odds = {}, {}, {}
    first = 0  # the example index of the chunk's first example
    for chunk, features in featurize_in_chunks(examples, featurizer, chunk_examples):
        arrays = {name: np.stack([getattr(f, name) for f in features]) for name in INPUT_NAMES}
        outputs = model.predict(batched_inputs(arrays, batch_size)[0], verbose=0)
        results = {f.unique_id: RawResult(f.unique_id, *(np.asarray(outputs[name][i])
                                                         for name in BEAM_OUTPUTS))
                   for i, f in enumerate(features)}
        by_example = collections.defaultdict(list)
        for f in features:
            by_example[f.example_index].append(f)
        for index, example in enumerate(chunk, start=first):
            text, entries, odds = decode_example(
                example, by_example[index], results, n_best_size=n_best_size,
                max_answer_length=max_answer_length, lower_case=lower_case,
                sentencepiece=featurizer.sentencepiece)
            predictions[example.qas_id], nbest[example.qas_id] = text, entries
            null_odds[example.qas_id] = odds
        first += len(chunk)
    return predictions, nbest, null_odds


def _fingerprint(examples) -> str:
    """A digest of everything featurization reads from the examples (a rerun on changed data
    must not reuse the old windows)."""
    digest = hashlib.sha256()
    for e in examples:
        digest.update(repr((e.qas_id, e.question_text, e.doc_tokens, e.orig_answer_text,
                            e.start_word, e.end_word, e.is_impossible)).encode())
    return f"{len(examples)}:{digest.hexdigest()}"


class QAJob:
    """A `SquadTask` featurized for a run (see `runner.TaskJob`)."""

    def __init__(self, task: SquadTask, config: FinetuneConfig, vocab_file: str, work_dir: str):
        check_vocabulary(vocab_file, config)
        qa, run = config.qa, config.finetune
        self.task, self.config, self.vocab_file = task, config, vocab_file
        self.featurizer_args = dict(vocabulary=vocab_file, lower_case=run.lower_case,
                                    max_seq_length=run.max_seq_length, doc_stride=qa.doc_stride,
                                    max_query_length=qa.max_query_length)
        self.featurizer = QAFeaturizer(**self.featurizer_args)  # checks stride and query length
        if qa.beam_size > run.max_seq_length:
            raise squad.SquadDataError(f"qa.beam_size {qa.beam_size} is above max_seq_length "
                                       f"{run.max_seq_length}")
        self.train_path, self.num_train = self._training_records(work_dir)
        self.name = task.name
        self.headline = "f1"
        self.metric_names = ("loss", "start_accuracy")
        self.default_epochs = task.default_epochs

    def _training_records(self, work_dir: str) -> tuple[str, int]:
        """Writes (or reuses, when the settings match) the training windows' TFRecord file."""
        directory = os.path.join(work_dir or ".", "features")
        path = os.path.join(directory, "train.tfrecord")
        settings = {**self.featurizer_args, "task": self.task.name,
                    "examples": _fingerprint(self.task.train), "seed": self.config.finetune.seed}
        card_path = path + ".json"
        if tf.io.gfile.exists(card_path) and tf.io.gfile.exists(path):
            with tf.io.gfile.GFile(card_path) as f:
                card = json.load(f)
            if card.get("settings") == settings:
                logging.info("reusing %d training windows in %s", card["windows"], path)
                return path, card["windows"]
        tf.io.gfile.makedirs(directory)
        workers = self.config.qa.featurize_workers
        logging.info("featurizing %d training questions into %s (%d process%s)",
                     len(self.task.train), path, workers, "es" if workers > 1 else "")
        count = write_training_records(self.task.train, self.featurizer_args, path,
                                       num_workers=workers, shuffle_seed=self.config.finetune.seed)
        with tf.io.gfile.GFile(card_path, "w") as f:
            json.dump({"settings": settings, "windows": count}, f, indent=1)
        logging.info("%d training windows from %d questions", count, len(self.task.train))
        return path, count

    def build_model(self):
        return KIND.build_model(self.card(), self.config)

    def train_dataset(self, batch_size: int, seed: int, skip_batches: int = 0):
        return training_dataset(self.train_path, self.config.finetune.max_seq_length, batch_size,
                                seed=seed, shuffle_buffer=min(self.num_train, SHUFFLE_BUFFER),
                                skip_batches=skip_batches)

    def predict(self, model, examples, batch_size: int):
        qa = self.config.qa
        return predict_examples(model, examples, self.featurizer, batch_size,
                                n_best_size=qa.n_best_size, max_answer_length=qa.max_answer_length,
                                lower_case=self.config.finetune.lower_case,
                                chunk_examples=qa.predict_chunk_examples)

    def evaluate(self, model, batch_size: int, output_dir: str | None = None):
        """Official scores on the dev set; with `output_dir`, the prediction files there."""
        predictions, nbest, null_odds = self.predict(model, self.task.dev, batch_size)
        data = self.task.dev_json["data"]
        if self.task.version == "v1.1":
            scores = squad_metrics.evaluate_v1(data, predictions)
        else:
            scores = squad_metrics.evaluate_v2(data, predictions, null_odds,
                                               self.config.qa.null_threshold)
        if output_dir:
            v2 = self.task.version == "v2.0"
            write_prediction_files(output_dir, predictions, nbest, null_odds if v2 else None)
            if v2:
                thresholded = apply_null_threshold(predictions, null_odds,
                                                   self.config.qa.null_threshold)
                with tf.io.gfile.GFile(os.path.join(output_dir, "predictions_at_threshold.json"),
                                       "w") as f:
                    json.dump(thresholded, f, indent=4)
        return {"dev": {k: float(v) for k, v in scores.items()}}

    def card(self) -> dict:
        qa = self.config.qa
        return {"task": self.name, "kind": "qa", "version": self.task.version,
                "max_seq_length": self.config.finetune.max_seq_length, "head": qa.head,
                "beam_size": qa.beam_size, "max_answer_length": qa.max_answer_length}

    def export(self, model, export_dir: str, with_tokenizer: bool) -> str:
        return KIND.export(model, export_dir, self.card(), self.config,
                           ExportOptions(with_tokenizer=with_tokenizer, vocab_file=self.vocab_file))

    def write_predictions(self, model, output_dir: str, batch_size: int) -> dict[str, str]:
        """SQuAD's test sets are hidden: the dev prediction files are the predictions."""
        self.evaluate(model, batch_size, os.path.join(output_dir, "dev"))
        return {"dev": os.path.join(output_dir, "dev")}



def _load(name: str, options: TaskOptions) -> SquadTask:
    return load_squad_task(name, train_file=options.train_file,
                           predict_file=options.predict_file or options.dev_file,
                           data_dir=options.data_dir, use_tfds=options.use_tfds,
                           tfds_data_dir=options.tfds_data_dir)


def _model_arguments(card: dict, config: FinetuneConfig) -> dict:
    qa = config.qa
    return {"head": qa.head, "beam_size": qa.beam_size, "answerable_weight": qa.answerable_weight,
            "loss_reduction": config.finetune.loss_reduction}


def _export(model, export_dir: str, card: dict, config: FinetuneConfig,
            options: ExportOptions) -> str:
    return export_question_answerer(
        model, export_dir, task=card["task"], with_examples=options.with_examples,
        with_tokenizer=options.with_tokenizer, vocab_file=options.vocab_file,
        lower_case=config.finetune.lower_case,
        max_seq_length=options.max_seq_length or config.finetune.max_seq_length,
        max_query_length=config.qa.max_query_length,
        max_answer_length=config.qa.max_answer_length, jit_compile=options.jit_compile)


KIND = TaskKind(
    name="qa",
    task_names=QA_TASKS,
    load=_load,
    make_job=QAJob,
    model_class=ElectraQuestionAnswerer,
    model_arguments=_model_arguments,
    export=_export,
    default_max_seq_length=DEFAULT_MAX_SEQ_LENGTH,
)

def answer(model, vocab_file: str, questions, contexts, *, lower_case: bool = True,
           max_seq_length: int = 512, doc_stride: int = 128, max_query_length: int = 64,
           n_best_size: int = 20, max_answer_length: int = 30, batch_size: int = 32) -> list[dict]:
    """Answers each question about its context with every window of the context (contexts of any
    length), as the SQuAD evaluation decodes: [{"answer", "score" (the joint log-probability),
    "answerable_logit" (min over windows; above -2.75 means "no answer" for SQuAD 2.0),
    "nbest"}] in order."""
    if len(questions) != len(contexts):
        raise ValueError(f"{len(questions)} questions but {len(contexts)} contexts")
    examples = [squad.SquadExample(str(i), question, squad.whitespace_split(context)[0],
                                   context_text=context)
                for i, (question, context) in enumerate(zip(questions, contexts))]
    featurizer = QAFeaturizer(vocab_file, lower_case, max_seq_length, doc_stride, max_query_length)
    predictions, nbest, null_odds = predict_examples(
        model, examples, featurizer, batch_size, n_best_size=n_best_size,
        max_answer_length=max_answer_length, lower_case=lower_case)
    return [{"answer": predictions[e.qas_id],
             "score": nbest[e.qas_id][0]["start_log_prob"] + nbest[e.qas_id][0]["end_log_prob"],
             "answerable_logit": null_odds[e.qas_id], "nbest": nbest[e.qas_id]} for e in examples]
