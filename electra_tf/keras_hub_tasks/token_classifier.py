"""`ElectraTokenClassifier`: a keras-hub `Task` that tags words (CoNLL chunking, NER) with an
`ElectraBackbone`, the original ELECTRA's tagging head and `ElectraTaggerPreprocessor`.

    from electra_tf.keras_hub_tasks import ElectraTokenClassifier

    tags = ["O", "B-PER", "E-PER", "S-ORG", "S-MISC"]
    tagger = ElectraTokenClassifier.from_preset("presets/small", num_tags=len(tags))
    tagger.fit(x=[["EU", "rejects", "German", "call"], ["Peter", "Blackburn"]],
               y=[[3, 0, 4, 0], [1, 2]], batch_size=2)       # tag ids per word
    tagger.predict_word_tags([["Peter", "rejects"]], tag_names=tags)  # [["B-PER", "O"]]
    tagger.predict([["Peter", "rejects"]])   # logits [1, sequence_length, 5]
    tagger.save_to_preset("presets/small_ner")

`ElectraTokenClassifier.from_preset` of such a preset loads the task with its head; `num_tags`
builds a new head on a preset's backbone, and only for a preset without a task (keras-hub skips
loading a task's head for `num_classes`, a name it knows, not for `num_tags`).

keras-hub has no token-classifier base class, so this subclasses `Task` directly. The head is
the original's (`finetune/tagging/tagging_tasks.py`, `electra_tf.ElectraTagger`): one dense
layer (Glorot-uniform kernel, zero bias, no dropout) on every position's final hidden state.
The preprocessor gives each sentence's features and, with tag ids per word, the labels `tags`
and `tag_mask` (1.0 at each kept word's first piece) [batch, sequence_length]; `fit` passes the
mask as sample weights, so keras-hub's plain loss counts the tagged positions only. The
original sums the loss over them; `compile()`'s default averages (Adam at 5e-5, as keras-hub's
tasks). The backbone's GELU is the tanh approximation (see `electra_tf.convert.keras_hub`).
"""

from __future__ import annotations

import keras
import keras_hub
import tensorflow as tf

from electra_tf.keras_hub_tasks.task_base import ElectraTaskMixin
from electra_tf.keras_hub_tasks.text_classifier import (BACKBONE_INPUTS,
                                                        fit_preprocessor_to_backbone)
from electra_tf.preprocessing.tagger import ElectraTaggerPreprocessor, predict_word_tags
from electra_tf.preprocessing.text_classifier import FEATURE_NAMES


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraTokenClassifier(ElectraTaskMixin, keras_hub.models.Task):
    """An `ElectraBackbone` under the original's tagging head: int32 `input_ids`, `input_mask`,
    `segment_ids` [batch, seq] (what the preprocessor makes of sentences as word lists; its
    `word_positions` is accepted and ignored) -> float32 logits [batch, seq, num_tags].

    Labels for `fit` / `evaluate` are tag ids per word (through the preprocessor), or, on
    features, either `tags` [batch, seq] with sample weights [batch, seq] or the preprocessor's
    dict {"tags", "tag_mask"}.

    Args:
      backbone: a `keras_hub.models.ElectraBackbone`.
      num_tags: the number of tags.
      preprocessor: an `ElectraTaggerPreprocessor`, or None to call the model on features; a
        sequence_length above the backbone's positions is cut to them.
    """

    backbone_cls = keras_hub.models.ElectraBackbone
    preprocessor_cls = ElectraTaggerPreprocessor

    def __init__(self, backbone, num_tags, preprocessor=None, **kwargs):
        # === Layers ===
        self.backbone = backbone
        self.leave_the_pooler_out(backbone)
        self.preprocessor = preprocessor
        fit_preprocessor_to_backbone(preprocessor, backbone)
        self.output_dense = keras.layers.Dense(num_tags, kernel_initializer="glorot_uniform",
                                               dtype=backbone.dtype_policy, name="logits")
        # === Functional model ===
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in FEATURE_NAMES}
        sequence = backbone({BACKBONE_INPUTS[name]: tensor for name, tensor in inputs.items()}
                            )["sequence_output"]
        outputs = keras.ops.cast(self.output_dense(sequence), "float32")
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        # === Config ===
        self.num_tags = num_tags

    def call(self, inputs, training=None, mask=None, **kwargs):
        features = {name: inputs[name] for name in FEATURE_NAMES}  # not word_positions
        return super().call(features, training=training, mask=mask, **kwargs)

    def compile(self, optimizer="auto", loss="auto", *, weighted_metrics="auto", **kwargs):
        """keras-hub's defaults: Adam at 5e-5, and the cross-entropy and accuracy over the
        tagged positions (weighted by `tag_mask`), the loss averaged over them."""
        if optimizer == "auto":
            optimizer = keras.optimizers.Adam(5e-5)
        if loss == "auto":
            loss = keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, reduction="mean_with_sample_weight")
        if weighted_metrics == "auto":
            weighted_metrics = [keras.metrics.SparseCategoricalAccuracy()]
        super().compile(optimizer=optimizer, loss=loss, weighted_metrics=weighted_metrics,
                        **kwargs)

    def preprocess_samples(self, x, y=None, sample_weight=None):
        """The preprocessor's (features, {"tags", "tag_mask"}) -> (features, tags, tag_mask
        times `sample_weight` [batch] if given): a plain Keras loss over the tagged positions."""
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(
            super().preprocess_samples(x, y, sample_weight))
        if isinstance(y, dict):
            tag_mask = tf.cast(y["tag_mask"], tf.float32)
            if sample_weight is not None:
                tag_mask *= tf.cast(sample_weight, tf.float32)[:, None]
            y, sample_weight = y["tags"], tag_mask
        return keras.utils.pack_x_y_sample_weight(x, y, sample_weight)

    def fit(self, x=None, y=None, batch_size=None, sample_weight=None, validation_data=None,
            **kwargs):
        if isinstance(validation_data, tuple):
            validation_data = tuple(_ragged_rows(part) for part in validation_data)
        return super().fit(_ragged_rows(x), _ragged_rows(y), batch_size=batch_size,
                           sample_weight=sample_weight, validation_data=validation_data,
                           **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, sample_weight=None, **kwargs):
        return super().evaluate(_ragged_rows(x), _ragged_rows(y), batch_size=batch_size,
                                sample_weight=sample_weight, **kwargs)

    def predict(self, x=None, batch_size=None, **kwargs):
        return super().predict(_ragged_rows(x), batch_size=batch_size, **kwargs)

    def predict_word_tags(self, sentences, tag_names=None, batch_size=32):
        """Sentences (lists of words) -> the likeliest tag of each kept word, per sentence: ids,
        or names from `tag_names`. Words cut by the truncation rule are left out, as the
        original scores them."""
        if self.preprocessor is None:
            raise ValueError("predict_word_tags needs a preprocessor: build the model with "
                             "preprocessor=ElectraTaggerPreprocessor.from_vocabulary(...)")
        return predict_word_tags(self, sentences, tag_names, batch_size)

    def get_config(self):
        return {**super().get_config(), "num_tags": self.num_tags}


def _ragged_rows(value):
    """Lists of per-word values (words, tag ids) -> a ragged tensor, which keras-hub batches
    (uneven lists it cannot); anything else as it is."""
    if isinstance(value, list) and value and all(isinstance(row, (list, tuple)) for row in value):
        return tf.ragged.constant([list(row) for row in value])
    return value
