r"""Pretrains ELECTRA: `python -m electra_tf.run_pretraining [flags]`.

With no flags it runs a complete small demonstration on CPU: the documentation that ships with
Python (standard-library module docstrings and pydoc topics) as the corpus, a WordPiece vocabulary
learned from it, the tiny model, a few hundred steps with the discriminator's held-out AUC every
100 steps; it writes TensorBoard events, checkpoints, the resolved config and a SavedModel of the
discriminator under one run directory. `--config pretrain/mini` runs the larger CPU recipe on the
same corpus.

Real runs:
  python -m electra_tf.run_pretraining --config configs/pretrain/electra_small.yaml \
      --data 'gs://bucket/pretrain_tfrecords/*' --vocab_file vocab.txt --model_dir gs://bucket/run \
      --strategy tpu --tpu my-tpu --mixed_precision bf16

Rerunning the same command continues from the newest checkpoint in --model_dir, at the exact
batch where it stopped. SIGTERM (preemption) saves a checkpoint and exits 0.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time

from absl import app, flags, logging

from electra_tf.training import device_flags

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
flags.DEFINE_bool("export", True, "Export the discriminator SavedModel at the end.")
device_flags.define_device_flags()
flags.adopt_module_key_flags(device_flags)  # listed by --help with this command's own flags
flags.DEFINE_bool("deterministic", False, "Enable TensorFlow op determinism (bitwise-reproducible "
                  "runs and resumes, somewhat slower).")

DEMO_VOCAB_SIZE = 2500  # about what the embedded corpus supports at min_frequency 10


class RunError(ValueError):
    """A run that cannot start as asked."""


def _prepare_demo_data(run_dir: str) -> tuple[str, str, str]:
    """Builds (once) the embedded corpus, its vocabulary and TFRecords under run_dir/data: every
    10th document held out for evaluation. Returns (train glob, held-out glob, vocab.txt)."""
    from electra_tf.data import corpus, pretraining_data, vocab_learning

    data_dir = os.path.join(run_dir, "data")
    vocab_file = os.path.join(data_dir, "vocab.txt")
    records_dir = os.path.join(data_dir, "tfrecords")
    held_out_dir = os.path.join(data_dir, "heldout_tfrecords")
    if not all(os.path.exists(os.path.join(d, "metadata.json")) for d in (records_dir, held_out_dir)):
        text_dir, held_out_text_dir = (os.path.join(data_dir, name) for name in ("text", "heldout_text"))
        paths = corpus.write_embedded_corpus(text_dir, held_out_dir=held_out_text_dir)
        logging.info("demo corpus: %d files under %s", len(paths), text_dir)
        lines = [line for document in corpus.read_documents(text_dir) for line in document]
        vocab_learning.learn_vocabulary(lines, DEMO_VOCAB_SIZE, vocab_file)
        for text, records in ((held_out_text_dir, held_out_dir), (text_dir, records_dir)):
            summary = pretraining_data.build_pretraining_data(
                corpus=text, vocab_file=vocab_file, output_dir=records, max_seq_length=128,
                overwrite=True)
            logging.info("demo data: %s", summary)
    return (os.path.join(records_dir, "*.tfrecord*"), os.path.join(held_out_dir, "*.tfrecord*"),
            vocab_file)


def _user_settings(config, overrides: list[str]) -> dict[str, int]:
    """Vocabulary-related config values the user set: through --override, or (special ids) a
    config file. Recipes' model.vocab_size is a placeholder for the data's, not a setting."""
    from electra_tf.config import ObjectiveConfig
    from electra_tf.data.run_vocabulary import CONFIG_TOKEN_FIELDS

    keys = {override.split("=", 1)[0].strip() for override in overrides}
    settings = {}
    if "model.vocab_size" in keys:
        settings["model.vocab_size"] = config.model.vocab_size
    for field in CONFIG_TOKEN_FIELDS:
        value = getattr(config.objective, field)
        if f"objective.{field}" in keys or value != getattr(ObjectiveConfig, field):
            settings[f"objective.{field}"] = value
    return settings


def _resolve_config(metadata_by_directory: dict[str, dict]):
    """The config with the vocabulary size and special ids of the data (run_vocabulary)."""
    from electra_tf.config import load_config
    from electra_tf.data import run_vocabulary

    overrides = list(FLAGS.override)
    if FLAGS.train_steps is not None:
        overrides.append(f"optimizer.train_steps={FLAGS.train_steps}")
    config = load_config(FLAGS.config or "pretrain/demo", overrides=overrides)
    vocabulary = run_vocabulary.resolve(metadata_by_directory,
                                        FLAGS.vocab_file or config.run.vocab_file,
                                        FLAGS.assume_bert_vocabulary)
    settings = _user_settings(config, list(FLAGS.override))
    run_vocabulary.check_user_settings(vocabulary, settings)
    logging.info("vocabulary: %s", vocabulary.describe())
    ids = vocabulary.ids
    config = dataclasses.replace(
        config,
        model=dataclasses.replace(config.model, vocab_size=settings.get("model.vocab_size",
                                                                        vocabulary.size)),
        objective=dataclasses.replace(config.objective, pad_token_id=ids.pad, cls_token_id=ids.cls,
                                      sep_token_id=ids.sep, mask_token_id=ids.mask),
        run=dataclasses.replace(config.run, vocab_file=vocabulary.vocab_file or ""))
    return config.validate()


def _check_model_dir(model_dir: str, config) -> None:
    """Refuses a model_dir whose checkpoints came from another model or objective."""
    import tensorflow as tf
    import yaml

    path = os.path.join(model_dir, "config.yaml")
    if not tf.io.gfile.exists(path):
        return
    with tf.io.gfile.GFile(path) as f:
        previous = yaml.safe_load(f) or {}
    current = config.to_dict()
    for section in ("model", "objective"):
        old, new = previous.get(section, {}), current[section]
        changed = sorted(k for k in new if k in old and old[k] != new[k] and k != "vocab_file")
        if changed:
            key = changed[0]
            raise RunError(f"{model_dir} holds a run with a different config ({section}.{key} was "
                           f"{old[key]!r}, now {new[key]!r}); use another --model_dir or the same "
                           "config. Nothing was changed.")


def run() -> int:
    import keras
    import tensorflow as tf

    from electra_tf.data import pipeline
    from electra_tf.export import export_discriminator
    from electra_tf.models import ElectraPretrainer
    from electra_tf.training import callbacks, checkpointing, distribution
    from electra_tf.training.optimizer import create_optimizer

    started = time.time()
    preemption = callbacks.Preemption()  # from the start: a SIGTERM during setup is not lost
    demo = FLAGS.data is None  # the embedded corpus, with pretrain/demo or the given --config
    if demo and FLAGS.vocab_file is not None:
        raise RunError("--vocab_file without --data: give the TFRecords made with it (--data), "
                       "or neither to train on the embedded demonstration corpus")
    config_name = os.path.splitext(os.path.basename(FLAGS.config or "pretrain/demo"))[0]
    model_dir = FLAGS.model_dir or (f"runs/electra_{config_name}" if demo else None)
    if model_dir is None:
        raise RunError("--model_dir is required with --data")
    if tf.io.gfile.exists(model_dir) and not tf.io.gfile.isdir(model_dir):
        raise RunError(f"--model_dir {model_dir} is an existing file, not a directory")
    distribution.split_cpu(FLAGS.cpu_devices)
    if FLAGS.deterministic:
        tf.config.experimental.enable_op_determinism()
    data, eval_data = FLAGS.data, FLAGS.eval_data
    if demo:
        data, demo_eval_data, vocab_file = _prepare_demo_data(model_dir)
        eval_data = eval_data or demo_eval_data
        FLAGS.vocab_file = FLAGS.vocab_file or vocab_file
    files = pipeline.list_shards(data)
    eval_files = pipeline.list_shards(eval_data) if eval_data else []
    metadata = pipeline.read_data_metadata(files + eval_files)
    config = _resolve_config(metadata)
    pipeline.check_sequence_length(metadata, config.run.max_seq_length)
    if eval_files:
        batch = config.run.train_batch_size
        records = sum(1 for _ in tf.data.TFRecordDataset(eval_files).take(batch))
        if records < batch:  # evaluation drops partial batches: it would have nothing to read
            raise RunError(f"--eval_data holds {records} records, fewer than one batch of "
                           f"{batch}: give more held-out records or a smaller "
                           "run.train_batch_size")
    _check_model_dir(model_dir, config)

    strategy = distribution.make_strategy(FLAGS.strategy, FLAGS.tpu)
    is_chief = strategy.extended.should_checkpoint  # False only on non-chief multi-worker tasks
    write_dir = model_dir
    if not is_chief:  # collective saves need every worker; only the chief's copy is kept
        resolver = strategy.cluster_resolver
        write_dir = os.path.join(model_dir, "workers", f"{resolver.task_type}_{resolver.task_id}")
    tf.io.gfile.makedirs(write_dir)
    if is_chief:
        with tf.io.gfile.GFile(os.path.join(model_dir, "config.yaml"), "w") as f:
            f.write(config.to_yaml())

    jit_compile = distribution.use_xla(strategy, FLAGS.jit_compile)
    keras.mixed_precision.set_dtype_policy(distribution.DTYPE_POLICIES[FLAGS.mixed_precision])
    keras.utils.set_random_seed(config.objective.seed)  # initial weights and dropout
    with strategy.scope():
        model = ElectraPretrainer(config.model, config.objective)
        model.compile(optimizer=create_optimizer(config.optimizer), jit_compile=jit_compile,
                      steps_per_execution=config.run.steps_per_execution)
        run_checkpoint = checkpointing.RunCheckpoint(
            model, os.path.join(write_dir, "checkpoints"), config.run.keep_checkpoint_max)
        start = run_checkpoint.restore_latest()
    if start:
        logging.info("resuming from %s at step %d", run_checkpoint.latest, start)
    elif FLAGS.init_checkpoint:
        checkpointing.restore_weights(model, FLAGS.init_checkpoint)
        logging.info("initialised weights from %s", FLAGS.init_checkpoint)

    total = config.optimizer.train_steps
    guard = callbacks.CheckpointAndGuard(run_checkpoint, config.run.save_checkpoints_steps, start,
                                         preemption)
    progress = callbacks.ProgressLogger(total, start, config.run.log_every_steps,
                                        config.run.train_batch_size,
                                        os.path.join(write_dir, "tensorboard"))
    run_callbacks, evaluation = [guard, progress], None
    if eval_files:
        held_out = pipeline.make_held_out_dataset(
            eval_files, config.run.train_batch_size, config.run.max_seq_length, config.objective,
            config.run.eval_batches)
        evaluation = callbacks.HeldOutEvaluation(
            held_out, total, start, config.run.eval_every_steps,
            os.path.join(write_dir, "tensorboard", "heldout"))
        run_callbacks.append(evaluation)
    if start < total:
        dataset = pipeline.make_distributed_dataset(
            strategy, files, config.run.train_batch_size, config.run.max_seq_length,
            config.objective, seed=config.objective.seed, skip_global_batches=start,
            shuffle_buffer=config.run.shuffle_buffer)
        logging.info("training %s (%s, %s) from step %d to %d on %d replica(s), global batch %d",
                     FLAGS.config or "pretrain/demo", type(strategy).__name__,
                     "XLA" if jit_compile else "no XLA", start, total,
                     strategy.num_replicas_in_sync, config.run.train_batch_size)
        try:
            model.fit(dataset, steps_per_epoch=total - start, epochs=1, verbose=0,
                      callbacks=run_callbacks)
        except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as e:
            logging.info("reading the data failed; looking for the shard that fails")
            culprit = pipeline.find_unreadable_shard(files + eval_files,
                                                     config.run.max_seq_length)
            if culprit is None:
                raise
            raise RunError(f"cannot read the TFRecord data: {culprit}") from e
    else:
        guard.status = "finished"
        logging.info("%s is already at step %d of %d", run_checkpoint.latest, start, total)

    if guard.status == "non_finite":
        raise RunError(f"the loss became non-finite at step {guard.batches}; stopped without "
                       "saving. Last good checkpoint: "
                       f"{run_checkpoint.latest or 'none was saved yet'}")
    if guard.status == "preempted":
        logging.info("preempted: saved %s; rerun the same command to continue", run_checkpoint.latest)
        return 0
    export_dir = None
    if FLAGS.export and is_chief:
        export_dir = export_discriminator(
            model, os.path.join(model_dir, "export", str(guard.batches)))
    _print_summary(model_dir, run_checkpoint.latest, export_dir, progress.last_values,
                   evaluation.history if evaluation else [], guard.batches, time.time() - started)
    return 0


def _print_summary(model_dir, checkpoint, export_dir, values, held_out, step, seconds):
    lines = [f"finished at step {step} in {seconds:.0f} s"]
    if values:
        lines.append("last metrics: " + ", ".join(
            f"{k} {v:.4g}" for k, v in sorted(values.items())))
    if held_out and "disc_auc" in held_out[-1][1]:
        lines.append("held-out discriminator AUC: " + ", ".join(
            f"{metrics['disc_auc']:.3f} (step {at})" for at, metrics in held_out))
    lines += [f"run directory:  {model_dir}",
              f"config:         {os.path.join(model_dir, 'config.yaml')}",
              f"checkpoint:     {checkpoint}",
              f"tensorboard:    tensorboard --logdir {os.path.join(model_dir, 'tensorboard')}"]
    if export_dir:
        lines.append(f"SavedModel:     {export_dir} (signature serving_default)")
    print("\n".join(lines), flush=True)


def main(argv):
    if len(argv) > 1:
        sys.exit(f"error: unexpected arguments {argv[1:]}; see --help")
    import tensorflow as tf

    from electra_tf.config import ConfigError
    from electra_tf.data.corpus import CorpusError
    from electra_tf.data.pipeline import DataError
    from electra_tf.data.pretraining_data import DatasetBuildError
    from electra_tf.data.run_vocabulary import VocabularyMismatch
    from electra_tf.data.tokenization import VocabularyError
    from electra_tf.training.checkpointing import CheckpointError
    from electra_tf.training.distribution import StrategyError

    known = (RunError, ConfigError, CorpusError, DataError, DatasetBuildError, VocabularyError,
             VocabularyMismatch, CheckpointError, StrategyError)
    try:
        return run()
    except known as e:
        sys.exit(f"error: {e}")
    except tf.errors.DataLossError as e:
        sys.exit(f"error: corrupt or truncated TFRecord data: {_tf_message(e)}")
    except tf.errors.InvalidArgumentError as e:
        if "parse" in e.message.lower() or "feature" in e.message.lower():
            sys.exit("error: the TFRecords do not hold input_ids/input_mask/segment_ids of "
                     f"run.max_seq_length: {_tf_message(e)}")
        raise


def _tf_message(error) -> str:
    """The first line of a TensorFlow error without its internal function-node prefix."""
    import re

    return re.sub(r"\{\{function_node [^}]*\}\}\s*", "", error.message).splitlines()[0]


if __name__ == "__main__":
    app.run(main)
