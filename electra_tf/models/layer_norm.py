"""LayerNorm over the last axis with its gradient written out, for training."""

import tensorflow as tf


def layer_norm(x, layer, training):
    """`layer`'s LayerNorm (a built `keras.layers.LayerNormalization` over the last axis) of `x`
    [..., H] -> [..., H] in `layer`'s compute dtype.

    At inference it is `layer(x)` itself (the graph that oneDNN rewrites when serving). In
    training it is the same maths in float32, as Keras computes it, but with the gradient
    written out: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * gamma, where
    autodiff through Keras' moments, rsqrt and scale-and-shift chains about twice as many
    elementwise kernels, each a pass over the activations.
    """
    if not training:
        return layer(x)
    y = _normalize(tf.cast(x, tf.float32), tf.convert_to_tensor(layer.gamma, tf.float32),
                   tf.convert_to_tensor(layer.beta, tf.float32), layer.epsilon)
    return tf.cast(y, layer.compute_dtype)


def _normalize(x, gamma, beta, epsilon):
    """float32 x [..., H], gamma and beta [H] -> (x - mean) * rsqrt(var + epsilon) * gamma + beta,
    the statistics over the last axis, with the gradient below."""

    @tf.custom_gradient
    def normalize(x, gamma, beta):
        normalized, rstd = standardize(x, epsilon)

        def gradient(upstream):
            with tf.name_scope("layer_norm_gradient"):  # else its ops are unscoped in a profile
                return (input_gradient(upstream * gamma, normalized, rstd),
                        *scale_and_shift_gradients(upstream, normalized))

        return normalized * gamma + beta, gradient

    return normalize(x, gamma, beta)


def standardize(x, epsilon):
    """float32 x [..., H] -> xhat = (x - mean) * rstd and rstd = rsqrt(var + epsilon) [..., 1],
    the statistics over the last axis."""
    centered = x - row_mean(x)
    rstd = tf.math.rsqrt(row_mean(tf.square(centered)) + epsilon)
    return centered * rstd, rstd


def input_gradient(g, normalized, rstd):
    """The gradient of LayerNorm's input from g = upstream * gamma [..., H] and `standardize`'s
    outputs: rstd * (g - mean(g) - xhat * mean(g * xhat))."""
    return rstd * (g - row_mean(g) - normalized * row_mean(g * normalized))


def row_mean(x):
    """float32 x [..., H] -> the mean over the last axis [..., 1] (`row_sums` over H)."""
    return row_sums(x) * (1.0 / x.shape[-1])


def row_sums(x):
    """x [..., H] -> the sums over the last axis [..., 1], as the product of x with a column of
    ones: XLA's CPU code runs that as a library matrix-vector product, faster than its own row
    reductions (the blocks' fused residual LayerNorm backward on [4096, 256]: 2.6 against 3.6
    ms)."""
    width = x.shape[-1]
    sums = tf.matmul(tf.reshape(x, [-1, width]), tf.ones([width, 1], x.dtype))
    return tf.reshape(sums, tf.concat([tf.shape(x)[:-1], [1]], 0))


def scale_and_shift_gradients(upstream, normalized):
    """The gradients of gamma and beta [H] from upstream and xhat [..., H]."""
    rows = tf.range(tf.rank(upstream) - 1)
    return tf.reduce_sum(upstream * normalized, axis=rows), tf.reduce_sum(upstream, axis=rows)
