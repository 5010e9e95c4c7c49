r"""Exports a pretraining checkpoint's discriminator, or a fine-tuned classifier, question
answerer or tagger, as a SavedModel for TF Serving.

From a run directory of `electra_tf.run_pretraining` (its config.yaml and newest checkpoint):

  python -m electra_tf.export_savedmodel --model_dir runs/small --output_dir models/electra

writes `models/electra/<step>/` (TF Serving's `<base>/<version>/` layout; the version defaults
to the checkpoint's step) with the signatures `serving_default` (int32 input_ids, input_mask,
segment_ids [batch, seq] -> float32 logits, probabilities [batch, seq]) and `serve_examples`
(serialized tf.Examples). `--with_tokenizer` adds `serve_text` (raw strings, tokenized in the
graph); that needs a model server built with TF Text ops, for every signature of the model.

A fine-tuning run directory of `electra_tf.run_finetuning` (one with task.json; with several
trials, each trial_<k>/) exports its classifier or regressor, question answerer or tagger (see
electra_tf/export/classifier.py, question_answerer.py, tagger.py):

  python -m electra_tf.export_savedmodel --model_dir runs/mnli/trial_0 --output_dir models/mnli

Or from any pretraining checkpoint and config:

  python -m electra_tf.export_savedmodel --checkpoint ckpts/ckpt-1000 \
      --config pretrain/electra_small --output_dir models/electra --version 1

`--jit_compile` compiles the model's forward pass with XLA in every signature: lower latency
on a CPU for small batches, but a model server needs `--xla_cpu_compilation_enabled=true` to run
it (docs/serving.md). `--serving_dtype bfloat16` stores the weights in bfloat16 and computes the
matmuls in it: on CPUs with AMX, single requests and batches both run faster (docs/serving.md).
`--transposed_feedforward` stores the blocks' feed-forward input kernels transposed as well:
single requests ran 1.13-1.14x as fast on an AVX2-only CPU (AMD Zen 3).

The version directory appears only once it is complete (written next to it, then renamed), so a
model server watching `--output_dir` never loads half a model. An existing version is kept
unless `--overwrite`.
"""

from __future__ import annotations

import os
import re
import sys

from absl import flags

from electra_tf import console
from electra_tf.config import FinetuneConfig, load_config
from electra_tf.errors import UserError, exit_on_user_error

console.setup(__name__)  # first: TensorFlow reads its C++ log level when it loads

FLAGS = flags.FLAGS
flags.DEFINE_string("model_dir", None, "Run directory of run_pretraining: reads its config.yaml "
                    "and the newest checkpoint under checkpoints/. Default output_dir: "
                    "<model_dir>/export.")
flags.DEFINE_string("checkpoint", None, "Checkpoint to export (file prefix such as "
                    "ckpts/ckpt-1000, or a directory: its newest checkpoint). Default: the "
                    "newest in <model_dir>/checkpoints.")
flags.DEFINE_string("config", None, "Config YAML of the checkpoint's model (path or name under "
                    "configs/). Default: <model_dir>/config.yaml.")
flags.DEFINE_string("output_dir", None, "Base directory of the served model; the SavedModel "
                    "goes to <output_dir>/<version>/. Required without --model_dir.")
flags.DEFINE_integer("version", None, "Model version (directory name, an integer >= 0). "
                     "Default: the checkpoint's step number (the N of ckpt-N).")
flags.DEFINE_bool("overwrite", False, "Replace an existing <output_dir>/<version>/ (otherwise "
                  "the export is refused).")
flags.DEFINE_bool("with_examples", True, "Add the serve_examples signature (serialized "
                  "tf.Example protos with int64 input_ids, input_mask, segment_ids).")
flags.DEFINE_bool("with_tokenizer", False, "Add the serve_text signature (raw text, WordPiece "
                  "in the graph with tensorflow-text ops: the model then needs a model server "
                  "built with TF Text ops).")
flags.DEFINE_bool("with_embeddings", False, "Pretraining runs: add serve_embeddings (and "
                  "serve_text_embeddings with --with_tokenizer): the encoder's float32 "
                  "sequence_output [batch, seq, hidden] and pooled_output, the final [CLS] "
                  "vector [batch, hidden], for embedding use.")
flags.DEFINE_string("vocab_file", None, "vocab.txt for --with_tokenizer, stored in the "
                    "SavedModel's assets. Default: vocab.txt or data/vocab.txt in --model_dir, "
                    "else the config's vocab_file.")
flags.DEFINE_bool("lower_case", True, "serve_text: lower-case (and strip accents) before "
                  "WordPiece, as for an uncased vocabulary; --nolower_case for a cased one.")
flags.DEFINE_bool("jit_compile", False, "Compile the model's forward pass with XLA in every "
                  "signature: the same outputs, lower latency on a CPU for small batches; each "
                  "new [batch, seq] shape compiles once. TF Serving runs it only when started "
                  "with --xla_cpu_compilation_enabled=true (docs/serving.md).")
flags.DEFINE_enum("serving_dtype", "float32", ["float32", "bfloat16"],
                  "Weights and matmuls of the exported model. bfloat16: the weights rounded to "
                  "bfloat16 and the matmuls computed in it (outputs still float32, a few "
                  "hundredths from float32's): faster on CPUs with AMX (Intel Sapphire Rapids "
                  "and later) and on AMD's with AVX-512 BF16 (Zen 4); slower on Intel CPUs "
                  "with AVX-512 BF16 but no AMX and on CPUs without either (docs/serving.md).")
flags.DEFINE_bool("transposed_feedforward", False, "Also store each transformer block's "
                  "feed-forward input kernel transposed ([intermediate, hidden]) for the "
                  "exported graph (the same core ops; float32 outputs the same to rounding): "
                  "single requests ran 1.13-1.14x as fast on an AVX2-only CPU (AMD Zen 3); "
                  "unmeasured on CPUs with AVX-512 (docs/serving.md).")
flags.DEFINE_integer("max_seq_length", None, "serve_text: longest [CLS] tokens [SEP] sequence; "
                     "longer texts are truncated. Default: run.max_seq_length of the config "
                     "(128 unless the run changed it).")


class ExportCommandError(UserError):
    """An export that cannot run as asked."""


def _checkpoint_and_config(tf):
    """(checkpoint prefix, config file) from the flags, checked to exist."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf import run_directory

    checkpoint, config = FLAGS.checkpoint, FLAGS.config
    if FLAGS.model_dir is not None:
        if not tf.io.gfile.isdir(FLAGS.model_dir):
            raise ExportCommandError(f"--model_dir {FLAGS.model_dir} is not a directory")
        if config is None:
            config = run_directory.config_file(FLAGS.model_dir)
            if not tf.io.gfile.exists(config):
                raise ExportCommandError(f"{FLAGS.model_dir} has no {run_directory.CONFIG} (not "
                                         "a run directory of run_pretraining?); give --config")
        if checkpoint is None:
            checkpoint = run_directory.checkpoints_dir(FLAGS.model_dir)
            if not tf.io.gfile.isdir(checkpoint):
                raise ExportCommandError(f"{FLAGS.model_dir} has no {run_directory.CHECKPOINTS}/ "
                                         "directory")
    if checkpoint is None or config is None:
        raise ExportCommandError("give --model_dir, or --checkpoint and --config")
    if tf.io.gfile.isdir(checkpoint):
        latest = tf.train.latest_checkpoint(checkpoint)
        if latest is None:
            raise ExportCommandError(f"no checkpoint in {checkpoint}")
        checkpoint = latest
    elif not tf.io.gfile.exists(checkpoint + ".index"):
        raise ExportCommandError(f"checkpoint not found: {checkpoint} (no {checkpoint}.index)")
    return checkpoint, config


def _version(checkpoint: str) -> int:
    if FLAGS.version is not None:
        if FLAGS.version < 0:
            raise ExportCommandError(f"--version must be >= 0, got {FLAGS.version}")
        return FLAGS.version
    match = re.search(r"-(\d+)$", checkpoint)
    if match is None:
        raise ExportCommandError(f"cannot read a step number from {checkpoint} (expected "
                                 "...-<step>); give --version")
    return int(match.group(1))


def _checkpoint_key(path: str) -> str:
    """The checkpoint key under which RunCheckpoint / restore_weights store a Keras weight."""
    escaped = path.replace(".", "..").replace("/", ".S")
    return f"weights/{escaped}/.ATTRIBUTES/VARIABLE_VALUE"


def _check_fits(tf, model, checkpoint: str, config_path: str) -> None:
    """Names the first weight the checkpoint lacks or holds in another shape.

    (A failed restore says much the same, but also leaves TensorFlow warnings about every
    unrestored value after the error line.)
    """
    try:
        shapes = dict(tf.train.list_variables(checkpoint))
    except (tf.errors.OpError, ValueError) as e:
        raise ExportCommandError(f"cannot read checkpoint {checkpoint}: "
                                 f"{str(e).strip().splitlines()[0]}") from None
    for weight in model.weights:
        stored = shapes.get(_checkpoint_key(weight.path))
        if stored is None:
            raise ExportCommandError(f"{checkpoint} does not fit the model of {config_path}: it "
                                     f"has no {weight.path} (not a checkpoint of this code?)")
        if tuple(stored) != tuple(weight.shape):
            raise ExportCommandError(
                f"{checkpoint} does not fit the model of {config_path}: {weight.path} has shape "
                f"{tuple(stored)} in the checkpoint, {tuple(weight.shape)} in the model")


def _tokenizer_vocab(config_vocab_file: str, finetuned: bool) -> str | None:
    """The vocabulary of serve_text: --vocab_file; else the one that came with --model_dir
    (`run_directory.vocab_file`: its vocab.txt or data/vocab.txt first, so a run directory
    moved with its vocabulary still exports); else the config's, which must exist."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    import tensorflow as tf

    from electra_tf import run_directory

    if not FLAGS.with_tokenizer:
        return None
    if FLAGS.vocab_file:
        return FLAGS.vocab_file
    kind = run_directory.FINETUNING if finetuned else run_directory.PRETRAINING
    found = run_directory.vocab_file(FLAGS.model_dir, kind) if FLAGS.model_dir else None
    if found:
        return found
    if not config_vocab_file:
        raise ExportCommandError("--with_tokenizer needs --vocab_file (the config has none)")
    if not tf.io.gfile.exists(config_vocab_file):
        raise ExportCommandError(
            f"--with_tokenizer: the config's vocab_file {config_vocab_file} does not exist (was "
            "the run moved?); give --vocab_file, or put "
            f"{os.path.basename(config_vocab_file)} in the run directory")
    return config_vocab_file


def _discriminator(config_path):
    """(pretrainer, write(directory, served model)) for a pretraining checkpoint."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf.export.savedmodel import export_discriminator
    from electra_tf.models.pretrainer_factory import build_pretrainer

    config = load_config(config_path)
    vocab_file = _tokenizer_vocab(config.run.vocab_file, finetuned=False)
    model = build_pretrainer(config.model, config.objective)

    def write(directory, served):
        export_discriminator(served, directory, with_examples=FLAGS.with_examples,
                             with_tokenizer=FLAGS.with_tokenizer, vocab_file=vocab_file,
                             lower_case=FLAGS.lower_case,
                             max_seq_length=FLAGS.max_seq_length or config.run.max_seq_length,
                             jit_compile=FLAGS.jit_compile,
                             with_embeddings=FLAGS.with_embeddings)
    return model, write


def _task_model(card, config_path):
    """(task model, write(directory, served model)) for a fine-tuned run directory (task.json):
    the model and the export of the kind the card names (`finetuning.kinds`)."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf.finetuning import kinds
    from electra_tf.finetuning.common import ExportOptions

    kind = kinds.kind_named(card.get("kind", "classification"))  # old classifier cards: no kind
    if kind is None:
        raise ExportCommandError(f"{FLAGS.model_dir}: task.json names an unknown kind "
                                 f"{card.get('kind')!r} (known: {', '.join(kinds.KINDS)})")
    config = load_config(config_path, base=FinetuneConfig())
    model = kind.build_model(card, config)
    options = ExportOptions(with_tokenizer=FLAGS.with_tokenizer, with_examples=FLAGS.with_examples,
                            vocab_file=_tokenizer_vocab(config.finetune.vocab_file,
                                                        finetuned=True),
                            max_seq_length=FLAGS.max_seq_length, jit_compile=FLAGS.jit_compile)

    def write(directory, served):
        kind.export(served, directory, card, config, options)
    return model, write


def run() -> int:
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    import tensorflow as tf

    from electra_tf import run_directory

    checkpoint, config_path = _checkpoint_and_config(tf)
    version = _version(checkpoint)
    output_dir = FLAGS.output_dir or (
        run_directory.export_dir(FLAGS.model_dir) if FLAGS.model_dir is not None else None)
    if output_dir is None:
        raise ExportCommandError("--output_dir is required without --model_dir")
    target = os.path.join(output_dir, str(version))
    if tf.io.gfile.exists(target) and not FLAGS.overwrite:
        raise ExportCommandError(f"{target} already exists; choose another --version or pass "
                                 "--overwrite")

    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf.export.precision import serving_copy
    from electra_tf.export.staging import write_staged
    from electra_tf.training.checkpointing import restore_weights

    card = run_directory.read_task_card(FLAGS.model_dir) if FLAGS.model_dir else None
    if FLAGS.with_embeddings and card is not None:
        raise ExportCommandError("--with_embeddings exports a pretrained encoder's features: give "
                                 "a pretraining run or converted directory, not a fine-tuned one")
    model, write = (_task_model(card, config_path) if card is not None
                    else _discriminator(config_path))
    _check_fits(tf, model, checkpoint, config_path)
    restore_weights(model, checkpoint)
    # a server polling output_dir never sees a partial version (an existing target is replaced
    # only with --overwrite, checked above)
    write_staged(target, lambda staging: write(
        staging, serving_copy(model, FLAGS.serving_dtype, FLAGS.transposed_feedforward)))
    embeddings = FLAGS.with_embeddings
    signatures = ["serving_default"] + ["serve_examples"] * FLAGS.with_examples + [
        "serve_text"] * FLAGS.with_tokenizer + ["serve_embeddings"] * embeddings + [
        "serve_text_embeddings"] * (embeddings and FLAGS.with_tokenizer)
    weights = [f"{FLAGS.serving_dtype} weights"] * (FLAGS.serving_dtype != "float32") + [
        "feed-forward input kernels transposed"] * FLAGS.transposed_feedforward
    print(f"exported {checkpoint} to {target} (signatures: {', '.join(signatures)}"
          f"{''.join('; ' + part for part in weights)})", flush=True)
    return 0


def main(argv):
    if len(argv) > 1:
        sys.exit(f"error: unexpected arguments {argv[1:]}; see --help")
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    import tensorflow as tf

    try:
        return exit_on_user_error(run)
    except tf.errors.OpError as e:
        message = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", e.message).strip()
        sys.exit(f"error: {message.splitlines()[0] if message else type(e).__name__}")


if __name__ == "__main__":
    console.run(main)
