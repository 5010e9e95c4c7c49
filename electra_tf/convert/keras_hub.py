"""Our `ElectraEncoder` <-> keras-hub's `ElectraBackbone`, in both directions.

Both sides are Keras 3 models built from the same layer types (ours wraps keras-hub's
`TransformerEncoder`), so every variable keeps its layout: q/k/v kernels are [H, heads, head_dim]
and biases [heads, head_dim] on both sides, the attention output kernel [heads, head_dim, H].
Weights are copied as-is; only the names differ:

    ours (ElectraEncoder)                          keras-hub (ElectraBackbone)
    embeddings.word_embeddings                     token_embedding
    embeddings.position_embeddings                 position_embedding
    embeddings.token_type_embeddings               segment_embedding
    embeddings.layer_norm                          embeddings_layer_norm
    embeddings_project (only when E != H)          embeddings_projection (only when E != H)
    layer_{i}/self_attention_layer/{query,key,value,attention_output}
                                                   transformer_layer_{i}/self_attention_layer/...
    layer_{i}/self_attention_layer_norm            transformer_layer_{i}/self_attention_layer_norm
    layer_{i}/feedforward_{intermediate,output}_dense, feedforward_layer_norm
                                                   transformer_layer_{i}/(same names)
    (none)                                         pooled_dense

Our encoder is walked with the HF converter's `_embeddings`/`_encoder` helpers, so both
converters enumerate the same variables; the HF module names they yield are mapped to keras-hub
layer names below.

Caveats:
- GELU. keras-hub hard-codes the tanh approximation ("gelu_approximate"); the original and HF
  use the exact erf form, our default "gelu". The two differ by at most 4.7e-4 point-wise (at
  |x| ~ 2.7), and the gap compounds over layers. A backbone converted from our model therefore
  reproduces our outputs only if our config says activation="gelu_approximate"
  (`from_keras_hub_backbone` sets it). Converting an exact-"gelu" encoder works, but the
  backbone's sequence output (LayerNorm'd, std ~1) then differs from ours. Measured max |diff|
  over real tokens, random weights: 2-layer H=32 encoder (tests/convert/test_keras_hub.py)
  2.4e-5 with weights drawn at scale 0.05, 5.4e-4 with variance-preserving kernels (std
  1/sqrt(fan_in): FFN pre-activations of unit scale, closer to trained weights); 12-layer
  H=768 base-size encoder 1.2e-3 (variance-preserving, mean |diff| 2.4e-4) and 2.5e-3 (scale
  0.05, i.e. larger pre-activations at H=768). With activation="gelu_approximate" the two
  agree to ~1e-6 (float32 round-off).
- Pooler. keras-hub's `pooled_dense` (Dense + tanh on [CLS]) has no counterpart: neither the
  original ELECTRA nor HF has a pooler, and keras-hub's presets carry an untrained one. It is
  never read, and `to_keras_hub_backbone` leaves it as initialised.
- keras-hub has one `dropout` rate for hidden states and attention probabilities, and a fixed
  LayerNorm epsilon of 1e-12; the backbone takes our hidden dropout.

A preset (`save_keras_hub_preset`) holds the backbone and, when the vocabulary is known, keras-hub's
`ElectraTokenizer` over it (tokenizer.json + assets/tokenizer/vocabulary.txt), which
`keras_hub.models.ElectraTokenizer.from_preset(dir)` loads. Its ids are ours on ordinary text;
on rare characters keras-hub normalizes differently from the original BERT tokenization we
reproduce (NFKC case folding, no characters deleted, only ASCII whitespace between words: our
`normalization="keras_hub"`, electra_tf/text/tokenization.py). keras-hub 0.32 has no ELECTRA
task or preprocessor classes (`TextClassifier.from_preset` finds none for `ElectraBackbone`).
"""

from __future__ import annotations

import dataclasses
import itertools
import re

import keras_hub
import numpy as np
from absl import logging

from electra_tf.config import ModelConfig, ObjectiveConfig
from electra_tf.convert.hf import (ConversionError, _embeddings, _encoder,
                                   refuse_pre_layer_norm)
from electra_tf.text.tokenization import load_vocabulary
from electra_tf.models.encoder import plain_encoder
from electra_tf.models.pretrainer_factory import build_pretrainer

# HF module name (a WeightLink key without ".weight"/".bias") -> keras-hub layer path.
_KERAS_HUB_LAYERS = [
    (r"embeddings\.word_embeddings", "token_embedding"),
    (r"embeddings\.position_embeddings", "position_embedding"),
    (r"embeddings\.token_type_embeddings", "segment_embedding"),
    (r"embeddings\.LayerNorm", "embeddings_layer_norm"),
    (r"embeddings_project", "embeddings_projection"),
    (r"encoder\.layer\.(\d+)\.attention\.self\.(query|key|value)",
     r"transformer_layer_\1/self_attention_layer/\2"),
    (r"encoder\.layer\.(\d+)\.attention\.output\.dense",
     r"transformer_layer_\1/self_attention_layer/attention_output"),
    (r"encoder\.layer\.(\d+)\.attention\.output\.LayerNorm",
     r"transformer_layer_\1/self_attention_layer_norm"),
    (r"encoder\.layer\.(\d+)\.intermediate\.dense", r"transformer_layer_\1/feedforward_intermediate_dense"),
    (r"encoder\.layer\.(\d+)\.output\.dense", r"transformer_layer_\1/feedforward_output_dense"),
    (r"encoder\.layer\.(\d+)\.output\.LayerNorm", r"transformer_layer_\1/feedforward_layer_norm"),
]
_NO_COUNTERPART = ("pooled_dense",)  # keras-hub layers we neither read nor write
_KERAS_HUB_LAYER_NORM_EPSILON = 1e-12


def _keras_hub_name(link) -> str:
    module = link.key.rpartition(".")[0]
    for pattern, layer_path in _KERAS_HUB_LAYERS:
        match = re.fullmatch(pattern, module)
        if match:
            return f"{match.expand(layer_path)}/{link.variable.name}"
    raise ConversionError(f"{link.variable.path} has no keras-hub counterpart")


def _keras_hub_variables(backbone) -> dict:
    """The backbone's variables by path relative to the backbone, pooler excluded, in order."""
    top = {layer.name for layer in backbone.layers}
    variables = {}
    for variable in backbone.weights:
        parts = variable.path.split("/")
        start = next((i for i, part in enumerate(parts) if part in top), 0)
        if parts[start] not in _NO_COUNTERPART:
            variables["/".join(parts[start:])] = variable
    return variables


def variable_pairs(encoder, backbone) -> list[tuple[object, object, str]]:
    """(our variable, keras-hub variable, keras-hub name) for every weight of `encoder`.

    Raises ConversionError naming the first variable missing on either side or of another shape.
    """
    if not encoder.built:
        encoder.build()
    theirs = _keras_hub_variables(backbone)
    pairs = []
    for link in itertools.chain(_embeddings(encoder.embeddings, None), _encoder(encoder, None)):
        name = _keras_hub_name(link)
        ours = link.variable
        if name not in theirs:
            raise ConversionError(f"the keras-hub backbone has no variable {name} "
                                  f"(counterpart of our {ours.path} {tuple(ours.shape)})")
        other = theirs.pop(name)
        if tuple(other.shape) != tuple(ours.shape):
            raise ConversionError(f"keras-hub variable {name} has shape {tuple(other.shape)}, "
                                  f"our {ours.path} has shape {tuple(ours.shape)}")
        pairs.append((ours, other, name))
    if theirs:
        name, other = next(iter(theirs.items()))
        raise ConversionError(f"keras-hub variable {name} {tuple(other.shape)} has no counterpart "
                              f"in our encoder {encoder.name!r}")
    linked = {id(ours) for ours, _, _ in pairs}
    for variable in encoder.weights:
        if id(variable) not in linked:
            raise ConversionError(f"our {variable.path} has no keras-hub counterpart")
    return pairs


def _copy(source, target) -> None:
    target.assign(np.asarray(source.numpy(), dtype=target.dtype))


def assign_to_keras_hub(backbone, encoder) -> None:
    """Copies every weight of our `encoder` into `backbone` (pooled_dense untouched)."""
    for ours, theirs, _ in variable_pairs(encoder, backbone):
        _copy(ours, theirs)


def assign_from_keras_hub(encoder, backbone) -> None:
    """Copies the weights of `backbone` (all but pooled_dense) into our `encoder`."""
    for ours, theirs, _ in variable_pairs(encoder, backbone):
        _copy(theirs, ours)


def _warn_about_numerics(encoder) -> None:
    if encoder.activation == "gelu":
        logging.warning("%s uses the exact GELU; keras-hub's ElectraBackbone uses the tanh "
                        "approximation, so its outputs will differ by about 1e-3",
                        encoder.name)
    epsilons = {encoder.layer_norm_epsilon, encoder.embeddings.layer_norm_epsilon}
    if epsilons != {_KERAS_HUB_LAYER_NORM_EPSILON}:
        logging.warning("%s uses LayerNorm epsilon %s; keras-hub's is fixed at 1e-12",
                        encoder.name, sorted(epsilons))


def to_keras_hub_backbone(encoder, **backbone_kwargs) -> keras_hub.models.ElectraBackbone:
    """A keras-hub `ElectraBackbone` sized like our `encoder`, holding its weights.

    `encoder` is one of our `ElectraEncoder`s, e.g. `pretrainer.discriminator` or
    `pretrainer.generator`. The backbone's `pooled_dense` has no counterpart (neither the
    original nor HF has a pooler) and keeps its random initialisation, so `pooled_output` is
    meaningless until trained. Outputs match ours only for activation="gelu_approximate"
    (see the module docstring); "relu" cannot be represented and is refused.
    `backbone_kwargs` (e.g. `name`, `dtype`) go to the `ElectraBackbone` constructor.
    """
    refuse_pre_layer_norm(getattr(encoder, "pre_layer_norm", False), "keras-hub")
    if encoder.activation not in ("gelu", "gelu_approximate"):
        raise ConversionError(f"keras-hub's ElectraBackbone always uses the tanh GELU; "
                              f"{encoder.name} uses {encoder.activation!r}")
    encoder = plain_encoder(encoder)  # a GDES discriminator: its effective word table
    _warn_about_numerics(encoder)
    embeddings = encoder.embeddings
    backbone_kwargs.setdefault("dtype", encoder.dtype_policy.name)
    backbone = keras_hub.models.ElectraBackbone(
        vocab_size=embeddings.vocab_size,
        num_layers=encoder.num_layers,
        num_heads=encoder.num_heads,
        hidden_dim=encoder.hidden_size,
        embedding_dim=embeddings.embedding_size,
        intermediate_dim=encoder.intermediate_size,
        dropout=encoder.hidden_dropout,
        max_sequence_length=embeddings.max_position_embeddings,
        num_segments=embeddings.type_vocab_size,
        **backbone_kwargs,
    )
    assign_to_keras_hub(backbone, encoder)
    return backbone


def is_cased(vocabulary: list[str]) -> bool:
    """Whether a WordPiece vocabulary was learned from cased text: it holds tokens with upper-case
    letters other than bracketed specials such as [CLS]."""
    return any(token != token.lower() and not (token.startswith("[") and token.endswith("]"))
               for token in vocabulary)


def to_keras_hub_tokenizer(vocab_file: str, lower_case: bool | None = None,
                           vocab_size: int | None = None) -> keras_hub.models.ElectraTokenizer:
    """keras-hub's `ElectraTokenizer` over our vocab.txt.

    `lower_case` lower-cases and strips accents (an uncased vocabulary, as BERT's and ELECTRA's
    releases); None decides from the vocabulary (`is_cased`). `vocab_size` is the model's: a
    vocabulary with more tokens than the embedding has rows is refused.
    """
    vocabulary = load_vocabulary(vocab_file)
    if vocab_size is not None and len(vocabulary) > vocab_size:
        raise ConversionError(f"{vocab_file} has {len(vocabulary)} tokens, more than the model's "
                              f"vocabulary of {vocab_size}: not the vocabulary it was trained with")
    lower_case = not is_cased(vocabulary) if lower_case is None else lower_case
    return keras_hub.models.ElectraTokenizer(vocabulary=vocabulary, lowercase=lower_case,
                                             strip_accents=lower_case)


def save_keras_hub_preset(encoder, preset_dir: str, vocab_file: str | None = None,
                          lower_case: bool | None = None):
    """Writes `encoder` as a keras-hub preset: the `ElectraBackbone` (config.json,
    model.weights.h5, metadata.json) and, given `vocab_file`, the `ElectraTokenizer`
    (tokenizer.json, assets/tokenizer/vocabulary.txt; `lower_case` as in
    `to_keras_hub_tokenizer`). Returns the tokenizer, or None without a vocabulary.
    """
    backbone = to_keras_hub_backbone(encoder)
    tokenizer = (to_keras_hub_tokenizer(vocab_file, lower_case, encoder.embeddings.vocab_size)
                 if vocab_file else None)
    backbone.save_to_preset(preset_dir)
    if tokenizer is not None:
        tokenizer.save_to_preset(preset_dir)
    return tokenizer


def model_config_from_keras_hub(backbone_config: dict) -> ModelConfig:
    """Our ModelConfig from `ElectraBackbone.get_config()` (activation "gelu_approximate")."""
    config = dict(backbone_config)
    if "vocab_size" not in config and "vocabulary_size" in config:  # keras-hub's docstring name
        config["vocab_size"] = config["vocabulary_size"]
    required = ("vocab_size", "num_layers", "num_heads", "hidden_dim", "embedding_dim",
                "intermediate_dim")
    missing = [key for key in required if key not in config]
    if missing:
        raise ConversionError(f"keras-hub ElectraBackbone config lacks {', '.join(missing)}")
    dropout = config.get("dropout", 0.1)
    return ModelConfig(
        vocab_size=config["vocab_size"],
        embedding_size=config["embedding_dim"],
        hidden_size=config["hidden_dim"],
        num_layers=config["num_layers"],
        num_heads=config["num_heads"],
        intermediate_size=config["intermediate_dim"],
        max_position_embeddings=config.get("max_sequence_length", 512),
        type_vocab_size=config.get("num_segments", 2),
        hidden_dropout=dropout,
        attention_dropout=dropout,
        activation="gelu_approximate",
        layer_norm_epsilon=_KERAS_HUB_LAYER_NORM_EPSILON,
    )


def from_keras_hub_backbone(backbone, objective: ObjectiveConfig | None = None, **model_overrides):
    """An `ElectraPretrainer` whose discriminator encoder holds `backbone`'s weights.

    keras-hub has no ELECTRA heads, so the discriminator head and the generator (sized by
    `model_overrides`, e.g. generator_fraction=0.25) are freshly initialised; the backbone's
    pooler is dropped. The config comes from `model_config_from_keras_hub` with
    `model_overrides` applied; overriding activation="gelu" (the original's exact GELU) changes
    the outputs slightly (see the module docstring). For the MLM baseline objective the single
    network (`pretrainer.encoder`) receives the weights.
    """
    config = dataclasses.replace(model_config_from_keras_hub(backbone.get_config()),
                                 **model_overrides)
    pretrainer = build_pretrainer(config, objective or ObjectiveConfig())
    assign_from_keras_hub(pretrainer.encoder, backbone)
    return pretrainer
