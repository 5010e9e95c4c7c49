"""Where a fine-tuned encoder starts: a pretraining run, a converted release, or nothing.

A run directory of `run_pretraining` and an output of `convert_checkpoint` look the same:
`config.yaml` (the model's sizes, whether it was trained as ELECTRA or as the MLM baseline, the
vocabulary), `checkpoints/` (weights keyed by Keras path) and usually the vocab.txt.
"""

from __future__ import annotations

import dataclasses
import os

import tensorflow as tf
import yaml

from electra_tf.config import ConfigError, FinetuneConfig, ModelConfig, apply_dict
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
    """(directory holding config.yaml, explicit checkpoint prefix or None)."""
    if tf.io.gfile.isdir(path):
        return path, None
    parent = os.path.dirname(path)
    if os.path.basename(parent) == "checkpoints":
        return os.path.dirname(parent), path
    raise CheckpointError(f"--init_checkpoint {path} is neither a run directory (config.yaml + "
                          "checkpoints/) nor a checkpoint under one")


def resolve_source(path: str) -> EncoderSource:
    """Reads a run or converted directory (or a checkpoint prefix inside its checkpoints/)."""
    directory, checkpoint = _run_directory(path)
    config_path = os.path.join(directory, "config.yaml")
    if not tf.io.gfile.exists(config_path):
        raise CheckpointError(f"{directory} has no config.yaml: give a run directory of "
                              "run_pretraining or an output directory of convert_checkpoint")
    with tf.io.gfile.GFile(config_path) as f:
        saved = yaml.safe_load(f) or {}
    try:
        model_config = apply_dict(FinetuneConfig(), {"model": saved.get("model", {})}, config_path).model
    except ConfigError as e:
        raise CheckpointError(f"{config_path}: {e}") from None
    if checkpoint is None:
        checkpoint = tf.train.latest_checkpoint(os.path.join(directory, "checkpoints"))
        if checkpoint is None:
            raise CheckpointError(f"{directory}/checkpoints holds no checkpoint")
    electra = saved.get("objective", {}).get("electra_objective", True)
    return EncoderSource(model_config, checkpoint, "discriminator" if electra else "generator",
                         _vocab_file(directory, saved), directory)


def _vocab_file(directory: str, saved: dict) -> str | None:
    candidates = [saved.get("run", {}).get("vocab_file") or "",
                  os.path.join(directory, "vocab.txt"), os.path.join(directory, "data", "vocab.txt")]
    return next((c for c in candidates if c and tf.io.gfile.exists(c)), None)


def restore_encoder(model, source: EncoderSource) -> None:
    """Loads the embeddings and encoder of `model` (a TaskModel) from the source's checkpoint.

    The task model's encoder is named `discriminator`; the MLM baseline saved its encoder as
    `generator`. Every encoder variable must be found with its shape; the head stays as built.
    """
    prefix = "discriminator/"
    weights = {}
    for variable in model.encoder.weights:
        path = variable.path
        if path.startswith(prefix):
            path = f"{source.encoder_scope}/" + path[len(prefix):]
        weights[path] = variable
    checkpoint = tf.train.Checkpoint(weights=weights)
    try:
        checkpoint.restore(source.checkpoint).expect_partial().assert_existing_objects_matched()
    except (ValueError, AssertionError, tf.errors.OpError) as e:
        raise CheckpointError(f"the encoder does not fit {source.checkpoint}: {first_line(e)}") from None


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
