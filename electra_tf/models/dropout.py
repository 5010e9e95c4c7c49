"""Dropout from a counter-based hash: the mask is computed where it is used, one kernel each way."""

import tensorflow as tf

from electra_tf.models.xla_casts import from_float32, to_float32

_WORDS = 1 << 32  # a uint32's values


def dropout(x, layer, training):
    """`x` [any shape] through the dropout of `layer` (a `keras.layers.Dropout`: its rate and
    seed generator) when `training`, else `x` unchanged.

    Keras draws one float32 per element from TensorFlow's Philox generator and compares it with
    the rate, several kernels and passes over the tensor; the random numbers alone were a tenth
    of the pretraining step's op time on a CPU. Here the mask is `keep_mask`'s, a hash of each
    element's index under the call's seed, computed inside one XLA-compiled kernel that also
    scales the kept elements by 1 / (1 - rate) (as Keras does); the gradient is the same kernel
    applied to the upstream gradient, recomputing the mask rather than keeping it. The same seed
    gives the same mask; each call takes the next seed of the layer's generator, as Keras' own
    call does.
    """
    rate = layer.rate
    if not training or rate == 0:
        return x
    seed = dropout_seed(layer)

    @tf.custom_gradient
    def masked(x):
        def gradient(upstream):
            with tf.name_scope("dropout_gradient"):  # names the kernel in a profile
                return _scale_kept(upstream, seed, rate)

        return _scale_kept(x, seed, rate), gradient

    with tf.name_scope("dropout"):
        return masked(x)


def dropout_seed(layer):
    """The next seed of `layer`'s generator, int32 [2] (one seed per dropout call)."""
    # int32, as Keras casts its seeds: XLA's stateless ops take no int64 seed
    return tf.cast(tf.math.floormod(layer.seed_generator.next(), 2 ** 31 - 2), tf.int32)


def keep_mask(seed, shape, rate):
    """The bool mask [shape] of the kept elements under `seed` (int32 [2]): element i is kept
    when a 32-bit hash of (i, seed) is at or above round(rate * 2^32), so the drop rate is the
    configured one within 2^-33. Meant for XLA-compiled code: outside it these are a dozen
    TensorFlow kernels over the tensor."""
    seed = tf.bitcast(seed, tf.uint32)
    first_key = _mix(seed[0] ^ _mix(seed[1] + tf.constant(0x9E3779B9, tf.uint32)))
    second_key = _mix(first_key ^ seed[1])
    counters = tf.bitcast(tf.range(tf.reduce_prod(shape), dtype=tf.int32), tf.uint32)
    words = _mix(_mix(counters + first_key) ^ second_key)
    threshold = tf.constant(min(round(rate * _WORDS), _WORDS - 1), tf.uint32)
    return tf.reshape(words >= threshold, shape)


def _mix(x):
    """A bijection of uint32 whose output bits each depend on every input bit (Chris Wellons'
    "lowbias32" integer hash); twice over the counter, it is the mask's random bit source."""
    x ^= tf.bitwise.right_shift(x, tf.constant(16, tf.uint32))
    x *= tf.constant(0x7FEB352D, tf.uint32)
    x ^= tf.bitwise.right_shift(x, tf.constant(15, tf.uint32))
    x *= tf.constant(0x846CA68B, tf.uint32)
    return x ^ tf.bitwise.right_shift(x, tf.constant(16, tf.uint32))


@tf.function(jit_compile=True, autograph=False)
def _scale_kept(x, seed, rate):
    """x * keep_mask / (1 - rate), in x's dtype (computed in float32: XLA's CPU code for
    bfloat16 arithmetic is slower than the casts)."""
    kept = tf.cast(keep_mask(seed, tf.shape(x), rate), tf.float32)
    return from_float32(to_float32(x) * (kept * (1.0 / (1.0 - rate))), x.dtype)
