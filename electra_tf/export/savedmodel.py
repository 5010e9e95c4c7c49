"""Export of the pretrained discriminator as a SavedModel that TF Serving loads.

Signatures (all written with `keras.export.ExportArchive`, TensorFlow backend, traced without XLA
unless `jit_compile`, below):

- `serving_default`: int32 `input_ids`, `input_mask`, `segment_ids` [batch, seq], both dimensions
  dynamic -> float32 `logits` and `probabilities` (sigmoid) of "replaced" [batch, seq]. The
  three inputs must be 2-D with the same shape, ids must be in [0, vocab_size), segment ids in
  [0, type_vocab_size) and seq at most max_position_embeddings; otherwise the call fails with an
  `InvalidArgumentError` naming the rule. Its graph uses only TensorFlow core ops (no
  tensorflow-text, no XLA), so a stock `tensorflow_model_server` runs it.
- `serve_examples` (`with_examples=True`, the default): string `examples` [batch] of serialized
  `tf.Example`s with int64 features `input_ids`, `input_mask`, `segment_ids` (any length, as
  in the pretraining TFRecords, which are already padded) -> the same outputs. Examples of
  different lengths are padded with 0 to the longest one in the request; within one Example the
  three features must have the same number of values (else an `InvalidArgumentError`). The
  outputs cover the padded length, so padded positions should be ignored (input_mask == 0).
- `serve_text` (`with_tokenizer=True`): string `text` [batch] of raw texts -> tokenized in the
  graph by keras-hub's WordPiece tokenizer (tensorflow-text ops), `[CLS] tokens [SEP]` truncated
  to `max_seq_length` and padded with [PAD] to the longest sequence of the request -> the same
  outputs plus the int32 `input_ids` and `input_mask` it used. The vocabulary is stored as an
  asset (`assets/<vocab file name>`, also reachable as `loaded.vocab_file`). A SavedModel with
  this signature holds tensorflow-text ops in its function library, so the *whole* model (every
  signature) loads only in a model server built with TF Text ops (and in Python only after
  `import tensorflow_text`). Export it as a separate model if stock servers must load the other
  signatures.

For the MLM baseline (no discriminator) every signature returns the encoder's float32
`sequence_output` [batch, seq, hidden] instead of logits and probabilities.

`with_embeddings=True` adds the encoder's features for embedding use (`ElectraEncoder.embed`):
`serve_embeddings` (the three int32 inputs, checked as above) and, with the tokenizer,
`serve_text_embeddings` (string `text` [batch]) -> float32 `sequence_output` [batch, seq,
hidden] and `pooled_output` [batch, hidden], the final [CLS] vector (plus the `input_ids` and
`input_mask` used, from text).

`jit_compile=True` (every exporter in `electra_tf.export` takes it) compiles the model's
forward pass with XLA inside every signature (input checks, parsing and tokenization stay plain
ops): the same outputs within float32 rounding, faster on a CPU for small batches (fewer,
fused kernels), and each new [batch, seq] shape compiles once (about a second for
ELECTRA-Small) and is cached. A stock `tensorflow_model_server` runs it only when started with
`--xla_cpu_compilation_enabled=true`; Python's `tf.saved_model.load` needs nothing.
"""

from __future__ import annotations

import os

import keras
import tensorflow as tf

from electra_tf.errors import UserError

INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")
DEFAULT_SIGNATURE = "serving_default"
EXAMPLES_SIGNATURE = "serve_examples"
TEXT_SIGNATURE = "serve_text"
EMBEDDINGS_SIGNATURE = "serve_embeddings"
TEXT_EMBEDDINGS_SIGNATURE = "serve_text_embeddings"
ID_SPECS = [tf.TensorSpec([None, None], tf.int32, name=name) for name in INPUT_NAMES]


def new_archive(*layers) -> keras.export.ExportArchive:
    """An ExportArchive listing `layers`' weights as the SavedModel's `variables`, each saved
    once.

    `ExportArchive.track(layer)` lists Keras' variable wrappers, and the archive also saves the
    tf.Variables under them that its endpoints capture: every weight twice (an ELECTRA-Small
    classifier's SavedModel 106 MiB instead of 54, and twice the memory in a model server).
    Listing the tf.Variables themselves keeps `loaded.variables` and saves each weight once.
    """
    archive = keras.export.ExportArchive()
    trackable = archive._tf_trackable  # ExportArchive has no public hook for this
    for layer in layers:
        trackable.variables += [v.value for v in layer.variables]
        trackable.trainable_variables += [v.value for v in layer.trainable_variables]
        trackable.non_trainable_variables += [v.value for v in layer.non_trainable_variables]
    return archive


class ExportError(UserError):
    """An export that cannot be written as asked."""


def export_discriminator(pretrainer, export_dir: str, *, with_examples: bool = True,
                         with_tokenizer: bool = False, vocab_file: str | None = None,
                         lower_case: bool = True, strip_accents: bool | None = None,
                         max_seq_length: int = 128, jit_compile: bool = False,
                         with_embeddings: bool = False) -> str:
    """Writes the SavedModel described in the module docstring to `export_dir`; returns it.

    `with_tokenizer=True` adds `serve_text` and needs `vocab_file` (the run's vocab.txt);
    `lower_case` / `strip_accents` must match how the training data was tokenized, and
    `max_seq_length` (>= 2, at most the position table) bounds `[CLS] tokens [SEP]`;
    `jit_compile` compiles the forward pass with XLA (module docstring); `with_embeddings` adds
    `serve_embeddings` (and `serve_text_embeddings` with the tokenizer).
    """
    config = pretrainer.model_config
    archive = new_archive(pretrainer.encoder, *(
        [pretrainer.discriminator_head] if pretrainer.discriminator is not None else []))

    def forward(input_ids, input_mask, segment_ids):
        if pretrainer.discriminator is None:
            output = pretrainer.encoder(input_ids, input_mask, segment_ids, training=False)
            return {"sequence_output": tf.cast(output, tf.float32)}
        logits = tf.cast(pretrainer.discriminator_logits(input_ids, input_mask, segment_ids),
                         tf.float32)  # a bfloat16 export's (electra_tf.export.precision)
        return {"logits": logits, "probabilities": tf.sigmoid(logits)}

    outputs = checked_forward(forward, config, jit_compile)
    embeddings = (checked_forward(pretrainer.encoder.embed, config, jit_compile)
                  if with_embeddings else None)

    # The first endpoint is the default; ExportArchive wraps each one in a tf.function without
    # jit_compile (plain TensorFlow ops; `forward` may be a compiled function inside it) and
    # without autograph.
    archive.add_endpoint(DEFAULT_SIGNATURE, outputs, input_signature=ID_SPECS)

    if with_examples:
        def serve_examples(examples):
            return outputs(*parse_examples(examples))

        archive.add_endpoint(EXAMPLES_SIGNATURE, serve_examples,
                             input_signature=[tf.TensorSpec([None], tf.string, name="examples")])

    if with_embeddings:
        archive.add_endpoint(EMBEDDINGS_SIGNATURE, embeddings, input_signature=ID_SPECS)

    if with_tokenizer:
        # ExportArchive has no public hook for plain assets: the vocabulary (and a SentencePiece
        # tokenizer) are attached to the object it saves; `loaded.vocab_file` is the Asset.
        text_to_inputs = _text_preprocessor(archive._tf_trackable, vocab_file, config,
                                            lower_case, strip_accents, max_seq_length)

        def from_text(function):
            def serve(text):
                input_ids, input_mask, segment_ids = text_to_inputs(text)
                result = function(input_ids, input_mask, segment_ids)
                result.update(input_ids=input_ids, input_mask=input_mask)
                return result
            return serve

        text_spec = [tf.TensorSpec([None], tf.string, name="text")]
        archive.add_endpoint(TEXT_SIGNATURE, from_text(outputs), input_signature=text_spec)
        if with_embeddings:
            archive.add_endpoint(TEXT_EMBEDDINGS_SIGNATURE, from_text(embeddings),
                                 input_signature=text_spec)
    archive.write_out(export_dir, verbose=False)
    return export_dir


def checked_forward(forward, config, jit_compile: bool):
    """`outputs(input_ids, input_mask, segment_ids)`, int32 [batch, seq] each: `forward` of the
    inputs behind `validated_inputs`' checks, `forward` XLA-compiled as one function when
    `jit_compile` (the checks' Assert ops stay outside it: XLA cannot compile them). Floating
    outputs are float32, whatever the model computes in (`electra_tf.export.precision`).

    `outputs` is one traced function that every signature calls: the model is traced once per
    export and stored once in the SavedModel. (A signature of its own is traced twice by
    `ExportArchive.write_out`, outside and inside `tf.saved_model.save`, whose context is part
    of tf.function's cache key: four traces of the model for two signatures.)"""
    if jit_compile:
        forward = tf.function(forward, jit_compile=True, autograph=False)

    def outputs(input_ids, input_mask, segment_ids):
        result = forward(*validated_inputs(input_ids, input_mask, segment_ids, config))
        return tf.nest.map_structure(
            lambda t: tf.cast(t, tf.float32) if t.dtype.is_floating else t, result)

    return tf.function(outputs, input_signature=ID_SPECS, autograph=False).get_concrete_function()


def validated_inputs(input_ids, input_mask, segment_ids, config):
    """The inputs behind asserts on shapes and ranges (InvalidArgumentError with the rule)."""
    # A loaded signature checks dtypes but not shapes: a 1-D tensor gets through its TensorSpec,
    # and Grappler folds tf.rank to the traced rank 2. EnsureShape checks the rank at run time.
    input_ids, input_mask, segment_ids = (
        tf.ensure_shape(tensor, [None, None], name=f"check_{name}_is_batch_by_seq")
        for tensor, name in zip((input_ids, input_mask, segment_ids), INPUT_NAMES))
    ids_shape = tf.shape(input_ids)
    checks = [
        tf.debugging.assert_equal(
            tf.shape(input_mask), ids_shape,
            message="input_mask must have the same shape [batch, seq] as input_ids"),
        tf.debugging.assert_equal(
            tf.shape(segment_ids), ids_shape,
            message="segment_ids must have the same shape [batch, seq] as input_ids"),
        tf.debugging.assert_less_equal(
            ids_shape[1], config.max_position_embeddings,
            message=f"seq (the second dimension of input_ids) must be at most "
                    f"{config.max_position_embeddings} (model.max_position_embeddings)"),
        tf.debugging.assert_non_negative(input_ids, message="input_ids must be non-negative"),
        tf.debugging.assert_less(input_ids, config.vocab_size,
                                 message=f"input_ids must be below vocab_size {config.vocab_size}"),
        tf.debugging.assert_non_negative(segment_ids, message="segment_ids must be non-negative"),
        tf.debugging.assert_less(
            segment_ids, config.type_vocab_size,
            message=f"segment_ids must be below type_vocab_size {config.type_vocab_size}"),
    ]
    with tf.control_dependencies(checks):
        return tf.identity(input_ids), tf.identity(input_mask), tf.identity(segment_ids)


def add_id_endpoints(archive, outputs, with_examples: bool) -> None:
    """`serving_default` (three int32 [batch, seq] inputs) and, if asked, `serve_examples`
    (serialized tf.Examples) for `outputs(input_ids, input_mask, segment_ids) -> dict`."""
    archive.add_endpoint(DEFAULT_SIGNATURE, outputs, input_signature=ID_SPECS)
    if with_examples:
        archive.add_endpoint(EXAMPLES_SIGNATURE,
                             lambda examples: outputs(*parse_examples(examples)),
                             input_signature=[tf.TensorSpec([None], tf.string, name="examples")])


def parse_examples(examples):
    """Serialized tf.Examples [batch] -> int32 inputs [batch, longest], padded with 0."""
    features = tf.io.parse_example(
        examples, {name: tf.io.RaggedFeature(tf.int64) for name in INPUT_NAMES})
    lengths = features["input_ids"].row_lengths()
    checks = [
        tf.debugging.assert_equal(
            features[name].row_lengths(), lengths,
            message=f"every Example needs as many {name} values as input_ids values")
        for name in INPUT_NAMES[1:]]
    with tf.control_dependencies(checks):
        return tuple(tf.cast(features[name].to_tensor(default_value=0), tf.int32)
                     for name in INPUT_NAMES)


def load_text_tokenizer(trackable, vocab_file, config, lower_case, strip_accents,
                        max_seq_length, shortest=2):
    """(special ids, in-graph tokenizer) for a text signature, after checking the vocabulary
    fits the model and max_seq_length the positions. The vocabulary becomes a SavedModel Asset,
    `trackable.vocab_file` (`loaded.vocab_file` once loaded); a SentencePiece model's tokenizer
    (a `.model` vocab_file, `electra_tf.text.vocab_files`) is tracked as
    `trackable.sentencepiece`, which stores the model in the SavedModel."""
    # lazy: keras-hub and tensorflow-text load only for a SavedModel that tokenizes text
    from electra_tf.text import vocab_files

    if not vocab_file:
        raise ExportError("with_tokenizer needs a vocab_file (the vocab.txt or SentencePiece "
                          ".model the model was trained with)")
    if not shortest <= max_seq_length <= config.max_position_embeddings:
        raise ExportError(f"max_seq_length must be in [{shortest}, "
                          f"{config.max_position_embeddings}] (model.max_position_embeddings), "
                          f"got {max_seq_length}")
    size = len(vocab_files.load_tokens(vocab_file))
    if size > config.vocab_size:
        raise ExportError(f"{vocab_file} has {size} tokens, more than the model's "
                          f"vocab_size {config.vocab_size}: not the model's vocabulary")
    tokenizer = vocab_files.make_file_tokenizer(vocab_file, lower_case=lower_case,
                                                strip_accents=strip_accents)
    trackable.vocab_file = tf.saved_model.Asset(os.path.abspath(vocab_file))
    if vocab_files.is_sentencepiece(vocab_file):
        trackable.sentencepiece = tokenizer
    return vocab_files.load_special_ids(vocab_file), tokenizer


def _text_preprocessor(trackable, vocab_file, config, lower_case, strip_accents, max_seq_length):
    """texts [batch] -> int32 inputs [batch, longest]; the tokenizer's files on `trackable`."""
    ids, tokenizer = load_text_tokenizer(trackable, vocab_file, config, lower_case, strip_accents,
                                         max_seq_length)

    def text_to_inputs(text):
        tokens = tokenizer(text)[:, :max_seq_length - 2]  # ragged int32 [batch, (n)]
        column = tf.ones([tokens.nrows(), 1], tf.int32)
        sequences = tf.concat([column * ids.cls, tokens, column * ids.sep], axis=1)
        input_ids = sequences.to_tensor(default_value=ids.pad)
        input_mask = tf.ones_like(sequences).to_tensor(default_value=0)
        return input_ids, input_mask, tf.zeros_like(input_ids)

    return text_to_inputs
