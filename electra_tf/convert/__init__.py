"""Checkpoint conversion: Google TF1 release, Hugging Face and keras-hub to and from electra_tf.

Names are imported on first use: importing one converter does not load the others.
"""

from electra_tf.lazy_names import lazy_names

_EXPORTS = {
    "load_google_checkpoint": "electra_tf.convert.google",
    "ConversionError": "electra_tf.convert.hf",
    "load_hf_pretrainer": "electra_tf.convert.hf",
    "save_hf": "electra_tf.convert.hf",
    "weight_links": "electra_tf.convert.hf",
    "from_keras_hub_backbone": "electra_tf.convert.keras_hub",
    "to_keras_hub_backbone": "electra_tf.convert.keras_hub",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_names(__name__, _EXPORTS)
