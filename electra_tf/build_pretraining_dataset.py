r"""Builds ELECTRA pretraining TFRecords from text files or a TFDS dataset.

  python -m electra_tf.build_pretraining_dataset --corpus 'data/*.txt' \
      --vocab_file vocab.txt --output_dir pretrain_tfrecords --max_seq_length 128

Text files: one sentence per line, a blank line between documents (the original's format).
Writes `pretrain_data.tfrecord-<i>-of-<n>` (features input_ids, input_mask, segment_ids: int64,
length max_seq_length) and `metadata.json` (the vocabulary's size, hash and special ids, which
run_pretraining takes and checks). The packing rules are the original's
(electra_tf/pretraining_data/example_packing.py): one example in ten single-segment, one in
twenty with a random short target length, no example crosses a document, overflow past
max_seq_length discarded. Every shard samples the whole corpus (electra_tf/pretraining_data/build_plan.py).

`--runner beam` builds the same files on Apache Beam (`pip install 'electra_tf[beam]'`): by
default the DirectRunner in one process per core, or any runner through --beam_pipeline_options
(docs/pretraining.md, "Building on Apache Beam").
"""

import functools
import shlex
import sys

from absl import flags

from electra_tf import console
from electra_tf.errors import exit_on_user_error

console.setup(__name__)  # first: TensorFlow reads its C++ log level when it loads

FLAGS = flags.FLAGS
flags.DEFINE_string("corpus", None, "Text corpus: a directory (its files), a glob, or a "
                    "comma-separated list of text files. One sentence per line, blank line "
                    "between documents. Give this or --tfds_name.")
flags.DEFINE_string("tfds_name", None, "TFDS dataset to read instead of --corpus, e.g. "
                    "'wikipedia/20230601.en'; each example's text is one document.")
flags.DEFINE_string("tfds_split", "train", "TFDS split (slicing allowed, e.g. 'train[:10%]').")
flags.DEFINE_string("tfds_text_key", "text", "TFDS feature holding the text.")
flags.DEFINE_string("tfds_data_dir", None, "TFDS data directory (default: TFDS's own).")
flags.DEFINE_string("vocab_file", None, "WordPiece vocab.txt (one token per line) or SentencePiece "
                    "model (.model, its own normalization) holding [PAD] "
                    "[UNK] [CLS] [SEP] [MASK].")
flags.DEFINE_string("output_dir", None, "Directory for the TFRecord shards and the metadata file.")
flags.DEFINE_integer("max_seq_length", 128, "Tokens per example, [CLS] and [SEP]s included "
                     "(5 to 512).")
flags.DEFINE_integer("num_processes", None, "Worker processes (default: number of CPUs, but "
                     "at most one per 16 MiB of text: starting one costs about 3 s).")
flags.DEFINE_integer("num_shards", None, "Output shards (default: about one per 256 MiB of "
                     "text, at least --num_processes, at most 1000).")
flags.DEFINE_bool("lower_case", True, "Lower-case the text (uncased vocabulary).")
flags.DEFINE_bool("strip_accents", None, "Strip accents (default: same as --lower_case).")
flags.DEFINE_enum("normalization", "bert", ["bert", "keras_hub"], "Text normalization of the "
                  "tokenizer: 'bert', the original tokenization.py's (the ids Google's and Hugging "
                  "Face's checkpoints were trained on), or 'keras_hub', keras-hub's WordPiece "
                  "defaults (NFKC case folding), as builds before issue 10 used.")
flags.DEFINE_integer("seed", 0, "Random seed: the same seed and corpus give the same examples.")
flags.DEFINE_bool("overwrite", False, "Replace the shards and metadata of an earlier build in "
                  "--output_dir (without it, such a directory is refused).")
flags.DEFINE_bool("replace_invalid_utf8", False, "Replace bytes that are not UTF-8 with U+FFFD "
                  "(which the tokenizer removes) and report how many lines had some, instead of "
                  "refusing the corpus with the file and byte offset of the first one.")
flags.DEFINE_float("log_every_s", 10.0, "Seconds between progress lines.")
flags.DEFINE_enum("runner", "local", ["local", "beam"], "Who builds: 'local', this machine's "
                  "processes, or 'beam', an Apache Beam pipeline (the same files; needs "
                  "electra_tf[beam]).")
flags.DEFINE_string("beam_pipeline_options", "", "With --runner beam: Beam pipeline flags, one "
                    "string split like a shell line, e.g. '--runner=DataflowRunner "
                    "--project=my-project --region=us-central1 --temp_location=gs://b/tmp' "
                    "(default: the DirectRunner, one worker process per --num_processes).")


def main(argv):
    if len(argv) > 1:
        sys.exit(f"error: unexpected arguments: {' '.join(argv[1:])}")
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf.pretraining_data.builder import build_pretraining_data

    missing = [name for name in ("vocab_file", "output_dir") if not FLAGS[name].value]
    if missing:
        sys.exit(f"error: --{' and --'.join(missing)} required")
    if bool(FLAGS.corpus) == bool(FLAGS.tfds_name):
        sys.exit("error: give exactly one of --corpus or --tfds_name")
    if FLAGS.beam_pipeline_options and FLAGS.runner != "beam":
        sys.exit("error: --beam_pipeline_options needs --runner beam")
    build = build_pretraining_data
    if FLAGS.runner == "beam":
        # lazy: the local runner needs neither Beam nor its pipeline
        from electra_tf.pretraining_data.beam_pipeline import build_with_beam
        build = functools.partial(build_with_beam,
                                  beam_args=shlex.split(FLAGS.beam_pipeline_options))
    summary = exit_on_user_error(lambda: build(
            output_dir=FLAGS.output_dir, vocab_file=FLAGS.vocab_file, corpus=FLAGS.corpus,
            tfds_name=FLAGS.tfds_name, tfds_split=FLAGS.tfds_split,
            tfds_text_key=FLAGS.tfds_text_key, tfds_data_dir=FLAGS.tfds_data_dir,
            max_seq_length=FLAGS.max_seq_length, num_processes=FLAGS.num_processes,
            num_shards=FLAGS.num_shards, lower_case=FLAGS.lower_case,
            strip_accents=FLAGS.strip_accents, seed=FLAGS.seed, overwrite=FLAGS.overwrite,
            replace_invalid_utf8=FLAGS.replace_invalid_utf8, normalization=FLAGS.normalization,
            log_every_s=FLAGS.log_every_s))
    print(summary.line(), flush=True)


if __name__ == "__main__":
    console.run(main)
