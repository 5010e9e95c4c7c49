"""The fused masked-LM cross-entropy (electra_tf.models.cross_entropy): TensorFlow's values and
gradients, for float32 and bfloat16 logits, eagerly and inside XLA, through its two kernels."""

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.models.cross_entropy import sparse_softmax_cross_entropy
from tests.models.helpers import xla_compiled_functions

VOCAB = 997


def _inputs(dtype=tf.float32):
    logits = tf.random.stateless_normal([3, 5, VOCAB], seed=[1, 0]) * 6.0 + 2.0
    labels = tf.random.stateless_uniform([3, 5], seed=[2, 0], maxval=VOCAB, dtype=tf.int32)
    return labels, tf.cast(logits, dtype)


def _loss_and_gradient(cross_entropy, labels, logits):
    weights = tf.random.stateless_normal(labels.shape, seed=[3, 0])  # a different upstream per row
    with tf.GradientTape() as tape:
        tape.watch(logits)
        loss = cross_entropy(labels=labels, logits=logits)
        weighted = tf.reduce_sum(loss * weights)
    return loss.numpy(), tf.cast(tape.gradient(weighted, logits), tf.float32).numpy()


@pytest.mark.parametrize("wrap", [lambda f: f, lambda f: tf.function(f, jit_compile=True)],
                         ids=["eager", "inside_xla"])
def test_values_and_gradient_match_tensorflow(wrap):
    labels, logits = _inputs()
    ours = _loss_and_gradient(wrap(sparse_softmax_cross_entropy), labels, logits)
    reference = _loss_and_gradient(tf.nn.sparse_softmax_cross_entropy_with_logits, labels, logits)
    assert ours[0].dtype == np.float32 and ours[0].shape == (3, 5)
    assert ours[0].min() > 1.0  # random labels: far from a loss of 0, so rtol means something
    np.testing.assert_allclose(ours[0], reference[0], rtol=1e-5)
    np.testing.assert_allclose(ours[1], reference[1], rtol=1e-4, atol=1e-7)


def test_bfloat16_logits_give_float32_loss_and_bfloat16_gradient():
    labels, logits = _inputs(tf.bfloat16)
    loss, gradient = _loss_and_gradient(sparse_softmax_cross_entropy, labels, logits)
    reference = _loss_and_gradient(tf.nn.sparse_softmax_cross_entropy_with_logits, labels,
                                   tf.cast(logits, tf.float32))
    np.testing.assert_allclose(loss, reference[0], rtol=1e-5)  # the same values, upcast
    np.testing.assert_allclose(gradient, reference[1], atol=0.01 * np.abs(reference[1]).max())
    with tf.GradientTape() as tape:
        tape.watch(logits)
        total = tf.reduce_sum(sparse_softmax_cross_entropy(labels, logits))
    assert tape.gradient(total, logits).dtype == tf.bfloat16


def test_runs_the_compiled_kernels_both_ways():
    labels, logits = _inputs()

    def loss_and_gradient(logits):
        with tf.GradientTape() as tape:
            tape.watch(logits)
            loss = tf.reduce_sum(sparse_softmax_cross_entropy(labels, logits))
        return tape.gradient(loss, logits)

    assert xla_compiled_functions(loss_and_gradient, logits) == {"_forward", "_backward"}


@pytest.mark.parametrize("dtype", [tf.float32, tf.bfloat16])
def test_correct_is_the_argmax_equal_to_the_label_from_the_same_kernel(dtype):
    labels, logits = _inputs(dtype)
    # make the label the row's maximum in every other row, so both outcomes occur
    argmax = tf.argmax(logits, axis=-1, output_type=tf.int32)
    labels = tf.where(tf.range(15)[:, None] % 2 == 0, tf.reshape(argmax, [15, 1]),
                      tf.reshape(labels, [15, 1]))
    labels = tf.reshape(labels, [3, 5])
    loss, correct = sparse_softmax_cross_entropy(labels, logits, return_correct=True)
    np.testing.assert_array_equal(loss.numpy(), sparse_softmax_cross_entropy(labels, logits))
    expected = tf.cast(tf.equal(argmax, labels), tf.float32).numpy()
    assert correct.dtype == tf.float32 and 8 <= expected.sum() < 15
    np.testing.assert_array_equal(correct.numpy(), expected)


def test_correct_counts_a_label_tied_for_the_maximum():
    logits = tf.constant([[1.0, 3.0, 3.0, 0.0]])
    _, correct = sparse_softmax_cross_entropy(tf.constant([2]), logits, return_correct=True)
    assert correct.numpy().tolist() == [1.0]  # argmax would say 1, the first of the tie


def test_correct_has_no_gradient_and_leaves_the_loss_gradient_alone():
    labels, logits = _inputs()
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(logits)
        loss, correct = sparse_softmax_cross_entropy(labels, logits, return_correct=True)
        plain = sparse_softmax_cross_entropy(labels, logits)
    assert tape.gradient(correct, logits) is None
    np.testing.assert_array_equal(tape.gradient(loss, logits).numpy(),
                                  tape.gradient(plain, logits).numpy())
