"""Google's TF1 ELECTRA checkpoints (the released electra_{small,base,large} layout) into ours.

Variable names (reference section 6): `electra/...` is the discriminator, `generator/...` the
generator except for the shared `electra/embeddings/*`, plus `discriminator_predictions/*` and
`generator_predictions/*`. Optimizer slots (`*/adam_m`, `*/adam_v`) and `global_step` are skipped.
Sizes come from the tensors' shapes, including the generator's; only the number of attention heads
is not in a shape, so it follows the original's rule (hidden // 64) unless given.

TF1 names map one to one onto Hugging Face keys (`/` -> `.`, `layer_3` -> `layer.3`, `kernel` ->
a transposed `weight`, `gamma`/`beta` -> `weight`/`bias`, `dense_1` -> `dense_prediction`), so
the checkpoint is renamed into HF-layout dicts and loaded through `electra_tf.convert.hf`.
"""

from __future__ import annotations

import re

import numpy as np
import tensorflow as tf

from electra_tf.config import ModelConfig, ObjectiveConfig
from electra_tf.convert.hf import ConversionError, assign_from_hf
from electra_tf.models.pretrainer_factory import build_pretrainer

SKIPPED = re.compile(r"(^|/)(adam_m|adam_v|global_step|temperature)$|^global_step$")


def read_tf1_checkpoint(path: str) -> dict[str, np.ndarray]:
    """All model tensors of a TF1 checkpoint (prefix or directory), slots and counters skipped."""
    prefix = tf.train.latest_checkpoint(path) if tf.io.gfile.isdir(path) else path
    if not prefix:
        raise ConversionError(f"no checkpoint in {path}")
    try:
        reader = tf.train.load_checkpoint(prefix)
    except (tf.errors.OpError, ValueError) as e:
        raise ConversionError(f"cannot read a checkpoint at {prefix}: {e}") from None
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if not SKIPPED.search(name)}


def _hf_key(name: str) -> tuple[str, str]:
    """(HF model, HF key) for a TF1 variable name."""
    scope, rest = name.split("/", 1)
    model = {"electra": "discriminator", "discriminator_predictions": "discriminator",
             "generator": "generator", "generator_predictions": "generator"}.get(scope)
    if model is None:
        raise ConversionError(f"variable {name} belongs to no ELECTRA scope "
                              "(electra/, generator/, *_predictions/)")
    key = rest if scope in ("electra", "generator") else f"{scope}/{rest}"
    key = re.sub(r"layer_(\d+)", r"layer.\1", key).replace("/", ".")
    key = re.sub(r"\.kernel$|\.gamma$", ".weight", key)
    key = re.sub(r"\.beta$", ".bias", key)
    key = re.sub(r"_embeddings$", "_embeddings.weight", key)
    key = key.replace("discriminator_predictions.dense_1.", "discriminator_predictions.dense_prediction.")
    key = key.replace("generator_predictions.output_bias", "generator_lm_head.bias")
    return model, key


def to_hf_tensors(tf1: dict[str, np.ndarray]):
    """({"discriminator": {hf_key: array}, "generator": {...}} in HF layouts,
    {(model, hf_key): TF1 name})."""
    tensors: dict[str, dict[str, np.ndarray]] = {}
    names: dict[tuple[str, str], str] = {}
    for name, value in tf1.items():
        model, key = _hf_key(name)
        if name.endswith("/kernel"):
            value = value.T
        tensors.setdefault(model, {})[key] = value
        names[(model, key)] = name
    if "generator" in tensors:  # the generator reads the shared tables of electra/embeddings
        for key, value in tensors.get("discriminator", {}).items():
            if key.startswith("embeddings."):
                tensors["generator"].setdefault(key, value)
                names.setdefault(("generator", key), names[("discriminator", key)])
    return tensors, names


def _encoder_sizes(tf1, scope):
    layers = {int(m.group(1)) for n in tf1 for m in [re.match(rf"{scope}/encoder/layer_(\d+)/", n)] if m}
    if not layers:
        return None
    query = tf1.get(f"{scope}/encoder/layer_0/attention/self/query/kernel")
    intermediate = tf1.get(f"{scope}/encoder/layer_0/intermediate/dense/kernel")
    if query is None or intermediate is None:
        raise ConversionError(f"{scope}/encoder/layer_0 lacks its attention or intermediate kernel")
    if sorted(layers) != list(range(len(layers))):
        raise ConversionError(f"{scope}/encoder has layers {sorted(layers)}: some are missing")
    return {"hidden": int(query.shape[1]), "layers": len(layers), "ffn": int(intermediate.shape[1])}


def model_config_from_tf1(tf1: dict[str, np.ndarray], num_heads: int | None = None,
                          generator_num_heads: int | None = None) -> ModelConfig:
    """Our ModelConfig from the shapes in a TF1 checkpoint."""
    word = tf1.get("electra/embeddings/word_embeddings")
    if word is None:
        raise ConversionError("the checkpoint has no electra/embeddings/word_embeddings: not an "
                              "ELECTRA checkpoint of Google's layout")
    disc = _encoder_sizes(tf1, "electra")
    if disc is None:
        raise ConversionError("the checkpoint has no electra/encoder/layer_* variables")
    config = ModelConfig(
        vocab_size=int(word.shape[0]), embedding_size=int(word.shape[1]),
        hidden_size=disc["hidden"], num_layers=disc["layers"],
        num_heads=num_heads or max(1, disc["hidden"] // 64), intermediate_size=disc["ffn"],
        max_position_embeddings=int(tf1["electra/embeddings/position_embeddings"].shape[0]),
        type_vocab_size=int(tf1["electra/embeddings/token_type_embeddings"].shape[0]))
    gen = _encoder_sizes(tf1, "generator")
    if gen is not None:
        config.generator_fraction = gen["hidden"] / disc["hidden"]
        config.generator_hidden_size = gen["hidden"]
        config.generator_num_layers = gen["layers"]
        config.generator_intermediate_size = gen["ffn"]
        config.generator_num_heads = generator_num_heads or max(1, gen["hidden"] // 64)
    return config


def load_google_checkpoint(path: str, objective: ObjectiveConfig | None = None,
                           num_heads: int | None = None, generator_num_heads: int | None = None):
    """An `ElectraPretrainer` holding a Google-layout TF1 checkpoint.

    A discriminator-only checkpoint (e.g. a fine-tuning output) loads too; the generator then
    keeps its random initialisation. Returns (pretrainer, has_generator).
    """
    tf1 = read_tf1_checkpoint(path)
    tf1 = {name: value for name, value in tf1.items() if not name.startswith("task_specific/")}
    config = model_config_from_tf1(tf1, num_heads, generator_num_heads)
    pretrainer = build_pretrainer(config, objective or ObjectiveConfig())
    tensors, names = to_hf_tensors(tf1)
    assign_from_hf(pretrainer, tensors, names)
    return pretrainer, "generator" in tensors
