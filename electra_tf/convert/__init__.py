"""Checkpoint conversion: Google TF1 release, Hugging Face and keras-hub to and from electra_tf."""

from electra_tf.convert.google import load_google_checkpoint
from electra_tf.convert.hf import ConversionError, load_hf_pretrainer, save_hf, weight_links
from electra_tf.convert.keras_hub import from_keras_hub_backbone, to_keras_hub_backbone

__all__ = ["ConversionError", "from_keras_hub_backbone", "load_google_checkpoint",
           "load_hf_pretrainer", "save_hf", "to_keras_hub_backbone", "weight_links"]
