"""Conversion between our ElectraEncoder and keras-hub's ElectraBackbone (random weights, no network)."""

import dataclasses
import re

import keras
import keras_hub
import numpy as np
import pytest

from electra_tf.convert.hf import ConversionError
from electra_tf.convert.keras_hub import (
    assign_from_keras_hub, assign_to_keras_hub, from_keras_hub_backbone, model_config_from_keras_hub,
    to_keras_hub_backbone, variable_pairs)
from electra_tf.models import ElectraPretrainer
from tests.models.helpers import VOCAB, tiny_model_config

# tiny_model_config: E=16, H=32, 2 layers, 2 heads, FFN 64, 64 positions; generator H=16 (E == H).
BACKBONE_SIZES = dict(vocab_size=VOCAB, num_layers=2, num_heads=2, hidden_dim=32, embedding_dim=16,
                      intermediate_dim=64, max_sequence_length=64)


def _randomise(variables, seed, scale=0.05):
    """Random values everywhere (LayerNorm scales near 1), so a missed or swapped copy shows.

    scale=None draws kernels variance-preserving (std 1/sqrt(fan_in)): FFN pre-activations of
    unit scale, as in trained models, where exact and tanh GELU differ most.
    """
    rng = np.random.default_rng(seed)
    for variable in variables:
        shape = tuple(variable.shape)
        noise = rng.standard_normal(shape)
        if variable.name == "gamma":
            value = 1.0 + 0.1 * noise
        elif scale is not None or variable.name != "kernel":
            value = (scale or 0.05) * noise
        else:
            attention_output = variable.path.endswith("attention_output/kernel")
            fan_in = int(np.prod(shape[:2])) if attention_output else shape[0]
            value = noise / np.sqrt(fan_in)
        variable.assign(value.astype(np.float32))


def _inputs(batch=3, length=20, seed=3):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, VOCAB, size=(batch, length)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[1, 14:] = 0
    mask[2, 7:] = 0
    segments = np.zeros_like(ids)
    segments[:, 5:] = 1
    return ids * mask, mask, segments * mask


def _max_diff(encoder, backbone):
    """max |ours - keras-hub| of the sequence output over non-pad positions."""
    ids, mask, segments = _inputs()
    ours = keras.ops.convert_to_numpy(encoder(ids, mask, segments))
    theirs = keras.ops.convert_to_numpy(backbone(
        {"token_ids": ids, "segment_ids": segments, "padding_mask": mask})["sequence_output"])
    real = mask.astype(bool)
    assert np.std(ours[real]) > 0.5  # LayerNorm'd outputs, not a near-constant comparison
    return float(np.max(np.abs(ours[real] - theirs[real])))


def _pretrainer(**overrides):
    return ElectraPretrainer(tiny_model_config(**overrides))


def _weights_by_path(encoder):
    return {v.path: v.numpy() for v in encoder.weights}


def test_ours_to_keras_hub_matches_with_tanh_gelu():
    pretrainer = _pretrainer(activation="gelu_approximate")
    _randomise(pretrainer.discriminator.weights, seed=0)
    keras.utils.set_random_seed(7)
    backbone = to_keras_hub_backbone(pretrainer.discriminator)

    assert backbone.embeddings_projection.kernel.shape == (16, 32)
    assert [tuple(backbone.get_layer("transformer_layer_0")._self_attention_layer._query_dense
                  .kernel.shape)] == [(32, 2, 16)]  # Keras' [H, heads, head_dim] on both sides
    diff = _max_diff(pretrainer.discriminator, backbone)
    print(f"ours (tanh GELU) -> keras-hub: max |diff| {diff:.2e}")
    assert diff < 1e-5, diff

    # Every backbone variable but the pooler was written; the pooler kept its initial values.
    names = {name for _, _, name in variable_pairs(pretrainer.discriminator, backbone)}
    assert len(names) == len(backbone.weights) - 2
    assert not any(name.startswith("pooled_dense") for name in names)
    keras.utils.set_random_seed(7)
    fresh = keras_hub.models.ElectraBackbone(**BACKBONE_SIZES)
    for name in ("kernel", "bias"):
        np.testing.assert_array_equal(getattr(backbone.pooled_dense, name).numpy(),
                                      getattr(fresh.pooled_dense, name).numpy())
    assert np.any(backbone.token_embedding.embeddings.numpy()
                  != fresh.token_embedding.embeddings.numpy())


def test_a_gdes_discriminator_converts_as_a_plain_electra_with_its_effective_table():
    from electra_tf.convert.hf import hf_tensors

    pretrainer = _pretrainer(activation="gelu_approximate", embedding_sharing="gdes")
    _randomise(pretrainer.weights, seed=2)
    residual = pretrainer.discriminator.embeddings.residual_word_embeddings.embeddings
    shared = pretrainer.embeddings.word_embeddings.embeddings
    assert np.any(residual.numpy())
    backbone = to_keras_hub_backbone(pretrainer.discriminator)
    assert _max_diff(pretrainer.discriminator, backbone) < 1e-5
    np.testing.assert_allclose(backbone.token_embedding.embeddings.numpy(),
                               shared.numpy() + residual.numpy(), rtol=0, atol=1e-7)
    tensors = hf_tensors(pretrainer)  # HF: the generator's own table, the discriminator's sum
    key = "electra.embeddings.word_embeddings.weight"
    np.testing.assert_allclose(tensors["discriminator"][key], shared.numpy() + residual.numpy(),
                               rtol=0, atol=1e-7)
    np.testing.assert_array_equal(tensors["generator"][key], shared.numpy())


@pytest.mark.parametrize("weights, low, high", [("scale 0.05", 1e-6, 1e-3),
                                                ("variance-preserving", 1e-4, 1e-2)])
def test_exact_gelu_differs_from_keras_hub_by_the_documented_band(weights, low, high):
    pretrainer = _pretrainer()  # activation "gelu": exact erf, as the original and HF
    assert pretrainer.model_config.activation == "gelu"
    _randomise(pretrainer.discriminator.weights, seed=0,
               scale=0.05 if weights == "scale 0.05" else None)
    diff = _max_diff(pretrainer.discriminator, to_keras_hub_backbone(pretrainer.discriminator))
    print(f"exact GELU vs keras-hub tanh GELU, {weights} weights: max |diff| {diff:.2e}")
    assert low < diff < high, diff


def test_keras_hub_to_ours_matches_the_backbone():
    backbone = keras_hub.models.ElectraBackbone(**BACKBONE_SIZES, dropout=0.2)
    _randomise(backbone.weights, seed=1)
    pretrainer = from_keras_hub_backbone(backbone)

    config = pretrainer.model_config
    assert (config.vocab_size, config.embedding_size, config.hidden_size, config.num_layers,
            config.num_heads, config.intermediate_size, config.max_position_embeddings,
            config.type_vocab_size) == (VOCAB, 16, 32, 2, 2, 64, 64, 2)
    assert config.activation == "gelu_approximate"
    assert config.hidden_dropout == config.attention_dropout == 0.2
    assert pretrainer.generator.hidden_size == 8  # default generator_fraction 0.25, fresh weights
    diff = _max_diff(pretrainer.discriminator, backbone)
    print(f"keras-hub -> ours: max |diff| {diff:.2e}")
    assert diff < 1e-5, diff


def test_round_trip_ours_keras_hub_ours_is_exact():
    original = _pretrainer(activation="gelu_approximate")
    _randomise(original.discriminator.weights, seed=2)
    restored = from_keras_hub_backbone(to_keras_hub_backbone(original.discriminator),
                                       generator_fraction=0.5)

    assert restored.model_config == original.model_config
    before, after = _weights_by_path(original.discriminator), _weights_by_path(restored.discriminator)
    assert sorted(before) == sorted(after)
    assert len(before) == 5 + 2 + 2 * 16  # embeddings, projection, 16 per layer
    for path, value in before.items():
        np.testing.assert_array_equal(after[path], value, err_msg=path)


def test_embedding_size_equal_to_hidden_size_converts():
    pretrainer = _pretrainer(activation="gelu_approximate", embedding_size=32)  # E == H == 32
    generator = _pretrainer(activation="gelu_approximate").generator  # E == H == 16
    _randomise(pretrainer.discriminator.weights, seed=4)
    _randomise(generator.weights, seed=5)
    for encoder in (pretrainer.discriminator, generator):
        assert encoder.embeddings_project is None
        backbone = to_keras_hub_backbone(encoder)
        assert not hasattr(backbone, "embeddings_projection")
        assert not any("projection" in v.path for v in backbone.weights)
        diff = _max_diff(encoder, backbone)
        assert diff < 1e-5, (encoder.name, diff)

    restored = from_keras_hub_backbone(to_keras_hub_backbone(pretrainer.discriminator))
    assert restored.discriminator.embeddings_project is None
    before, after = _weights_by_path(pretrainer.discriminator), _weights_by_path(restored.discriminator)
    assert sorted(before) == sorted(after)
    for path, value in before.items():
        np.testing.assert_array_equal(after[path], value, err_msg=path)


@pytest.mark.parametrize("sizes, message", [
    (dict(num_layers=3), "keras-hub variable transformer_layer_2/self_attention_layer/query/kernel"),
    (dict(num_layers=1), "no variable transformer_layer_1/self_attention_layer/query/kernel"),
    (dict(hidden_dim=64), "keras-hub variable embeddings_projection/kernel has shape (16, 64)"),
    (dict(intermediate_dim=48),
     "transformer_layer_0/feedforward_intermediate_dense/kernel has shape (32, 48)"),
])
def test_mismatched_backbone_raises_naming_the_variable(sizes, message):
    pretrainer = _pretrainer(activation="gelu_approximate")
    before = _weights_by_path(pretrainer.discriminator)
    backbone = keras_hub.models.ElectraBackbone(**{**BACKBONE_SIZES, **sizes})
    _randomise(backbone.weights, seed=6)
    with pytest.raises(ConversionError, match=re.escape(message)):
        assign_from_keras_hub(pretrainer.discriminator, backbone)
    for path, value in _weights_by_path(pretrainer.discriminator).items():  # nothing half-copied
        np.testing.assert_array_equal(value, before[path], err_msg=path)
    with pytest.raises(ConversionError, match=re.escape(message)):
        assign_to_keras_hub(backbone, pretrainer.discriminator)


def test_overrides_that_do_not_fit_the_backbone_raise():
    backbone = keras_hub.models.ElectraBackbone(**BACKBONE_SIZES)
    with pytest.raises(ConversionError, match="keras-hub variable transformer_layer_1/"):
        from_keras_hub_backbone(backbone, num_layers=1)


def test_relu_encoder_is_refused_and_configs_need_sizes():
    pretrainer = _pretrainer(activation="relu")
    with pytest.raises(ConversionError, match="'relu'"):
        to_keras_hub_backbone(pretrainer.discriminator)
    with pytest.raises(ConversionError, match="embedding_dim"):
        model_config_from_keras_hub({k: v for k, v in BACKBONE_SIZES.items() if k != "embedding_dim"})
    config = model_config_from_keras_hub(keras_hub.models.ElectraBackbone(**BACKBONE_SIZES).get_config())
    assert config == dataclasses.replace(tiny_model_config(activation="gelu_approximate"),
                                         generator_fraction=0.25)

