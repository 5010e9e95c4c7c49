"""Where a fine-tuned encoder starts: a pretraining run, a converted release, or nothing.

A run directory of `run_pretraining` and an output of `convert_checkpoint` look the same
(`electra_tf.run_directory`): `config.yaml` (the model's sizes, whether it was trained as
ELECTRA or as the MLM baseline, the vocabulary), `checkpoints/` (weights keyed by Keras path)
and usually the vocab.txt.
"""

from __future__ import annotations

import dataclasses
import os

import tensorflow as tf

from electra_tf import run_directory
from electra_tf.config import ConfigError, FinetuneConfig, ModelConfig, apply_dict
from electra_tf.models.embeddings import GDES_RESIDUAL_PATH
from electra_tf.run_directory import CHECKPOINTS, CONFIG
from electra_tf.training.checkpointing import CheckpointError, first_line


@dataclasses.dataclass(frozen=True)
class EncoderSource:
    """A pretrained encoder: its sizes, its checkpoint, the scope its encoder was saved under
    (`discriminator`, or `generator` for the MLM baseline) and its vocabulary (or None)."""

    model_config: ModelConfig
    checkpoint: str
    encoder_scope: str
    vocab_file: str | None
    directory: str


def _run_directory(path: str) -> tuple[str, str | None]:
    """(directory holding config.yaml, explicit checkpoint prefix or None). A run's
    checkpoints/ means the run (its newest checkpoint), as `electra_tf.load` reads it; a
    keras-hub preset is refused with the command that converts it."""
    if tf.io.gfile.isdir(path):
        normalized = os.path.normpath(path)
        parent = os.path.dirname(normalized)
        if (os.path.basename(normalized) == CHECKPOINTS
                and tf.io.gfile.exists(run_directory.config_file(parent))):
            return parent, None
        if not tf.io.gfile.exists(run_directory.config_file(path)):
            # locate names what the directory is (a SavedModel, a TF1 or Hugging Face
            # checkpoint, ...) in its CheckpointError
            if run_directory.locate(path).kind == run_directory.KERAS_HUB:
                raise CheckpointError(
                    f"--init_checkpoint {path} is a keras-hub preset: convert it first, "
                    f"python -m electra_tf.convert_checkpoint --from keras_hub --input {path} "
                    "--output_dir converted/<name>, and fine-tune from converted/<name>")
        return path, None
    run = run_directory.checkpoint_run(path)
    if run is None:
        raise CheckpointError(f"--init_checkpoint {path} is neither a run directory ({CONFIG} + "
                              f"{CHECKPOINTS}/) nor a checkpoint under one")
    return run, path


def resolve_source(path: str) -> EncoderSource:
    """Reads a run or converted directory (or a checkpoint prefix inside its checkpoints/)."""
    directory, checkpoint = _run_directory(path)
    config_path = run_directory.config_file(directory)
    if not tf.io.gfile.exists(config_path):
        raise CheckpointError(f"{directory} has no {CONFIG}: give a run directory of "
                              "run_pretraining or an output directory of convert_checkpoint")
    saved = run_directory.read_config(directory)
    try:
        model_config = apply_dict(FinetuneConfig(), {"model": saved.get("model", {})}, config_path).model
    except ConfigError as e:
        raise CheckpointError(f"{config_path}: {e}") from None
    checkpoint = checkpoint or run_directory.newest_checkpoint(directory)
    electra = saved.get("objective", {}).get("electra_objective", True)
    return EncoderSource(model_config, checkpoint, "discriminator" if electra else "generator",
                         run_directory.vocab_file(directory, run_directory.PRETRAINING), directory)


def restore_encoder(encoder, source: EncoderSource) -> None:
    """Loads `encoder` (an `ElectraEncoder`, a task model's or a standalone one), its embeddings
    included, from the source's checkpoint.

    The task model's encoder is named `discriminator`; the MLM baseline saved its encoder as
    `generator`. Every encoder variable must be found with its shape; the head stays as built.
    A discriminator pretrained with GDES (`model.embedding_sharing: gdes`) gets its effective
    word table, the shared one plus its residual, so the encoder is a plain ELECTRA one.
    """
    prefix = "discriminator/"
    weights = {}
    for variable in encoder.weights:
        path = variable.path
        if path.startswith(prefix):
            path = f"{source.encoder_scope}/" + path[len(prefix):]
        weights[path] = variable
    checkpoint = tf.train.Checkpoint(weights=weights)
    try:
        checkpoint.restore(source.checkpoint).expect_partial().assert_existing_objects_matched()
    except (ValueError, AssertionError, tf.errors.OpError) as e:
        raise CheckpointError(f"the encoder does not fit {source.checkpoint}: {first_line(e)}") from None
    if source.model_config.embedding_sharing == "gdes" and source.encoder_scope == "discriminator":
        _add_gdes_residual(encoder.embeddings.word_embeddings.embeddings, source.checkpoint)


def _add_gdes_residual(word_table, checkpoint: str) -> None:
    residual = tf.Variable(tf.zeros_like(word_table))
    try:
        tf.train.Checkpoint(weights={GDES_RESIDUAL_PATH: residual}).restore(
            checkpoint).expect_partial().assert_existing_objects_matched()
    except (ValueError, AssertionError, tf.errors.OpError) as e:
        raise CheckpointError(f"{checkpoint} is a GDES run's (model.embedding_sharing gdes) but "
                              f"its residual word table does not fit: {first_line(e)}") from None
    word_table.assign_add(residual)


SIZE_KEYS = ("vocab_size", "embedding_size", "hidden_size", "num_layers", "num_heads",
             "intermediate_size", "max_position_embeddings", "type_vocab_size")


def check_fits(source: EncoderSource, model_config: ModelConfig) -> None:
    """Refuses a config whose encoder sizes differ from the checkpoint's (before any work)."""
    for key in SIZE_KEYS:
        saved, wanted = getattr(source.model_config, key), getattr(model_config, key)
        if saved != wanted:
            raise CheckpointError(f"the init checkpoint {source.directory} has model.{key} "
                                  f"{saved}, the config asks for {wanted}: drop the override or "
                                  "use a checkpoint of that size")
