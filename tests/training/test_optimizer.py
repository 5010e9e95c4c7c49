"""Tests for electra_tf.training.optimizer: schedule, AdamW update rule, decay exclusions,
global clipping (also after the cross-replica sum under a MirroredStrategy), serialization."""

import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from electra_tf.config import OptimizerConfig
from electra_tf.config import ConfigError
from electra_tf.training.optimizer import (AdamWeightDecay, OneCycle, WarmupLinearDecay,
                                           create_optimizer)
from tests.models.helpers import xla_compiled_functions

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def lr_at(schedule, step):
    return float(keras.ops.convert_to_numpy(schedule(step)))


# ----------------------------------------------------------------------------- schedule

def test_schedule_warmup_multiplies_linear_decay():
    s = WarmupLinearDecay(1e-3, decay_steps=1000, warmup_steps=100, power=1.0)
    assert lr_at(s, 0) == 0.0
    assert lr_at(s, 50) == pytest.approx(1e-3 * (1 - 50 / 1000) * 0.5, rel=1e-6)
    assert lr_at(s, 100) == pytest.approx(1e-3 * (1 - 100 / 1000), rel=1e-6)  # not lr0
    assert lr_at(s, 100) < 1e-3 * 0.95
    assert lr_at(s, 400) == pytest.approx(1e-3 * 0.6, rel=1e-6)  # power 1: linear
    assert lr_at(s, 700) - lr_at(s, 800) == pytest.approx(lr_at(s, 300) - lr_at(s, 400), rel=1e-4)
    assert lr_at(s, 1000) == 0.0
    assert lr_at(s, 5000) == 0.0


def test_schedule_power_and_no_warmup():
    s = WarmupLinearDecay(2.0, decay_steps=10, warmup_steps=0, power=2.0)
    assert lr_at(s, 0) == pytest.approx(2.0)
    assert lr_at(s, 5) == pytest.approx(2.0 * 0.25, rel=1e-6)
    assert lr_at(s, 10) == 0.0 and lr_at(s, 11) == 0.0


def test_schedule_config_round_trip():
    s = WarmupLinearDecay(5e-4, decay_steps=123, warmup_steps=7, power=0.5, name="lr")
    s2 = WarmupLinearDecay.from_config(s.get_config())
    assert s2.get_config() == s.get_config() == {
        "initial_learning_rate": 5e-4, "decay_steps": 123, "warmup_steps": 7, "power": 0.5, "name": "lr"}
    s3 = keras.optimizers.schedules.deserialize(keras.optimizers.schedules.serialize(s))
    assert isinstance(s3, WarmupLinearDecay)
    assert lr_at(s3, 5) == pytest.approx(lr_at(s, 5))


def test_one_cycle_rises_to_the_full_rate_at_its_peak_and_falls_to_zero():
    s = OneCycle(1e-3, total_steps=1000, peak_step=300)
    expected = {0: 0.0, 150: 0.5e-3, 300: 1e-3, 650: 0.5e-3, 930: 0.1e-3, 1000: 0.0, 1500: 0.0}
    for step, lr in expected.items():  # the triangle, from its three corners
        assert lr_at(s, step) == pytest.approx(lr, abs=1e-9), step
    restored = keras.optimizers.schedules.deserialize(keras.optimizers.schedules.serialize(s))
    assert isinstance(restored, OneCycle) and lr_at(restored, 650) == pytest.approx(0.5e-3)
    config = OptimizerConfig(learning_rate=1e-3, warmup_steps=300, train_steps=1000,
                             schedule="one_cycle")
    config.validate()
    assert isinstance(create_optimizer(config)._learning_rate, OneCycle)
    assert lr_at(create_optimizer(config)._learning_rate, 300) == pytest.approx(1e-3)


@pytest.mark.parametrize("changes, message", [
    ({"schedule": "cosine"}, "optimizer.schedule must be one of original, one_cycle"),
    ({"schedule": "one_cycle", "warmup_steps": 1000}, "peaks at optimizer.warmup_steps"),
    ({"schedule": "one_cycle", "warmup_steps": 0}, "between 0 and optimizer.train_steps")])
def test_a_schedule_that_cannot_be_drawn_is_refused(changes, message):
    config = OptimizerConfig(**{"warmup_steps": 100, "train_steps": 1000, **changes})
    with pytest.raises(ConfigError, match=message):
        config.validate()


# ----------------------------------------------------------------------------- update rule

class Block(keras.layers.Layer):
    """A kernel, a bias and a LayerNorm with realistic nested paths."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(3, name="dense")
        self.layer_norm = keras.layers.LayerNormalization(name="layer_norm")

    def build(self, input_shape):
        self.dense.build(input_shape)
        self.layer_norm.build(tuple(input_shape[:-1]) + (3,))

    def call(self, x):
        return self.layer_norm(self.dense(x))


def make_block(seed=0):
    block = Block(name="discriminator")
    block.build((None, 4))
    rng = np.random.default_rng(seed)
    for v in block.trainable_variables:
        v.assign(rng.normal(size=v.shape).astype("float32"))
    return block


def adam_direction(m, v, g, t, bias_correction, b1, b2, eps):
    """One step of Adam's moments at step t (from 1): (m, v, m_hat / (sqrt(v_hat) + eps))."""
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    m_hat, v_hat = (m / (1 - b1 ** t), v / (1 - b2 ** t)) if bias_correction else (m, v)
    return m, v, m_hat / (np.sqrt(v_hat) + eps)


def reference_adamw(params, grads_per_step, lrs, decayed, wd, bias_correction,
                    b1=0.9, b2=0.999, eps=1e-6):
    """NumPy (float64) version of the original's AdamWeightDecayOptimizer."""
    params = [p.astype(np.float64) for p in params]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    for t, (grads, lr) in enumerate(zip(grads_per_step, lrs), start=1):
        for i, g in enumerate(grads):
            m[i], v[i], update = adam_direction(m[i], v[i], g, t, bias_correction, b1, b2, eps)
            if decayed[i]:
                update = update + wd * params[i]
            params[i] = params[i] - lr * update
    return params


@pytest.mark.parametrize("bias_correction", [False, True])
def test_update_matches_reference(bias_correction):
    block = make_block()
    variables = block.trainable_variables
    paths = [v.path for v in variables]
    assert paths == ["discriminator/dense/kernel", "discriminator/dense/bias",
                     "discriminator/layer_norm/gamma", "discriminator/layer_norm/beta"]
    decayed = [True, False, False, False]
    rng = np.random.default_rng(1)
    steps = [[rng.normal(size=v.shape).astype("float32") for v in variables] for _ in range(5)]
    initial = [v.numpy().copy() for v in variables]
    schedule = WarmupLinearDecay(0.05, decay_steps=20, warmup_steps=3)
    # bias_correction is left at its default (which must be off) in the False case
    opt = AdamWeightDecay(schedule, weight_decay=0.1, **({"bias_correction": True} if bias_correction else {}))
    assert opt.bias_correction is bias_correction
    for grads in steps:
        opt.apply([keras.ops.convert_to_tensor(g) for g in grads], variables)
    lrs = [0.05 * (1 - t / 20) * min(1.0, t / 3) for t in range(5)]
    expected = reference_adamw(initial, steps, lrs, decayed, 0.1, bias_correction)
    for v, e in zip(variables, expected):
        np.testing.assert_allclose(v.numpy(), e, rtol=1e-6, atol=1e-7, err_msg=v.path)
    # The other setting of bias_correction gives clearly different values.
    other = reference_adamw(initial, steps, lrs, decayed, 0.1, not bias_correction)
    assert np.max(np.abs(variables[0].numpy() - other[0])) > 1e-3
    assert int(opt.iterations.numpy()) == 5


def test_weight_decay_excludes_layer_norm_and_bias_by_path():
    block = make_block()
    variables = block.trainable_variables
    before = [v.numpy().copy() for v in variables]
    opt = AdamWeightDecay(0.5, weight_decay=0.1)
    opt.apply([keras.ops.zeros(v.shape) for v in variables], variables)
    kernel, bias, gamma, beta = [v.numpy() for v in variables]
    # zero gradient: the Adam term is 0 / (0 + eps) = 0, only the decay moves a variable
    np.testing.assert_allclose(kernel, before[0] - before[0] * np.float32(0.1 * 0.5), rtol=1e-6)
    assert np.all(np.abs(kernel) < np.abs(before[0]))
    np.testing.assert_array_equal(bias, before[1])
    np.testing.assert_array_equal(gamma, before[2])
    np.testing.assert_array_equal(beta, before[3])


def test_weight_decay_custom_pattern_and_disabled():
    block = make_block()
    variables = block.trainable_variables
    before = [v.numpy().copy() for v in variables]
    # "discriminator/dense" matches kernel and bias through the path only (names are short)
    opt = AdamWeightDecay(0.5, weight_decay=0.1, exclude_from_weight_decay_pattern="^discriminator/dense/")
    opt.apply([keras.ops.zeros(v.shape) for v in variables], variables)
    np.testing.assert_array_equal(variables[0].numpy(), before[0])
    np.testing.assert_array_equal(variables[1].numpy(), before[1])
    np.testing.assert_allclose(variables[2].numpy(), before[2] * np.float32(1 - 0.05), rtol=1e-6)
    block2 = make_block()
    before2 = [v.numpy().copy() for v in block2.trainable_variables]
    AdamWeightDecay(0.5, weight_decay=None).apply(
        [keras.ops.zeros(v.shape) for v in block2.trainable_variables], block2.trainable_variables)
    for v, b in zip(block2.trainable_variables, before2):
        np.testing.assert_array_equal(v.numpy(), b)


def test_each_update_is_one_compiled_kernel_that_assigns_in_place():
    block = make_block()
    variables = block.trainable_variables
    opt = AdamWeightDecay(0.01, weight_decay=0.1)
    opt.build(variables)
    gradients = [keras.ops.ones(v.shape) for v in variables]
    assert xla_compiled_functions(lambda *g: opt.apply(g, variables), *gradients) == {
        "_adam_step_in_place"}
    # a MirroredStrategy's distributed variables take `_adam_step`, which returns tensors: its
    # values are held against these in test_mirrored_strategy_clips_after_cross_replica_sum


# ----------------------------------------------------------------------------- clipping

def test_global_clipnorm_clips_all_variables_together():
    block = make_block()
    variables = block.trainable_variables
    rng = np.random.default_rng(2)
    grads = [rng.normal(size=v.shape).astype("float32") for v in variables]
    norm = np.sqrt(sum(np.sum(g.astype(np.float64) ** 2) for g in grads))
    assert norm > 2.0
    opt = AdamWeightDecay(0.01, weight_decay=None, global_clipnorm=1.0)
    opt.apply([keras.ops.convert_to_tensor(g) for g in grads], variables)
    # after one step m = (1 - beta_1) * clipped gradient
    clipped = [m.numpy() / 0.1 for m in opt._m]
    assert np.sqrt(sum(np.sum(c.astype(np.float64) ** 2) for c in clipped)) == pytest.approx(1.0, rel=1e-5)
    for c, g in zip(clipped, grads):
        np.testing.assert_allclose(c, g / norm, rtol=1e-5, atol=1e-7)


def test_an_embedding_gradient_is_clipped_by_its_dense_norm():
    """A token looked up twice: its IndexedSlices rows [1, 0] and [1, 0] sum to [2, 0], norm 2
    (not sqrt(2), the norm of the rows taken one by one)."""
    import tensorflow as tf

    table = keras.Variable(np.zeros((3, 2), np.float32), name="word_embeddings")
    gradient = tf.IndexedSlices(tf.constant([[1.0, 0.0], [1.0, 0.0]]), tf.constant([0, 0]),
                                tf.constant([3, 2]))
    opt = AdamWeightDecay(0.01, weight_decay=None, global_clipnorm=1.0)
    opt.apply([gradient], [table])
    np.testing.assert_allclose(opt._m[0].numpy(), [[0.1, 0.0], [0.0, 0.0], [0.0, 0.0]],
                               rtol=1e-6)  # 0.1 x [2, 0] / 2


def test_clip_by_global_norm_is_keras_with_one_read_of_each_gradient():
    """The same clipped gradients as Keras' `clip_by_global_norm` (Nones kept, NaN for an
    infinite norm), each gradient's squares summed by one L2Loss kernel: no Square op writes
    them out."""
    import tensorflow as tf
    from keras.src.optimizers.base_optimizer import clip_by_global_norm as keras_clip

    from electra_tf.training.optimizer import clip_by_global_norm

    rng = np.random.default_rng(5)
    grads = [tf.constant(rng.normal(size=shape).astype("float32")) for shape in
             ([300, 17], [17], [4, 5, 6])]
    for clip_norm, with_none in ((1.0, False), (1e4, True)):
        given = grads[:1] + [None] + grads[1:] if with_none else grads
        ours, theirs = clip_by_global_norm(given, clip_norm), keras_clip(given, clip_norm)
        assert [g is None for g in ours] == [g is None for g in given]
        for a, b in zip(ours, theirs):
            if a is not None:
                np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-8)
    infinite = [tf.constant([np.inf, 1.0]), tf.constant([2.0])]
    assert np.isnan(clip_by_global_norm(infinite, 1.0)[1].numpy()).all()
    graph = tf.function(lambda g: clip_by_global_norm(g, 1.0)).get_concrete_function(
        grads).graph
    types = [op.type for op in graph.get_operations()]
    assert types.count("L2Loss") == len(grads) and "Square" not in types


def test_small_gradient_is_not_clipped():
    block = make_block()
    variables = block.trainable_variables
    grads = [np.full(v.shape, 0.01, "float32") for v in variables]
    opt = AdamWeightDecay(0.01, weight_decay=None, global_clipnorm=1.0)
    opt.apply([keras.ops.convert_to_tensor(g) for g in grads], variables)
    for m, g in zip(opt._m, grads):
        np.testing.assert_allclose(m.numpy(), 0.1 * g, rtol=1e-6)


MIRRORED_CODE = textwrap.dedent("""
    import json
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import keras
    import numpy as np
    from electra_tf.training.optimizer import AdamWeightDecay

    # each replica's gradient has global norm < 1, their sum has norm > 1
    g0 = [np.array([[0.6, 0.0]], np.float32), np.array([0.0, 0.5], np.float32)]
    g1 = [np.array([[0.5, 0.3]], np.float32), np.array([0.4, 0.2], np.float32)]

    def make(strategy):
        with strategy.scope():
            layer = keras.layers.Dense(2, name="dense", kernel_initializer="ones",
                                       bias_initializer="ones")
            layer.build((None, 1))
            opt = AdamWeightDecay(0.1, weight_decay=0.5, global_clipnorm=1.0)
            opt.build(layer.trainable_variables)
        return layer, opt

    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    assert strategy.num_replicas_in_sync == 2
    layer, opt = make(strategy)
    per_replica = strategy.experimental_distribute_values_from_function(
        lambda ctx: [tf.constant(g) for g in (g0, g1)[ctx.replica_id_in_sync_group]])

    @tf.function
    def step(grads):
        strategy.run(lambda gr: opt.apply(gr, layer.trainable_variables), args=(grads,))

    step(per_replica)
    local = lambda v: [c.numpy().tolist() for c in strategy.experimental_local_results(v.value)]

    ref_layer, ref_opt = make(tf.distribute.get_strategy())
    ref_opt.apply([tf.constant(a + b) for a, b in zip(g0, g1)], ref_layer.trainable_variables)
    print(json.dumps({
        "vars": [local(v) for v in layer.trainable_variables],
        "m": [local(m) for m in opt._m],
        "v": [local(v) for v in opt._v],
        "ref_vars": [v.numpy().tolist() for v in ref_layer.trainable_variables],
        "iterations": int(opt.iterations.numpy()),
    }))
""")


@pytest.mark.slow
def test_mirrored_strategy_clips_after_cross_replica_sum():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [REPO_ROOT] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])),
        TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([sys.executable, "-c", MIRRORED_CODE], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])

    g0 = [np.array([[0.6, 0.0]]), np.array([0.0, 0.5])]
    g1 = [np.array([[0.5, 0.3]]), np.array([0.4, 0.2])]
    norm = lambda gs: np.sqrt(sum(np.sum(g ** 2) for g in gs))
    assert norm(g0) < 1 and norm(g1) < 1
    summed = [a + b for a, b in zip(g0, g1)]
    assert norm(summed) > 1
    clipped = [s / norm(summed) for s in summed]

    assert out["iterations"] == 1
    for i, c in enumerate(clipped):
        for replica in range(2):  # both replicas hold the same, once-summed, clipped values
            # m = 0.1 * g: unclipped sum, twice-summed, or per-replica values would all differ
            np.testing.assert_allclose(out["m"][i][replica], 0.1 * c, rtol=1e-5)
            np.testing.assert_allclose(out["v"][i][replica], 0.001 * c ** 2, rtol=1e-5)
            np.testing.assert_allclose(out["vars"][i][replica], out["ref_vars"][i], rtol=1e-6)
    # the distributed update also honoured the decay exclusion: kernel decayed, bias not
    step = 0.1 * (0.1 * np.array(clipped[0])) / (np.sqrt(0.001 * np.array(clipped[0]) ** 2) + 1e-6)
    np.testing.assert_allclose(out["vars"][0][0], 1 - 0.1 * 0.5 - step, rtol=1e-5)
    step_b = 0.1 * (0.1 * clipped[1]) / (np.sqrt(0.001 * clipped[1] ** 2) + 1e-6)
    np.testing.assert_allclose(out["vars"][1][0], 1 - step_b, rtol=1e-5)


# ----------------------------------------------------------------------------- config, serialization

def test_create_optimizer_from_config():
    cfg = OptimizerConfig(learning_rate=2e-4, warmup_steps=10, train_steps=100, lr_decay_power=2.0,
                          weight_decay=0.02, beta_1=0.8, beta_2=0.99, epsilon=1e-7, clip_norm=0.5,
                          bias_correction=True)
    opt = create_optimizer(cfg)
    assert isinstance(opt, AdamWeightDecay)
    assert (opt.beta_1, opt.beta_2, opt.epsilon, opt.weight_decay) == (0.8, 0.99, 1e-7, 0.02)
    assert opt.global_clipnorm == 0.5 and opt.clipnorm is None and opt.bias_correction is True
    schedule = opt._learning_rate
    assert isinstance(schedule, WarmupLinearDecay)
    assert lr_at(schedule, 5) == pytest.approx(2e-4 * 0.95 ** 2 * 0.5, rel=1e-6)
    assert create_optimizer(OptimizerConfig(clip_norm=0.0)).global_clipnorm is None
    default = create_optimizer(OptimizerConfig())
    assert default.bias_correction is False and default.epsilon == 1e-6
    assert lr_at(default._learning_rate, 10000) == pytest.approx(5e-4 * (1 - 10000 / 1000000), rel=1e-6)


def test_optimizer_serialization_round_trip():
    opt = create_optimizer(OptimizerConfig(learning_rate=3e-4, warmup_steps=5, train_steps=50,
                                           bias_correction=True))
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(opt))
    assert type(restored) is AdamWeightDecay
    config, restored_config = opt.get_config(), restored.get_config()
    assert restored_config == config
    for key, value in {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-6, "bias_correction": True,
                       "weight_decay": 0.01, "global_clipnorm": 1.0,
                       "exclude_from_weight_decay_pattern": "LayerNorm|layer_norm|bias"}.items():
        assert restored_config[key] == value, key
    assert isinstance(restored._learning_rate, WarmupLinearDecay)
    assert lr_at(restored._learning_rate, 20) == pytest.approx(lr_at(opt._learning_rate, 20))
    again = AdamWeightDecay.from_config(opt.get_config())
    assert again.get_config() == config
