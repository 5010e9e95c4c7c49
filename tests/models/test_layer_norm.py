"""LayerNorm with its gradient written out (electra_tf.models.layer_norm): Keras'
LayerNormalization at inference, its values and autodiff's gradients in training."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.models.layer_norm import layer_norm
from tests.models.helpers import layer_norm_with_random_weights


def test_inference_is_the_keras_layer():
    layer = layer_norm_with_random_weights(8)
    x = tf.random.stateless_normal([3, 8], seed=[1, 0])
    np.testing.assert_array_equal(layer_norm(x, layer, training=False).numpy(), layer(x).numpy())
    graph = tf.function(lambda x: layer_norm(x, layer, training=False)).get_concrete_function(
        x).graph
    assert "IdentityN" not in {op.type for op in graph.get_operations()}  # no custom gradient


@pytest.mark.parametrize("shape", [[6, 16], [2, 5, 16]])
def test_training_values_and_gradients_match_keras(shape):
    layer = layer_norm_with_random_weights(shape[-1])
    x = tf.random.stateless_normal(shape, seed=[2, 0]) * 3.0 + 1.0
    weights = tf.random.stateless_normal(shape, seed=[3, 0])  # a loss that weights every output
    results = []
    for call in (lambda x: layer_norm(x, layer, training=True), layer):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = call(x)
            loss = tf.reduce_sum(y * weights) + tf.reduce_sum(tf.square(y))
        results.append([y, *tape.gradient(loss, [x, layer.gamma, layer.beta])])
    for ours, keras_value in zip(*results):
        np.testing.assert_allclose(ours.numpy(), keras_value.numpy(), rtol=1e-5, atol=1e-5)


def test_bfloat16_inputs_are_normalized_in_float32():
    keras.mixed_precision.set_dtype_policy("mixed_bfloat16")
    try:
        layer = keras.layers.LayerNormalization(epsilon=1e-12)
        layer.build((None, 16))
    finally:
        keras.mixed_precision.set_dtype_policy("float32")
    x = tf.cast(tf.random.stateless_normal([4, 16], seed=[4, 0]), tf.bfloat16)
    ours = layer_norm(x, layer, training=True)
    assert ours.dtype == tf.bfloat16
    np.testing.assert_array_equal(tf.cast(ours, tf.float32).numpy(),
                                  tf.cast(layer(x), tf.float32).numpy())
