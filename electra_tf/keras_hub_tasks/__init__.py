"""ELECTRA task classes for keras-hub users: subclasses of keras-hub's tasks over
`keras_hub.models.ElectraBackbone`, which keras-hub itself lacks.

Importing this package registers them: `keras_hub.models.TextClassifier.from_preset(preset)` of
an ElectraBackbone preset then resolves to `ElectraTextClassifier` (keras-hub picks the subclass
of the class it is asked for whose `backbone_cls` is the preset's).
"""

from electra_tf.keras_hub_tasks.conversion import to_keras_hub_text_classifier
from electra_tf.keras_hub_tasks.text_classifier import ElectraTextClassifier

__all__ = ["ElectraTextClassifier", "to_keras_hub_text_classifier"]
