"""Dropout from 16 random bits per element, half of the Philox draws of Keras' dropout."""

import tensorflow as tf

_LEVELS = 1 << 16  # a uint16's values


def dropout(x, layer, training):
    """`x` [any shape] through the dropout of `layer` (a `keras.layers.Dropout`: its rate and
    seed generator) when `training`, else `x` unchanged.

    Keras draws one float32 per element (one 32-bit Philox output each) and compares it with the
    rate; the random numbers were a tenth of the pretraining step's op time. Here one 32-bit draw
    gives two elements 16 bits each: an element is dropped when its bits are below
    round(rate * 65536), a rate within 1 / 131072 of the configured one (0.1 -> 0.100006), and
    kept elements are scaled by 1 / (1 - rate) as in Keras. The same seed gives the same mask;
    each call takes the next seed of the layer's generator, as Keras' own call does.
    """
    rate = layer.rate
    if not training or rate == 0:
        return x
    keep = keep_mask(random_words(layer, tf.size(x)), tf.shape(x), rate)
    return x * (tf.cast(keep, x.dtype) * tf.cast(1.0 / (1.0 - rate), x.dtype))


def random_words(layer, size):
    """The random bits of one dropout call of `layer` over `size` elements: (size + 1) // 2
    uint32 words drawn with the next seed of the layer's generator."""
    # int32 seeds, as Keras casts them: XLA's stateless random ops take no int64 seed
    seed = tf.cast(tf.math.floormod(layer.seed_generator.next(), 2 ** 31 - 2), tf.int32)
    return tf.random.stateless_uniform([(size + 1) // 2], seed, minval=None, maxval=None,
                                       dtype=tf.uint32)


def keep_mask(words, shape, rate):
    """`random_words` -> the bool mask of the kept elements, of `shape`: an element's 16 bits
    at or above round(rate * 65536)."""
    size = tf.reduce_prod(shape)
    bits = tf.reshape(tf.bitcast(words, tf.uint16), [-1])[:size]
    return tf.reshape(bits, shape) >= tf.constant(round(rate * _LEVELS), tf.uint16)
