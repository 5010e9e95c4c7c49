"""SavedModel export for TF Serving. Names are imported on first use."""

from electra_tf.lazy_names import lazy_names

_EXPORTS = {"ExportError": "electra_tf.export.savedmodel",
            "export_discriminator": "electra_tf.export.savedmodel"}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_names(__name__, _EXPORTS)
