r"""How well the pretraining stream mixes the corpus: ours against the original's layout.

  python tools/shard_mixing.py --documents 5000 --files 40 --block_bytes 8192

Writes a corpus of numbered documents (every token of document i is the word "d<i>", so each
example names its source), builds it with `build_pretraining_data`, reads it back through the
training pipeline (`pipeline.make_dataset`) and prints, one JSON line per layout:

- `distinct_documents_per_batch`: the mean number of different source documents in a batch, next
  to `uniform_expectation`, what batches drawn uniformly from all examples would give;
- `step_position_correlation`: Pearson's r between the step and the position of the example's
  document in the corpus (file order, then line order) over `--epochs` passes over the data:
  near 0 when every stretch of training sees the whole corpus, near 1 when the stream sweeps it
  in order.

The original's layout is simulated on the same examples: the corpus files shuffled, the examples
written round-robin over 1,000 shards (one process, the original's default), read as its
`pretrain_data.get_input_fn` reads them (file list shuffled, 4 files interleaved, a shuffle
buffer of 100). `--block_bytes` scales the 1 MiB work units down, so that a corpus of a few MB is
cut into as many units as one of some GB.
"""

from __future__ import annotations

import json
import os
import random
import tempfile

import numpy as np
from absl import app, flags, logging

from electra_tf import console
from electra_tf.config import ObjectiveConfig

console.setup(__name__, default_verbosity=logging.WARNING)  # before TensorFlow loads

DOCUMENT_WORD = "d{}"
FIRST_DOCUMENT_ID = 5  # after [PAD] [UNK] [CLS] [SEP] [MASK]
ORIGINAL_SHARDS, ORIGINAL_CYCLE, ORIGINAL_BUFFER = 1000, 4, 100


def write_numbered_corpus(directory: str, num_documents: int, num_files: int, seed: int = 0,
                          median_lines: float = 30, words_per_line: int = 10
                          ) -> tuple[str, list[int]]:
    """Text files of documents whose every word is "d<i>"; returns (vocab file, lines per doc).

    Document lengths are log-normal (sigma 1.2: median `median_lines`, the longest 30 times
    that, like articles next to books); the documents go to the files in order, an equal run
    of them per file.
    """
    rng = random.Random(seed)
    os.makedirs(directory, exist_ok=True)
    lines_per_document = [max(1, min(int(30 * median_lines),
                                     int(median_lines * rng.lognormvariate(0.0, 1.2))))
                          for _ in range(num_documents)]
    per_file = -(-num_documents // num_files)
    for f in range(num_files):
        with open(os.path.join(directory, f"part-{f:04d}.txt"), "w", encoding="utf-8") as out:
            for doc in range(f * per_file, min((f + 1) * per_file, num_documents)):
                line = " ".join([DOCUMENT_WORD.format(doc)] * words_per_line)
                out.write("\n".join([line] * lines_per_document[doc]) + "\n\n")
    vocab_file = os.path.join(directory, "..", "numbered_vocab.txt")
    with open(vocab_file, "w", encoding="utf-8") as out:
        out.write("".join(t + "\n" for t in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
        out.write("".join(DOCUMENT_WORD.format(i) + "\n" for i in range(num_documents)))
    return os.path.abspath(vocab_file), lines_per_document


def batch_documents(batch: dict) -> np.ndarray:
    """int [batch]: the source document of each example of a masked batch."""
    ids = np.maximum(batch["input_ids"].max(axis=1), batch["masked_lm_ids"].max(axis=1))
    return ids - FIRST_DOCUMENT_ID


def shard_documents(shards: list[str], max_seq_length: int) -> np.ndarray:
    """int [examples]: the source document of every record of `shards`, in file order."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf.pretraining_data import pretraining_records as records

    dataset = records.read_examples(shards, max_seq_length).batch(4096)
    return np.concatenate([batch["input_ids"][:, 1] - FIRST_DOCUMENT_ID
                           for batch in dataset.as_numpy_iterator()])


def mixing_statistics(documents_per_batch: list[np.ndarray], num_documents: int,
                      examples_per_document: np.ndarray) -> dict:
    """The two statistics of the module docstring (plus the uniform expectation) for a stream."""
    batch_size = len(documents_per_batch[0])
    distinct = float(np.mean([len(np.unique(d)) for d in documents_per_batch]))
    steps = np.repeat(np.arange(len(documents_per_batch)), batch_size)
    positions = np.concatenate(documents_per_batch) / max(num_documents - 1, 1)
    correlation = float(np.corrcoef(steps, positions)[0, 1])
    rng = np.random.default_rng(0)
    owners = np.repeat(np.arange(len(examples_per_document)), examples_per_document)
    uniform = float(np.mean([len(np.unique(rng.choice(owners, batch_size, replace=False)))
                             for _ in range(50)]))
    return {"distinct_documents_per_batch": round(distinct, 1),
            "uniform_expectation": round(uniform, 1), "batch_size": batch_size,
            "step_position_correlation": round(correlation, 3), "steps": len(documents_per_batch)}


def read_our_stream(shards: list[str], batch_size: int, steps: int, max_seq_length: int,
                    **pipeline_kwargs) -> list[np.ndarray]:
    """Source documents of the first `steps` training batches of `pipeline.make_dataset`."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf.pretraining_data import pipeline

    objective = ObjectiveConfig(cls_token_id=2, sep_token_id=3, mask_token_id=4)
    dataset = pipeline.make_dataset(shards, batch_size, max_seq_length, objective,
                                    **pipeline_kwargs)
    return [batch_documents(b) for b in dataset.take(steps).as_numpy_iterator()]


def read_original_stream(documents_in_file_order: list[list[int]], work_dir: str,
                         batch_size: int, steps: int, seed: int = 0) -> list[np.ndarray]:
    """The original's layout and reader, on examples that carry only their document id.

    Args:
      documents_in_file_order: per corpus file, the document id of each of its examples in
        order.
    """
    import tensorflow as tf

    rng = random.Random(seed)
    files = list(range(len(documents_in_file_order)))
    rng.shuffle(files)  # build_pretraining_dataset.py: random.shuffle(fnames)
    paths = [os.path.join(work_dir, f"original-{i}") for i in range(ORIGINAL_SHARDS)]
    writers = [tf.io.TFRecordWriter(p) for p in paths]
    written = 0
    for f in files:
        for document in documents_in_file_order[f]:
            writers[written % ORIGINAL_SHARDS].write(
                tf.constant(document, tf.int64).numpy().tobytes())
            written += 1
    for w in writers:
        w.close()
    dataset = tf.data.Dataset.from_tensor_slices(paths).repeat()
    dataset = dataset.shuffle(len(paths), seed=seed)
    dataset = dataset.interleave(tf.data.TFRecordDataset, cycle_length=ORIGINAL_CYCLE,
                                 block_length=1)  # sequential, hence in order
    dataset = dataset.shuffle(ORIGINAL_BUFFER, seed=seed + 1)
    dataset = dataset.map(lambda r: tf.io.decode_raw(r, tf.int64)[0])
    dataset = dataset.batch(batch_size, drop_remainder=True).take(steps)
    return list(dataset.as_numpy_iterator())


FLAGS = flags.FLAGS
flags.DEFINE_integer("documents", 5000, "Documents in the generated corpus.")
flags.DEFINE_float("median_lines", 30, "Median lines (of 10 words) per document.")
flags.DEFINE_integer("files", 40, "Files the documents are written to, in order.")
flags.DEFINE_integer("block_bytes", 8192, "Work-unit size of the build (1 MiB in real builds).")
flags.DEFINE_integer("max_seq_length", 128, "Example length.")
flags.DEFINE_integer("batch_size", 128, "Batch size of the stream.")
flags.DEFINE_float("epochs", 1.0, "Length of the measured stream, in passes over the data.")
flags.DEFINE_integer("num_shards", None, "Shards of our build (default: the builder's).")
flags.DEFINE_integer("seed", 0, "Seed of the corpus, the builds and the readers.")


def main(argv):
    del argv
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf.pretraining_data import builder as pretraining_data, pipeline

    with tempfile.TemporaryDirectory() as work:
        corpus_dir = os.path.join(work, "corpus")
        vocab_file, _ = write_numbered_corpus(corpus_dir, FLAGS.documents, FLAGS.files,
                                              FLAGS.seed, FLAGS.median_lines)
        records = os.path.join(work, "records")
        summary = pretraining_data.build_pretraining_data(
            output_dir=records, vocab_file=vocab_file, corpus=corpus_dir,
            max_seq_length=FLAGS.max_seq_length, num_shards=FLAGS.num_shards, seed=FLAGS.seed,
            block_bytes=FLAGS.block_bytes, log_every_s=1e9)
        examples = summary.stats.examples
        steps = max(1, int(FLAGS.epochs * examples / FLAGS.batch_size))
        shards = pipeline.list_shards(records)
        ours = read_our_stream(shards, FLAGS.batch_size, steps, FLAGS.max_seq_length,
                               seed=FLAGS.seed)

        # Every example of ours, in corpus order, gives the original's input.
        every = np.sort(shard_documents(shards, FLAGS.max_seq_length))
        per_document = np.bincount(every, minlength=FLAGS.documents)
        per_file = -(-FLAGS.documents // FLAGS.files)
        by_file = [list(every[(every >= f * per_file) & (every < (f + 1) * per_file)])
                   for f in range(FLAGS.files)]
        original_dir = os.path.join(work, "original")
        os.makedirs(original_dir)
        original = read_original_stream(by_file, original_dir, FLAGS.batch_size, steps,
                                        FLAGS.seed)
        corpus = {"documents": FLAGS.documents, "files": FLAGS.files, "examples": examples,
                  "work_units": summary.num_units}
        for layout, num_shards, stream in (("electra_tf", len(shards), ours),
                                           ("original", ORIGINAL_SHARDS, original)):
            print(json.dumps({"layout": layout, "shards": num_shards, **corpus,
                              **mixing_statistics(stream, FLAGS.documents, per_document)}),
                  flush=True)


if __name__ == "__main__":
    app.run(main)
