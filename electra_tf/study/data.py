"""The study's data directory, made ready once: the corpus and task, the vocabulary, the
pretraining and held-out records. Each step is skipped when its output is already there.

Layout of `data_dir` (what `python -m electra_tf.build_debian_corpus` writes, plus the rest):
  corpus/*.txt, heldout/*.txt     pretraining text (one sentence a line, blank line between
                                  documents); heldout/ is optional
  sections/{train,dev,test}.tsv   the classification task: columns text, label (labels.txt:
                                  the label names, one a line; else those of train.tsv)
  metadata.json                   the Debian build's; without it and without corpus/ or
                                  sections/, the Debian corpus is built here
  vocab.txt                       learned from corpus/ when missing
  records<L>/, heldout<L>/        TFRecords of corpus/ and heldout/ at max_seq_length L
"""

from __future__ import annotations

import dataclasses
import functools
import glob
import os

from absl import logging

from electra_tf.corpora import debian
from electra_tf.pretraining_data import corpus as corpus_lib
from electra_tf.pretraining_data import pretraining_records
from electra_tf.task_data.classification_data import read_table
from electra_tf.pretraining_data.builder import build_pretraining_data
from electra_tf.text.vocab_learning import learn_vocabulary
from electra_tf.study.plan import StudyError

TASK_DIR = "sections"
TEXT_COLUMN, LABEL_COLUMN = "text", "label"


@dataclasses.dataclass(frozen=True)
class StudyData:
    """Paths of a prepared data directory."""

    data_dir: str
    vocab_file: str
    records: str  # glob of the pretraining records
    heldout_records: str | None  # glob of the held-out records (None without heldout/)
    task_dir: str  # {train,dev,test}.tsv
    labels: tuple[str, ...]


def _has_text(directory: str) -> bool:
    return bool(glob.glob(os.path.join(directory, "*.txt")))


def _build_debian_corpus(data_dir: str) -> None:
    """The Debian corpus and task, as `python -m electra_tf.build_debian_corpus --output_dir
    data_dir` builds them with its defaults (for its other options, run it first)."""
    logging.info("%s holds no corpus and task: building the Debian corpus there (downloads the "
                 "documentation packages with apt-get; minutes)", data_dir)
    debian.build(data_dir)


def _learn_vocabulary(corpus: str, vocab_file: str, vocab_size: int) -> None:
    logging.info("learning a vocabulary of up to %d tokens from %s", vocab_size, corpus)
    partial = vocab_file + ".incomplete"
    lines = corpus_lib.CorpusLines(functools.partial(corpus_lib.read_documents, corpus))
    vocabulary = learn_vocabulary(lines, vocab_size, partial)
    os.replace(partial, vocab_file)  # only a finished vocabulary counts as built
    logging.info("wrote %d tokens to %s", len(vocabulary), vocab_file)


def _build_records(corpus: str, vocab_file: str, output_dir: str, max_seq_length: int) -> None:
    if os.path.exists(os.path.join(output_dir, pretraining_records.METADATA_FILE)):
        return  # metadata.json is written last: the build finished
    logging.info("building TFRecords of %s at length %d in %s", corpus, max_seq_length, output_dir)
    summary = build_pretraining_data(corpus=corpus, vocab_file=vocab_file, output_dir=output_dir,
                                     max_seq_length=max_seq_length, overwrite=True)
    logging.info("%s", summary.line())


def read_labels(data_dir: str) -> tuple[str, ...]:
    """The task's label names: sections/labels.txt, else those of train.tsv in sorted order."""
    path = os.path.join(data_dir, TASK_DIR, "labels.txt")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            labels = tuple(line.strip() for line in f if line.strip())
        if labels:
            return labels
    examples = read_table(os.path.join(data_dir, TASK_DIR, "train.tsv"),
                          text_a_column=TEXT_COLUMN, label_column=LABEL_COLUMN)
    return tuple(sorted({e.label for e in examples}))


def prepare_data(data_dir: str, vocab_size: int, max_seq_length: int) -> StudyData:
    """Builds what `data_dir` lacks (see the module docstring) and returns its paths."""
    corpus_dir, heldout_dir = (os.path.join(data_dir, name) for name in ("corpus", "heldout"))
    task_dir = os.path.join(data_dir, TASK_DIR)
    has_task = all(os.path.exists(os.path.join(task_dir, f"{split}.tsv"))
                   for split in ("train", "dev", "test"))
    if not (_has_text(corpus_dir) and has_task):
        if os.path.exists(os.path.join(data_dir, "metadata.json")):
            raise StudyError(f"{data_dir} has a metadata.json but not corpus/*.txt and "
                             f"{TASK_DIR}/{{train,dev,test}}.tsv: an unfinished build? Remove "
                             "it, or give another --data_dir")
        _build_debian_corpus(data_dir)
    corpus = os.path.join(corpus_dir, "*.txt")
    vocab_file = os.path.join(data_dir, "vocab.txt")
    if not os.path.exists(vocab_file):
        _learn_vocabulary(corpus, vocab_file, vocab_size)
    records_dir = os.path.join(data_dir, f"records{max_seq_length}")
    _build_records(corpus, vocab_file, records_dir, max_seq_length)
    heldout_records = None
    if _has_text(heldout_dir):
        heldout_records_dir = os.path.join(data_dir, f"heldout{max_seq_length}")
        _build_records(os.path.join(heldout_dir, "*.txt"), vocab_file, heldout_records_dir,
                       max_seq_length)
        heldout_records = os.path.join(heldout_records_dir, "*.tfrecord*")
    return StudyData(data_dir=data_dir, vocab_file=vocab_file,
                     records=os.path.join(records_dir, "*.tfrecord*"),
                     heldout_records=heldout_records, task_dir=task_dir,
                     labels=read_labels(data_dir))
