r"""Learns a WordPiece vocabulary from a corpus (Hugging Face `tokenizers`' WordPiece trainer), or
a SentencePiece model (unigram or BPE, the `sentencepiece` trainer).

  python -m electra_tf.build_vocab --corpus 'data/*.txt' --vocab_size 30522 --output vocab.txt
  python -m electra_tf.build_vocab --corpus 'data/*.txt' --vocab_size 32000 \
      --model_type sentencepiece --sentencepiece_algorithm unigram --output spm.model

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

With --model_type sentencepiece the corpus lines go to SentencePiece's trainer (languages written
without spaces need no word splitting): the model file holds [PAD] [UNK] [CLS] [SEP] [MASK] as ids
0-4 and its own normalization (NFKC, case-folded unless --nolower_case; accents are kept), so
every tokenizer of the model reads text the same way. --vocab_size is a target here too, and
--min_frequency does not apply; characters beyond the most frequent --character_coverage of the
text become [UNK]. SentencePiece's trainer holds the corpus in memory.
"""

import functools
import os
import sys

from absl import flags, logging

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
flags.DEFINE_enum("model_type", "wordpiece", ["wordpiece", "sentencepiece"],
                  "wordpiece: BERT's vocab.txt; sentencepiece: a SentencePiece .model file.")
flags.DEFINE_enum("sentencepiece_algorithm", "unigram", ["unigram", "bpe"],
                  "SentencePiece's segmentation model (with --model_type sentencepiece).")
flags.DEFINE_float("character_coverage", 0.9995, "With --model_type sentencepiece: the share "
                   "of the text's characters the model covers; rarer characters become [UNK] "
                   "(1.0 keeps all).")
flags.DEFINE_string("output", None, "Where to write the vocabulary (default: vocab.txt, one "
                    "token per line; sentencepiece.model with --model_type sentencepiece).")
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
    sentencepiece = FLAGS.model_type == "sentencepiece"
    if sentencepiece and FLAGS.strip_accents:
        sys.exit("error: --strip_accents is not available with --model_type sentencepiece "
                 "(its NFKC normalization keeps accents)")
    if not 0 < FLAGS.character_coverage <= 1:
        sys.exit(f"error: --character_coverage must be in (0, 1], got {FLAGS.character_coverage}")
    output = FLAGS.output or ("sentencepiece.model" if sentencepiece else "vocab.txt")
    if os.path.exists(output) and not FLAGS.overwrite:
        sys.exit(f"error: {output} exists; pass --overwrite to replace it")
    try:
        if FLAGS.corpus:
            corpus_lib.corpus_files(FLAGS.corpus)  # a bad corpus fails before TensorFlow loads
            read = functools.partial(corpus_lib.read_documents, FLAGS.corpus)
        else:
            read = functools.partial(corpus_lib.tfds_documents, FLAGS.tfds_name, FLAGS.tfds_split,
                                     FLAGS.tfds_text_key, FLAGS.tfds_data_dir)
        if sentencepiece:
            _learn_sentencepiece(corpus_lib.CorpusLines(read), output)
            return
        # lazy: imported once the flags are parsed, so --help starts no TensorFlow
        from electra_tf.text.vocab_learning import learn_vocabulary
        logging.info("learning a vocabulary of up to %d tokens from %s", FLAGS.vocab_size,
                     FLAGS.corpus or FLAGS.tfds_name)
        vocabulary = learn_vocabulary(corpus_lib.CorpusLines(read), FLAGS.vocab_size, output,
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
    print(f"wrote a vocabulary of {len(vocabulary):,} tokens to {output}{shortfall}",
          flush=True)


def _learn_sentencepiece(lines, output):
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf.text.sentencepiece_vocab import learn_sentencepiece

    logging.info("learning a SentencePiece %s model of about %d pieces from %s",
                 FLAGS.sentencepiece_algorithm, FLAGS.vocab_size, FLAGS.corpus or FLAGS.tfds_name)
    size = learn_sentencepiece(lines, FLAGS.vocab_size, output,
                               algorithm=FLAGS.sentencepiece_algorithm,
                               lower_case=FLAGS.lower_case,
                               character_coverage=FLAGS.character_coverage)
    shortfall = (f" (fewer than the {FLAGS.vocab_size:,} asked: the corpus is too small for "
                 f"more)" if size < FLAGS.vocab_size else "")
    print(f"wrote a SentencePiece {FLAGS.sentencepiece_algorithm} model of {size:,} pieces "
          f"([PAD] [UNK] [CLS] [SEP] [MASK] = 0-4) to {output}{shortfall}", flush=True)


if __name__ == "__main__":
    console.run(main)
