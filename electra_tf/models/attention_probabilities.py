"""The attention probabilities, dropout(softmax(scores)), with their gradient as one kernel."""

import tensorflow as tf

from electra_tf.models.dropout import dropout
from electra_tf.models.layer_norm import row_sums
from electra_tf.models.xla_casts import from_float32, to_float32


def attention_probabilities(scores, dropout_layer, training):
    """dropout(softmax(`scores`)) over the last axis, `dropout_layer`'s dropout when `training`:
    [batch, heads, rows, seq] -> the same shape and dtype.

    The forward pass is TensorFlow's softmax (oneDNN's kernel, faster than XLA's) and
    `electra_tf.models.dropout`. In training the gradient is written out: with y the softmax and
    p the dropped probabilities (p = y * mask / (1 - rate)) and u the upstream gradient,
    dscores = u * p - y * rowsum(u * p), one XLA-compiled kernel where autodiff runs dropout's
    gradient kernel and then four TensorFlow kernels (multiply, sum, subtract, multiply), each
    a pass over the [batch, heads, rows, seq] tensor. It needs no mask: p and y are both kept
    anyway, p for the context product's gradient and y for the softmax's.
    """
    if not training:
        return dropout(tf.nn.softmax(scores), dropout_layer, training)

    @tf.custom_gradient
    def probabilities(scores):
        softmax = tf.nn.softmax(scores)
        dropped = dropout(softmax, dropout_layer, training)

        def gradient(upstream):
            with tf.name_scope("softmax_gradient"):  # names the kernel in a profile
                return _scores_gradient(upstream, dropped, softmax)

        return dropped, gradient

    with tf.name_scope("attention_probabilities"):
        return probabilities(scores)


@tf.function(jit_compile=True, autograph=False)
def _scores_gradient(upstream, dropped, softmax):
    """upstream * dropped - softmax * rowsum(upstream * dropped), in float32 (all three
    [..., seq] in the scores' dtype) -> the scores' gradient in their dtype. The row sums are
    `electra_tf.models.layer_norm.row_sums`' product with ones: on [16, 4, 384, 384] bfloat16 the
    kernel took 5.5-5.7 ms this way and 6.0-7.0 with `reduce_sum` (float32 8.1-8.9 either way;
    two-core AMD EPYC, Zen 4, 2026-11-29)."""
    weighted = to_float32(upstream) * to_float32(dropped)
    return from_float32(weighted - to_float32(softmax) * row_sums(weighted), upstream.dtype)
