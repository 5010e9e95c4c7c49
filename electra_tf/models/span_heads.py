"""Question-answering span heads on the encoder's sequence output, as the original's QA task.

`JointSpanHead` is the original's "XLNet-style" head (`finetune/qa/qa_tasks.py`, joint_prediction):
the end is predicted from [h_start ; h_j] through a 512-wide GELU layer, conditioned on the gold
start in training and on each of the top-k starts at inference, where the beam search runs inside
the graph. `IndependentSpanHead` is BERT's: one linear unit each for start and end.

Both heads share:
- the answer mask m_j = input_mask_j * segment_id_j + [j == 0]: context tokens, the final [SEP]
  and [CLS]; positions outside it get -1000 added to their logits (not -1e30: fp16-safe);
- the answerability classifier on [h_CLS ; sum_j softmax(start)_j h_j] -> dense 512 GELU ->
  dense 1, whose output (`answerable_logit`) is, despite the original's name, the logit of the
  question being *impossible* (SQuAD 2.0's null score);
- the loss (CE(start) + CE(end)) / 2 + answerable_weight * sigmoid CE(is_impossible).

Inference outputs (float32 / int32, static shapes):
  start_top_index, start_top_log_probs    [batch, k]
  end_top_index, end_top_log_probs        [batch, k, k]  (row i: the ends for start i)
  answerable_logit                        [batch]
For the independent head the "log probs" are the masked logits and every row of the end beam is
the same top-k of the end logits; decoding scores a span by start value + end value either way.
"""

import keras
import tensorflow as tf

from electra_tf.models.activations import training_activation

MASK_PENALTY = 1000.0  # the original's constant
HIDDEN_UNITS = 512  # width of the end and answerability MLPs


def answer_mask(input_mask, segment_ids):
    """float32 [batch, seq]: 1 where a span may start or end (context, final [SEP], [CLS])."""
    mask = tf.cast(input_mask, tf.float32) * tf.cast(segment_ids, tf.float32)
    return mask + tf.one_hot(0, tf.shape(mask)[1], dtype=tf.float32)


def _masked(logits, mask):
    return logits + MASK_PENALTY * (mask - 1.0)


def _dense(units, name, activation=None, dtype=None):
    # tf.layers.dense's defaults in the original: Glorot-uniform kernel, zero bias.
    return keras.layers.Dense(units, activation=activation, dtype=dtype, name=name)


class SpanHead(keras.layers.Layer):
    """Shared parts: start logits, the answerability classifier and the loss.

    `call(sequence_output [batch, seq, hidden], input_mask, segment_ids, start_positions=None,
    training=None)`: with `start_positions` ([batch] int, the gold starts) it returns the
    training outputs `start_logits`, `end_logits` [batch, seq] (masked) and `answerable_logit`
    [batch]; without, the inference beam outputs listed in the module docstring.
    """

    def __init__(self, beam_size=20, answerable_weight=0.5, **kwargs):
        super().__init__(**kwargs)
        self.beam_size = beam_size
        self.answerable_weight = answerable_weight
        self.start_dense = _dense(1, "start_logits", dtype=self.dtype_policy)
        self.answer_hidden = _dense(HIDDEN_UNITS, "answer_hidden", "gelu", dtype=self.dtype_policy)
        self.answer_dense = _dense(1, "answer_logit", dtype=self.dtype_policy)

    def build(self, input_shape):
        hidden = input_shape[-1]
        self.start_dense.build((None, None, hidden))
        self.answer_hidden.build((None, 2 * hidden))
        self.answer_dense.build((None, HIDDEN_UNITS))
        self.build_end(hidden)
        self.built = True

    def build_end(self, hidden):
        raise NotImplementedError

    def start_logits(self, sequence_output, mask):
        """Masked start logits, float32 [batch, seq]."""
        return _masked(tf.cast(self.start_dense(sequence_output)[..., 0], tf.float32), mask)

    def answerable_logit(self, sequence_output, start_logits):
        """float32 [batch]: the logit of "no answer" from [h_CLS ; E_softmax(start)[h]]."""
        start_probs = tf.cast(tf.nn.softmax(start_logits), sequence_output.dtype)
        expected_start = tf.einsum("bs,bsh->bh", start_probs, sequence_output)
        features = tf.concat([sequence_output[:, 0], expected_start], -1)
        return tf.cast(self.answer_dense(self.answer_hidden(features))[:, 0], tf.float32)

    def loss(self, outputs, start_positions, end_positions, is_impossible):
        """Per-example loss, float32 [batch], from the training outputs."""
        start_loss = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.cast(start_positions, tf.int32), logits=outputs["start_logits"])
        end_loss = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.cast(end_positions, tf.int32), logits=outputs["end_logits"])
        answerable_loss = tf.nn.sigmoid_cross_entropy_with_logits(
            labels=tf.cast(is_impossible, tf.float32), logits=outputs["answerable_logit"])
        return (start_loss + end_loss) / 2.0 + self.answerable_weight * answerable_loss

    def call(self, sequence_output, input_mask, segment_ids, start_positions=None,
             training=None):
        mask = answer_mask(input_mask, segment_ids)
        start_logits = self.start_logits(sequence_output, mask)
        answerable = self.answerable_logit(sequence_output, start_logits)
        if start_positions is not None:
            return {"start_logits": start_logits, "answerable_logit": answerable,
                    "end_logits": self.training_end_logits(sequence_output, mask, start_positions,
                                                           training)}
        return {**self.beam(sequence_output, mask, start_logits), "answerable_logit": answerable}

    def beam_width(self, sequence_output):
        length = sequence_output.shape[1]
        if length is not None and length < self.beam_size:
            raise ValueError(f"beam_size {self.beam_size} is larger than the sequence length {length}")
        return self.beam_size

    def get_config(self):
        return {**super().get_config(), "beam_size": self.beam_size,
                "answerable_weight": self.answerable_weight}


@keras.saving.register_keras_serializable(package="electra_tf")
class JointSpanHead(SpanHead):
    """The original's joint head: end logits from dense_512_gelu([h_start ; h_j]) -> dense_1.

    The 2h -> 512 layer is applied as W_start h_start + W_pos h_j + b (its kernel split in two
    halves), which equals the original's dense layer on the concatenation without building the
    [batch, k, seq, 2h] tensor at inference.
    """

    def build_end(self, hidden):
        self.end_hidden = _dense(HIDDEN_UNITS, "qa_hidden", dtype=self.dtype_policy)
        self.end_dense = _dense(1, "qa_logits", dtype=self.dtype_policy)
        self.end_hidden.build((None, 2 * hidden))
        self.end_dense.build((None, HIDDEN_UNITS))

    def _end_logits(self, start_features, sequence_output, mask, training=False):
        """start_features [batch, k, hidden] -> masked end logits float32 [batch, k, seq]. In
        training the GELU over [batch, k, seq, 512] is `training_activation`'s, one XLA kernel
        each way instead of TensorFlow's erfc chain."""
        hidden = sequence_output.shape[-1]
        kernel = tf.cast(self.end_hidden.kernel, sequence_output.dtype)
        bias = tf.cast(self.end_hidden.bias, sequence_output.dtype)
        from_start = tf.einsum("bkh,hu->bku", start_features, kernel[:hidden])
        from_position = tf.einsum("bsh,hu->bsu", sequence_output, kernel[hidden:])
        pre_activation = from_start[:, :, None, :] + from_position[:, None, :, :] + bias
        end_hidden = training_activation(keras.activations.gelu, training)(pre_activation)
        logits = tf.cast(self.end_dense(end_hidden)[..., 0], tf.float32)
        return _masked(logits, mask[:, None, :])

    def training_end_logits(self, sequence_output, mask, start_positions, training=False):
        start_features = tf.gather(sequence_output, tf.cast(start_positions, tf.int32), batch_dims=1)
        return self._end_logits(start_features[:, None], sequence_output, mask, training)[:, 0]

    def beam(self, sequence_output, mask, start_logits):
        k = self.beam_width(sequence_output)
        start_top_log_probs, start_top_index = tf.math.top_k(tf.nn.log_softmax(start_logits), k)
        start_features = tf.gather(sequence_output, start_top_index, batch_dims=1)
        end_logits = self._end_logits(start_features, sequence_output, mask)
        end_top_log_probs, end_top_index = tf.math.top_k(tf.nn.log_softmax(end_logits), k)
        return {"start_top_index": start_top_index, "start_top_log_probs": start_top_log_probs,
                "end_top_index": end_top_index, "end_top_log_probs": end_top_log_probs}


@keras.saving.register_keras_serializable(package="electra_tf")
class IndependentSpanHead(SpanHead):
    """BERT's head: start and end each from their own linear unit; a span scores s_i + e_j."""

    def build_end(self, hidden):
        self.end_dense = _dense(1, "end_logits", dtype=self.dtype_policy)
        self.end_dense.build((None, None, hidden))

    def training_end_logits(self, sequence_output, mask, start_positions=None, training=False):
        return _masked(tf.cast(self.end_dense(sequence_output)[..., 0], tf.float32), mask)

    def beam(self, sequence_output, mask, start_logits):
        k = self.beam_width(sequence_output)
        start_top_logits, start_top_index = tf.math.top_k(start_logits, k)
        end_top_logits, end_top_index = tf.math.top_k(
            self.training_end_logits(sequence_output, mask), k)
        tile = lambda x: tf.tile(x[:, None, :], [1, k, 1])
        return {"start_top_index": start_top_index, "start_top_log_probs": start_top_logits,
                "end_top_index": tile(end_top_index), "end_top_log_probs": tile(end_top_logits)}


SPAN_HEADS = {"joint": JointSpanHead, "independent": IndependentSpanHead}
