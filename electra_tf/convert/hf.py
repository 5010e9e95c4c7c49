"""Hugging Face ELECTRA weights (`save_pretrained` directories) into an `ElectraPretrainer`.

A discriminator directory holds `ElectraForPreTraining` (or `ElectraModel`) weights, a generator
directory `ElectraForMaskedLM` weights: `config.json` plus `model.safetensors` (or a sharded
`model.safetensors.index.json`). Tensors are read with the `safetensors` package; torch is not
needed. The word, position and token-type tables and the embedding LayerNorm are shared in
ELECTRA; they are taken from the discriminator (Google's `electra/embeddings`).

Layouts: HF Linear weights are [out, in], Keras kernels [in, out]; Keras' attention kernels
split heads: query/key/value [H, heads, head_dim], output [heads, head_dim, H].
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Callable, Iterator, NamedTuple

import numpy as np
from absl import logging
from safetensors.numpy import load_file

from electra_tf.config import ModelConfig, ObjectiveConfig
from electra_tf.errors import UserError
from electra_tf.run_directory import HF_CONFIG, HF_TORCH_WEIGHTS, HF_WEIGHTS, HF_WEIGHTS_INDEX

ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_approximate", "gelu_pytorch_tanh": "gelu_approximate",
               "gelu_fast": "gelu_approximate", "relu": "relu"}


class ConversionError(UserError):
    """Weights or configs that do not fit an ELECTRA layout."""


def refuse_pre_layer_norm(pre_layer_norm: bool, target: str) -> None:
    """ConversionError for a model with pre-LayerNorm blocks (`model.pre_layer_norm`) bound for
    `target`, a format whose ELECTRA has the original's post-LN blocks only."""
    if pre_layer_norm:
        raise ConversionError(
            f"this model has pre-LayerNorm blocks (model.pre_layer_norm true), and {target}'s "
            "ELECTRA has post-LayerNorm blocks only: its weights would compute another function "
            "there. Keep it as an electra_tf run, a SavedModel, a LiteRT file or a .keras file")


class WeightLink(NamedTuple):
    """One of our variables and where it lives in a Hugging Face state dict."""

    variable: object  # keras.Variable
    model: str  # "discriminator" or "generator": which HF directory holds it
    key: str  # HF key without the "electra." prefix of the task models
    from_hf: Callable[[np.ndarray], np.ndarray]
    to_hf: Callable[[np.ndarray], np.ndarray]


def _same(x):
    return x


def _transpose(x):
    return np.ascontiguousarray(x.T)


def _linear(layer, prefix, model):
    """A Keras Dense (kernel [in, out]) <-> an HF Linear (weight [out, in])."""
    yield WeightLink(layer.kernel, model, prefix + ".weight", _transpose, _transpose)
    yield WeightLink(layer.bias, model, prefix + ".bias", _same, _same)


def _layer_norm(layer, prefix, model):
    yield WeightLink(layer.gamma, model, prefix + ".weight", _same, _same)
    yield WeightLink(layer.beta, model, prefix + ".bias", _same, _same)


def _attention(attention, prefix, model, hidden, heads):
    """Keras MultiHeadAttention <-> HF self-attention Linears, reshaping the head axis."""
    head_dim = hidden // heads
    for name, dense in (("query", attention._query_dense), ("key", attention._key_dense),
                        ("value", attention._value_dense)):
        yield WeightLink(dense.kernel, model, f"{prefix}.self.{name}.weight",
                         lambda w: w.T.reshape(hidden, heads, head_dim),
                         lambda k: np.ascontiguousarray(k.reshape(hidden, hidden).T))
        yield WeightLink(dense.bias, model, f"{prefix}.self.{name}.bias",
                         lambda b: b.reshape(heads, head_dim), lambda b: b.reshape(hidden))
    out = attention._output_dense
    yield WeightLink(out.kernel, model, f"{prefix}.output.dense.weight",
                     lambda w: w.T.reshape(heads, head_dim, hidden),
                     lambda k: np.ascontiguousarray(k.reshape(hidden, hidden).T))
    yield WeightLink(out.bias, model, f"{prefix}.output.dense.bias", _same, _same)


def _embeddings(embeddings, model):
    yield WeightLink(embeddings.word_embeddings.embeddings, model,
                     "embeddings.word_embeddings.weight", _same, _same)
    yield WeightLink(embeddings.position_embeddings.position_embeddings, model,
                     "embeddings.position_embeddings.weight", _same, _same)
    yield WeightLink(embeddings.token_type_embeddings.embeddings, model,
                     "embeddings.token_type_embeddings.weight", _same, _same)
    yield from _layer_norm(embeddings.layer_norm, "embeddings.LayerNorm", model)


def _encoder(encoder, model):
    if encoder.embeddings_project is not None:
        yield from _linear(encoder.embeddings_project, "embeddings_project", model)
    for i, layer in enumerate(encoder.transformer_layers):
        prefix = f"encoder.layer.{i}"
        yield from _attention(layer._self_attention_layer, prefix + ".attention", model,
                              encoder.hidden_size, encoder.num_heads)
        yield from _layer_norm(layer._self_attention_layer_norm,
                               prefix + ".attention.output.LayerNorm", model)
        yield from _linear(layer._feedforward_intermediate_dense, prefix + ".intermediate.dense", model)
        yield from _linear(layer._feedforward_output_dense, prefix + ".output.dense", model)
        yield from _layer_norm(layer._feedforward_layer_norm, prefix + ".output.LayerNorm", model)


def weight_links(pretrainer) -> Iterator[WeightLink]:
    """Every variable of `pretrainer` with its HF location (both directions of conversion)."""
    shared_owner = "discriminator" if pretrainer.discriminator is not None else "generator"
    yield from _embeddings(pretrainer.embeddings, shared_owner)
    if pretrainer.discriminator is not None:
        yield from _encoder(pretrainer.discriminator, "discriminator")
        head = pretrainer.discriminator_head
        yield from _linear(head.dense, "discriminator_predictions.dense", "discriminator")
        yield from _linear(head.dense_prediction, "discriminator_predictions.dense_prediction",
                           "discriminator")
    if pretrainer.generator.embeddings is not pretrainer.embeddings:  # untied generator embeddings
        yield from _embeddings(pretrainer.generator.embeddings, "generator")
    yield from _encoder(pretrainer.generator, "generator")
    head = pretrainer.generator_head
    yield from _linear(head._intermediate_dense, "generator_predictions.dense", "generator")
    yield from _layer_norm(head._intermediate_layer_norm, "generator_predictions.LayerNorm", "generator")
    yield WeightLink(head._bias, "generator", "generator_lm_head.bias", _same, _same)


# ---- reading HF directories -------------------------------------------------------------------

def read_hf_config(directory: str) -> dict:
    path = os.path.join(directory, HF_CONFIG)
    if not os.path.isfile(path):
        raise ConversionError(f"{directory} has no {HF_CONFIG} (expected a save_pretrained directory)")
    with open(path) as f:
        config = json.load(f)
    if config.get("model_type", "electra") != "electra":
        raise ConversionError(f"{path} describes a {config['model_type']!r} model, not ELECTRA")
    return config


def read_hf_tensors(directory: str) -> dict[str, np.ndarray]:
    """All tensors of a save_pretrained directory, keys without the "electra." prefix."""
    single = os.path.join(directory, HF_WEIGHTS)
    index = os.path.join(directory, HF_WEIGHTS_INDEX)
    if os.path.isfile(single):
        tensors = load_file(single)
    elif os.path.isfile(index):
        with open(index) as f:
            shards = sorted(set(json.load(f)["weight_map"].values()))
        tensors = {}
        for shard in shards:
            tensors.update(load_file(os.path.join(directory, shard)))
    elif os.path.isfile(os.path.join(directory, HF_TORCH_WEIGHTS)):
        try:
            import torch
        except ImportError:
            raise ConversionError(f"{directory} holds {HF_TORCH_WEIGHTS}: install torch to read "
                                  "it, or re-save it with safe_serialization=True") from None
        state = torch.load(os.path.join(directory, HF_TORCH_WEIGHTS), map_location="cpu",
                           weights_only=True)
        tensors = {k: v.float().numpy() for k, v in state.items()}
    else:
        raise ConversionError(f"{directory} has neither {HF_WEIGHTS} nor {HF_TORCH_WEIGHTS}")
    return {k[len("electra."):] if k.startswith("electra.") else k: v for k, v in tensors.items()}


def model_config_from_hf(discriminator: dict, generator: dict | None = None) -> ModelConfig:
    """Our ModelConfig from HF config.json dicts (the generator's sizes given explicitly)."""
    act = discriminator.get("hidden_act", "gelu")
    if act not in ACTIVATIONS:
        raise ConversionError(f"unsupported hidden_act {act!r} (supported: {', '.join(ACTIVATIONS)})")
    config = ModelConfig(
        vocab_size=discriminator["vocab_size"],
        embedding_size=discriminator.get("embedding_size", discriminator["hidden_size"]),
        hidden_size=discriminator["hidden_size"],
        num_layers=discriminator["num_hidden_layers"],
        num_heads=discriminator["num_attention_heads"],
        intermediate_size=discriminator["intermediate_size"],
        max_position_embeddings=discriminator.get("max_position_embeddings", 512),
        type_vocab_size=discriminator.get("type_vocab_size", 2),
        hidden_dropout=discriminator.get("hidden_dropout_prob", 0.1),
        attention_dropout=discriminator.get("attention_probs_dropout_prob", 0.1),
        activation=ACTIVATIONS[act],
        layer_norm_epsilon=discriminator.get("layer_norm_eps", 1e-12),
        initializer_range=discriminator.get("initializer_range", 0.02),
    )
    if generator is not None:
        for key in ("vocab_size", "max_position_embeddings", "type_vocab_size"):
            if generator.get(key) != discriminator.get(key):
                raise ConversionError(f"generator and discriminator disagree on {key}: "
                                      f"{generator.get(key)} vs {discriminator.get(key)}")
        gen_embedding = generator.get("embedding_size", generator["hidden_size"])
        config = dataclasses.replace(
            config,
            generator_fraction=generator["hidden_size"] / discriminator["hidden_size"],
            generator_hidden_size=generator["hidden_size"],
            generator_num_heads=generator["num_attention_heads"],
            generator_intermediate_size=generator["intermediate_size"],
            generator_num_layers=generator["num_hidden_layers"],
            untied_generator_embeddings=gen_embedding != config.embedding_size,
        )
    return config


def assign_from_hf(pretrainer, tensors_by_model: dict[str, dict[str, np.ndarray]],
                   source_names: dict[tuple[str, str], str] | None = None) -> None:
    """Copies HF tensors into `pretrainer`, checking every shape. Models absent are skipped.

    `source_names` maps (model, HF key) to the name to report in errors (e.g. a TF1 name). An
    encoder without the discriminator head (`ElectraModel`) loads; the head stays as initialised.
    """
    missing_head = False
    for link in weight_links(pretrainer):
        tensors = tensors_by_model.get(link.model)
        if tensors is None:
            continue
        key = link.key
        name = (source_names or {}).get((link.model, key), f"{link.model} tensor {key}")
        if key not in tensors and key.startswith("discriminator_predictions."):
            missing_head = True  # an ElectraModel directory: encoder only
            continue
        if key not in tensors:
            raise ConversionError(f"{link.model} weights lack {key} (needed for {link.variable.path})")
        try:
            value = link.from_hf(tensors[key])
        except ValueError:  # a reshape into heads failed
            value = tensors[key]
        if tuple(value.shape) != tuple(link.variable.shape):
            raise ConversionError(f"{name} has shape {tuple(tensors[key].shape)}, which does not "
                                  f"fit {link.variable.path} {tuple(link.variable.shape)}")
        link.variable.assign(value.astype(np.float32))
    if missing_head:
        logging.warning("no discriminator_predictions.* weights (an ElectraModel checkpoint): the "
                        "replaced-token head keeps its random initialisation")


def _check_shared_embeddings(discriminator: dict, generator: dict) -> None:
    for key in ("embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
                "embeddings.token_type_embeddings.weight", "embeddings.LayerNorm.weight"):
        if key in generator and key in discriminator and generator[key].shape == discriminator[key].shape:
            diff = float(np.max(np.abs(generator[key] - discriminator[key])))
            if diff > 0:
                logging.warning("generator %s differs from the discriminator's by up to %.3g; "
                                "ELECTRA shares it, so the discriminator's is used", key, diff)


# ---- writing HF directories -------------------------------------------------------------------

def hf_config(config: ModelConfig, model: str) -> dict:
    """config.json of the HF model for the discriminator or the generator."""
    sizes = config if model == "discriminator" else config.generator_config()
    act = {v: k for k, v in ACTIVATIONS.items() if k in ("gelu", "gelu_new", "relu")}[config.activation]
    return {
        "architectures": ["ElectraForPreTraining" if model == "discriminator" else "ElectraForMaskedLM"],
        "model_type": "electra", "vocab_size": config.vocab_size,
        "embedding_size": sizes.embedding_size, "hidden_size": sizes.hidden_size,
        "num_hidden_layers": sizes.num_layers, "num_attention_heads": sizes.num_heads,
        "intermediate_size": sizes.intermediate_size, "hidden_act": act,
        "hidden_dropout_prob": config.hidden_dropout,
        "attention_probs_dropout_prob": config.attention_dropout,
        "max_position_embeddings": config.max_position_embeddings,
        "type_vocab_size": config.type_vocab_size, "initializer_range": config.initializer_range,
        "layer_norm_eps": config.layer_norm_epsilon, "pad_token_id": 0,
        "tie_word_embeddings": True,
    }


def hf_tensors(pretrainer) -> dict[str, dict[str, np.ndarray]]:
    """Our weights as HF state dicts with their task-model prefixes, per model."""
    refuse_pre_layer_norm(pretrainer.model_config.pre_layer_norm, "Hugging Face")
    tensors: dict[str, dict[str, np.ndarray]] = {}
    for link in weight_links(pretrainer):
        tensors.setdefault(link.model, {})[link.key] = link.to_hf(link.variable.numpy())
    if "generator" in tensors and pretrainer.generator.embeddings is pretrainer.embeddings:
        shared = tensors.get("discriminator", {})
        tensors["generator"].update({k: v for k, v in shared.items() if k.startswith("embeddings.")})
    gdes = getattr(getattr(pretrainer.discriminator, "embeddings", None), "effective_word_table",
                   None)
    if gdes is not None:  # GDES: the generator keeps the shared table, the discriminator's
        # is shared + residual
        tensors["discriminator"]["embeddings.word_embeddings.weight"] = gdes().numpy()
    heads = ("discriminator_predictions.", "generator_predictions.", "generator_lm_head.")
    return {model: {(k if k.startswith(heads) else "electra." + k): np.ascontiguousarray(v, np.float32)
                    for k, v in state.items()}
            for model, state in tensors.items()}


def save_hf(pretrainer, discriminator_dir: str | None, generator_dir: str | None = None) -> None:
    """Writes `save_pretrained`-style directories (config.json + model.safetensors) that
    `ElectraForPreTraining` / `ElectraForMaskedLM.from_pretrained` load with nothing missing."""
    from safetensors.numpy import save_file

    tensors = hf_tensors(pretrainer)
    for model, directory in (("discriminator", discriminator_dir), ("generator", generator_dir)):
        if directory is None:
            continue
        if model not in tensors:
            raise ConversionError(f"this model has no {model} to write")
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, HF_CONFIG), "w") as f:
            json.dump(hf_config(pretrainer.model_config, model), f, indent=2)
        save_file(tensors[model], os.path.join(directory, HF_WEIGHTS), metadata={"format": "pt"})


def load_hf_pretrainer(discriminator_dir: str, generator_dir: str | None = None,
                       objective: ObjectiveConfig | None = None, **model_overrides):
    """An `ElectraPretrainer` holding the weights of HF `save_pretrained` directories.

    Without `generator_dir` the generator keeps its random initialisation (sized by
    `model_overrides`, e.g. generator_fraction=0.25), which is enough to continue pretraining
    or to use `pretrainer.discriminator` alone.
    """
    # lazy: reading HF files needs numpy only; TensorFlow starts when a model is built
    from electra_tf.models.pretrainer_factory import build_pretrainer

    disc_config = read_hf_config(discriminator_dir)
    if "ElectraForMaskedLM" in disc_config.get("architectures", []):
        raise ConversionError(f"{discriminator_dir} holds a generator (ElectraForMaskedLM): pass "
                              "it as the generator, with the discriminator directory as input")
    gen_config = read_hf_config(generator_dir) if generator_dir else None
    config = dataclasses.replace(model_config_from_hf(disc_config, gen_config), **model_overrides)
    tensors = {"discriminator": read_hf_tensors(discriminator_dir)}
    if generator_dir:
        tensors["generator"] = read_hf_tensors(generator_dir)
        _check_shared_embeddings(tensors["discriminator"], tensors["generator"])
    pretrainer = build_pretrainer(config, objective or ObjectiveConfig())
    assign_from_hf(pretrainer, tensors)
    return pretrainer
