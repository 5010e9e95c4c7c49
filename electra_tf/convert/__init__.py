"""Checkpoint conversion: Hugging Face (and, later, Google TF1 and keras-hub) into electra_tf."""

from electra_tf.convert.hf import ConversionError, load_hf_pretrainer, weight_links

__all__ = ["ConversionError", "load_hf_pretrainer", "weight_links"]
