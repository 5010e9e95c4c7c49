"""Dropout from a counter-based hash (electra_tf.models.dropout): Keras' dropout in distribution
(rate, scale, fresh masks per call, gradient through the kept units), under XLA and in bfloat16,
one compiled kernel each way."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.models.dropout import dropout, dropout_seed, keep_mask
from tests.models.helpers import xla_compiled_functions


def _layer(rate, seed=0):
    layer = keras.layers.Dropout(rate, seed=seed)
    layer.build((None,))
    return layer


def test_inference_and_rate_zero_are_the_identity():
    x = tf.random.stateless_normal([4, 8], seed=[1, 0])
    assert dropout(x, _layer(0.3), training=False) is x
    assert dropout(x, _layer(0.3), training=None) is x
    assert dropout(x, _layer(0.0), training=True) is x  # a rate-0 Dropout has no seed generator


@pytest.mark.parametrize("rate", [0.1, 0.5])
def test_drops_the_rate_and_scales_the_rest_like_keras(rate):
    layer = _layer(rate)
    x = tf.random.stateless_normal([257, 129], seed=[2, 0]) + 3.0  # odd size: a half word left
    out = dropout(x, layer, training=True).numpy()
    dropped = out == 0
    # 33,153 draws: the fraction's standard deviation is at most 0.003
    assert abs(dropped.mean() - rate) < 0.015
    np.testing.assert_allclose(out[~dropped], x.numpy()[~dropped] / (1 - rate), rtol=1e-6)
    keras_out = keras.layers.Dropout(rate, seed=0)(x, training=True).numpy()
    assert abs((keras_out == 0).mean() - dropped.mean()) < 0.02


def test_each_call_draws_a_new_mask_and_a_seed_repeats_it():
    x = tf.ones([64, 64])
    first, second = (dropout(x, _layer(0.5, seed=3), training=True) for _ in range(2))
    np.testing.assert_array_equal(first.numpy(), second.numpy())  # same seed, same mask
    layer = _layer(0.5, seed=3)
    a, b = (dropout(x, layer, training=True).numpy() for _ in range(2))
    assert not np.array_equal(a, b)
    # neighbouring counters, and the same element in consecutive calls, are not correlated
    pairs = (a.reshape(-1, 2) == 0)
    assert abs(np.mean(pairs[:, 0] & pairs[:, 1]) - 0.25) < 0.03
    assert abs(np.mean((a == 0) & (b == 0)) - 0.25) < 0.03


def test_gradient_is_the_mask_times_the_scale():
    layer = _layer(0.25)
    x = tf.random.stateless_normal([32, 16], seed=[4, 0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = dropout(x, layer, training=True)
        loss = tf.reduce_sum(out)
    gradient = tape.gradient(loss, x).numpy()
    np.testing.assert_allclose(gradient, (out.numpy() != 0) / 0.75, rtol=1e-6)


def test_same_masks_under_xla_and_in_bfloat16():
    x = tf.random.stateless_normal([48, 40], seed=[5, 0]) + 3.0

    def masked(dtype, jit_compile):
        layer = _layer(0.2, seed=9)
        call = tf.function(lambda x: dropout(x, layer, training=True), jit_compile=jit_compile)
        return call(tf.cast(x, dtype)).numpy() != 0

    plain = masked(tf.float32, False)
    np.testing.assert_array_equal(masked(tf.float32, True), plain)
    np.testing.assert_array_equal(masked(tf.bfloat16, False), plain)


def test_the_mask_is_uniform_at_any_rate_and_every_bit_of_the_seed_counts():
    seed = tf.constant([7, 11], tf.int32)
    shape = tf.constant([1 << 20])
    for rate in (0.05, 0.1, 0.5, 0.9):  # 2^20 draws: a standard deviation of at most 0.0005
        assert abs(1 - keep_mask(seed, shape, rate).numpy().mean() - rate) < 0.003
    mask = keep_mask(seed, shape, 0.5).numpy()
    for other in ([7, 10], [6, 11], [7 + (1 << 30), 11]):
        agreement = np.mean(mask == keep_mask(tf.constant(other, tf.int32), shape, 0.5).numpy())
        assert abs(agreement - 0.5) < 0.003, other


def test_keras_seeds_work():
    layer = _layer(0.5, seed=2 ** 40)  # Keras allows seeds beyond int32
    assert dropout_seed(layer).dtype == tf.int32
    assert 0.4 < np.mean(dropout(tf.ones([4096]), layer, True).numpy() == 0) < 0.6


def test_one_compiled_kernel_each_way():
    layer = _layer(0.1)

    def forward_and_backward(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(dropout(x, layer, training=True))
        return tape.gradient(loss, x)

    assert xla_compiled_functions(forward_and_backward, tf.ones([8, 8])) == {"_scale_kept"}
