"""Keras' serialization registry learns this package's classes, so that a `.keras` file of any
electra_tf model reloads with plain `keras.saving.load_model` in a new process, after
`import electra_tf`, as keras-hub's do after `import keras_hub`.

Keras finds a saved object's class by its registered name (`electra_tf>ElectraClassifier`,
`electra_tf>AdamWeightDecay`) in that registry, which the modules defining the classes fill
when they are imported. Importing those modules imports Keras and TensorFlow, which `import
electra_tf` must not do (a command's `--help` would wait seconds for them). So
`register_when_keras_loads()`, which the package root calls, registers the classes at once if
Keras is already imported, and otherwise once Keras finishes its own import (a one-shot import
hook that then removes itself). Nothing else is changed: no environment, no TensorFlow config.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

# Every module that defines a class with `keras.saving.register_keras_serializable` (a test
# reads the package's sources and checks this list is whole).
REGISTERING_MODULES = (
    "electra_tf.models.activations",
    "electra_tf.models.transformer",
    "electra_tf.models.embeddings",
    "electra_tf.models.encoder",
    "electra_tf.models.heads",
    "electra_tf.models.span_heads",
    "electra_tf.models.pretrainer",
    "electra_tf.models.ablation_objectives",
    "electra_tf.models.classifier",
    "electra_tf.models.question_answerer",
    "electra_tf.models.tagger",
    "electra_tf.preprocessing.sentencepiece_tokenizer",
    "electra_tf.preprocessing.text_classifier",
    "electra_tf.preprocessing.tagger",
    "electra_tf.preprocessing.question_answerer",
    "electra_tf.keras_hub_tasks.text_classifier",
    "electra_tf.keras_hub_tasks.masked_lm",
    "electra_tf.keras_hub_tasks.token_classifier",
    "electra_tf.training.optimizer",
)


def register_keras_objects() -> None:
    """Imports every module that registers classes with Keras (about 0.6 s once Keras is in).

    A module that cannot be imported now is left out: an optional dependency missing, or (when
    Keras was first imported by one of this package's modules, half-initialised until Keras
    returns) a module that imports from that one; the code being imported brings in what it
    uses itself."""
    for module in REGISTERING_MODULES:
        try:
            importlib.import_module(module)
        except ImportError:
            pass


def register_when_keras_loads() -> None:
    """Registers the classes now if Keras is imported, else right after it is."""
    if "keras" in sys.modules:
        register_keras_objects()
    elif not any(isinstance(finder, _AfterKeras) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterKeras())


class _AfterKeras(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader that does find `keras`, so that the classes are
    registered as soon as Keras' own import is done; removes itself on the way."""

    def find_spec(self, name, path=None, target=None):
        if name != "keras":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module

        def exec_module_then_register(module):
            load(module)
            register_keras_objects()

        spec.loader.exec_module = exec_module_then_register
        return spec
