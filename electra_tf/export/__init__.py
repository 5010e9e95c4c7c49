"""SavedModel export for TF Serving."""

from electra_tf.export.savedmodel import ExportError, export_discriminator

__all__ = ["ExportError", "export_discriminator"]
