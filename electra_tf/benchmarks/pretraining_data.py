r"""Times vocabulary learning and pretraining-data building against Hugging Face `tokenizers`;
prints JSON lines.

  python -m electra_tf.benchmarks.pretraining_data --num_processes 2
  python -m electra_tf.benchmarks.pretraining_data --vocabulary_only --vocab_corpus 'text/*.txt' \
      --compare_vocab_file old_vocab.txt

Vocabulary learning (`--vocab_corpus`, default the embedded corpus once; every 10th document is
held out): our `learn_vocabulary` and `tokenizers`' BertWordPieceTokenizer trainer (same lines,
size, minimum frequency and alphabet limit), each `--learn_repeats` times in turn, the fastest
run reported; for each vocabulary (and every `--compare_vocab_file`) the WordPiece tokens per
whitespace-separated word of the held-out text, tokenized by our in-graph tokenizer.

Then (unless `--vocabulary_only`) it writes the embedded corpus (Python's own documentation,
`--copies` times over so the timings are not dominated by start-up) into a temporary directory
and, with our learned vocabulary (or `--vocab_file`), measures, one JSON line each:

- our dataset building (tokenize + pack + write TFRecords) with 1 process and with
  `--num_processes` processes: `tokens_per_s` is end to end (process start-up, TensorFlow import
  and tokenizer tracing included), `busy_tokens_per_s_per_process` divides by the time the
  processes spent writing their shards (start-up excluded);
- our in-graph tokenizer alone (one TensorFlow thread), batches of 2,000 lines;
- HF `tokenizers` BertWordPieceTokenizer (same vocab file, same lower-casing and accent
  settings) batch-encoding the same lines, with RAYON_NUM_THREADS=1 and with all cores, plus the
  share of lines on which its ids equal ours.

Tokens are WordPiece tokens of the corpus lines ([CLS]/[SEP] not counted). A benchmark, never a
test: numbers depend on the machine.
"""

import concurrent.futures
import json
import multiprocessing
import os
import tempfile
import time

from absl import flags, logging

from electra_tf import console
from electra_tf.config import ObjectiveConfig
from electra_tf.pretraining_data.corpus import read_documents

console.setup(__name__, default_verbosity=logging.WARNING)  # before TensorFlow loads

FLAGS = flags.FLAGS
flags.DEFINE_string("vocab_file", None, "Vocabulary to use (default: learn one from the corpus).")
flags.DEFINE_integer("vocab_size", 8000, "Target size when learning the vocabulary.")
flags.DEFINE_string("vocab_corpus", None, "Text to learn the vocabularies from (a directory, glob "
                    "or comma-separated files); every 10th document is held out. Default: the "
                    "embedded corpus, once.")
flags.DEFINE_integer("min_frequency", None, "Minimum pair count of both learners (default: "
                     "learn_vocabulary's).")
flags.DEFINE_integer("learn_repeats", 3, "Runs of each learner (alternating); the fastest counts.")
flags.DEFINE_multi_string("compare_vocab_file", [], "Another vocabulary whose tokens per word on "
                          "the held-out text are reported (e.g. one an earlier learner made).")
flags.DEFINE_bool("vocabulary_only", False, "Stop after the vocabulary measures.")
flags.DEFINE_integer("num_processes", None, "Processes of the parallel build (default: CPUs).")
flags.DEFINE_integer("copies", 64, "How many times the embedded corpus is written.")
flags.DEFINE_integer("max_seq_length", 128, "Example length of the builds.")
flags.DEFINE_bool("lower_case", True, "Lower-case (both tokenizers).")
flags.DEFINE_integer("pipeline_batch", 128, "Batch size of the input-pipeline measurement "
                     "(128: ELECTRA-Small's pretraining batch).")
flags.DEFINE_bool("strip_accents", None, "Strip accents (default: same as --lower_case).")


def emit(record: dict) -> None:
    print(json.dumps(record), flush=True)


def _hf_encode(vocab_file, corpus_dir, lower_case, strip_accents):
    """Runs in a fresh process (RAYON_NUM_THREADS is read when the thread pool starts)."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from tokenizers import BertWordPieceTokenizer

    lines = [line for document in read_documents(corpus_dir) for line in document]
    tokenizer = BertWordPieceTokenizer(vocab_file, lowercase=lower_case,
                                       strip_accents=strip_accents)
    tokenizer.encode_batch(lines[:1000], add_special_tokens=False)  # warm-up
    start = time.perf_counter()
    encodings = tokenizer.encode_batch(lines, add_special_tokens=False)
    seconds = time.perf_counter() - start
    tokens = sum(len(e.ids) for e in encodings)
    return tokens, seconds, len(lines), [hash(tuple(e.ids)) for e in encodings]


def _tokens_per_word(vocab_file: str, lines: list[str], lower_case: bool,
                     strip_accents: bool) -> float:
    """WordPiece tokens of our in-graph tokenizer per whitespace-separated word of `lines`."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    import tensorflow as tf

    from electra_tf.pretraining_data.builder import TOKENIZE_BATCH_LINES
    from electra_tf.text.tokenization import make_tokenizer

    tokenize = tf.function(make_tokenizer(vocab_file, lower_case, strip_accents).tokenize,
                           input_signature=[tf.TensorSpec([None], tf.string)])
    tokens = sum(int(tokenize(tf.constant(lines[i:i + TOKENIZE_BATCH_LINES])).flat_values.shape[0])
                 for i in range(0, len(lines), TOKENIZE_BATCH_LINES))
    return tokens / sum(len(line.split()) for line in lines)


def _learn_with_hf_trainer(lines: list[str], vocab_size: int, vocab_file: str,
                           min_frequency: int, lower_case: bool, strip_accents: bool) -> list[str]:
    """`tokenizers`' own recipe (BERT normalizer and pre-tokenizer, WordPiece trainer)."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from tokenizers import BertWordPieceTokenizer

    from electra_tf.text.tokenization import SPECIAL_TOKENS
    from electra_tf.text.vocab_learning import MAX_ALPHABET

    tokenizer = BertWordPieceTokenizer(lowercase=lower_case, strip_accents=strip_accents)
    tokenizer.train_from_iterator(lines, vocab_size, min_frequency=min_frequency,
                                  limit_alphabet=MAX_ALPHABET, special_tokens=list(SPECIAL_TOKENS),
                                  show_progress=False)
    ids = tokenizer.get_vocab()
    vocabulary = sorted(ids, key=ids.__getitem__)
    with open(vocab_file, "w", encoding="utf-8") as f:
        f.write("".join(token + "\n" for token in vocabulary))
    return vocabulary


def _vocabulary_measures(work: str, strip_accents: bool) -> str:
    """Emits the vocabulary lines; returns the path of our learned vocabulary."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf.pretraining_data import corpus as corpus_lib
    from electra_tf.text.tokenization import load_vocabulary
    from electra_tf.text.vocab_learning import DEFAULT_MIN_FREQUENCY, learn_vocabulary

    if FLAGS.vocab_corpus:
        documents = list(corpus_lib.read_documents(FLAGS.vocab_corpus))
    else:
        documents = corpus_lib.embedded_documents()
    held_out = [line for document in documents[::10] for line in document]
    lines = [line for i, document in enumerate(documents) if i % 10 for line in document]
    emit({"measure": "vocab_corpus", "source": FLAGS.vocab_corpus or "embedded",
          "documents": len(documents) - len(documents[::10]), "lines": len(lines),
          "words": sum(len(line.split()) for line in lines),
          "bytes": sum(len(line.encode("utf-8")) + 1 for line in lines),
          "held_out_documents": len(documents[::10]),
          "held_out_words": sum(len(line.split()) for line in held_out),
          "load_average_1min": round(os.getloadavg()[0], 2)})
    min_frequency = FLAGS.min_frequency or DEFAULT_MIN_FREQUENCY
    learners = {
        "electra_tf learn_vocabulary (tokenizers WordPieceTrainer, fixed alphabet)":
            lambda path: learn_vocabulary(lines, FLAGS.vocab_size, path, FLAGS.lower_case,
                                          strip_accents, min_frequency=min_frequency),
        "hf tokenizers BertWordPieceTokenizer.train_from_iterator":
            lambda path: _learn_with_hf_trainer(lines, FLAGS.vocab_size, path, min_frequency,
                                                FLAGS.lower_case, strip_accents),
    }
    runs = {impl: [] for impl in learners}  # impl -> [(seconds, cpu seconds, file, vocabulary)]
    for repeat in range(FLAGS.learn_repeats):
        for number, (impl, learn) in enumerate(learners.items()):
            path = os.path.join(work, f"vocab-{number}-{repeat}.txt")
            start, cpu_start = time.perf_counter(), time.process_time()
            vocabulary = learn(path)
            runs[impl].append((time.perf_counter() - start, time.process_time() - cpu_start,
                               path, vocabulary))
    ours = min(next(iter(runs.values())))
    for impl, impl_runs in runs.items():
        seconds, cpu_seconds, path, vocabulary = min(impl_runs)
        contents = {open(run[2], "rb").read() for run in impl_runs}
        emit({"measure": "learn_vocabulary", "impl": impl, "target_size": FLAGS.vocab_size,
              "min_frequency": min_frequency, "size": len(vocabulary),
              "seconds": round(seconds, 3), "all_seconds": [round(run[0], 3) for run in impl_runs],
              "cpu_seconds": round(cpu_seconds, 3),  # all threads, the fastest run's
              "seconds_over_ours": round(seconds / ours[0], 3),
              "identical_files": len(contents) == 1,
              "tokens_shared_with_ours": len(set(vocabulary) & set(ours[3])),
              "held_out_tokens_per_word": round(
                  _tokens_per_word(path, held_out, FLAGS.lower_case, strip_accents), 4)})
    for path in FLAGS.compare_vocab_file:
        emit({"measure": "held_out_tokens_per_word", "vocab_file": path,
              "size": len(load_vocabulary(path)), "tokens_per_word": round(
                  _tokens_per_word(path, held_out, FLAGS.lower_case, strip_accents), 4)})
    return ours[2]


def _input_pipeline_rate(records_dir, max_seq_length, batch_size, num_batches=200):
    """Batches/s of the training input pipeline alone (read, shuffle, parse, mask, batch)."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    import tensorflow as tf

    from electra_tf.pretraining_data import builder as pretraining_data, pipeline

    ids = pretraining_data.load_metadata(records_dir)["special_token_ids"]
    objective = ObjectiveConfig(cls_token_id=ids["cls"], sep_token_id=ids["sep"],
                                mask_token_id=ids["mask"])
    dataset = pipeline.make_dataset(pipeline.list_shards(records_dir), batch_size,
                                    max_seq_length, objective)
    iterator = iter(dataset)
    for _ in range(20):  # warm-up: fill the shuffle buffer and prefetch
        next(iterator)
    start = time.perf_counter()
    for _ in range(num_batches):
        tf.nest.map_structure(lambda t: t.numpy(), next(iterator))
    return num_batches / (time.perf_counter() - start)


def _in_fresh_process(env: dict, fn, *args):
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        with concurrent.futures.ProcessPoolExecutor(
                1, mp_context=multiprocessing.get_context("spawn")) as executor:
            future = executor.submit(fn, *args)
            return future.result()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def main(argv):
    del argv
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf.pretraining_data import corpus as corpus_lib
    from electra_tf.pretraining_data import builder as pretraining_data

    import tensorflow as tf
    # One TensorFlow thread in this process: its numbers are per core, like the workers'.
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    cpus = os.cpu_count() or 1
    num_processes = FLAGS.num_processes or cpus
    strip_accents = FLAGS.lower_case if FLAGS.strip_accents is None else FLAGS.strip_accents
    with tempfile.TemporaryDirectory() as work:
        vocab_file = _vocabulary_measures(work, strip_accents)
        if FLAGS.vocab_file:
            vocab_file = FLAGS.vocab_file
        if FLAGS.vocabulary_only:
            return
        corpus_dir = os.path.join(work, "corpus")
        documents = corpus_lib.embedded_documents()
        os.makedirs(corpus_dir)
        num_files = 4
        for i in range(num_files):
            with open(os.path.join(corpus_dir, f"python_docs-{i:02d}.txt"), "w",
                      encoding="utf-8") as f:
                text = "".join("\n".join(doc) + "\n\n" for doc in documents[i::num_files])
                f.write(text * FLAGS.copies)
        one_copy = [line for doc in documents for line in doc]
        emit({"measure": "corpus", "documents": len(documents) * FLAGS.copies,
              "lines": len(one_copy) * FLAGS.copies,
              "words": sum(len(l.split()) for l in one_copy) * FLAGS.copies,
              "bytes": sum(os.path.getsize(os.path.join(corpus_dir, n))
                           for n in os.listdir(corpus_dir)),
              "copies": FLAGS.copies, "cpus": cpus,
              "load_average_1min": round(os.getloadavg()[0], 2)})

        for processes in sorted({1, num_processes}):
            summary = pretraining_data.build_pretraining_data(
                output_dir=os.path.join(work, f"out{processes}"), vocab_file=vocab_file,
                corpus=corpus_dir, max_seq_length=FLAGS.max_seq_length,
                num_processes=processes, num_shards=max(processes, 2),
                lower_case=FLAGS.lower_case, strip_accents=strip_accents)
            tokens = summary.stats.tokens
            emit({"measure": "build_pretraining_data", "impl": "electra_tf",
                  "processes": summary.num_processes, "tokens": tokens,
                  "examples": summary.stats.examples, "seconds": round(summary.seconds, 3),
                  "tokens_per_s": round(summary.tokens_per_s),
                  "tokens_per_s_per_process": round(summary.tokens_per_s / summary.num_processes),
                  "busy_seconds": round(summary.busy_seconds, 3),
                  "busy_tokens_per_s_per_process": round(tokens / summary.busy_seconds)})

        rate = _in_fresh_process({}, _input_pipeline_rate, os.path.join(work, "out1"),
                                 FLAGS.max_seq_length, FLAGS.pipeline_batch)
        emit({"measure": "input_pipeline", "batch": FLAGS.pipeline_batch,
              "seq": FLAGS.max_seq_length, "batches_per_s": round(rate, 2),
              "sequences_per_s": round(rate * FLAGS.pipeline_batch, 1)})

        writer = pretraining_data.ShardWriter(pretraining_data.BuildSettings(
            vocab_file, work, FLAGS.max_seq_length, FLAGS.lower_case, strip_accents, 0, 1))
        lines = [line for document in corpus_lib.read_documents(corpus_dir) for line in document]
        batch = pretraining_data.TOKENIZE_BATCH_LINES
        start = time.perf_counter()
        ours = []
        for i in range(0, len(lines), batch):
            ours.extend(writer.tokenize(lines[i:i + batch]))
        seconds = time.perf_counter() - start
        tokens = sum(map(len, ours))
        ours = [hash(tuple(ids)) for ids in ours]
        emit({"measure": "tokenize",
              "impl": "electra_tf (BERT tokenization, tensorflow-text, in graph)",
              "threads": 1, "tokens": tokens, "seconds": round(seconds, 3),
              "tokens_per_s": round(tokens / seconds)})

        for threads in sorted({1, cpus}):
            hf_tokens, seconds, n_lines, hf_ids = _in_fresh_process(
                {"RAYON_NUM_THREADS": str(threads), "TOKENIZERS_PARALLELISM": "true"},
                _hf_encode, vocab_file, corpus_dir, FLAGS.lower_case, strip_accents)
            same = sum(a == b for a, b in zip(ours, hf_ids))
            emit({"measure": "tokenize", "impl": "hf tokenizers BertWordPieceTokenizer",
                  "threads": threads, "tokens": hf_tokens, "lines": n_lines,
                  "seconds": round(seconds, 3), "tokens_per_s": round(hf_tokens / seconds),
                  "tokens_per_s_per_thread": round(hf_tokens / seconds / threads),
                  "lines_identical_to_ours": round(same / len(lines), 5)})


if __name__ == "__main__":
    console.run(main)
