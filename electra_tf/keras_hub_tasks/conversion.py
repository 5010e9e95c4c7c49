"""electra_tf's fine-tuned classifier -> keras-hub's `ElectraTextClassifier`, for a whole preset.

    classifier = electra_tf.load("runs/small_sst2")            # a fine-tuning run (one trial)
    to_keras_hub_text_classifier(classifier).save_to_preset("presets/small_sst2")
    # anywhere electra_tf.keras_hub_tasks is imported:
    keras_hub.models.TextClassifier.from_preset("presets/small_sst2").predict(["what a ride"])

The preset holds keras-hub's `ElectraBackbone` and `ElectraTokenizer` (loadable by keras-hub
alone), the head and the preprocessor.
"""

from __future__ import annotations

from electra_tf.convert.keras_hub import to_keras_hub_backbone
from electra_tf.keras_hub_tasks.text_classifier import ElectraTextClassifier


def to_keras_hub_text_classifier(classifier, preprocessor=None) -> ElectraTextClassifier:
    """An `ElectraTextClassifier` with the weights of our `ElectraClassifier` (encoder and
    head) and its preprocessor (or `preprocessor`). Its outputs match ours where keras-hub's
    backbone can represent the encoder exactly (the tanh GELU; `to_keras_hub_backbone`)."""
    if classifier.regression:
        raise ValueError("keras-hub's TextClassifier predicts classes; a regression head (STS-B) "
                         "has no keras-hub task to become")
    preprocessor = preprocessor or classifier.preprocessor
    if preprocessor is None:
        raise ValueError("the classifier has no preprocessor: give one "
                         "(ElectraTextClassifierPreprocessor.from_vocabulary('vocab.txt')), so "
                         "the preset holds its tokenizer")
    task = ElectraTextClassifier(to_keras_hub_backbone(classifier.encoder),
                                 classifier.num_labels, preprocessor=preprocessor,
                                 dropout=classifier.dropout)
    task.output_dense.set_weights(classifier.head.output_dense.get_weights())
    return task
