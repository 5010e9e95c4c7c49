"""Export of a fine-tuned classifier or regressor as a SavedModel that TF Serving loads.

Signatures (the same conventions as the pretraining export, `electra_tf.export.savedmodel`):

- `serving_default`: int32 `input_ids`, `input_mask`, `segment_ids` [batch, seq], both dimensions
  dynamic -> float32 `logits` [batch, num_labels] and `probabilities` (softmax) for a
  classifier, or float32 `predictions` [batch] on the task's label scale (STS-B: 0-5) for a
  regressor. Only TensorFlow core ops, so a stock model server runs it.
- `serve_examples`: serialized `tf.Example`s with int64 `input_ids`, `input_mask`, `segment_ids`
  -> the same outputs.
- `serve_text` (`with_tokenizer=True`): string `text_a` [batch] (and `text_b` [batch] for a
  sentence-pair task) -> WordPiece in the graph, `[CLS] a [SEP] (b [SEP])` truncated longest-first
  to `max_seq_length`, padded to the longest sequence of the request -> the same outputs plus
  `label` (the predicted label name, string [batch], classifiers only) and the int32 inputs used.
  Like the pretraining export's `serve_text`, it holds tensorflow-text ops.

The task travels with the model: `loaded.task` (string), `loaded.label_names` (string [labels];
empty for a regressor) and, for a regressor, `loaded.label_range` (float32 [2]).
"""

from __future__ import annotations

import tensorflow as tf

from electra_tf.export.savedmodel import (TEXT_SIGNATURE, ExportError, add_id_endpoints,
                                          checked_forward, load_text_tokenizer, new_archive)


def export_classifier(model, export_dir: str, *, task: str, label_names=None,
                      label_range=(0.0, 1.0), with_examples: bool = True,
                      with_tokenizer: bool = False, pair: bool = False,
                      vocab_file: str | None = None, lower_case: bool = True,
                      max_seq_length: int = 128, jit_compile: bool = False) -> str:
    """Writes the SavedModel of an `ElectraClassifier` described above; returns `export_dir`.
    `jit_compile` compiles the forward pass with XLA (`electra_tf.export.savedmodel`)."""
    config = model.model_config
    if not model.regression and len(label_names or ()) != model.num_labels:
        raise ExportError(f"the classifier has {model.num_labels} labels, got label_names "
                          f"{label_names!r}")
    low, high = (float(v) for v in label_range)
    archive = new_archive(model)

    def forward(input_ids, input_mask, segment_ids):
        result = tf.cast(model({"input_ids": input_ids, "input_mask": input_mask,
                                "segment_ids": segment_ids}, training=False), tf.float32)
        if model.regression:
            return {"predictions": result * (high - low) + low}
        return {"logits": result, "probabilities": tf.nn.softmax(result)}

    outputs = checked_forward(forward, config, jit_compile)

    add_id_endpoints(archive, outputs, with_examples)
    trackable = archive._tf_trackable  # ExportArchive has no public hook for extra objects
    if with_tokenizer:
        text_to_inputs = _pair_preprocessor(trackable, vocab_file, config, lower_case,
                                            max_seq_length)
        names = None if model.regression else tf.constant(list(label_names))

        def serve_text(text_a, text_b=None):
            input_ids, input_mask, segment_ids = text_to_inputs(text_a, text_b)
            result = outputs(input_ids, input_mask, segment_ids)
            if names is not None:
                result["label"] = tf.gather(names, tf.argmax(result["logits"], axis=-1))
            result.update(input_ids=input_ids, input_mask=input_mask, segment_ids=segment_ids)
            return result

        specs = [tf.TensorSpec([None], tf.string, name="text_a")]
        if pair:
            specs.append(tf.TensorSpec([None], tf.string, name="text_b"))
        archive.add_endpoint(TEXT_SIGNATURE, serve_text, input_signature=specs)
    trackable.task = tf.Variable(task, trainable=False, name="task")
    trackable.label_names = tf.Variable(list(label_names or []), dtype=tf.string,
                                        trainable=False, name="label_names", shape=[None])
    if model.regression:
        trackable.label_range = tf.Variable([low, high], trainable=False, name="label_range")
    archive.write_out(export_dir, verbose=False)
    return export_dir


def _pair_preprocessor(trackable, vocab_file, config, lower_case, max_seq_length):
    """(text_a, text_b or None) -> int32 inputs [batch, longest]; the tokenizer's files on
    `trackable` (`load_text_tokenizer`)."""
    import keras_hub

    ids, tokenizer = load_text_tokenizer(trackable, vocab_file, config, lower_case, None,
                                         max_seq_length, shortest=3)
    # Round-robin trimming keeps the same tokens as the original's longest-first truncation
    # (the longer side loses one token at a time; on a tie the second segment).
    packer = keras_hub.layers.MultiSegmentPacker(
        sequence_length=max_seq_length, start_value=ids.cls, end_value=ids.sep,
        sep_value=ids.sep, pad_value=ids.pad, truncate="round_robin")

    def text_to_inputs(text_a, text_b):
        texts = (text_a,) if text_b is None else (text_a, text_b)
        segments = tuple(tokenizer(text) for text in texts)  # ragged int32 [batch, (n)]
        input_ids, segment_ids = packer(segments)
        # [CLS] + one [SEP] per segment + the tokens, at most max_seq_length after trimming
        lengths = 1 + sum(tf.cast(s.row_lengths(), tf.int32) + 1 for s in segments)
        lengths = tf.minimum(lengths, max_seq_length)
        longest = tf.reduce_max(lengths)
        input_mask = tf.sequence_mask(lengths, longest, dtype=tf.int32)
        return input_ids[:, :longest], input_mask, segment_ids[:, :longest]

    return text_to_inputs
