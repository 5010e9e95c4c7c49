"""ELECTRA task classes for keras-hub users: subclasses of keras-hub's tasks over
`keras_hub.models.ElectraBackbone`, which keras-hub itself lacks.

- `ElectraTextClassifier` (a `TextClassifier`): the original's [CLS] head, on raw strings.
- `ElectraMaskedLM` (a `MaskedLM`): the ELECTRA generator as a fill-mask model.
- `ElectraTokenClassifier` (a `Task`): the original's tagging head, on sentences as word lists.
- `to_keras_hub_text_classifier`, `to_keras_hub_token_classifier`, `to_keras_hub_masked_lm`:
  our fine-tuned classifier, fine-tuned tagger and pretrainer's generator -> those tasks.

Importing this package registers them: `keras_hub.models.TextClassifier.from_preset(preset)` of
an ElectraBackbone preset then resolves to `ElectraTextClassifier`, and
`keras_hub.models.MaskedLM.from_preset(preset)` to `ElectraMaskedLM` (keras-hub picks the
subclass of the class it is asked for whose `backbone_cls` is the preset's). keras-hub has no
token-classifier base class: load that one with `ElectraTokenClassifier.from_preset(preset)`.

    masked_lm = keras_hub.models.MaskedLM.from_preset("presets/small_generator")
    masked_lm.fill_mask(["the [MASK] sat on the mat"])
"""

from electra_tf.keras_hub_tasks.conversion import (to_keras_hub_masked_lm,
                                                   to_keras_hub_text_classifier,
                                                   to_keras_hub_token_classifier)
from electra_tf.keras_hub_tasks.masked_lm import ElectraMaskedLM, ElectraMaskedLMPreprocessor
from electra_tf.keras_hub_tasks.text_classifier import ElectraTextClassifier
from electra_tf.keras_hub_tasks.token_classifier import ElectraTokenClassifier

__all__ = ["ElectraMaskedLM", "ElectraMaskedLMPreprocessor", "ElectraTextClassifier",
           "ElectraTokenClassifier", "to_keras_hub_masked_lm", "to_keras_hub_text_classifier",
           "to_keras_hub_token_classifier"]
