"""Activation lookup: exact erf GELU by default, as in the original and Hugging Face."""

import math

import keras
import tensorflow as tf

from electra_tf.models.xla_casts import from_float32, to_float32


@keras.saving.register_keras_serializable(package="electra_tf")
def gelu_approximate(x):
    """The tanh approximation of GELU (keras-hub's ElectraBackbone, HF's "gelu_new")."""
    return keras.activations.gelu(x, approximate=True)


def get_activation(name):
    """Maps a config name ("gelu", "gelu_approximate", "relu") to a Keras activation."""
    if name == "gelu_approximate":
        return gelu_approximate
    return keras.activations.get(name)  # Keras' "gelu" is the exact erf form


# The GELU of training and its derivative, each compiled by XLA into one elementwise kernel
# (a read of x, a write of the result) where TensorFlow's executor runs four kernels forward and
# seven backward, each a pass over the [batch * seq, intermediate] activations; the matmuls
# around them stay oneDNN's. The derivative recomputes the CDF rather than keeping it.
@tf.function(jit_compile=True, autograph=False)
def _gelu(x):
    x32 = to_float32(x)
    return from_float32(x32 * _normal_cdf(x32), x.dtype)


@tf.function(jit_compile=True, autograph=False)
def _gelu_gradient(x, upstream):
    x32 = to_float32(x)
    pdf = tf.exp(-0.5 * tf.square(x32)) * (1.0 / math.sqrt(2.0 * math.pi))
    return from_float32(to_float32(upstream) * (_normal_cdf(x32) + x32 * pdf), x.dtype)


def _normal_cdf(x32):
    # The original's 0.5 * (1 + erf(x / sqrt(2))), not tf.nn.gelu's erfc form: XLA expands erfc
    # into several approximations (one with an exp) and a select, so on [4096, 1024] float32 the
    # forward kernel took 4.3-4.7 ms with erfc and 2.0-2.1 ms with erf (Intel Xeon with AMX,
    # 2026-11-27). This CDF is within 1.7e-7 of the exact one everywhere, erfc's within 8.5e-8
    # (1 + erf loses relative precision in the far left tail, where the CDF and the GELU are
    # near 0).
    return 0.5 * (1.0 + tf.math.erf(x32 * math.sqrt(0.5)))


@tf.custom_gradient
def gelu_with_analytic_gradient(x):
    """Exact GELU, x * Phi(x), with its derivative Phi(x) + x * phi(x) written out: the same
    values as `keras.activations.gelu`, each direction one XLA-fused kernel (above) instead of a
    chain of TensorFlow kernels (in a profile of the classification step on an Intel Xeon, 336
    ms of op time a step became 137 ms). Computed in float32 also for bfloat16 inputs, whose
    erf and exp kernels cost more than the two casts. Used in training only: IdentityN, which
    `tf.custom_gradient` adds, would keep oneDNN from fusing the GELU into the matmul of an
    exported model."""

    def gradient(upstream):
        with tf.name_scope("gelu_gradient"):  # else its ops are unscoped in a profile
            return _gelu_gradient(x, upstream)

    return _gelu(x), gradient


def training_activation(activation, training):
    """The function to apply for `activation` (a Keras activation): in training, exact GELU is
    `gelu_with_analytic_gradient` (one XLA kernel each way); otherwise `activation` itself,
    which oneDNN fuses into the preceding matmul when serving."""
    if training and activation is keras.activations.gelu:
        return gelu_with_analytic_gradient
    return activation
