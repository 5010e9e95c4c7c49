r"""Times the SQuAD pipeline: featurization (examples/s) and prediction (features/s); JSON lines.

  python -m electra_tf.benchmarks.squad --size small --max_seq_length 384 --max_seq_length 512

Nothing is downloaded: SQuAD-like questions are generated from the words of the embedded corpus
(Python's own documentation, as `electra_tf.benchmarks.pretraining_data`), tokenized with a
vocabulary learned from that corpus as that benchmark learns it (or `--vocab_file`). Paragraphs of
120-150 words (a tenth of them 300-400 words, which need two or more windows at 384 and 512)
get five questions each, as SQuAD's do; a question is 8-12 words, its answer 1-4 words of the
context. Words are drawn from the corpus's running text (common words often, rare words rarely),
so WordPiece splits them as it splits real text: about 2 tokens a word with the learned
vocabulary (its ~2,500 entries are all this corpus yields at min_frequency 10; the `examples`
line gives the ratio),
more than BERT's vocabulary gives on SQuAD, so windows hold fewer words than SQuAD's and a
question needs more of them; the lines give rates per question and per window.

For each `--max_seq_length`, one JSON line each (window settings: the `qa` config section's):
- `featurize`: `QAFeaturizer.featurize` of the training questions in this process (the
  featurizer built beforehand);
- `write_training_records` with 1 and with `--num_workers` processes: featurize, serialize and
  write the TFRecord file, end to end (pool start-up and each worker's tokenizer included);
- `predict`: `predict_examples` with an `ElectraQuestionAnswerer` of `--size` (random weights,
  the joint head's in-graph beam): featurize, model, n-best decoding of every window (the
  featurizer built beforehand), after one untimed call that traces the model;
  `model_features_per_s` is `model.predict` alone on the same windows.

A benchmark, never a test: numbers depend on the machine. TensorFlow uses its default threads.
"""

import dataclasses
import json
import os
import random
import tempfile
import time

from absl import flags, logging

from electra_tf import console
from electra_tf.config import QAConfig, load_config
from electra_tf.pretraining_data.corpus import embedded_documents

console.setup(__name__, default_verbosity=logging.WARNING)  # before TensorFlow loads

FLAGS = flags.FLAGS
flags.DEFINE_string("size", "small", "Model config: tiny, small, base, large, or a YAML path.")
flags.DEFINE_multi_integer("max_seq_length", [384, 512], "Window lengths (repeat the flag).")
flags.DEFINE_integer("num_examples", 10000, "Questions featurized (SQuAD 1.1 dev: 10,570).")
flags.DEFINE_integer("predict_examples", 1000, "Questions predicted (the first of them).")
flags.DEFINE_integer("batch", 32, "Prediction batch size (the fine-tuning eval_batch_size).")
flags.DEFINE_integer("num_workers", 2, "Processes of the parallel write_training_records.")
flags.DEFINE_string("vocab_file", None, "Vocabulary to use (default: learn one from the corpus).")
flags.DEFINE_integer("vocab_size", 8000, "Target size when learning the vocabulary.")
flags.DEFINE_bool("lower_case", True, "Uncased tokenization.")

PARAGRAPH_WORDS, LONG_PARAGRAPH_WORDS, LONG_FRACTION = (120, 150), (300, 400), 0.1
QUESTION_WORDS, ANSWER_WORDS, QUESTIONS_PER_PARAGRAPH = (8, 12), (1, 4), 5


def emit(record: dict) -> None:
    print(json.dumps(record), flush=True)


def squad_like_examples(words: list[str], num_examples: int, seed: int = 0) -> list:
    """Answerable training `SquadExample`s (see the module docstring); the questions of a
    paragraph share its `doc_tokens`, as `read_squad`'s do."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf.task_data.squad import SquadExample

    rng = random.Random(seed)
    examples = []
    while len(examples) < num_examples:
        sizes = LONG_PARAGRAPH_WORDS if rng.random() < LONG_FRACTION else PARAGRAPH_WORDS
        context = rng.choices(words, k=rng.randint(*sizes))
        for _ in range(QUESTIONS_PER_PARAGRAPH):
            length = rng.randint(*ANSWER_WORDS)
            start = rng.randrange(len(context) - length + 1)
            question = " ".join(rng.choices(words, k=rng.randint(*QUESTION_WORDS))) + "?"
            examples.append(SquadExample(
                str(len(examples)), question, context, " ".join(context[start:start + length]),
                start, start + length - 1, context_text=" ".join(context)))
    return examples[:num_examples]


def _rate_record(measure: str, examples: int, windows: int, seconds: float,
                 unit: str = "windows", **settings) -> dict:
    return {"measure": measure, **settings, "examples": examples, unit: windows,
            "seconds": round(seconds, 3), "examples_per_s": round(examples / seconds, 1),
            f"{unit}_per_s": round(windows / seconds, 1)}


def _featurize(examples, featurizer_args: dict, work: str) -> None:
    """The `featurize` and `write_training_records` lines of one window length."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf.task_data.squad_features import (CHUNK_EXAMPLES, QAFeaturizer,
                                                write_training_records)

    length = featurizer_args["max_seq_length"]
    featurizer = QAFeaturizer(**featurizer_args)
    start = time.perf_counter()
    windows = sum(1 for _ in featurizer.featurize(examples, is_training=True))
    emit(_rate_record("featurize", len(examples), windows, time.perf_counter() - start,
                      impl="QAFeaturizer", processes=1, max_seq_length=length))
    chunks = -(-len(examples) // CHUNK_EXAMPLES)
    for workers in sorted({1, FLAGS.num_workers}):
        start = time.perf_counter()
        windows = write_training_records(examples, featurizer_args,
                                         os.path.join(work, f"train-{length}-{workers}.tfrecord"),
                                         num_workers=workers, shuffle_seed=0)
        emit(_rate_record("write_training_records", len(examples), windows,
                          time.perf_counter() - start, processes=min(workers, chunks),
                          max_seq_length=length))


def _predict(model, examples, featurizer_args: dict) -> None:
    """The `predict` line of one window length."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    import numpy as np

    from electra_tf.task_data.squad_features import QAFeaturizer
    from electra_tf.finetuning.common import batched_inputs
    from electra_tf.finetuning.question_answering import predict_examples
    from electra_tf.models.task_model import INPUT_NAMES

    qa = QAConfig()

    def predict(some, featurizer):
        return predict_examples(model, some, featurizer, FLAGS.batch, n_best_size=qa.n_best_size,
                                max_answer_length=qa.max_answer_length, lower_case=FLAGS.lower_case)

    predict(examples[:FLAGS.batch], QAFeaturizer(**featurizer_args))  # traces the model
    featurizer = QAFeaturizer(**featurizer_args)  # a fresh one: its word cache starts empty
    start = time.perf_counter()
    predict(examples, featurizer)
    seconds = time.perf_counter() - start
    features = list(QAFeaturizer(**featurizer_args).featurize(examples, is_training=False))
    inputs, _ = batched_inputs({name: np.stack([getattr(f, name) for f in features])
                                for name in INPUT_NAMES}, FLAGS.batch)
    start = time.perf_counter()
    model.predict(inputs, verbose=0)
    model_seconds = time.perf_counter() - start
    emit({**_rate_record("predict", len(examples), len(features), seconds, unit="features",
                         size=FLAGS.size, head=model.head_type, beam_size=model.beam_size,
                         batch=FLAGS.batch, max_seq_length=featurizer_args["max_seq_length"]),
          "model_features_per_s": round(len(features) / model_seconds, 1)})


def _vocabulary_and_examples(work: str) -> tuple[str, list]:
    """(vocab file, generated questions); emits the `examples` line."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf.task_data.squad_features import QAFeaturizer
    from electra_tf.text.tokenization import load_vocabulary
    from electra_tf.text.vocab_learning import learn_vocabulary

    lines = [line for document in embedded_documents() for line in document]
    vocab_file = FLAGS.vocab_file
    if vocab_file is None:
        vocab_file = os.path.join(work, "vocab.txt")
        learn_vocabulary(lines, FLAGS.vocab_size, vocab_file, FLAGS.lower_case)
    examples = squad_like_examples([w for line in lines for w in line.split()], FLAGS.num_examples)
    contexts = {id(e.doc_tokens): e.doc_tokens for e in examples}
    words = [w for context in contexts.values() for w in context]
    tokens = sum(map(len, QAFeaturizer(vocab_file, FLAGS.lower_case).tokenize(words)))
    qa = QAConfig()
    emit({"measure": "examples", "examples": len(examples), "paragraphs": len(contexts),
          "mean_paragraph_words": round(len(words) / len(contexts), 1),
          "long_paragraphs": sum(len(c) >= LONG_PARAGRAPH_WORDS[0] for c in contexts.values()),
          "wordpiece_tokens_per_word": round(tokens / len(words), 3),
          "vocab_file": FLAGS.vocab_file or "learned",
          "vocab_size": len(load_vocabulary(vocab_file)), "doc_stride": qa.doc_stride,
          "max_query_length": qa.max_query_length, "cpus": os.cpu_count(),
          "load_average_1min": round(os.getloadavg()[0], 2)})
    return vocab_file, examples


def main(argv):
    del argv
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    import keras

    from electra_tf.text.tokenization import load_vocabulary
    from electra_tf.models.question_answerer import ElectraQuestionAnswerer

    with tempfile.TemporaryDirectory() as work:
        vocab_file, examples = _vocabulary_and_examples(work)
        size = FLAGS.size if os.path.sep in FLAGS.size else f"model/{FLAGS.size}"
        model_config = dataclasses.replace(load_config(size).model,
                                           vocab_size=len(load_vocabulary(vocab_file)))
        qa = QAConfig()
        keras.utils.set_random_seed(0)
        model = ElectraQuestionAnswerer(model_config, head=qa.head, beam_size=qa.beam_size,
                                        answerable_weight=qa.answerable_weight)
        for length in FLAGS.max_seq_length:
            featurizer_args = dict(vocabulary=vocab_file, lower_case=FLAGS.lower_case,
                                   max_seq_length=length, doc_stride=qa.doc_stride,
                                   max_query_length=qa.max_query_length)
            _featurize(examples, featurizer_args, work)
            _predict(model, examples[:FLAGS.predict_examples], featurizer_args)


if __name__ == "__main__":
    console.run(main)
