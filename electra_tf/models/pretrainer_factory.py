"""The one way to build a pretrainer: the objective's variant picks the class.

`build_pretrainer(model_config, objective)` returns an `ElectraPretrainer` for ELECTRA's
objective and its ablations that keep the discriminator, and a `CorruptedInputMlmPretrainer`
for the variants with a full-size masked LM in the discriminator's place ("replace_mlm",
"all_tokens_mlm"). Every entry point (training, loading, conversion, export, benchmarks)
builds through it.
"""

from electra_tf.config import ModelConfig, ObjectiveConfig
from electra_tf.models.ablation_objectives import CorruptedInputMlmPretrainer
from electra_tf.models.pretrainer import ElectraPretrainer

# objective.variant -> the class that trains it (every other variant: ElectraPretrainer)
_VARIANT_CLASSES = {
    "replace_mlm": CorruptedInputMlmPretrainer,
    "all_tokens_mlm": CorruptedInputMlmPretrainer,
}


def pretrainer_class(objective: ObjectiveConfig | None) -> type:
    """The pretrainer class for `objective` (None: ELECTRA's)."""
    variant = objective.variant if objective is not None else None
    return _VARIANT_CLASSES.get(variant, ElectraPretrainer)


def build_pretrainer(model_config: ModelConfig | None = None,
                     objective: ObjectiveConfig | None = None, **kwargs) -> ElectraPretrainer:
    """The pretrainer of `objective`, unbuilt; `kwargs` go to the constructor (name, dtype)."""
    return pretrainer_class(objective)(model_config, objective, **kwargs)
