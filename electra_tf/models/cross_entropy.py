"""The masked LM's softmax cross-entropy over the vocabulary, one XLA kernel each way."""

import tensorflow as tf

from electra_tf.models.xla_casts import from_float32, to_float32


def sparse_softmax_cross_entropy(labels, logits, return_correct=False):
    """-log softmax(logits)[label] per row: `tf.nn.sparse_softmax_cross_entropy_with_logits`'s
    values and gradient (within float32 rounding), for the generator's [batch, N, V] logits.

    TensorFlow's kernel computes the loss and the gradient together, in passes over the
    [batch * N, V] logits that on a CPU take longer than the generator's output matmul; here the
    forward (max, sum of exponentials, the label's logit) and the backward (softmax minus the
    one-hot label) are each one XLA-compiled kernel, the backward reusing the forward's
    log-sum-exp. Labels must be in [0, V): unlike TensorFlow's CPU kernel, nothing checks them.

    Args:
      labels: int [...].
      logits: float [..., V].
      return_correct: also return, from the same kernel, whether each row's label has the
        row's highest logit: `argmax(logits) == labels` (the masked LM's accuracy) without a
        separate pass over the logits, except that a label tied with an earlier id for the
        maximum counts as correct.
    Returns:
      float32 [...]; with `return_correct`, the loss and float32 1/0 [...].
    """
    labels = tf.convert_to_tensor(labels)

    @tf.custom_gradient
    def cross_entropy(logits):
        loss, log_sum_exp, correct = _forward(labels, logits)

        def gradient(upstream, unused_upstream_of_correct):
            with tf.name_scope("cross_entropy_gradient"):  # names the kernel in a profile
                return _backward(labels, logits, log_sum_exp, upstream)

        return (loss, correct), gradient

    with tf.name_scope("cross_entropy"):
        loss, correct = cross_entropy(logits)
    return (loss, tf.stop_gradient(correct)) if return_correct else loss


@tf.function(jit_compile=True, autograph=False)
def _forward(labels, logits):
    """-> the loss, the log-sum-exp of each row and whether its label's logit is the row's
    maximum (1/0) [...], float32."""
    logits = to_float32(logits)
    row_max = tf.reduce_max(logits, axis=-1)
    log_sum_exp = row_max + tf.math.log(
        tf.reduce_sum(tf.exp(logits - row_max[..., None]), axis=-1))
    at_label = tf.gather(logits, labels[..., None], batch_dims=labels.shape.rank)[..., 0]
    return (log_sum_exp - at_label, log_sum_exp,
            tf.cast(at_label >= row_max, tf.float32))


@tf.function(jit_compile=True, autograph=False)
def _backward(labels, logits, log_sum_exp, upstream):
    """-> (softmax(logits) - one_hot(labels)) * upstream [..., V], in the logits' dtype."""
    softmax = tf.exp(to_float32(logits) - log_sum_exp[..., None])
    one_hot = tf.one_hot(labels, tf.shape(logits)[-1], dtype=tf.float32)
    return from_float32((softmax - one_hot) * upstream[..., None], logits.dtype)
