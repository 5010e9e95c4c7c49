"""`ElectraTextClassifier`: keras-hub's `TextClassifier` for an `ElectraBackbone`, with the
original ELECTRA's GLUE head and `ElectraTextClassifierPreprocessor`.

    import keras_hub
    import electra_tf.keras_hub_tasks  # registers the class with keras-hub

    classifier = keras_hub.models.TextClassifier.from_preset("presets/small", num_classes=2)
    classifier.fit(x=["a great film", "dull"], y=[1, 0], batch_size=2)
    classifier.predict(["what a ride"])

The head is the original's (`finetune/classification/classification_tasks.py`): the final
hidden state of [CLS] (keras-hub's backbone also returns a tanh pooler output, which ELECTRA's
classifier does not use) -> dropout 0.1 -> a dense layer, Glorot-uniform kernel, zero bias.
The backbone is keras-hub's own, whose GELU is the tanh approximation (the original's is the
exact erf form; `electra_tf.ElectraClassifier` keeps that one), so the same weights answer
within about 1e-3 in the two classifiers. The preprocessor gives the original's token ids
and truncation (`electra_tf.preprocessing`). `compile()` is keras-hub's default (Adam at 5e-5);
`electra_tf.ElectraClassifier.compile_for_finetuning` is the original's recipe.
"""

from __future__ import annotations

import keras
import keras_hub

from electra_tf.keras_hub_tasks.task_base import ElectraTaskMixin
from electra_tf.preprocessing.text_classifier import (FEATURE_NAMES,
                                                      ElectraTextClassifierPreprocessor)

# electra_tf's feature names -> ElectraBackbone's inputs
BACKBONE_INPUTS = {"input_ids": "token_ids", "input_mask": "padding_mask",
                   "segment_ids": "segment_ids"}


def fit_preprocessor_to_backbone(preprocessor, backbone) -> None:
    """Raises ValueError for a tokenizer with more tokens than the backbone's embedding has
    rows (a preset whose tokenizer is not its backbone's); cuts a `sequence_length` above the
    backbone's positions to them (a preset's preprocessor gets keras-hub's default length).
    Nothing to check for `preprocessor` None, or a tokenizer still being deserialized."""
    if preprocessor is None:
        return
    if getattr(preprocessor.tokenizer, "vocabulary", None) and (
            preprocessor.tokenizer.vocabulary_size() > backbone.vocab_size):
        raise ValueError(
            f"the preprocessor's tokenizer has {preprocessor.tokenizer.vocabulary_size()} "
            f"tokens, more than the backbone's {backbone.vocab_size}: a preset whose "
            "tokenizer is not its backbone's")
    if preprocessor.sequence_length > backbone.max_sequence_length:
        preprocessor.sequence_length = backbone.max_sequence_length


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraTextClassifier(ElectraTaskMixin, keras_hub.models.TextClassifier):
    """An `ElectraBackbone` under the original's [CLS] head: int32 `input_ids`, `input_mask`,
    `segment_ids` [batch, seq] (what the preprocessor makes of raw strings) -> logits
    [batch, num_classes].

    Args:
      backbone: a `keras_hub.models.ElectraBackbone`.
      num_classes: the number of classes.
      preprocessor: an `ElectraTextClassifierPreprocessor`, or None to call the model on
        features; a sequence_length above the backbone's positions is cut to them.
      activation: of the output layer (None: logits, for
        `SparseCategoricalCrossentropy(from_logits=True)`, keras-hub's default loss).
      dropout: the rate on the [CLS] vector.
    """

    backbone_cls = keras_hub.models.ElectraBackbone
    preprocessor_cls = ElectraTextClassifierPreprocessor

    def __init__(self, backbone, num_classes, preprocessor=None, activation=None, dropout=0.1,
                 **kwargs):
        # === Layers ===
        self.backbone = backbone
        self.leave_the_pooler_out(backbone)
        self.preprocessor = preprocessor
        fit_preprocessor_to_backbone(preprocessor, backbone)
        self.output_dropout = keras.layers.Dropout(dropout, dtype=backbone.dtype_policy,
                                                   name="classifier_dropout")
        self.output_dense = keras.layers.Dense(num_classes, activation=activation,
                                               kernel_initializer="glorot_uniform",
                                               dtype=backbone.dtype_policy, name="logits")
        # === Functional model ===
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in FEATURE_NAMES}
        sequence = backbone({BACKBONE_INPUTS[name]: tensor for name, tensor in inputs.items()}
                            )["sequence_output"]
        outputs = self.output_dense(self.output_dropout(sequence[:, 0, :]))
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        # === Config ===
        self.num_classes = num_classes
        self.activation = keras.activations.get(activation)
        self.dropout = dropout

    def get_config(self):
        return {**super().get_config(), "num_classes": self.num_classes,
                "activation": keras.activations.serialize(self.activation),
                "dropout": self.dropout}
