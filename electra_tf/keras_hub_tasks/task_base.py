"""What every ELECTRA keras-hub task shares: a reload keeps its optimizer, and a run directory
given to `from_preset` gets the call that reads it.

keras-hub's tasks override `compile` (for their "auto" defaults), and Keras does not compile a
reloaded model whose class overrides it (`Model.compile_from_config` warns and returns): a
`.keras` file of one reloads uncompiled, and its optimizer's state is dropped with a warning.
The saved compile config holds what the task's `compile` passed on to Keras, so compiling with
it again is exact.

keras-hub's `from_preset` reads presets (config.json); given an electra_tf run directory it
stops with keras-hub's "has no config.json". The native task classes read run directories.
"""

from __future__ import annotations

import os

import keras

from electra_tf import run_directory
from electra_tf.errors import CheckpointError

# What reads a run directory instead of each keras-hub task.
INSTEAD = {
    "ElectraTextClassifier": "electra_tf.ElectraClassifier.from_preset(run_dir, num_labels=...) "
                             "reads it as it is",
    "ElectraTokenClassifier": "electra_tf.ElectraTagger.from_preset(run_dir, num_tags=...) reads "
                              "it as it is",
    "ElectraMaskedLM": "electra_tf.keras_hub_tasks.to_keras_hub_masked_lm(run_dir) converts its "
                       "generator",
}


class ElectraTaskMixin:
    """A mixin for keras-hub tasks: `compile_from_config` compiles them as saved,
    `from_preset` refuses a run directory naming the call that reads it, and the backbone's
    pooler stays out of training."""

    @staticmethod
    def leave_the_pooler_out(backbone) -> None:
        """Marks the backbone's pooler (`pooled_dense`, which no ELECTRA task reads: the
        original's heads take the [CLS] vector or every token) not trainable, so that Keras
        does not warn on every fit that it gets no gradient. Its weights stay in the preset."""
        pooler = next((layer for layer in backbone.layers if layer.name == "pooled_dense"), None)
        if pooler is not None:
            pooler.trainable = False

    @classmethod
    def from_preset(cls, preset, **kwargs):
        _refuse_run_directory(cls.__name__, preset)
        return super().from_preset(preset, **kwargs)

    def compile_from_config(self, config):
        self.compile(**keras.saving.deserialize_keras_object(config))
        if getattr(self, "optimizer", None) is not None and self.built:
            self.optimizer.build(self.trainable_variables)  # its saved state loads next


def _refuse_run_directory(class_name: str, preset) -> None:
    """ValueError when `preset` is a run directory of this project, not a keras-hub preset."""
    if not isinstance(preset, str) or "://" in preset or os.path.exists(
            os.path.join(preset, run_directory.KERAS_HUB_CONFIG)):
        return  # a keras-hub preset (its task.json is not our task card), or a remote one
    try:
        kind = run_directory.locate(preset).kind
    except (CheckpointError, OSError):
        return  # not ours: keras-hub says what is missing
    if kind not in (run_directory.PRETRAINING, run_directory.FINETUNING, run_directory.TRIALS):
        return
    instead = INSTEAD[class_name]
    if class_name == "ElectraMaskedLM" and kind != run_directory.PRETRAINING:
        instead = "a fine-tuning run has no masked-LM head"
    raise ValueError(
        f"{preset} is an electra_tf {kind} directory, not a keras-hub preset (config.json): "
        f"{instead}; or write a preset first with `python -m electra_tf.convert_checkpoint "
        f"--from electra_tf --input {preset} --to keras_hub --output_dir PRESET`")
