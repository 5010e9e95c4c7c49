"""Export of the pretrained discriminator as a SavedModel that TF Serving loads."""

from __future__ import annotations

import keras
import tensorflow as tf

INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")


def export_discriminator(pretrainer, export_dir: str) -> str:
    """Writes `serving_default`: int32 `input_ids`, `input_mask`, `segment_ids` [batch, seq]
    (both dimensions dynamic) -> float32 `logits` and `probabilities` of "replaced" [batch, seq].

    For the MLM baseline (no discriminator) the output is the encoder's `sequence_output`.
    """
    archive = keras.export.ExportArchive()
    archive.track(pretrainer.encoder)
    specs = [tf.TensorSpec([None, None], tf.int32, name=name) for name in INPUT_NAMES]
    if pretrainer.discriminator is not None:
        archive.track(pretrainer.discriminator_head)

        def serve(input_ids, input_mask, segment_ids):
            logits = pretrainer.discriminator_logits(input_ids, input_mask, segment_ids)
            return {"logits": logits, "probabilities": tf.sigmoid(logits)}
    else:
        def serve(input_ids, input_mask, segment_ids):
            output = pretrainer.encoder(input_ids, input_mask, segment_ids, training=False)
            return {"sequence_output": tf.cast(output, tf.float32)}

    archive.add_endpoint("serving_default", serve, input_signature=specs)
    archive.write_out(export_dir, verbose=False)
    return export_dir
