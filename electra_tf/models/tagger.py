"""Token tagging (CoNLL chunking, NER): the discriminator's encoder under a per-token classifier.

As the original (`finetune/tagging/tagging_tasks.py`): one dense layer (Glorot-uniform kernel,
zero bias, no dropout) on the final hidden state of a word's first piece, softmax cross-entropy
over the BIOES tags, masked to the tagged positions and summed over them (not averaged). The
original gathers the tagged positions before the dense layer; here every position gets logits
and the mask picks the tagged ones, which gives the same loss.
"""

import keras
import numpy as np
import tensorflow as tf

from electra_tf.models import raw_text
from electra_tf.models.task_model import TASK_HEAD_SCOPE, TaskModel
from electra_tf.preprocessing.tagger import ElectraTaggerPreprocessor, predict_word_tags


@keras.saving.register_keras_serializable(package="electra_tf")
class TokenTaggingHead(keras.layers.Layer):
    """`sequence_output` [batch, seq, hidden] -> dense -> float32 logits [batch, seq, num_tags]."""

    def __init__(self, num_tags, **kwargs):
        super().__init__(**kwargs)
        self.num_tags = num_tags
        self.output_dense = keras.layers.Dense(num_tags, dtype=self.dtype_policy, name="output")

    def build(self, input_shape):
        self.output_dense.build((None, None, input_shape[-1]))
        self.built = True

    def call(self, sequence_output):
        return tf.cast(self.output_dense(sequence_output), tf.float32)

    def get_config(self):
        return {**super().get_config(), "num_tags": self.num_tags}


def masked_token_losses(tags, tag_mask, logits):
    """Softmax cross-entropy at each position [batch, seq], times `tag_mask` [batch, seq]."""
    losses = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(tags, tf.int32), logits=logits)
    return losses * tf.cast(tag_mask, tf.float32)


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraTagger(TaskModel):
    """ELECTRA with the original's tagging head, usable with plain `compile()` / `fit()`.

    Call: a dict of int `input_ids`, `input_mask`, `segment_ids` [batch, seq] -> float32 logits
    [batch, seq, num_tags]. Labels: a dict of `tags` (int tag ids [batch, seq]) and `tag_mask`
    (float [batch, seq], 1.0 at each word's first piece). The per-example loss is the masked
    cross-entropy summed over the sequence; `accuracy` is the share of tagged positions whose
    most likely tag is right.

    Args:
      model_config: the encoder's sizes, an `electra_tf.config.ModelConfig` (default: its
        defaults). `from_preset` takes them from the pretrained directory.
      num_tags: tags (BIOES labels) to predict.
      loss_reduction: "sum" of the per-example losses over the global batch (the original's)
        or "mean".
      **kwargs: `keras.Model` arguments (`name`, `dtype`, ...).

    Example:

    ```python
    model = ElectraTagger.from_preset("runs/small", num_tags=9)  # pretrained encoder
    inputs = {"input_ids": tf.constant([[101, 7, 8, 102]]),
              "input_mask": tf.ones([1, 4], tf.int32), "segment_ids": tf.zeros([1, 4], tf.int32)}
    labels = {"tags": tf.constant([[0, 3, 5, 0]]), "tag_mask": tf.constant([[0., 1., 1., 0.]])}
    model.compile(optimizer="adam")
    model.fit(inputs, labels, epochs=1)
    model(inputs).shape  # (1, 4, 9)
    ```
    """

    preprocessor_cls = ElectraTaggerPreprocessor

    def __init__(self, model_config=None, num_tags=2, loss_reduction="sum", **kwargs):
        super().__init__(model_config, loss_reduction, **kwargs)
        if num_tags < 1:
            raise ValueError(f"a tagger needs at least 1 tag, got {num_tags}")
        self.num_tags = num_tags
        self.head = TokenTaggingHead(num_tags, dtype=self.dtype_policy, name=TASK_HEAD_SCOPE)
        self.accuracy = keras.metrics.Mean(name="accuracy")
        self.build_layers(self.head)

    def call(self, inputs, training=False):
        return self.head(self.encode(inputs, training=training))

    def per_example_loss(self, labels, outputs):
        return tf.reduce_sum(masked_token_losses(labels["tags"], labels["tag_mask"], outputs), -1)

    def task_metrics(self):
        return [self.accuracy]

    def update_task_metrics(self, labels, outputs, sample_weight):
        predicted = tf.argmax(outputs, -1, output_type=tf.int32)
        correct = tf.cast(tf.equal(predicted, tf.cast(labels["tags"], tf.int32)), tf.float32)
        weight = tf.cast(labels["tag_mask"], tf.float32) * sample_weight[:, None]
        self.accuracy.update_state(correct, sample_weight=weight)

    def check_labels(self, labels):
        flat = (labels.flat_values.numpy().tolist() if isinstance(labels, tf.RaggedTensor)
                else [t for row in labels for t in row])
        if any(not isinstance(t, (int, np.integer)) or t < 0 or t >= self.num_tags for t in flat):
            shown = sorted({str(t) for t in flat})[:8]
            raise ValueError(f"the labels must be tag ids 0 to {self.num_tags - 1} per word of "
                             f"this {self.num_tags}-tag tagger; got {shown}")

    def predict_word_tags(self, sentences, tag_names=None, batch_size=32):
        """Sentences (lists of words) -> the most likely tag of each kept word, per sentence:
        ids, or names from `tag_names`. Words cut by the truncation rule are left out, as the
        original scores them; needs a preprocessor (`ElectraTaggerPreprocessor`)."""
        raw_text.check_preprocessor(self, sentences)
        return predict_word_tags(self, sentences, tag_names, batch_size)

    def task_config(self):
        return {"num_tags": self.num_tags}
