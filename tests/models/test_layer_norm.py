"""LayerNorm (electra_tf.models.layer_norm): at inference Keras' LayerNormalization's values
from ops that oneDNN runs as one kernel; in training its values and autodiff's gradients, the
gradient written out."""

import collections

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.models.layer_norm import layer_norm
from electra_tf.onednn import onednn_enabled
from electra_tf.training.profile_breakdown import newest_trace, op_events
from tests.models.helpers import layer_norm_with_random_weights


@pytest.mark.parametrize("shape", [[3, 8], [2, 5, 8], [0, 8]])
def test_inference_values_are_the_keras_layers(shape):
    layer = layer_norm_with_random_weights(8)
    x = tf.random.stateless_normal(shape, seed=[1, 0]) * 3.0 + 1.0
    if shape[0]:  # a row of spread 1e-4: epsilon 1e-12 is kept, not raised to 1e-5 (cuDNN's
        # old minimum, which tf.nn.fused_batch_norm imposes), which would shrink it 100x
        x = tf.concat([x[:1] * 1e-4, x[1:]], 0)
    ours = layer_norm(x, layer, training=False)
    assert ours.shape == shape and ours.dtype == tf.float32
    np.testing.assert_allclose(ours.numpy(), layer(x).numpy(), rtol=1e-5, atol=1e-5)
    graph = tf.function(lambda x: layer_norm(x, layer, training=False)).get_concrete_function(
        x).graph
    assert "IdentityN" not in {op.type for op in graph.get_operations()}  # no custom gradient


@pytest.mark.skipif(not onednn_enabled(), reason="the rewrite is oneDNN's")
def test_inference_runs_as_one_onednn_kernel(tmp_path):
    """Grappler's remapper rewrites the inference graph into `_MklLayerNorm`, for 2-D and 3-D
    inputs of dynamic sizes, as a SavedModel's serving function has them (the profile shows
    the ops that ran)."""
    layer = layer_norm_with_random_weights(16)
    function = tf.function(lambda x, y: (layer_norm(x, layer, training=False),
                                         layer_norm(y, layer, training=False)),
                           input_signature=[tf.TensorSpec([None, 16]),
                                            tf.TensorSpec([None, None, 16])])
    inputs = (tf.random.stateless_normal([4, 16], seed=[5, 0]),
              tf.random.stateless_normal([2, 3, 16], seed=[6, 0]))
    function(*inputs)
    tf.profiler.experimental.start(str(tmp_path))
    function(*inputs)
    tf.profiler.experimental.stop()
    op_types = collections.Counter(op_type for _, op_type, _ in op_events(newest_trace(
        str(tmp_path))))
    assert op_types["_MklLayerNorm"] == 2, op_types
    assert not {"Mean", "Rsqrt", "SquaredDifference", "FusedBatchNormV3"} & set(op_types)


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


@pytest.mark.parametrize("training", [True, False])
def test_bfloat16_inputs_are_normalized_in_float32(training):
    keras.mixed_precision.set_dtype_policy("mixed_bfloat16")
    try:
        layer = keras.layers.LayerNormalization(epsilon=1e-12)
        layer.build((None, 16))
    finally:
        keras.mixed_precision.set_dtype_policy("float32")
    x = tf.cast(tf.random.stateless_normal([4, 16], seed=[4, 0]), tf.bfloat16)
    ours = layer_norm(x, layer, training=training)
    assert ours.dtype == tf.bfloat16
    # training: the same float32 ops as Keras; inference: another float32 kernel, then the
    # rounding to bfloat16 (one unit in its last place at most)
    np.testing.assert_allclose(tf.cast(ours, tf.float32).numpy(),
                               tf.cast(layer(x), tf.float32).numpy(),
                               rtol=0 if training else 2 ** -7, atol=0 if training else 1e-2)
