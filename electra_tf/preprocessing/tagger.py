"""Words -> the tagger's features, as a keras-hub preprocessor.

`ElectraTaggerPreprocessor` makes of each sentence (its words) what `run_finetuning` makes for
tagging (`task_data.tagging.featurize_tagging`): `[CLS] pieces [SEP]` with every word's
WordPiece ids (an empty word becomes [UNK]), segment id 1 on every real token, and the position
of each kept word's first piece, under the original's truncation rule (`align_words`: room is
reserved by the word count, so a sentence of `sequence_length - 2` words or more becomes
`[SEP]` alone), all in the graph.

    preprocessor = ElectraTaggerPreprocessor.from_vocabulary("runs/small/vocab.txt")
    features = preprocessor([["EU", "rejects", "German", "call"], ["Peter", "Blackburn"]])
    # input_ids, input_mask, segment_ids: int32 [batch, sequence_length];
    # word_positions: int32 [batch, words], the first piece of each word, -1 for words cut
    preprocessor(words, tag_ids)  # -> (features, {"tags", "tag_mask"}): tag ids per word

Tag ids per word (ragged, or lists) become the tagger's labels: the id at each kept word's first
piece and a mask of 1.0 there.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from electra_tf.preprocessing.text_classifier import ElectraTextClassifierPreprocessor


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraTaggerPreprocessor(ElectraTextClassifierPreprocessor):
    """Sentences as words [batch, (words)] -> int32 `input_ids`, `input_mask`, `segment_ids`
    [batch, sequence_length] and `word_positions` [batch, max words], as `run_finetuning`
    featurizes tagging; `y`, tag ids per word [batch, (words)], -> `tags` (int32) and
    `tag_mask` (float32) [batch, sequence_length]. The tokenizer and its settings are the text
    classifier preprocessor's."""

    def call(self, x, y=None, sample_weight=None):
        words = _as_ragged(x, tf.string)  # [batch, (words)]
        pieces = self._token_ids(words.flat_values)  # [total words, (pieces)]
        empty = tf.equal(pieces.row_lengths(), 0)  # an empty word is [UNK], as the original's
        unk = self.tokenizer.token_to_id("[UNK]")
        pieces = tf.concat([pieces, tf.RaggedTensor.from_row_lengths(
            tf.fill([tf.reduce_sum(tf.cast(empty, tf.int32))], unk), tf.cast(empty, tf.int64))],
            axis=1)
        features, kept, row, position = _align(
            pieces, words.row_lengths(), self.sequence_length,
            self.tokenizer.cls_token_id, self.tokenizer.sep_token_id)
        if y is not None:
            tag_ids = tf.cast(_as_ragged(y, tf.int32).flat_values, tf.int32)
            where = tf.stack([tf.boolean_mask(row, kept), tf.boolean_mask(position, kept)], 1)
            shape = tf.cast(tf.shape(features["input_ids"]), tf.int64)
            y = {"tags": tf.scatter_nd(where, tf.boolean_mask(tag_ids, kept), shape),
                 "tag_mask": tf.scatter_nd(where, tf.ones_like(where[:, 0], tf.float32), shape)}
        return keras.utils.pack_x_y_sample_weight(features, y, sample_weight)


def predict_word_tags(model, sentences, tag_names=None, batch_size=32) -> list[list]:
    """Sentences (lists of words) -> the likeliest tag of each kept word, per sentence: ids, or
    names from `tag_names`, from `model`'s logits [batch, seq, tags] on the features of its
    `preprocessor` (an `ElectraTaggerPreprocessor`). Words cut by the truncation rule are left
    out, as the original scores them."""
    result = []
    for start in range(0, len(sentences), batch_size):
        features = model.preprocessor([list(s) for s in sentences[start:start + batch_size]])
        predicted = tf.argmax(model(features, training=False), -1).numpy()
        for ids, positions in zip(predicted, features["word_positions"].numpy()):
            tags = ids[positions[positions >= 0]].tolist()
            result.append([tag_names[t] for t in tags] if tag_names else tags)
    return result


def _as_ragged(values, dtype) -> tf.RaggedTensor:
    """Sentences [batch, (words)] as a ragged tensor with int64 row splits."""
    if isinstance(values, tf.RaggedTensor):
        return values.with_row_splits_dtype(tf.int64)
    if isinstance(values, tf.Tensor):
        return tf.RaggedTensor.from_tensor(values, row_splits_dtype=tf.int64)
    return tf.ragged.constant([list(row) for row in values], dtype=dtype,
                              row_splits_dtype=tf.int64)


def _align(pieces: tf.RaggedTensor, num_words: tf.Tensor, length: int, cls_id: int, sep_id: int):
    """`task_data.tagging.align_words` for a batch: pieces [total words, (pieces)] of the
    sentences' words (num_words [batch] each) -> (features, kept [total words], the sentence
    row and first-piece position of every word [total words])."""
    word_lengths = pieces.row_lengths()  # [total words]
    by_sentence = tf.RaggedTensor.from_row_lengths(word_lengths, num_words)
    row = by_sentence.value_rowids()  # [total words]
    before_all = tf.cumsum(word_lengths, exclusive=True)
    first = tf.gather(tf.concat([before_all, [tf.reduce_sum(word_lengths)]], 0),
                      by_sentence.row_starts())  # [batch]
    position = 1 + before_all - tf.gather(first, row)  # after [CLS] and the words before
    words_here = tf.gather(num_words, row)
    # the original stops when (words + 2) + ids so far + 1 > length; the guard: a word must
    # leave room for [SEP]. Both grow along the sentence, so the kept words are a prefix.
    kept = (words_here + 3 + position <= length) & (position + word_lengths + 1 <= length)
    has_cls = num_words + 3 <= length  # else the sentence is [SEP] alone
    batch = tf.size(num_words, out_type=tf.int64)
    body = tf.RaggedTensor.from_row_lengths(
        tf.ragged.boolean_mask(pieces, kept).flat_values,
        tf.math.unsorted_segment_sum(tf.where(kept, word_lengths, 0), row, batch))
    cls = tf.RaggedTensor.from_row_lengths(
        tf.fill([tf.reduce_sum(tf.cast(has_cls, tf.int32))], cls_id), tf.cast(has_cls, tf.int64))
    sep = tf.RaggedTensor.from_row_lengths(tf.fill([batch], sep_id), tf.ones([batch], tf.int64))
    ids = tf.concat([cls, tf.cast(body, tf.int32), sep], axis=1)
    mask = tf.sequence_mask(ids.row_lengths(), length, tf.int32)
    positions = tf.RaggedTensor.from_row_lengths(
        tf.cast(tf.where(kept, position, -1), tf.int32), num_words)
    features = {"input_ids": ids.to_tensor(0, shape=[None, length]), "input_mask": mask,
                "segment_ids": mask, "word_positions": positions.to_tensor(-1)}
    return features, kept, row, position
