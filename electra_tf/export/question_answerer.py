"""Export of a fine-tuned question answerer (SQuAD) as a SavedModel that TF Serving loads.

Signatures (the conventions of `electra_tf.export.savedmodel`):

- `serving_default`: int32 `input_ids`, `input_mask`, `segment_ids` [batch, seq] (`[CLS] question
  [SEP] context [SEP]`, segment 1 from the context on; both dimensions dynamic) -> the beam,
  computed in the graph: int32 `start_top_index` [batch, k], float32 `start_top_log_probs`
  [batch, k], int32 `end_top_index` and float32 `end_top_log_probs` [batch, k, k] (row i: the
  ends for start i) and float32 `answerable_logit` [batch] (the logit of *no answer*; SQuAD 2.0
  says "no answer" above -2.75). Requests shorter than k tokens are padded to k. Core ops only.
- `serve_examples`: serialized `tf.Example`s with int64 `input_ids`, `input_mask`, `segment_ids`.
- `serve_text` (`with_tokenizer=True`): string `question` and `context` [batch] -> string
  `answer` (a substring of the context), float32 `score` (the span's joint log-probability) and
  `answerable_logit` [batch], plus int32 `start`/`end` token positions. The question is cut to
  `max_query_length` tokens and the context to ONE window (the tokens that fit after it; a
  longer context is truncated — the Python API `question_answering.answer` uses every window).
  The span is the best of the beam inside the context, end >= start, at most
  `max_answer_length` tokens. The answer runs from the first to the last character of the
  span's words, where a word is split at whitespace and punctuation as the tokenizer splits
  it ("(1895-1943)." holds the words "(", "1895", "-", ...); the Python decoding can also cut
  inside a word ("run" of "running"), the graph cannot. With a SentencePiece model as the
  vocabulary, words are split at whitespace only, as its fine-tuning tokenized them. Holds
  tensorflow-text ops.
"""

from __future__ import annotations

import tensorflow as tf

from electra_tf.export.savedmodel import (INPUT_NAMES, TEXT_SIGNATURE, add_id_endpoints,
                                          checked_forward, load_text_tokenizer, new_archive)
from electra_tf.models.question_answers import BEAM_OUTPUTS


def export_question_answerer(model, export_dir: str, *, task: str, with_examples: bool = True,
                             with_tokenizer: bool = False, vocab_file: str | None = None,
                             lower_case: bool = True, max_seq_length: int = 512,
                             max_query_length: int = 64, max_answer_length: int = 30,
                             jit_compile: bool = False) -> str:
    """Writes the SavedModel of an `ElectraQuestionAnswerer` described above; returns export_dir.
    `jit_compile` compiles the forward pass with XLA (`electra_tf.export.savedmodel`)."""
    config = model.model_config
    beam = model.beam_size
    archive = new_archive(model)

    def forward(input_ids, input_mask, segment_ids):
        short = tf.maximum(beam - tf.shape(input_ids)[1], 0)  # top-k needs k positions
        padded = [tf.pad(t, [[0, 0], [0, short]]) for t in (input_ids, input_mask, segment_ids)]
        result = model(dict(zip(INPUT_NAMES, padded)), training=False)
        return {name: result[name] for name in BEAM_OUTPUTS}

    outputs = checked_forward(forward, config, jit_compile)

    add_id_endpoints(archive, outputs, with_examples)
    trackable = archive._tf_trackable  # ExportArchive has no public hook for extra objects
    if with_tokenizer:
        if max_seq_length < max_query_length + 4:
            raise ValueError(f"max_seq_length {max_seq_length} leaves no context after a "
                             f"{max_query_length}-token question")
        # lazy: keras-hub and tensorflow-text load only for a SavedModel that tokenizes text
        from electra_tf.text.vocab_files import is_sentencepiece

        ids, tokenizer = load_text_tokenizer(trackable, vocab_file, config, lower_case, None,
                                             max_seq_length, shortest=4)
        # WordPiece splits words at punctuation too; a SentencePiece model's words are what
        # whitespace separates (as the fine-tuning featurizer tokenizes them)
        split_words = (_whitespace_words_with_offsets if is_sentencepiece(vocab_file)
                       else _words_with_offsets)

        def serve_text(question, context):
            window = _window(question, context, tokenizer, ids, max_seq_length, max_query_length,
                             split_words)
            beam_outputs = outputs(window["input_ids"], window["input_mask"], window["segment_ids"])
            return _best_answer(context, window, beam_outputs, max_answer_length)

        archive.add_endpoint(TEXT_SIGNATURE, serve_text, input_signature=[
            tf.TensorSpec([None], tf.string, name="question"),
            tf.TensorSpec([None], tf.string, name="context")])
    trackable.task = tf.Variable(task, trainable=False, name="task")
    archive.write_out(export_dir, verbose=False)
    return export_dir


def _words_with_offsets(context):
    """The context split as the tokenizer splits it (whitespace dropped, punctuation and CJK
    characters kept alone): (words [batch, (words)], their start and end byte offsets)."""
    import tensorflow_text as tf_text
    from keras_hub.src.tokenizers.word_piece_tokenizer import (
        PUNCTUATION_AND_CJK_REGEX, WHITESPACE_PUNCTUATION_AND_CJK_REGEX)

    return tf_text.regex_split_with_offsets(context, WHITESPACE_PUNCTUATION_AND_CJK_REGEX,
                                            PUNCTUATION_AND_CJK_REGEX)


def _whitespace_words_with_offsets(context):
    """The context split at whitespace: (words [batch, (words)], start and end byte offsets)."""
    import tensorflow_text as tf_text

    return tf_text.WhitespaceTokenizer().tokenize_with_offsets(context)


def _window(question, context, tokenizer, ids, max_seq_length, max_query_length, split_words):
    """`[CLS] question [SEP] context [SEP]` for one window, with each context token's word
    offsets; `split_words` splits the context into words with their byte offsets."""
    query = tokenizer(question)[:, :max_query_length]  # ragged int32 [batch, (q)]
    words, word_starts, word_ends = split_words(context)
    pieces = tokenizer(words.flat_values)  # [all words, (pieces)]
    word_of_piece = tf.cast(pieces.value_rowids(), tf.int32)  # index into words.flat_values
    pieces_per_row = tf.math.segment_sum(tf.cast(pieces.row_lengths(), tf.int32),
                                         tf.cast(words.value_rowids(), tf.int32))
    pieces_per_row = tf.pad(pieces_per_row,
                            [[0, tf.cast(words.nrows(), tf.int32) - tf.shape(pieces_per_row)[0]]])
    pieces_per_row = tf.cast(pieces_per_row, tf.int64)  # row_splits dtype of every ragged here
    context_ids = tf.RaggedTensor.from_row_lengths(pieces.flat_values, pieces_per_row)
    context_words = tf.RaggedTensor.from_row_lengths(word_of_piece, pieces_per_row)
    room = max_seq_length - query.row_lengths() - 3
    keep = tf.ragged.range(context_ids.row_lengths()) < room[:, None]
    context_ids = tf.ragged.boolean_mask(context_ids, keep)
    context_words = tf.ragged.boolean_mask(context_words, keep)
    column = tf.ones([query.nrows(), 1], tf.int32)
    sequences = tf.concat([column * ids.cls, query, column * ids.sep, context_ids,
                           column * ids.sep], axis=1)
    segments = tf.concat([0 * column, tf.zeros_like(query), 0 * column,
                          tf.ones_like(context_ids), column], axis=1)
    return {"input_ids": sequences.to_tensor(default_value=ids.pad),
            "input_mask": tf.ones_like(sequences).to_tensor(default_value=0),
            "segment_ids": segments.to_tensor(default_value=0),
            "context_start": tf.cast(query.row_lengths(), tf.int32) + 2,
            "context_length": tf.cast(context_ids.row_lengths(), tf.int32),
            # byte offsets of each context token's word; one extra column for empty contexts
            "token_starts": _padded_offsets(word_starts.flat_values, context_words),
            "token_ends": _padded_offsets(word_ends.flat_values, context_words)}


def _padded_offsets(offsets, context_words):
    return tf.pad(tf.gather(offsets, context_words).to_tensor(), [[0, 0], [0, 1]])


def _best_answer(context, window, beam, max_answer_length):
    """The best beam span inside the context -> answer text, score, positions."""
    starts = beam["start_top_index"][:, :, None]  # [batch, k, 1]
    ends = beam["end_top_index"]  # [batch, k, k]
    first = window["context_start"][:, None, None]
    last = first + window["context_length"][:, None, None] - 1
    valid = ((starts >= first) & (starts <= last) & (ends >= starts) & (ends <= last)
             & (ends - starts + 1 <= max_answer_length))
    scores = beam["start_top_log_probs"][:, :, None] + beam["end_top_log_probs"]
    scores = tf.where(valid, scores, -1e30)
    k = tf.shape(ends)[1]
    flat = tf.argmax(tf.reshape(scores, [tf.shape(ends)[0], -1]), axis=-1, output_type=tf.int32)
    batch = tf.range(tf.shape(ends)[0])
    start = tf.gather_nd(beam["start_top_index"], tf.stack([batch, flat // k], -1))
    end = tf.gather_nd(ends, tf.stack([batch, flat // k, flat % k], -1))
    score = tf.gather_nd(scores, tf.stack([batch, flat // k, flat % k], -1))
    found = score > -1e29
    offset_index = lambda position: tf.stack(
        [batch, tf.maximum(position - window["context_start"], 0)], -1)
    start_byte = tf.gather_nd(window["token_starts"], offset_index(start))
    end_byte = tf.gather_nd(window["token_ends"], offset_index(end))
    answer = tf.strings.substr(context, start_byte, tf.maximum(end_byte - start_byte, 0))
    return {"answer": tf.where(found, answer, ""), "score": score,
            "answerable_logit": beam["answerable_logit"],
            "start": tf.where(found, start, 0), "end": tf.where(found, end, 0)}
