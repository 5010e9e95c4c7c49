r"""Learns a WordPiece vocabulary from a corpus (Hugging Face `tokenizers`' WordPiece trainer).

  python -m electra_tf.build_vocab --corpus 'data/*.txt' --vocab_size 30522 --output vocab.txt

The text is normalized and split into words by BERT's rules, those of the in-graph tokenizer
(lower-casing and accent stripping unless --nolower_case); the trainer starts from the
characters (at most 1,000, the most frequent; each also as "##c" inside a word) and merges the
most frequent pair of adjacent pieces until the vocabulary holds --vocab_size tokens, special
tokens included, or no pair is seen --min_frequency times any more. So --vocab_size is a target:
a small corpus yields fewer tokens, and the command says so (the embedded Python-docs corpus,
about 650 KB, gives about 2,700 tokens for a target of 4,000; 18 MB of English about 16,000 for
30,522). Lower --min_frequency for more tokens, seen fewer times each (pretraining learns little
from a piece seen a handful of times); more text is the better cure.

The vocabulary starts with [PAD] [UNK] [CLS] [SEP] [MASK] (ids 0-4). The corpus is read twice
(characters, then training), never held in memory; the same corpus gives the same file, byte for
byte.
"""

import functools
import os
import sys

from absl import app, flags, logging

from electra_tf import console
from electra_tf.errors import UserError

console.setup(__name__)  # first: TensorFlow reads its C++ log level when it loads

FLAGS = flags.FLAGS
flags.DEFINE_string("corpus", None, "Text corpus: a directory (its files), a glob, or a "
                    "comma-separated list of text files. Give this or --tfds_name.")
flags.DEFINE_string("tfds_name", None, "TFDS dataset to read instead of --corpus.")
flags.DEFINE_string("tfds_split", "train", "TFDS split (slicing allowed, e.g. 'train[:1%]').")
flags.DEFINE_string("tfds_text_key", "text", "TFDS feature holding the text.")
flags.DEFINE_string("tfds_data_dir", None, "TFDS data directory (default: TFDS's own).")
flags.DEFINE_integer("vocab_size", 30522, "Target vocabulary size, special tokens included.")
flags.DEFINE_integer("min_frequency", 10, "A new piece is learned only from a pair of pieces seen "
                     "at least this many times: it keeps pieces too rare to learn out of the "
                     "vocabulary of a corpus small for --vocab_size (a large one fills it first).")
flags.DEFINE_string("output", "vocab.txt", "Where to write the vocabulary, one token per line.")
flags.DEFINE_bool("lower_case", True, "Lower-case the text (uncased vocabulary).")
flags.DEFINE_bool("strip_accents", None, "Strip accents (default: same as --lower_case).")
flags.DEFINE_bool("overwrite", False, "Replace an existing --output file.")


def main(argv):
    if len(argv) > 1:
        sys.exit(f"error: unexpected arguments: {' '.join(argv[1:])}")
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf.pretraining_data import corpus as corpus_lib

    if bool(FLAGS.corpus) == bool(FLAGS.tfds_name):
        sys.exit("error: give exactly one of --corpus or --tfds_name")
    if FLAGS.vocab_size <= 5:
        sys.exit(f"error: --vocab_size must exceed the 5 special tokens, got {FLAGS.vocab_size}")
    if FLAGS.min_frequency < 1:
        sys.exit(f"error: --min_frequency must be at least 1, got {FLAGS.min_frequency}")
    if os.path.exists(FLAGS.output) and not FLAGS.overwrite:
        sys.exit(f"error: {FLAGS.output} exists; pass --overwrite to replace it")
    try:
        if FLAGS.corpus:
            corpus_lib.corpus_files(FLAGS.corpus)  # a bad corpus fails before TensorFlow loads
            read = functools.partial(corpus_lib.read_documents, FLAGS.corpus)
        else:
            read = functools.partial(corpus_lib.tfds_documents, FLAGS.tfds_name, FLAGS.tfds_split,
                                     FLAGS.tfds_text_key, FLAGS.tfds_data_dir)
        # lazy: imported once the flags are parsed, so --help starts no TensorFlow
        from electra_tf.text.vocab_learning import learn_vocabulary
        logging.info("learning a vocabulary of up to %d tokens from %s", FLAGS.vocab_size,
                     FLAGS.corpus or FLAGS.tfds_name)
        vocabulary = learn_vocabulary(corpus_lib.CorpusLines(read), FLAGS.vocab_size, FLAGS.output,
                                      lower_case=FLAGS.lower_case,
                                      strip_accents=FLAGS.strip_accents,
                                      min_frequency=FLAGS.min_frequency)
    except UserError as e:
        sys.exit(f"error: {e}")
    shortfall = ""
    if len(vocabulary) < FLAGS.vocab_size:
        shortfall = (f" (fewer than the {FLAGS.vocab_size:,} asked: no pair of pieces is seen "
                     f"--min_frequency={FLAGS.min_frequency} times any more; lower it, or give "
                     f"more text)")
    print(f"wrote a vocabulary of {len(vocabulary):,} tokens to {FLAGS.output}{shortfall}",
          flush=True)


if __name__ == "__main__":
    app.run(main)
