"""Questions and contexts -> the question answerer's windows, as a keras-hub preprocessor.

`ElectraQuestionAnswererPreprocessor` makes in the graph what `run_finetuning` makes for SQuAD
(`task_data.squad_features.QAFeaturizer`): the context split into words at whitespace (space,
tab, CR, LF, U+202F), each word WordPiece-tokenized after BERT's text cleaning, the question cut
to `max_query_length` tokens, and the context tokens cut into windows of `sequence_length -
len(question) - 3` tokens that start `doc_stride` tokens apart, each `[CLS] question [SEP]
window [SEP]`. One example gives one window or more (none for an empty context), so the output
has a row per window:

    preprocessor = ElectraQuestionAnswererPreprocessor.from_vocabulary("runs/small/vocab.txt")
    features = preprocessor(x=(["Who wrote it?"], ["It was written by Ann in 1990."]))
    # input_ids, input_mask, segment_ids: int32 [windows, sequence_length]
    # example_index: int32 [windows], the example (row of x) of each window
    # token_to_word: int32 [windows, sequence_length], the context word of each context
    #   token (-1 elsewhere); token_is_max_context: int32, 1 where this window gives the token
    #   the most context (the original's rule); char_start, char_end: int32, the character
    #   offsets of the token's word in its context (end exclusive; -1 elsewhere)
    preprocessor(x, {"answer_start": [18], "answer_text": ["Ann"]})
    # -> (features, {"start_positions", "end_positions": int32 [windows],
    #                "is_impossible": float32 [windows]})

Labels follow the original: the answer's words (from its character offset) narrowed to the
tokens of the answer text, at their position in each window that holds them whole, else [CLS]
(0, 0); an empty `answer_text` or a negative `answer_start` marks a question without answer
(SQuAD 2.0). Sample weights are repeated for every window of their example.

Text cleaning drops control and format characters and makes Unicode spaces ASCII spaces in the
graph, as BERT's `_clean_text`; code points unassigned in Unicode, which Python's cleaning also
drops, are kept (RE2 has no class for them).
"""

from __future__ import annotations

import keras
import tensorflow as tf

from electra_tf.preprocessing.text_classifier import ElectraTextClassifierPreprocessor

CONTEXT_WORD_SEPARATORS = r"[ \t\r\n\x{202F}]+"  # `task_data.squad.is_whitespace`
FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids", "example_index", "token_to_word",
                 "token_is_max_context", "char_start", "char_end")
_ROW = 2 ** 40  # row * _ROW + offset orders (row, offset) pairs for one sorted search


def clean_text(texts: tf.Tensor) -> tf.Tensor:
    """BERT's `_clean_text` in the graph: strings [n] -> strings [n]."""
    texts = tf.strings.regex_replace(texts, r"[\t\n\r]", " ")
    texts = tf.strings.regex_replace(texts, r"[\x{FFFD}\p{Cc}\p{Cf}\p{Co}]", "")
    return tf.strings.regex_replace(texts, r"\p{Zs}", " ")


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraQuestionAnswererPreprocessor(ElectraTextClassifierPreprocessor):
    """(questions, contexts) [batch] -> a row per window (see the module docstring); labels
    `{"answer_start": int [batch], "answer_text": string [batch]}` -> per-window span labels.

    Args:
      tokenizer: a `keras_hub.models.ElectraTokenizer`.
      sequence_length: the window length, [CLS] and both [SEP]s included (`max_seq_length`).
      doc_stride: tokens between the starts of consecutive windows.
      max_query_length: questions are cut to this many tokens.
      normalization: "bert" (the original's ids, the default) or "keras_hub".
    """

    def __init__(self, tokenizer, sequence_length=512, doc_stride=128, max_query_length=64,
                 **kwargs):
        super().__init__(tokenizer, sequence_length=sequence_length, **kwargs)
        smallest_window = sequence_length - max_query_length - 3
        if max_query_length < 1 or smallest_window < 1 or not 1 <= doc_stride <= smallest_window:
            raise ValueError(
                f"doc_stride {doc_stride} must be between 1 and the smallest context window, "
                f"sequence_length {sequence_length} - max_query_length {max_query_length} - 3")
        self.doc_stride = doc_stride
        self.max_query_length = max_query_length

    def call(self, x, y=None, sample_weight=None):
        if not (isinstance(x, tuple) and len(x) == 2):
            raise ValueError("the question answerer's preprocessor takes x=(questions, contexts)")
        # lazy: tensorflow-text only where contexts are split (as electra_tf.export does)
        import tensorflow_text as tf_text

        questions, contexts = (tf.reshape(tf.convert_to_tensor(t, tf.string), [-1]) for t in x)
        words = tf_text.regex_split_with_offsets(contexts, CONTEXT_WORD_SEPARATORS, "")
        answer_texts = (tf.reshape(tf.convert_to_tensor(y["answer_text"], tf.string), [-1])
                        if y is not None else tf.zeros([0], tf.string))
        # one tokenizer call (each call is a large graph): questions, context words, answers
        ids = self._token_ids(clean_text(tf.concat([questions, words[0].flat_values,
                                                    answer_texts], 0)))
        first_word, first_answer = tf.size(questions), tf.size(questions) + tf.size(
            words[0].flat_values)
        query = ids[:first_word][:, :self.max_query_length]
        context = self._context_tokens(contexts, *words, ids[first_word:first_answer])
        windows = self._windows(query.row_lengths(), context["ids"].row_lengths())
        features = self._window_features(query, context, windows)
        if y is not None:
            answer = self._answer_tokens(y["answer_start"], answer_texts, ids[first_answer:],
                                         context)
            y = _window_labels(answer, windows, query.row_lengths())
        if sample_weight is not None:
            sample_weight = tf.gather(sample_weight, windows["example"])
        return keras.utils.pack_x_y_sample_weight(features, y, sample_weight)

    @staticmethod
    def _context_tokens(contexts, words, start_bytes, end_bytes, pieces):
        """The contexts' tokens [batch, (tokens)] from their words [batch, (words)] (with
        byte offsets) and the words' pieces [all words, (pieces)], with each token's word (its
        index in the context) and that word's character span, and the words' first token."""
        batch = tf.shape(contexts, out_type=tf.int64)[0]
        tokens_per_context = tf.math.unsorted_segment_sum(pieces.row_lengths(),
                                                          words.value_rowids(), batch)
        word_of_token = pieces.value_rowids()  # into words.flat_values
        local_word = tf.ragged.range(words.row_lengths()).flat_values
        characters = tf.strings.unicode_decode_with_offsets(contexts, "UTF-8")[1]
        to_char = lambda byte_offsets: tf.cast(_search(characters, byte_offsets, "left"), tf.int32)
        return {"ids": tf.RaggedTensor.from_row_lengths(pieces.flat_values, tokens_per_context),
                "word": tf.gather(local_word, word_of_token),
                "char_start": tf.gather(to_char(start_bytes), word_of_token),
                "char_end": tf.gather(to_char(end_bytes), word_of_token),
                "words": words, "word_start_bytes": start_bytes, "characters": characters,
                "first_token_of_word": tf.cumsum(pieces.row_lengths(), exclusive=True)
                - tf.gather(tf.cumsum(tokens_per_context, exclusive=True), words.value_rowids()),
                "tokens_of_word": pieces.row_lengths()}

    def _windows(self, query_lengths, context_lengths):
        """The windows: their example, index, first context token, length [windows]; every
        context token's max-context window (flat over the batch's context tokens)."""
        stride = tf.constant(self.doc_stride, tf.int64)
        room = self.sequence_length - query_lengths - 3  # [batch]
        count = tf.where(context_lengths == 0, tf.zeros_like(room), tf.where(
            context_lengths <= room, tf.ones_like(room),
            1 + (context_lengths - room + stride - 1) // stride))
        example = tf.repeat(tf.range(tf.size(count, out_type=tf.int64)), count)
        index = tf.ragged.range(count).flat_values
        start = index * stride
        length = tf.minimum(tf.gather(room, example), tf.gather(context_lengths, example) - start)
        return {"example": example, "index": index, "start": start, "length": length,
                "best": _max_context_windows(room, context_lengths, count, stride)}

    def _window_features(self, query, context, windows):
        """Each window's columns, worked out on a [windows, sequence_length] grid: [CLS] at 0,
        the query from 1, [SEP], the window's context tokens, [SEP], padding."""
        example = windows["example"]
        column = tf.range(self.sequence_length, dtype=tf.int64)[None, :]
        query_length = tf.gather(query.row_lengths(), example)[:, None]
        context_end = query_length + 2 + windows["length"][:, None]  # the last [SEP]'s column
        is_query = (column >= 1) & (column <= query_length)
        is_context = (column >= query_length + 2) & (column < context_end)
        is_sep = (column == query_length + 1) | (column == context_end)
        query_token = tf.gather(query.row_starts(), example)[:, None] + column - 1
        context_token = (tf.gather(tf.cumsum(context["ids"].row_lengths(), exclusive=True),
                                   example) + windows["start"])[:, None] + column - (
            query_length + 2)  # into the flat context tokens
        of_query = lambda values: _gather_or_zero(tf.cast(values, tf.int64), tf.where(
            is_query, query_token, tf.size(values, out_type=tf.int64)))
        of_context = lambda values, outside: tf.where(is_context, _gather_or_zero(
            tf.cast(values, tf.int64), tf.where(is_context, context_token,
                                                tf.size(values, out_type=tf.int64))), outside)
        special = tf.where(column == 0, self.tokenizer.cls_token_id,
                           tf.where(is_sep, self.tokenizer.sep_token_id, 0))
        ids = tf.where(is_query, of_query(query.flat_values),
                       of_context(context["ids"].flat_values, tf.cast(special, tf.int64)))
        features = {"input_ids": ids, "input_mask": column <= context_end,
                    "segment_ids": (column >= query_length + 2) & (column <= context_end),
                    "example_index": example,
                    "token_to_word": of_context(context["word"], -1),
                    "token_is_max_context": of_context(windows["best"], -1)
                    == windows["index"][:, None],
                    "char_start": of_context(context["char_start"], -1),
                    "char_end": of_context(context["char_end"], -1)}
        return {name: tf.cast(value, tf.int32) for name, value in features.items()}

    @staticmethod
    def _answer_tokens(answer_start, answer_text, answer_ids, context):
        """The gold answer's inclusive token span in each context [batch], and whether the
        question has an answer."""
        answer_start = tf.reshape(tf.cast(answer_start, tf.int64), [-1])
        answerable = (answer_start >= 0) & (tf.strings.length(answer_text) > 0)
        characters = context["characters"]
        last_char = tf.maximum(characters.row_lengths() - 1, 0)
        end_char = answer_start - 1 + tf.cast(tf.strings.length(answer_text, "UTF8_CHAR"),
                                              tf.int64)
        byte_of = lambda char: _gather_or_zero(  # of the char-th character of each context
            characters.flat_values,
            characters.row_starts() + tf.clip_by_value(char, 0, last_char))
        words = context["words"]
        word_of = lambda char: tf.maximum(_search(
            context["word_start_bytes"], byte_of(char)[:, None], "right")[:, 0] - 1, 0)
        first_word = words.row_starts() + word_of(answer_start)  # into words.flat_values
        last_word = words.row_starts() + word_of(end_char)
        has_words = words.row_lengths() > 0
        start = _gather_or_zero(context["first_token_of_word"], first_word)
        end = (_gather_or_zero(context["first_token_of_word"], last_word)
               + _gather_or_zero(context["tokens_of_word"], last_word) - 1)
        start, end = _improve_answer_span(context["ids"], start, end, answer_ids)
        return {"start": start, "end": end, "answerable": answerable & has_words}

    def get_config(self):
        return {**super().get_config(), "doc_stride": self.doc_stride,
                "max_query_length": self.max_query_length}


def _gather_or_zero(values, indices):
    """tf.gather that reads 0 one past the end (where a batch of empty contexts points)."""
    return tf.gather(tf.concat([values, tf.zeros([1], values.dtype)], 0), indices)


def _search(sorted_rows: tf.RaggedTensor, values, side: str) -> tf.Tensor:
    """For values [batch, (n)] (or [batch, n]), the index in their row of `sorted_rows` [batch,
    (m)] (ascending in each row) where each would be inserted; flat [total n] (or [batch, n])."""
    keys = sorted_rows.value_rowids() * _ROW + tf.cast(sorted_rows.flat_values, tf.int64)
    if isinstance(values, tf.RaggedTensor):
        rows, flat = values.value_rowids(), tf.cast(values.flat_values, tf.int64)
    else:
        rows = tf.broadcast_to(tf.range(tf.shape(values, out_type=tf.int64)[0])[:, None],
                               tf.shape(values, out_type=tf.int64))
        flat = tf.cast(values, tf.int64)
    found = tf.searchsorted(keys, tf.reshape(rows * _ROW + flat, [-1]), side=side,
                            out_type=tf.int64)
    return tf.reshape(found - tf.gather(sorted_rows.row_starts(), tf.reshape(rows, [-1])),
                      tf.shape(flat))


def _max_context_windows(room, context_lengths, count, stride):
    """`task_data.squad_features.max_context_windows` for every context token of the batch,
    flat: the window whose score min(left, right context) + 0.01 * length is highest (the first
    on ties), among the few windows that hold the token. Scores are kept times 100, as ints."""
    token_context = tf.repeat(tf.range(tf.size(context_lengths, out_type=tf.int64)),
                              context_lengths)
    position = tf.ragged.range(context_lengths).flat_values
    room, length, windows = (tf.gather(t, token_context) for t in (room, context_lengths, count))
    first = tf.maximum((position - room + 1 + stride - 1) // stride, 0)
    last = tf.minimum(windows - 1, position // stride)
    candidate = tf.ragged.range(first, last + 1)  # [tokens, (windows holding the token)]
    start = candidate * stride
    window_length = tf.minimum(room[:, None], length[:, None] - start)
    end = start + window_length - 1
    score = 100 * tf.minimum(position[:, None] - start, end - position[:, None]) + window_length
    best = score == tf.reduce_max(score, axis=1)[:, None]
    return tf.reduce_min(tf.ragged.boolean_mask(candidate, best), axis=1)


def _improve_answer_span(context_ids, start, end, answer_ids):
    """`task_data.squad_features.improve_answer_span` for a batch: the first sub-span of
    tokens [start, end] equal to the answer's tokens, or (start, end) when none is."""
    answer_length = answer_ids.row_lengths()
    count = tf.where(answer_length > 0, tf.maximum(end - answer_length + 2 - start, 0), 0)
    candidate = tf.ragged.range(start, start + count)  # [batch, (candidates)]
    example = candidate.value_rowids()
    offsets = tf.ragged.range(tf.gather(answer_length, example))  # [candidates, (answer)]
    in_context = tf.gather(context_ids.flat_values, offsets + (
        tf.gather(context_ids.row_starts(), example) + candidate.flat_values)[:, None])
    in_answer = tf.gather(answer_ids.flat_values,
                          offsets + tf.gather(answer_ids.row_starts(), example)[:, None])
    matches = tf.reduce_all(tf.equal(in_context, in_answer), axis=1)
    never = tf.int64.max
    first = tf.reduce_min(candidate.with_flat_values(
        tf.where(matches, candidate.flat_values, never)), axis=1)
    found = first < never
    return tf.where(found, first, start), tf.where(found, first + answer_length - 1, end)


def _window_labels(answer, windows, query_lengths):
    example = windows["example"]
    start, end = tf.gather(answer["start"], example), tf.gather(answer["end"], example)
    answerable = tf.gather(answer["answerable"], example)
    inside = answerable & (windows["start"] <= start) & (
        end <= windows["start"] + windows["length"] - 1)
    offset = tf.gather(query_lengths, example) + 2 - windows["start"]
    return {"start_positions": tf.cast(tf.where(inside, start + offset, 0), tf.int32),
            "end_positions": tf.cast(tf.where(inside, end + offset, 0), tf.int32),
            "is_impossible": tf.cast(~answerable, tf.float32)}
