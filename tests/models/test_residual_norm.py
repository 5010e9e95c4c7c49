"""The fused residual step (electra_tf.models.residual_norm): LayerNorm(x + dropout(branch)) with
the same values and gradients as the unfused ops, in float32 and bfloat16, and inside XLA."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.models.dropout import dropout
from electra_tf.models.layer_norm import layer_norm
from electra_tf.models.residual_norm import residual_layer_norm
from tests.models.helpers import layer_norm_with_random_weights, xla_compiled_functions

WIDTH = 16


def _dropout(rate, seed=5):
    layer = keras.layers.Dropout(rate, seed=seed)
    layer.build((None,))
    return layer


def _inputs(rows=37, dtype=tf.float32):  # odd rows x 16: the mask's words split evenly anyway
    x = tf.random.stateless_normal([rows, WIDTH], seed=[1, 0]) * 2.0 + 0.5
    branch = tf.random.stateless_normal([rows, WIDTH], seed=[2, 0])
    return tf.cast(x, dtype), tf.cast(branch, dtype)


def _values_and_gradients(call, norm, x, branch):
    """call(x, branch) -> [value, d/dx, d/dbranch, d/dgamma, d/dbeta] of a loss weighting every
    output differently (float32 numpy arrays)."""
    weights = tf.random.stateless_normal(x.shape, seed=[3, 0])
    with tf.GradientTape() as tape:
        tape.watch([x, branch])
        y = call(x, branch)
        loss = tf.reduce_sum(tf.cast(y, tf.float32) * weights)
    gradients = tape.gradient(loss, [x, branch, norm.gamma, norm.beta])
    return [tf.cast(t, tf.float32).numpy() for t in (y, *gradients)]


def _fused_and_unfused(rate, dtype=tf.float32, wrap=lambda f: f):
    """The fused step and the ops it replaces, each with its own Dropout of the same seed (so
    the same mask), on the same inputs: two lists of `_values_and_gradients`."""
    norm = layer_norm_with_random_weights(WIDTH)
    x, branch = _inputs(dtype=dtype)
    fused_dropout, plain_dropout = _dropout(rate), _dropout(rate)
    fused = wrap(lambda x, b: residual_layer_norm(x, b, fused_dropout, norm, training=True))
    plain = lambda x, b: layer_norm(x + dropout(b, plain_dropout, True), norm, True)  # noqa: E731
    return (_values_and_gradients(fused, norm, x, branch),
            _values_and_gradients(plain, norm, x, branch))


def test_inference_and_rate_zero_are_the_plain_ops():
    norm, x, branch = layer_norm_with_random_weights(WIDTH), *_inputs()
    for rate, training in ((0.1, False), (0.0, True)):
        out = residual_layer_norm(x, branch, _dropout(rate), norm, training)
        np.testing.assert_array_equal(out.numpy(),
                                      layer_norm(x + branch, norm, training).numpy())
    layer = _dropout(0.1)
    graph = tf.function(lambda x, b: residual_layer_norm(x, b, layer, norm, False)
                        ).get_concrete_function(x, branch).graph
    types = {op.type for op in graph.get_operations()}
    assert not types & {"IdentityN", "StatefulPartitionedCall", "PartitionedCall"}  # serving


@pytest.mark.parametrize("rate", [0.1, 0.5])
def test_training_matches_the_unfused_ops_with_gradients(rate):
    fused, plain = _fused_and_unfused(rate)
    dropped = fused[2] == 0  # the branch's gradient is zero exactly where it was dropped
    assert abs(dropped.mean() - rate) < 0.15
    for name, ours, reference in zip(("y", "dx", "dbranch", "dgamma", "dbeta"), fused, plain):
        np.testing.assert_allclose(ours, reference, rtol=1e-5, atol=1e-5, err_msg=name)


def test_training_runs_the_compiled_kernels_both_ways():
    norm, x, branch = layer_norm_with_random_weights(WIDTH), *_inputs()
    layer = _dropout(0.1)

    def step(x, branch):
        with tf.GradientTape() as tape:
            tape.watch([x, branch])
            y = residual_layer_norm(x, branch, layer, norm, training=True)
        return tape.gradient(y, [x, branch])

    assert xla_compiled_functions(step, x, branch) == {"_forward", "_backward"}


def test_bfloat16_is_computed_in_float32():
    fused, plain = _fused_and_unfused(0.1, dtype=tf.bfloat16)
    # the unfused ops round the residual sum to bfloat16 before the LayerNorm, the fused kernel
    # does not: within a few bfloat16 ulps (2^-8 relative) of each other
    for name, ours, reference in zip(("y", "dx", "dbranch", "dgamma", "dbeta"), fused, plain):
        scale = np.abs(reference).max()
        np.testing.assert_allclose(ours, reference, atol=0.03 * scale, err_msg=name)
    norm, x, branch = layer_norm_with_random_weights(WIDTH), *_inputs(dtype=tf.bfloat16)
    assert residual_layer_norm(x, branch, _dropout(0.1), norm, True).dtype == tf.bfloat16


def test_inside_an_xla_compiled_step():
    fused, plain = _fused_and_unfused(0.1, wrap=lambda f: tf.function(f, jit_compile=True))
    for name, ours, reference in zip(("y", "dx", "dbranch", "dgamma", "dbeta"), fused, plain):
        np.testing.assert_allclose(ours, reference, rtol=1e-5, atol=1e-5, err_msg=name)


def test_each_call_draws_a_new_mask():
    norm, x, branch = layer_norm_with_random_weights(WIDTH), *_inputs()
    layer = _dropout(0.5)
    first, second = (residual_layer_norm(x, branch, layer, norm, True).numpy()
                     for _ in range(2))
    assert np.abs(first - second).max() > 0.1
