"""LayerNorm over the last axis with its gradient written out, for training."""

import tensorflow as tf


def layer_norm(x, layer, training):
    """`layer`'s LayerNorm (a built `keras.layers.LayerNormalization` over the last axis) of `x`
    [..., H] -> [..., H] in `layer`'s compute dtype.

    At inference it is `inference_layer_norm`, a graph that TensorFlow's oneDNN kernels run as
    one. In training it is the same maths in float32, as Keras computes it, but with the
    gradient written out: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * gamma,
    where autodiff through Keras' moments, rsqrt and scale-and-shift chains about twice as many
    elementwise kernels, each a pass over the activations.
    """
    if not training:
        return inference_layer_norm(x, layer)
    y = _normalize(tf.cast(x, tf.float32), tf.convert_to_tensor(layer.gamma, tf.float32),
                   tf.convert_to_tensor(layer.beta, tf.float32), layer.epsilon)
    return tf.cast(y, layer.compute_dtype)


def inference_layer_norm(x, layer):
    """`layer`'s LayerNorm of `x` [..., H] -> [..., H] in `layer`'s compute dtype, without a
    gradient of its own, in float32 as Keras computes it: the rows standardized by
    `FusedBatchNormV3` in training mode over x as [1, rows, H, 1] in NCHW (each row a channel,
    scale ones and offset zeros), then times gamma plus beta, Keras 2's fused LayerNorm form.

    Core ops that any TensorFlow runs. Where oneDNN's kernels are on (x86 builds, TF Serving's
    included), grappler's remapper rewrites them into one `_MklLayerNorm` kernel, which it does
    not do for Keras 3's moments, rsqrt and scale-and-shift ops, as long as the number of rows
    is unknown when tracing, as in exports (a known one is constant-folded, and the batch norm
    alone stays one kernel): a [4096, 256] LayerNorm took 0.50 instead of 2.13 ms on two
    threads, a single request's [64, 256] 96 instead of 130 us on one (docs/performance.md,
    "Single requests"). `tf.nn.fused_batch_norm` would raise epsilon to 1e-5; the raw op keeps
    the layer's.
    """
    width = x.shape[-1]
    shape = tf.shape(x)
    rows = tf.reduce_prod(shape[:-1])
    one_row_each = tf.fill(tf.reshape(rows, [1]), tf.constant(1.0))
    no_offset = tf.fill(tf.reshape(rows, [1]), tf.constant(0.0))
    no_statistics = tf.constant([], tf.float32)
    standardized = tf.raw_ops.FusedBatchNormV3(
        x=tf.reshape(tf.cast(x, tf.float32), tf.stack([1, rows, width, 1])),
        scale=one_row_each, offset=no_offset, mean=no_statistics, variance=no_statistics,
        epsilon=layer.epsilon, data_format="NCHW", is_training=True).y
    y = (tf.reshape(standardized, shape) * tf.cast(layer.gamma, tf.float32)
         + tf.cast(layer.beta, tf.float32))
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
