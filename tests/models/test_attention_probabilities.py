"""The attention probabilities (electra_tf.models.attention_probabilities): dropout(softmax(scores))
with the same values and gradients as autodiff through the plain ops, in float32 and bfloat16,
inside XLA, and the gradient as one compiled kernel."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.models.attention_probabilities import attention_probabilities
from electra_tf.models.dropout import dropout
from tests.models.helpers import xla_compiled_functions

SHAPE = [3, 2, 5, 7]  # batch, heads, rows, seq


def _dropout(rate, seed=5):
    layer = keras.layers.Dropout(rate, seed=seed)
    layer.build((None,))
    return layer


def _scores(dtype=tf.float32):
    """Scores with the padding bias of the last two keys of the first example (-1e9)."""
    scores = tf.random.stateless_normal(SHAPE, seed=[1, 0]) * 3.0
    padding = np.zeros(SHAPE, np.float32)
    padding[0, ..., -2:] = -1e9
    return tf.cast(scores + padding, dtype)


def _values_and_gradient(call, scores):
    """call(scores) -> [value, d/dscores] of a loss weighting every output differently (float32
    numpy arrays)."""
    weights = tf.random.stateless_normal(SHAPE, seed=[2, 0])
    with tf.GradientTape() as tape:
        tape.watch(scores)
        y = call(scores)
        loss = tf.reduce_sum(tf.cast(y, tf.float32) * weights)
    return [tf.cast(t, tf.float32).numpy() for t in (y, tape.gradient(loss, scores))]


def _ours_and_plain(rate, dtype=tf.float32, wrap=lambda f: f):
    """Ours and autodiff through dropout(softmax) with the same seed (so the same mask)."""
    ours_dropout, plain_dropout = _dropout(rate), _dropout(rate)
    ours = wrap(lambda s: attention_probabilities(s, ours_dropout, training=True))
    plain = lambda s: dropout(tf.nn.softmax(s), plain_dropout, True)  # noqa: E731
    scores = _scores(dtype)
    return _values_and_gradient(ours, scores), _values_and_gradient(plain, scores)


def test_inference_is_the_plain_softmax_without_gradient_ops():
    scores, layer = _scores(), _dropout(0.1)
    np.testing.assert_array_equal(attention_probabilities(scores, layer, False).numpy(),
                                  tf.nn.softmax(scores).numpy())
    graph = tf.function(lambda s: attention_probabilities(s, layer, False)
                        ).get_concrete_function(scores).graph
    types = {op.type for op in graph.get_operations()}
    assert not types & {"IdentityN", "StatefulPartitionedCall", "PartitionedCall"}  # serving


@pytest.mark.parametrize("rate", [0.0, 0.1, 0.5])
def test_training_matches_autodiff_through_the_plain_ops(rate):
    (value, gradient), (plain_value, plain_gradient) = _ours_and_plain(rate)
    if rate:
        assert 0 < np.mean(value == 0) < 1
    np.testing.assert_allclose(value, plain_value, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gradient, plain_gradient, rtol=1e-5, atol=1e-6)
    assert np.all(gradient[0, ..., -2:] == 0)  # padding keys get no gradient
    assert np.abs(gradient).max() > 0.1


def test_the_gradient_is_one_compiled_kernel():
    scores, layer = _scores(), _dropout(0.1)

    def step(scores):
        with tf.GradientTape() as tape:
            tape.watch(scores)
            y = attention_probabilities(scores, layer, training=True)
        return tape.gradient(y, scores)

    assert xla_compiled_functions(step, scores) == {"_scale_kept", "_scores_gradient"}


def test_bfloat16_is_computed_in_float32():
    (value, gradient), (plain_value, plain_gradient) = _ours_and_plain(0.1, dtype=tf.bfloat16)
    np.testing.assert_array_equal(value, plain_value)  # the same forward ops
    # autodiff rounds each of its kernels' results to bfloat16, the kernel only the last
    scale = np.abs(plain_gradient).max()
    np.testing.assert_allclose(gradient, plain_gradient, atol=0.02 * scale)
    assert attention_probabilities(_scores(tf.bfloat16), _dropout(0.1), True).dtype == tf.bfloat16


def test_inside_an_xla_compiled_step():
    (value, gradient), (plain_value, plain_gradient) = _ours_and_plain(
        0.1, wrap=lambda f: tf.function(f, jit_compile=True))
    np.testing.assert_allclose(value, plain_value, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gradient, plain_gradient, rtol=1e-5, atol=1e-6)
