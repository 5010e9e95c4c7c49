"""Pre-LayerNorm blocks (`model.pre_layer_norm`), the small-budget lever: the encoder's maths
against a NumPy reference written from the pre-LN definition, training, serialization, and the
conversions that must refuse it (Google's and Hugging Face's ELECTRA are post-LN)."""

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.config import ModelConfig, load_config
from electra_tf.convert import ConversionError
from electra_tf.convert.hf import save_hf
from electra_tf.convert.keras_hub import to_keras_hub_backbone
from electra_tf.models import ElectraPretrainer
from electra_tf.models.encoder import ElectraEncoder, make_embeddings
from electra_tf.training.optimizer import create_optimizer
from tests.models.helpers import (CLS, SEP, fast_optimizer_config, masked_batch, objective,
                                  tiny_model_config)

IDS = np.array([[CLS, 7, 8, 9, SEP, 0], [CLS, 11, SEP, 0, 0, 0]], np.int32)


def _pre_ln_encoder(seed=0):
    keras.utils.set_random_seed(seed)
    config = tiny_model_config(pre_layer_norm=True)
    encoder = ElectraEncoder.from_model_config(config, make_embeddings(config))
    encoder.build()
    rng = np.random.default_rng(seed)
    for weight in encoder.weights:  # LayerNorms away from 1 and 0, biases nonzero
        if weight.path.endswith(("gamma", "beta", "bias")):
            weight.assign(rng.normal(0.5 if weight.path.endswith("gamma") else 0.0, 0.3,
                                     weight.shape).astype(np.float32))
    return encoder


def _layer_norm(x, layer):
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + layer.epsilon) * layer.gamma.numpy() + \
        layer.beta.numpy()


def _reference(encoder, ids):
    """x + Attention(LN(x)), then x + FeedForward(LN(x)) per block, LN at the end: NumPy."""
    mask = (ids > 0).astype(np.float32)
    x = encoder.embeddings(tf.constant(ids), tf.zeros_like(ids)).numpy()
    x = x @ encoder.embeddings_project.kernel.numpy() + encoder.embeddings_project.bias.numpy()
    gelu = np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))))
    for block in encoder.transformer_layers:
        attention = block._self_attention_layer
        h = _layer_norm(x, block._self_attention_layer_norm)
        q, k, v = (np.einsum("bsh,hnd->bnsd", h, dense.kernel.numpy())
                   + dense.bias.numpy()[None, :, None, :]
                   for dense in (attention._query_dense, attention._key_dense,
                                 attention._value_dense))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(q.shape[-1])
        scores += (mask[:, None, None, :] - 1) * 1e9
        probabilities = np.exp(scores - scores.max(-1, keepdims=True))
        probabilities /= probabilities.sum(-1, keepdims=True)
        context = probabilities @ v  # [batch, heads, seq, d]
        x = x + np.einsum("bnsd,ndh->bsh", context, attention._output_dense.kernel.numpy()) + \
            attention._output_dense.bias.numpy()
        h = _layer_norm(x, block._feedforward_layer_norm)
        inner, outer = block._feedforward_intermediate_dense, block._feedforward_output_dense
        h = gelu(h @ inner.kernel.numpy() + inner.bias.numpy())
        x = x + h @ outer.kernel.numpy() + outer.bias.numpy()
    return _layer_norm(x, encoder.final_layer_norm)


def test_faithful_recipes_keep_post_layer_norm_blocks():
    assert ModelConfig().pre_layer_norm is False
    for recipe in ("pretrain/electra_small", "pretrain/electra_base", "pretrain/demo"):
        assert load_config(recipe).model.pre_layer_norm is False
    encoder = ElectraEncoder.from_model_config(tiny_model_config(),
                                               make_embeddings(tiny_model_config()))
    assert encoder.final_layer_norm is None
    assert not any(block.normalize_first for block in encoder.transformer_layers)
    assert load_config("pretrain/demo", overrides=["model.pre_layer_norm=true"]
                       ).model.pre_layer_norm is True


def test_pre_layer_norm_encoder_computes_the_pre_ln_definition():
    encoder = _pre_ln_encoder()
    expected = _reference(encoder, IDS)
    mask = (IDS > 0).astype(np.int32)
    got = encoder(tf.constant(IDS), tf.constant(mask), tf.zeros_like(IDS), training=False)
    real = mask.astype(bool)  # padding positions are not compared
    np.testing.assert_allclose(got.numpy()[real], expected[real], atol=2e-5, rtol=1e-4)
    first = encoder(tf.constant(IDS), tf.constant(mask), tf.zeros_like(IDS), output_rows=1)
    np.testing.assert_allclose(first.numpy(), got.numpy()[:, :1], atol=1e-6)


@pytest.mark.slow
def test_a_pre_layer_norm_pretrainer_trains_saves_and_reloads(tmp_path):
    keras.utils.set_random_seed(0)
    model = ElectraPretrainer(tiny_model_config(pre_layer_norm=True, hidden_dropout=0.0,
                                                attention_dropout=0.0),
                              objective(cls_token_id=CLS, sep_token_id=SEP, mask_token_id=4))
    model.compile(optimizer=create_optimizer(fast_optimizer_config()), jit_compile=False)
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 100, size=(8, 16)).astype(np.int32)
    ids[:, 0], ids[:, -1] = CLS, SEP
    batch = masked_batch(ids, np.ones_like(ids), seed=0)
    final = model.discriminator.final_layer_norm.gamma
    before = final.numpy().copy()
    history = model.fit(tf.data.Dataset.from_tensors(batch).repeat(3), epochs=1,
                        verbose=0, shuffle=False).history
    assert np.isfinite(history["loss"]).all()
    assert np.abs(final.numpy() - before).max() > 0  # the final LayerNorm is trained
    assert model.generator.pre_layer_norm  # both networks have the layout

    path = str(tmp_path / "pre_ln.keras")
    model.save(path)
    again = keras.models.load_model(path, compile=False)
    inputs = (ids, np.ones_like(ids), np.zeros_like(ids))
    np.testing.assert_allclose(again.discriminator_logits(*inputs),
                               model.discriminator_logits(*inputs), atol=1e-6)


def test_conversions_to_post_ln_formats_are_refused(tmp_path):
    model = ElectraPretrainer(tiny_model_config(pre_layer_norm=True),
                              objective(cls_token_id=CLS, sep_token_id=SEP, mask_token_id=4))
    with pytest.raises(ConversionError, match="pre-LayerNorm blocks .* Hugging Face's ELECTRA "
                                              "has post-LayerNorm blocks only"):
        save_hf(model, str(tmp_path / "hf"))
    with pytest.raises(ConversionError, match="keras-hub's ELECTRA has post-LayerNorm"):
        to_keras_hub_backbone(model.discriminator)
    assert not (tmp_path / "hf").exists()


@pytest.mark.parametrize("target, named", [("hf", "Hugging Face"), ("keras_hub", "keras-hub")])
def test_the_command_refuses_a_pre_layer_norm_run_in_one_line(tmp_path, target, named):
    from electra_tf.convert_checkpoint import write_electra_tf
    from tests.run_helpers import run_in_process

    model = ElectraPretrainer(tiny_model_config(pre_layer_norm=True),
                              objective(cls_token_id=CLS, sep_token_id=SEP, mask_token_id=4))
    write_electra_tf(model, str(tmp_path / "run"), None)
    result = run_in_process(["--from", "electra_tf", "--input", tmp_path / "run", "--to", target,
                             "--output_dir", tmp_path / "out"],
                            module="electra_tf.convert_checkpoint")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(
        f"error: this model has pre-LayerNorm blocks (model.pre_layer_norm true), and {named}'s")
    assert not (tmp_path / "out").exists()


def test_layer_wise_decay_gives_the_final_layer_norm_the_top_blocks_rate():
    """Fine-tuning a pre-LN encoder with layer-wise LR decay (finetune/small sets it): the
    final LayerNorm, which the original has no depth for, decays as the last block does."""
    from electra_tf.models.classifier import ElectraClassifier
    from electra_tf.training.optimizer import layerwise_lr_multipliers

    config = tiny_model_config(pre_layer_norm=True)
    model = ElectraClassifier(config, num_labels=2)
    model(masked_batch(IDS, (IDS > 0).astype(np.int32)))
    paths = [variable.path for variable in model.trainable_variables]
    final = [path for path in paths if "final_layer_norm" in path]
    assert final
    multipliers = layerwise_lr_multipliers(paths, config.num_layers, 0.8)
    top_block = [rate for path, rate in multipliers.items()
                 if f"layer_{config.num_layers - 1}/" in path]
    # the original's off-by-one (kept by default) puts the top block at decay ** 2
    assert {multipliers[path] for path in final} == set(top_block)
    assert top_block[0] == pytest.approx(0.8 ** 2)
