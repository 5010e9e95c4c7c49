"""Tests for electra_tf.models.xla_casts: bfloat16 <-> float32 as bit operations."""

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.models.xla_casts import from_float32, to_float32


def _awkward_float32():
    """float32 values where rounding to bfloat16 is delicate: exact halfway points (both ways of
    rounding to even), just above and below them, signed zeros, subnormals, the largest finite
    values (which round to infinity), infinities and NaN, plus random normals at many scales."""
    bits = []
    for upper in (0x3F80, 0x3F81, 0x0001, 0x807F, 0x7F7F, 0xFF7F):  # 1, 1+ulp, subnormal, ...
        for lower in (0x0000, 0x7FFF, 0x8000, 0x8001, 0xFFFF):
            bits.append((upper << 16) | lower)
    special = np.array(bits, np.uint32).view(np.float32)
    rng = np.random.default_rng(0)
    scaled = rng.normal(size=4096) * np.exp2(rng.integers(-140, 120, size=4096))
    return np.concatenate([special, [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan],
                           scaled]).astype(np.float32)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "xla"])
def test_narrowing_rounds_as_tensorflow_cast(compiled):
    values = tf.constant(_awkward_float32())
    narrow = tf.function(lambda x: from_float32(x, tf.bfloat16), jit_compile=True) if compiled \
        else (lambda x: from_float32(x, tf.bfloat16))
    ours, theirs = narrow(values), tf.cast(values, tf.bfloat16)
    assert ours.dtype == tf.bfloat16
    ours_bits = tf.bitcast(ours, tf.uint16).numpy()
    theirs_bits = tf.bitcast(theirs, tf.uint16).numpy()
    is_nan = np.isnan(values.numpy())
    np.testing.assert_array_equal(ours_bits[~is_nan], theirs_bits[~is_nan])
    assert np.isnan(ours.numpy().astype(np.float32)[is_nan]).all()  # any NaN stays a NaN


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "xla"])
def test_widening_is_exact(compiled):
    every_bfloat16 = tf.bitcast(tf.constant(np.arange(1 << 16, dtype=np.uint16)), tf.bfloat16)
    widen = tf.function(to_float32, jit_compile=True) if compiled else to_float32
    ours, theirs = widen(every_bfloat16).numpy(), tf.cast(every_bfloat16, tf.float32).numpy()
    assert ours.dtype == np.float32
    is_nan = np.isnan(theirs)
    np.testing.assert_array_equal(ours.view(np.uint32)[~is_nan], theirs.view(np.uint32)[~is_nan])
    assert np.isnan(ours[is_nan]).all()


def test_other_dtypes_are_plain_casts():
    x = tf.constant([1.5, -2.25, 3e4], tf.float16)
    assert to_float32(x).dtype == tf.float32
    np.testing.assert_array_equal(to_float32(x).numpy(), [1.5, -2.25, 3e4])
    y = tf.constant([1.0, 2.0 ** -30, 65504.0])
    np.testing.assert_array_equal(from_float32(y, tf.float32).numpy(), y.numpy())
    np.testing.assert_array_equal(from_float32(y, tf.float16).numpy(), tf.cast(y, tf.float16).numpy())
