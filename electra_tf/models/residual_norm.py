"""A post-LN block's residual step, LayerNorm(x + dropout(branch)), as one kernel each way."""

import tensorflow as tf

from electra_tf.models.dropout import dropout_seed, keep_mask
from electra_tf.models.layer_norm import (input_gradient, layer_norm, scale_and_shift_gradients,
                                          standardize)
from electra_tf.models.xla_casts import from_float32, to_float32


def residual_layer_norm(x, branch, dropout_layer, norm_layer, training):
    """`norm_layer`'s LayerNorm of `x` + `dropout_layer`'s dropout of `branch` (both [n, H], in
    the layers' compute dtype) -> [n, H] in that dtype.

    At inference, and in training without dropout, it is `layer_norm(x + branch)` (at inference
    the graph that oneDNN rewrites when serving). In training the mask is
    `electra_tf.models.dropout`'s, the one `dropout(branch)` would draw with the same seed, and
    the scaling, residual add, casts and LayerNorm are one XLA-compiled kernel forward and
    one backward (which recomputes the sum and the mask rather than keeping them),
    where TensorFlow's executor runs about a dozen kernels each way, each a pass over the
    activations; the matmuls around them stay oneDNN's. The maths is float32, as
    `layer_norm`'s: for bfloat16 inputs the residual sum is not rounded to bfloat16 first.
    """
    rate = dropout_layer.rate
    if not training or rate == 0:
        return layer_norm(x + branch, norm_layer, training)
    seed = dropout_seed(dropout_layer)
    gamma = tf.convert_to_tensor(norm_layer.gamma, tf.float32)
    beta = tf.convert_to_tensor(norm_layer.beta, tf.float32)
    constants = (rate, norm_layer.epsilon)

    @tf.custom_gradient
    def fused(x, branch, gamma, beta):
        def gradient(upstream):
            with tf.name_scope("layer_norm_gradient"):  # names the kernel in a profile
                return _backward(x, branch, seed, gamma, upstream, *constants)

        return _forward(x, branch, seed, gamma, beta, *constants), gradient

    with tf.name_scope("layer_norm"):
        return fused(x, branch, gamma, beta)


def _residual_sum(x, branch, seed, rate):
    """float32 x + branch * mask / (1 - rate), and the mask times the scale (float32)."""
    kept = keep_mask(seed, tf.shape(branch), rate)
    keep_scale = tf.cast(kept, tf.float32) * (1.0 / (1.0 - rate))
    return to_float32(x) + to_float32(branch) * keep_scale, keep_scale


@tf.function(jit_compile=True, autograph=False)
def _forward(x, branch, seed, gamma, beta, rate, epsilon):
    normalized, _ = standardize(_residual_sum(x, branch, seed, rate)[0], epsilon)
    return from_float32(normalized * gamma + beta, x.dtype)


@tf.function(jit_compile=True, autograph=False)
def _backward(x, branch, seed, gamma, upstream, rate, epsilon):
    """-> the gradients of x, branch (their dtype), gamma and beta (float32)."""
    total, keep_scale = _residual_sum(x, branch, seed, rate)
    normalized, rstd = standardize(total, epsilon)
    upstream = to_float32(upstream)
    total_gradient = input_gradient(upstream * gamma, normalized, rstd)
    return (from_float32(total_gradient, x.dtype),
            from_float32(total_gradient * keep_scale, branch.dtype),
            *scale_and_shift_gradients(upstream, normalized))
