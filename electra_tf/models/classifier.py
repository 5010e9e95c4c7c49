"""Sentence(-pair) classification and regression on the [CLS] vector, as the original's GLUE head.

`finetune/classification/classification_tasks.py`: the final hidden state at position 0 (no
pooler, no tanh) -> dropout 0.1 -> one dense layer (Glorot-uniform kernel, zero bias); softmax
cross-entropy over the labels, or for regression one unit and squared error against the target
scaled to [0, 1] (STS-B: label / 5).
"""

import keras
import numpy as np
import tensorflow as tf

from electra_tf.models.task_model import TASK_HEAD_SCOPE, TaskModel
from electra_tf.preprocessing.text_classifier import ElectraTextClassifierPreprocessor


@keras.saving.register_keras_serializable(package="electra_tf")
class ClassificationHead(keras.layers.Layer):
    """[CLS] of `sequence_output` [batch, seq, hidden] -> dropout -> dense -> float32 [batch, units]."""

    def __init__(self, units, dropout=0.1, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.dropout_rate = dropout
        self.dropout = keras.layers.Dropout(dropout, dtype=self.dtype_policy, name="dropout")
        self.output_dense = keras.layers.Dense(units, dtype=self.dtype_policy, name="output")

    def build(self, input_shape):
        self.output_dense.build((None, input_shape[-1]))
        self.built = True

    def call(self, sequence_output, training=False):
        cls = self.dropout(sequence_output[:, 0], training=training)
        return tf.cast(self.output_dense(cls), tf.float32)

    def get_config(self):
        return {**super().get_config(), "units": self.units, "dropout": self.dropout_rate}


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraClassifier(TaskModel):
    """ELECTRA with the original's GLUE head, usable with plain `compile()` / `fit()`.

    Call: a dict of int `input_ids`, `input_mask`, `segment_ids` [batch, seq] -> float32 logits
    [batch, num_labels], or with `regression=True` predictions [batch] on the scaled [0, 1] target
    scale. Labels: int class ids [batch], or float scaled targets [batch].

    The encoder's last block runs for [CLS] alone (`output_rows=1`), the one position the
    head reads: the logits and gradients of the whole block's first position (without dropout
    the same values; with it, masks drawn for that position alone), without 7% of
    ELECTRA-Small's encoder FLOPs at 128 tokens, in training, inference and every export
    (docs/performance.md).

    Args:
      model_config: the encoder's sizes, an `electra_tf.config.ModelConfig` (default: its
        defaults). `from_preset` takes them from the pretrained directory.
      num_labels: classes (at least 2); ignored with `regression=True`.
      regression: one output unit trained with squared error (STS-B) instead of softmax.
      dropout: rate of the dropout on the [CLS] vector.
      loss_reduction: "sum" of the per-example losses over the global batch (the original's)
        or "mean".
      preprocessor: an `electra_tf.preprocessing.ElectraTextClassifierPreprocessor`; with one,
        `fit`, `evaluate` and `predict` take raw strings (texts [n], or a tuple of two [n] for
        pairs) and class ids 0..num_labels-1 as labels, and the model saves it.
      **kwargs: `keras.Model` arguments (`name`, `dtype`, ...).

    Example:

    ```python
    model = ElectraClassifier.from_preset("runs/small", num_labels=3)  # pretrained encoder
    # or, randomly initialised: ElectraClassifier(ModelConfig(vocab_size=100, ...), 3)
    inputs = {"input_ids": tf.constant([[101, 7, 8, 102]]),
              "input_mask": tf.ones([1, 4], tf.int32), "segment_ids": tf.zeros([1, 4], tf.int32)}
    model.compile(optimizer="adam")
    model.fit(inputs, tf.constant([2]), epochs=1)
    model(inputs).shape  # (1, 3)

    # raw strings, run_finetuning's recipe:
    model = ElectraClassifier.from_preset("runs/small", num_labels=2, preprocessor=
        ElectraTextClassifierPreprocessor.from_vocabulary("runs/small/vocab.txt"))
    model.compile_for_finetuning(num_train_steps=3 * len(texts) // 32)
    model.fit(texts, labels, batch_size=32, epochs=3)
    model.predict(["what a ride"])  # logits [1, 2]
    ```
    """

    preprocessor_cls = ElectraTextClassifierPreprocessor

    def __init__(self, model_config=None, num_labels=2, regression=False, dropout=0.1,
                 loss_reduction="sum", **kwargs):
        super().__init__(model_config, loss_reduction, **kwargs)
        if not regression and num_labels < 2:
            raise ValueError(f"a classifier needs at least 2 labels, got {num_labels}")
        self.num_labels = 1 if regression else num_labels
        self.regression = regression
        self.dropout = dropout
        self.head = ClassificationHead(self.num_labels, dropout, dtype=self.dtype_policy,
                                       name=TASK_HEAD_SCOPE)
        self.accuracy = None if regression else keras.metrics.Mean(name="accuracy")
        self.build_layers(self.head)

    def call(self, inputs, training=False):
        outputs = self.head(self.encode(inputs, training=training, output_rows=1),
                            training=training)
        return outputs[:, 0] if self.regression else outputs

    def check_labels(self, labels):
        if self.regression:
            return
        labels = np.asarray(labels)
        if labels.dtype.kind not in "iu" or labels.size and (
                labels.min() < 0 or labels.max() >= self.num_labels):
            shown = sorted(set(labels.ravel().tolist()))[:8]
            raise ValueError(f"the labels must be class ids 0 to {self.num_labels - 1} of this "
                             f"{self.num_labels}-label classifier; got {shown}")

    def per_example_loss(self, labels, outputs):
        if self.regression:
            return tf.square(outputs - tf.cast(labels, tf.float32))
        return tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.cast(labels, tf.int32), logits=outputs)

    def task_metrics(self):
        return [] if self.accuracy is None else [self.accuracy]

    def update_task_metrics(self, labels, outputs, sample_weight):
        if self.accuracy is not None:
            correct = tf.equal(tf.argmax(outputs, -1, output_type=tf.int32), tf.cast(labels, tf.int32))
            self.accuracy.update_state(tf.cast(correct, tf.float32), sample_weight=sample_weight)

    def task_config(self):
        return {"num_labels": self.num_labels, "regression": self.regression,
                "dropout": self.dropout}
