"""LiteRT (TensorFlow Lite) export: one `.tflite` file that `ai-edge-litert`'s interpreter runs
without TensorFlow, on CPUs (XNNPACK's kernels) and devices; float32, or quantized by the
converter.

    from electra_tf.export.litert import export_litert

    export_litert(electra_tf.load("runs/mnli/trial_0"), "mnli.tflite", max_seq_length=128,
                  quantize="int8_dynamic")

Inputs: int32 `input_ids`, `input_mask`, `segment_ids` [batch, max_seq_length]; the batch is
dynamic (resize the interpreter's inputs, or use its signature runner), the length fixed at
export: pad every request to it. Outputs (float32), by what the model is:

- a pretrainer (`ElectraPretrainer`): the discriminator's `logits` and `probabilities`
  [batch, seq] that a token was replaced (an MLM-only pretrainer: its `sequence_output`);
- an `ElectraEncoder` (a keras-hub preset's): `sequence_output` [batch, seq, hidden] and
  `pooled_output` [batch, hidden], the final [CLS] vector;
- an `ElectraClassifier`: `logits` and `probabilities` [batch, labels] (a regressor:
  `predictions` [batch], on the model's 0-1 scale);
- an `ElectraTagger`: `logits` and `probabilities` [batch, seq, tags];
- an `ElectraQuestionAnswerer`: its span head's beam outputs, as the SavedModel's
  `serving_default` (`start_top_index`, ..., `answerable_logit`).

`quantize`: "none" (float32), "float16" (weights stored in float16, computed in float32) or
"int8_dynamic" (weights in int8, activations quantized per request: XNNPACK's int8 kernels).
The file appears whole (written beside it, then renamed) or not at all.
"""

from __future__ import annotations

import os
import tempfile

import tensorflow as tf

from electra_tf.export.savedmodel import INPUT_NAMES, ExportError, new_archive

QUANTIZATIONS = ("none", "float16", "int8_dynamic")  # the command's flag lists the same


def export_litert(model, path: str, *, max_seq_length: int = 128,
                  quantize: str = "none") -> dict:
    """Writes `model` (see the module docstring) to the `.tflite` file `path`; returns {"path",
    "kind", "quantize", "bytes"}.

    Raises:
      ExportError: an unknown `quantize`, a length outside [2, the model's positions], a model
        of no kind above, or one the converter cannot convert (nothing is written then).
    """
    if quantize not in QUANTIZATIONS:
        raise ExportError(f"quantize must be one of {', '.join(QUANTIZATIONS)}, got "
                          f"{quantize!r}")
    kind, outputs = _outputs(model)
    encoder = model if kind == "encoder" else model.encoder
    positions = encoder.embeddings.max_position_embeddings
    if not 2 <= max_seq_length <= positions:
        raise ExportError(f"max_seq_length must be in [2, {positions}] (the model's positions), "
                          f"got {max_seq_length}")
    spec = [tf.TensorSpec([None, max_seq_length], tf.int32, name=n) for n in INPUT_NAMES]
    chains, encoder.inference_chains = encoder.inference_chains, 1
    try:
        with tempfile.TemporaryDirectory(prefix="litert_") as staging:
            archive = new_archive(model)
            # traced once here: ExportArchive alone traces an endpoint twice (savedmodel.py)
            traced = tf.function(outputs, input_signature=spec, autograph=False)
            archive.add_endpoint("serving_default", traced.get_concrete_function(),
                                 input_signature=spec)
            archive.write_out(staging, verbose=False)
            content = _convert(staging, quantize, kind)
    finally:
        encoder.inference_chains = chains
    _write_whole(path, content)
    return {"path": path, "kind": kind, "quantize": quantize, "bytes": len(content)}


def _outputs(model):
    """(kind, forward: the three int32 inputs -> float32 outputs) of an electra_tf model."""
    # lazy: the model classes (and keras-hub under them) load when a model is exported
    from electra_tf.models import (ElectraClassifier, ElectraEncoder, ElectraPretrainer,
                                   ElectraQuestionAnswerer, ElectraTagger)

    def inputs(input_ids, input_mask, segment_ids):
        return {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}

    def as_float32(result):
        return {name: tf.cast(value, tf.float32) if value.dtype.is_floating else value
                for name, value in result.items()}

    if isinstance(model, ElectraPretrainer):
        if model.discriminator is None:
            return "pretrainer", lambda *x: as_float32(
                {"sequence_output": model.encoder(*x, training=False)})

        def discriminator(*x):
            logits = tf.cast(model.discriminator_logits(*x), tf.float32)
            return {"logits": logits, "probabilities": tf.sigmoid(logits)}
        return "pretrainer", discriminator
    if isinstance(model, ElectraEncoder):
        return "encoder", lambda *x: as_float32(model.embed(*x))
    if isinstance(model, ElectraClassifier):
        def classifier(*x):
            result = tf.cast(model(inputs(*x), training=False), tf.float32)
            if model.regression:
                return {"predictions": result}
            return {"logits": result, "probabilities": tf.nn.softmax(result)}
        return "classifier", classifier
    if isinstance(model, ElectraTagger):
        def tagger(*x):
            logits = tf.cast(model(inputs(*x), training=False), tf.float32)
            return {"logits": logits, "probabilities": tf.nn.softmax(logits)}
        return "tagger", tagger
    if isinstance(model, ElectraQuestionAnswerer):
        return "question answerer", lambda *x: as_float32(model(inputs(*x), training=False))
    raise ExportError(f"a {type(model).__name__} has no LiteRT export: export a pretrainer, an "
                      "encoder, a classifier, a tagger or a question answerer")


def _convert(saved_model_dir: str, quantize: str, kind: str) -> bytes:
    converter = tf.lite.TFLiteConverter.from_saved_model(saved_model_dir)
    if quantize != "none":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if quantize == "float16":
        converter.target_spec.supported_types = [tf.float16]
    try:
        return converter.convert()
    except Exception as e:  # the converter's errors are of many types, each a long report
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ExportError(f"LiteRT's converter cannot convert this {kind} ({first[:300]}): "
                          "serve it as a SavedModel (python -m electra_tf.export_savedmodel)"
                          ) from None


def _write_whole(path: str, content: bytes) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    partial = f"{path}.partial"
    try:
        with open(partial, "wb") as f:
            f.write(content)
        os.replace(partial, path)
    except BaseException:
        if os.path.exists(partial):
            os.remove(partial)
        raise
