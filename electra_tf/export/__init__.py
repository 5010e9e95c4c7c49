"""SavedModel export for TF Serving."""

from electra_tf.export.savedmodel import export_discriminator

__all__ = ["export_discriminator"]
