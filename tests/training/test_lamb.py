"""LAMB (`optimizer.name: lamb`): step by step against a NumPy version of the paper's update
rule (trust ratio, exclusions, bias correction, clipping, layer-wise decay), its config and
serialization, and an exact checkpoint/resume."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.config import ConfigError, ElectraConfig, OptimizerConfig, apply_overrides
from electra_tf.training.optimizer import (AdamWeightDecay, LambWeightDecay, WarmupLinearDecay,
                                           create_optimizer)
from tests.training.test_optimizer import adam_direction, make_block, reference_adamw

STEPS = 5
LR0, DECAY_STEPS, WARMUP = 0.05, 20, 3


def reference_lamb(params, grads_per_step, lrs, adapted, wd, bias_correction=True,
                   clip_norm=None, b1=0.9, b2=0.999, eps=1e-6):
    """NumPy (float64) LAMB, Algorithm 2 of You et al. (2019) with phi the identity: global
    clipping of the gradients, Adam moments, r = m_hat / (sqrt(v_hat) + eps), u = r + wd w,
    w -= lr (||w|| / ||u||) u; variables not `adapted` get neither wd nor the trust ratio."""
    params = [p.astype(np.float64) for p in params]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    for t, (grads, lr) in enumerate(zip(grads_per_step, lrs), start=1):
        grads = [g.astype(np.float64) for g in grads]
        if clip_norm is not None:
            norm = np.sqrt(sum(np.sum(g ** 2) for g in grads))
            grads = [g * clip_norm / max(norm, clip_norm) for g in grads]
        for i, g in enumerate(grads):
            m[i], v[i], update = adam_direction(m[i], v[i], g, t, bias_correction, b1, b2, eps)
            ratio = 1.0
            if adapted[i]:
                update = update + wd * params[i]
                w_norm, u_norm = np.linalg.norm(params[i]), np.linalg.norm(update)
                ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
            params[i] = params[i] - lr * ratio * update
    return params


def _schedule():
    return WarmupLinearDecay(LR0, decay_steps=DECAY_STEPS, warmup_steps=WARMUP)


def _lrs(multiplier=1.0):
    return [multiplier * LR0 * (1 - t / DECAY_STEPS) * min(1.0, t / WARMUP) for t in range(STEPS)]


def _gradients(variables, seed=1, scale=1.0):
    rng = np.random.default_rng(seed)
    return [[(scale * rng.normal(size=v.shape)).astype("float32") for v in variables]
            for _ in range(STEPS)]


def _train(optimizer, variables, steps):
    for grads in steps:
        optimizer.apply([keras.ops.convert_to_tensor(g) for g in grads], variables)


@pytest.mark.parametrize("bias_correction", [True, False])
def test_update_matches_the_papers_rule(bias_correction):
    block = make_block()
    variables = block.trainable_variables
    # kernel adapted and decayed; dense bias, LayerNorm gamma and beta neither
    adapted = [True, False, False, False]
    steps = _gradients(variables)
    initial = [v.numpy().copy() for v in variables]
    optimizer = LambWeightDecay(_schedule(), weight_decay=0.1,
                                **({} if bias_correction else {"bias_correction": False}))
    assert optimizer.bias_correction is bias_correction  # on unless asked otherwise
    _train(optimizer, variables, steps)
    assert [optimizer.uses_adaptation(v) for v in variables] == adapted
    expected = reference_lamb(initial, steps, _lrs(), adapted, 0.1, bias_correction)
    for v, e in zip(variables, expected):
        np.testing.assert_allclose(v.numpy(), e, rtol=1e-5, atol=1e-7, err_msg=v.path)
    # The trust ratio is what moves the kernel: AdamW's update of the same steps is far off.
    adamw = reference_adamw(initial, steps, _lrs(), adapted, 0.1, bias_correction)
    assert np.max(np.abs(variables[0].numpy() - adamw[0])) > 1e-2
    for v, a in zip(variables[1:], adamw[1:]):  # unadapted variables take AdamW's step
        np.testing.assert_allclose(v.numpy(), a, rtol=1e-5, atol=1e-7, err_msg=v.path)


def test_a_layers_step_is_its_weight_norm_times_the_learning_rate():
    block = make_block()
    kernel = block.trainable_variables[0]
    before = kernel.numpy().astype(np.float64)
    optimizer = LambWeightDecay(0.01, weight_decay=0.0)
    optimizer.apply([keras.ops.convert_to_tensor(g) for g in _gradients([kernel], scale=100)[0]],
                    [kernel])
    step = np.linalg.norm(kernel.numpy() - before)
    assert step == pytest.approx(0.01 * np.linalg.norm(before), rel=1e-5)  # whatever the scale


def test_a_zero_variable_takes_the_plain_adam_step():
    block = make_block()
    kernel = block.trainable_variables[0]
    kernel.assign(np.zeros(kernel.shape, np.float32))
    grads = _gradients([kernel])[0]
    optimizer = LambWeightDecay(0.01, weight_decay=0.1)
    optimizer.apply([keras.ops.convert_to_tensor(g) for g in grads], [kernel])
    expected = reference_lamb([np.zeros(kernel.shape)], [grads], [0.01], [True], 0.1)[0]
    np.testing.assert_allclose(kernel.numpy(), expected, rtol=1e-5)
    assert np.all(np.isfinite(kernel.numpy())) and np.any(kernel.numpy() != 0)


def test_clipping_comes_before_the_update():
    block = make_block()
    variables = block.trainable_variables
    steps = _gradients(variables, scale=10.0)
    initial = [v.numpy().copy() for v in variables]
    _train(LambWeightDecay(_schedule(), weight_decay=0.1, global_clipnorm=1.0), variables, steps)
    expected = reference_lamb(initial, steps, _lrs(), [True, False, False, False], 0.1,
                              clip_norm=1.0)
    for v, e in zip(variables, expected):
        np.testing.assert_allclose(v.numpy(), e, rtol=1e-5, atol=1e-7, err_msg=v.path)


def test_layerwise_decay_scales_the_learning_rate_as_for_adamw():
    block = make_block()  # paths discriminator/... : rename into layer_0 of a 1-layer encoder
    layer = type(block)(name="layer_0")
    layer.build((None, 4))
    for target, source in zip(layer.trainable_variables, block.trainable_variables):
        target.assign(source)
    variables = layer.trainable_variables
    steps = _gradients(variables)
    initial = [v.numpy().copy() for v in variables]
    optimizer = LambWeightDecay(_schedule(), weight_decay=0.1, layerwise_lr_decay=0.5,
                                num_layers=1)
    _train(optimizer, variables, steps)
    # depth 1 of a 1-layer encoder: 0.5 ** (1 + 2 - 1)
    assert {optimizer.layerwise_multiplier(v) for v in variables} == {0.25}
    expected = reference_lamb(initial, steps, _lrs(0.25), [True, False, False, False], 0.1)
    for v, e in zip(variables, expected):
        np.testing.assert_allclose(v.numpy(), e, rtol=1e-5, atol=1e-7, err_msg=v.path)


def test_checkpoint_and_resume_are_exact(tmp_path):
    steps = _gradients(make_block().trainable_variables, seed=3)

    def fresh():
        block = make_block()
        optimizer = LambWeightDecay(_schedule(), weight_decay=0.1, global_clipnorm=1.0)
        optimizer.build(block.trainable_variables)
        checkpoint = tf.train.Checkpoint(optimizer=optimizer,
                                         weights={v.path: v for v in block.trainable_variables})
        return block, optimizer, checkpoint

    straight, optimizer, _ = fresh()
    _train(optimizer, straight.trainable_variables, steps)

    first, optimizer, checkpoint = fresh()
    _train(optimizer, first.trainable_variables, steps[:3])
    path = checkpoint.save(str(tmp_path / "ckpt"))
    resumed, optimizer, checkpoint = fresh()
    checkpoint.restore(path).assert_consumed()
    assert int(optimizer.iterations.numpy()) == 3
    _train(optimizer, resumed.trainable_variables, steps[3:])
    for a, b in zip(straight.trainable_variables, resumed.trainable_variables):
        np.testing.assert_array_equal(b.numpy(), a.numpy(), err_msg=a.path)


def test_config_names_the_optimizer_and_its_bias_correction_default():
    lamb = create_optimizer(OptimizerConfig(name="lamb", beta_1=0.878, beta_2=0.974))
    assert type(lamb) is LambWeightDecay and lamb.bias_correction is True
    assert (lamb.beta_1, lamb.beta_2, lamb.weight_decay) == (0.878, 0.974, 0.01)
    assert create_optimizer(OptimizerConfig(name="lamb", bias_correction=False)).bias_correction \
        is False
    adamw = create_optimizer(OptimizerConfig())
    assert type(adamw) is AdamWeightDecay and adamw.bias_correction is False  # the original's
    config = apply_overrides(ElectraConfig(), ["optimizer.name=lamb"]).validate()
    assert config.optimizer.name == "lamb"
    with pytest.raises(ConfigError, match="optimizer.name must be one of adamw, lamb, got 'sgd'"):
        apply_overrides(ElectraConfig(), ["optimizer.name=sgd"]).validate()


def test_serialization_round_trip():
    optimizer = create_optimizer(OptimizerConfig(name="lamb", learning_rate=3e-4, warmup_steps=5,
                                                 train_steps=50))
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    assert type(restored) is LambWeightDecay
    assert restored.get_config() == optimizer.get_config()
    assert restored.get_config()["bias_correction"] is True
