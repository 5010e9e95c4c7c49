"""Export of a fine-tuned token tagger (CoNLL chunking, NER) as a SavedModel that TF Serving loads.

Signatures (the conventions of `electra_tf.export.savedmodel`):

- `serving_default`: int32 `input_ids`, `input_mask`, `segment_ids` [batch, seq], both dimensions
  dynamic (`[CLS] pieces [SEP]`, segment id 1 on every real token as in training) -> int32
  `tag_ids` [batch, seq] (the most likely tag at each position), float32 `probabilities`
  (softmax) and `logits` [batch, seq, num_tags]. Only the positions of each word's first piece
  carry a meaningful tag. Only TensorFlow core ops, so a stock model server runs it.
- `serve_examples`: serialized `tf.Example`s with int64 `input_ids`, `input_mask`, `segment_ids`
  -> the same outputs.
- `serve_text` (`with_tokenizer=True`): string `text` [batch], each one sentence whose words are
  separated by ASCII whitespace (split in the graph by `tf.strings.split`: space, \\t, \\n, \\v,
  \\f, \\r; other Unicode spaces such as U+00A0 stay inside a word, unlike Python's
  `str.split()`). Featurized as `data.tagging.featurize_tagging` does: each word tokenized on its
  own by WordPiece (a word with no pieces, e.g. only control characters, becomes [UNK]),
  `[CLS] pieces of the kept words [SEP]`, segment id 1 on every real token, padded with [PAD]
  (segment 0, mask 0) to the longest sequence of the request. The kept words follow the
  original's truncation rule (`data.tagging.align_words`): with L = `max_seq_length`, n words and
  S_k the pieces of words 1..k, word k is kept iff S_{k-1} <= L - n - 4 and S_k <= L - 2 (a
  prefix of the words; long sentences lose words early). Where n >= L - 2 the Python path
  writes `[SEP]` alone and this signature `[CLS] [SEP]`; neither tags a word there. Outputs:
  string `words` [batch, max_words] (padded with ""), string `tags` [batch, max_words] (the
  BIOES tag name predicted at each kept word's first piece; "" for padding and for words cut by
  truncation), float32 `tag_probabilities` [batch, max_words] (that tag's probability; 0 where
  there is no tag), int32 `num_tagged_words` [batch] and the int32 `input_ids`, `input_mask`,
  `segment_ids` [batch, longest] it used. Like the pretraining export's `serve_text`, it holds
  tensorflow-text ops: the whole SavedModel then loads only in a model server built with TF Text
  ops (in Python only after `import tensorflow_text`).

The task travels with the model: `loaded.task` (string) and `loaded.tag_names` (string
[num_tags], tag id = index), plus `loaded.vocab_file` (an asset) with `serve_text`.
"""

from __future__ import annotations

import tensorflow as tf

from electra_tf.export.savedmodel import (INPUT_NAMES, TEXT_SIGNATURE, ExportError,
                                          add_id_endpoints, checked_forward, load_text_tokenizer,
                                          new_archive)


def export_tagger(model, export_dir: str, *, task: str, tag_names, with_examples: bool = True,
                  with_tokenizer: bool = False, vocab_file: str | None = None,
                  lower_case: bool = True, max_seq_length: int = 256,
                  jit_compile: bool = False) -> str:
    """Writes the SavedModel of an `ElectraTagger` described above; returns `export_dir`.

    `tag_names` are the model's tags in id order (`TagSpace.labels`); `with_tokenizer=True` adds
    `serve_text` and needs `vocab_file`; `lower_case` and `max_seq_length` (>= 2) must match the
    fine-tuning run's; `jit_compile` compiles the forward pass with XLA
    (`electra_tf.export.savedmodel`).
    """
    tag_names = [str(name) for name in tag_names or ()]
    if len(tag_names) != model.num_tags:
        raise ExportError(f"the tagger has {model.num_tags} tags, got {len(tag_names)} tag_names "
                          f"{tag_names!r}")
    config = model.model_config
    archive = new_archive(model)

    def forward(*inputs):
        logits = tf.cast(model(dict(zip(INPUT_NAMES, inputs)), training=False), tf.float32)
        return {"tag_ids": tf.argmax(logits, axis=-1, output_type=tf.int32),
                "probabilities": tf.nn.softmax(logits), "logits": logits}

    outputs = checked_forward(forward, config, jit_compile)

    add_id_endpoints(archive, outputs, with_examples)
    trackable = archive._tf_trackable  # ExportArchive has no public hook for extra objects
    if with_tokenizer:
        text_to_features = _sentence_featurizer(trackable, vocab_file, config, lower_case,
                                                max_seq_length)
        names = tf.constant(tag_names)

        def serve_text(text):
            features = text_to_features(text)
            inputs = {name: features[name] for name in INPUT_NAMES}
            return {**_word_tags(features, outputs(**inputs), names), **inputs}

        archive.add_endpoint(TEXT_SIGNATURE, serve_text,
                             input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    trackable.task = tf.Variable(task, trainable=False, name="task")
    trackable.tag_names = tf.Variable(tag_names, dtype=tf.string, trainable=False,
                                      name="tag_names", shape=[None])
    archive.write_out(export_dir, verbose=False)
    return export_dir


def kept_words(piece_counts, max_seq_length: int):
    """`align_words`'s truncation in the graph: piece counts, ragged int [batch, (words)] ->
    (bool ragged: is the word kept, int64 ragged: the token position of its first piece, which
    means something for kept words only).

    With n words, c_k pieces for word k and S_k = c_1 + .. + c_k, word k is kept iff
    S_{k-1} <= L - n - 4 (the original's stop, which reserves a position per word) and
    S_k <= L - 2 (its pieces leave room for [SEP]); both bounds grow with k, so the kept words
    are a prefix. The first piece of word k sits at 1 + S_{k-1}, after [CLS].
    """
    counts = tf.cast(piece_counts, tf.int64)
    flat = counts.flat_values
    rows = counts.value_rowids()
    running = tf.cumsum(flat)  # over the whole batch
    before_row = tf.gather(tf.concat([tf.zeros([1], tf.int64), running], 0),
                           counts.row_splits[:-1])
    through = running - tf.gather(before_row, rows)  # S_k within the sentence
    before = through - flat  # S_{k-1}
    words = tf.gather(counts.row_lengths(), rows)  # n
    keep = (before <= max_seq_length - words - 4) & (through <= max_seq_length - 2)
    return counts.with_flat_values(keep), counts.with_flat_values(before + 1)


def _sentence_featurizer(trackable, vocab_file, config, lower_case, max_seq_length):
    """sentences [batch] -> the model inputs and each word's truncation; the tokenizer's files
    on `trackable` (`load_text_tokenizer`)."""
    ids, tokenizer = load_text_tokenizer(trackable, vocab_file, config, lower_case, None,
                                         max_seq_length)

    def text_to_features(text):
        words = tf.strings.split(text)  # ragged string [batch, (words)], on ASCII whitespace
        pieces = tokenizer(words.flat_values)  # ragged int32 [all words, (pieces)]
        no_pieces = tf.cast(tf.equal(pieces.row_lengths(), 0), pieces.row_splits.dtype)
        unknown = tf.RaggedTensor.from_row_lengths(
            tf.fill([tf.reduce_sum(no_pieces)], tf.constant(ids.unk, tf.int32)), no_pieces)
        pieces = tf.concat([pieces, unknown], axis=1)  # a word without pieces is [UNK]
        keep, positions = kept_words(words.with_flat_values(pieces.row_lengths()),
                                     max_seq_length)
        piece_kept = tf.gather(keep.flat_values, pieces.value_rowids())
        piece_sentence = tf.gather(words.value_rowids(), pieces.value_rowids())
        tokens = tf.RaggedTensor.from_value_rowids(
            tf.boolean_mask(pieces.flat_values, piece_kept),
            tf.boolean_mask(piece_sentence, piece_kept), nrows=words.nrows())
        column = tf.ones([words.nrows(), 1], tf.int32)
        sequences = tf.concat([column * ids.cls, tokens, column * ids.sep], axis=1)
        input_mask = tf.ones_like(sequences).to_tensor(default_value=0)
        return {"input_ids": sequences.to_tensor(default_value=ids.pad),
                "input_mask": input_mask, "segment_ids": input_mask,
                "words": words, "keep": keep, "positions": positions}

    return text_to_features


def _word_tags(features, token_outputs, names):
    """The tag predicted at each kept word's first piece -> the word-level outputs."""
    words, keep = features["words"], features["keep"].flat_values
    positions = tf.where(keep, features["positions"].flat_values, 0)
    at_words = tf.stack([words.value_rowids(), positions], axis=-1)
    tag_ids = token_outputs["tag_ids"]
    probabilities = tf.gather(token_outputs["probabilities"], tag_ids, batch_dims=2)
    tags = tf.where(keep, tf.gather(names, tf.gather_nd(tag_ids, at_words)), "")
    tag_probabilities = tf.where(keep, tf.gather_nd(probabilities, at_words), 0.0)
    return {"words": words.to_tensor(default_value=""),
            "tags": words.with_flat_values(tags).to_tensor(default_value=""),
            "tag_probabilities": words.with_flat_values(tag_probabilities).to_tensor(),
            "num_tagged_words": tf.reduce_sum(tf.cast(features["keep"], tf.int32), axis=1)}
