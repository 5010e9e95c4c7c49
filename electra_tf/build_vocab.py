r"""Learns a WordPiece vocabulary from a corpus (tensorflow-text's learner, through keras-hub).

  python -m electra_tf.build_vocab --corpus 'data/*.txt' --vocab_size 30522 --output vocab.txt

The vocabulary starts with [PAD] [UNK] [CLS] [SEP] [MASK] (ids 0-4). --vocab_size is a target:
tensorflow-text's learner searches a count threshold no lower than 10 (its `lower_thresh`), so
pieces seen fewer than 10 times never enter and a small corpus yields a smaller vocabulary (the
embedded Python-docs corpus, about 650 KB, gives about 1,800 tokens whatever the target).
"""

import os
import sys

from absl import app, flags, logging

FLAGS = flags.FLAGS
flags.DEFINE_string("corpus", None, "Text corpus: a directory (its files), a glob, or a "
                    "comma-separated list of text files. Give this or --tfds_name.")
flags.DEFINE_string("tfds_name", None, "TFDS dataset to read instead of --corpus.")
flags.DEFINE_string("tfds_split", "train", "TFDS split (slicing allowed, e.g. 'train[:1%]').")
flags.DEFINE_string("tfds_text_key", "text", "TFDS feature holding the text.")
flags.DEFINE_string("tfds_data_dir", None, "TFDS data directory (default: TFDS's own).")
flags.DEFINE_integer("vocab_size", 30522, "Target vocabulary size, special tokens included.")
flags.DEFINE_string("output", "vocab.txt", "Where to write the vocabulary, one token per line.")
flags.DEFINE_bool("lower_case", True, "Lower-case the text (uncased vocabulary).")
flags.DEFINE_bool("strip_accents", None, "Strip accents (default: same as --lower_case).")
flags.DEFINE_bool("overwrite", False, "Replace an existing --output file.")


def main(argv):
    if len(argv) > 1:
        sys.exit(f"error: unexpected arguments: {' '.join(argv[1:])}")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from electra_tf.data import corpus as corpus_lib

    logging.set_verbosity(logging.INFO)
    if bool(FLAGS.corpus) == bool(FLAGS.tfds_name):
        sys.exit("error: give exactly one of --corpus or --tfds_name")
    if FLAGS.vocab_size <= 5:
        sys.exit(f"error: --vocab_size must exceed the 5 special tokens, got {FLAGS.vocab_size}")
    if os.path.exists(FLAGS.output) and not FLAGS.overwrite:
        sys.exit(f"error: {FLAGS.output} exists; pass --overwrite to replace it")
    try:
        if FLAGS.corpus:
            corpus_lib.corpus_files(FLAGS.corpus)  # a bad corpus fails before TensorFlow loads
            documents = corpus_lib.read_documents(FLAGS.corpus)
        else:
            documents = corpus_lib.tfds_documents(FLAGS.tfds_name, FLAGS.tfds_split,
                                                  FLAGS.tfds_text_key, FLAGS.tfds_data_dir)
        lines = [line for document in documents for line in document]
        from electra_tf.data.vocab_learning import learn_vocabulary
        logging.info("learning a vocabulary of up to %d tokens from %d lines", FLAGS.vocab_size,
                     len(lines))
        vocabulary = learn_vocabulary(lines, FLAGS.vocab_size, FLAGS.output,
                                      lower_case=FLAGS.lower_case,
                                      strip_accents=FLAGS.strip_accents)
    except Exception as e:  # noqa: BLE001 - re-raised unless it is one of ours
        tokenization = sys.modules.get("electra_tf.data.tokenization")
        if isinstance(e, corpus_lib.CorpusError) or (
                tokenization is not None and isinstance(e, tokenization.VocabularyError)):
            sys.exit(f"error: {e}")
        raise
    print(f"wrote a vocabulary of {len(vocabulary):,} tokens to {FLAGS.output}", flush=True)


if __name__ == "__main__":
    app.run(main)
