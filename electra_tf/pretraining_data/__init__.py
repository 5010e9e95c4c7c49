"""Pretraining data: from a corpus to TFRecords (packing, records, the build) to masked batches
(masking, the tf.data pipeline)."""
