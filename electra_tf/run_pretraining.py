r"""Pretrains ELECTRA: `python -m electra_tf.run_pretraining [flags]`.

With no flags it runs a complete small demonstration on CPU: the documentation that ships with
Python (standard-library module docstrings and pydoc topics) as the corpus, a WordPiece vocabulary
learned from it, the tiny model, a few hundred steps with the discriminator's held-out AUC every
100 steps; it writes TensorBoard events (and curves.png, their plot), checkpoints, the resolved
config and a SavedModel of the discriminator under one run directory. `--config pretrain/mini`
runs the larger CPU recipe on the same corpus.

Real runs:
  python -m electra_tf.run_pretraining --config configs/pretrain/electra_small.yaml \
      --data 'gs://bucket/pretrain_tfrecords/*' --vocab_file vocab.txt --model_dir gs://bucket/run \
      --strategy tpu --tpu my-tpu --mixed_precision bf16

Two phases, 128 then 512 (each phase's records built at its length):
  python -m electra_tf.run_pretraining --config pretrain/electra_base_two_phase \
      --data 'gs://bucket/records_128/*' --phase_data '2=gs://bucket/records_512/*' \
      --vocab_file vocab.txt --model_dir gs://bucket/run --strategy tpu --tpu my-tpu

Rerunning the same command continues from the newest checkpoint in --model_dir, at the exact
batch where it stopped (in phases: in the phase where it stopped). SIGTERM (preemption) saves a
checkpoint and exits 0.
"""

from __future__ import annotations

import re
import sys

from absl import flags

from electra_tf import console
from electra_tf.errors import exit_on_user_error
from electra_tf.training import device_flags

console.setup(__name__)  # first: TensorFlow reads its C++ log level when it loads

FLAGS = flags.FLAGS
flags.DEFINE_string("config", None, "Config YAML (path, or name under configs/, e.g. "
                    "pretrain/electra_small). Default: pretrain/demo.")
flags.DEFINE_string("data", None, "TFRecord shards (glob, comma-separated globs or a directory; "
                    "local or gs://). Default: build the embedded demonstration corpus (with its "
                    "own vocabulary and held-out split) under --model_dir/data.")
flags.DEFINE_string("eval_data", None, "Held-out TFRecord shards: the discriminator's AUC and "
                    "the losses on run.eval_batches batches of them every run.eval_every_steps "
                    "steps and at the end. Default: none (the demo holds out every 10th document).")
flags.DEFINE_string("vocab_file", None, "vocab.txt the data was built with. The vocabulary size "
                    "and the ids of [PAD] [CLS] [SEP] [MASK] come from the data's metadata.json; "
                    "this file is checked against it, and needed only for data without one. "
                    "Default: run.vocab_file of the config.")
flags.DEFINE_bool("assume_bert_vocabulary", False, "For data without metadata.json and without "
                  "--vocab_file: assume BERT's uncased vocabulary (30,522 tokens, [CLS]=101 "
                  "[SEP]=102 [MASK]=103) instead of refusing to start.")
flags.DEFINE_string("model_dir", None, "Run directory: checkpoints, TensorBoard events, config, "
                    "export. Default: runs/electra_<config name> without --data (runs/electra_demo); "
                    "required with --data.")
flags.DEFINE_integer("train_steps", None, "Total training steps (overrides optimizer.train_steps).")
flags.DEFINE_string("init_checkpoint", None, "Start from the weights of this checkpoint (file "
                    "prefix or directory), e.g. one converted from Google's release, with a fresh "
                    "optimizer and schedule. Ignored when --model_dir already has checkpoints.")
flags.DEFINE_multi_string("override", [], "Config override section.key=value; repeatable, e.g. "
                          "--override model.num_layers=4 --override run.train_batch_size=64.")
flags.DEFINE_multi_string("phase_data", [], "For a recipe in phases (e.g. "
                          "pretrain/electra_base_two_phase): N=PATTERN gives phase N its TFRecord "
                          "shards, built at that phase's run.max_seq_length; repeatable. Phases "
                          "without one read --data.")
flags.DEFINE_multi_string("phase_eval_data", [], "N=PATTERN: held-out shards for phase N "
                          "(default --eval_data), built at that phase's length.")
flags.DEFINE_bool("export", True, "Export the discriminator SavedModel at the end.")
device_flags.define_device_flags()
flags.adopt_module_key_flags(device_flags)  # listed by --help with this command's own flags
flags.DEFINE_bool("deterministic", False, "Enable TensorFlow op determinism (bitwise-reproducible "
                  "runs and resumes, somewhat slower).")

def run() -> int:
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf.training import callbacks
    from electra_tf.training.phases import parse_phase_flag
    from electra_tf.training.pretrain import pretrain
    from electra_tf.training.pretrain_job import resolve_pretrain_job

    preemption = callbacks.Preemption()  # from the start: a SIGTERM during setup is not lost
    job = resolve_pretrain_job(
        config=FLAGS.config, data=FLAGS.data, eval_data=FLAGS.eval_data,
        vocab_file=FLAGS.vocab_file, model_dir=FLAGS.model_dir, train_steps=FLAGS.train_steps,
        overrides=FLAGS.override, init_checkpoint=FLAGS.init_checkpoint,
        assume_bert_vocabulary=FLAGS.assume_bert_vocabulary,
        devices=device_flags.DeviceOptions.from_flags(), deterministic=FLAGS.deterministic,
        export=FLAGS.export,
        phase_data=parse_phase_flag(FLAGS.phase_data, "--phase_data"),
        phase_eval_data=parse_phase_flag(FLAGS.phase_eval_data, "--phase_eval_data"))
    result = pretrain(job, preemption=preemption)
    if result.status == "preempted":
        console.exit_at_once(0)  # saved: the notice's seconds are not spent tearing down
    if result.status == "finished":
        _print_summary(result)
        if FLAGS.data is None and result.model.discriminator is not None:
            _print_replaced_tokens(result)
    return 0


def _print_summary(result) -> None:
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf import run_directory

    model_dir, values, held_out = result.model_dir, result.last_metrics, result.held_out
    lines = [f"finished {f'{result.phase}, the last, ' if result.phase else ''}at step "
             f"{result.step} in {result.seconds:.0f} s"]
    if values:
        lines.append("last metrics: " + ", ".join(
            f"{k} {v:.4g}" for k, v in sorted(values.items())))
    if held_out and "disc_auc" in held_out[-1][1]:
        lines.append("held-out discriminator AUC: " + ", ".join(
            f"{metrics['disc_auc']:.3f} (step {at})" for at, metrics in held_out))
    lines += [f"run directory:  {model_dir}",
              f"config:         {run_directory.config_file(model_dir)}",
              f"checkpoint:     {result.checkpoint}",
              f"tensorboard:    tensorboard --logdir {run_directory.tensorboard_dir(model_dir)}"]
    if result.curves:
        lines.append(f"curves:         {result.curves}")
    if result.export_dir:
        lines.append(f"SavedModel:     {result.export_dir} (signature serving_default)")
    print("\n".join(lines), flush=True)


def _print_replaced_tokens(result) -> None:
    """The demo's last word: the generator's replacements in held-out sentences, and what the
    discriminator makes of them."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf.evaluation.replaced_tokens import read_examples, show_replaced_tokens
    from electra_tf.training.pretrain import prepare_demo_data

    _, held_out, _ = prepare_demo_data(result.model_dir)  # built already: only the paths
    batch = read_examples(held_out, result.model, vocab_file=result.config.run.vocab_file)
    print(f"\nreplaced tokens in held-out examples at step {result.step}:\n"
          + show_replaced_tokens(result.model, batch, result.config.run.vocab_file), flush=True)


def main(argv):
    if len(argv) > 1:
        sys.exit(f"error: unexpected arguments {argv[1:]}; see --help")
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    import tensorflow as tf

    try:
        return exit_on_user_error(run)
    except tf.errors.DataLossError as e:
        sys.exit(f"error: corrupt or truncated TFRecord data: {_tf_message(e)}")
    except tf.errors.InvalidArgumentError as e:
        if "parse" in e.message.lower() or "feature" in e.message.lower():
            sys.exit("error: the TFRecords do not hold input_ids/input_mask/segment_ids of "
                     f"run.max_seq_length: {_tf_message(e)}")
        raise


def _tf_message(error) -> str:
    """The first line of a TensorFlow error without its internal function-node prefix."""
    return re.sub(r"\{\{function_node [^}]*\}\}\s*", "", error.message).splitlines()[0]


if __name__ == "__main__":
    console.run(main)
