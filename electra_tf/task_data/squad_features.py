"""SQuAD examples -> fixed-length windows, as the original's `QATask.featurize`.

Each example's context words are WordPiece-tokenized one word at a time (so every token knows
its word), the question is cut to `max_query_length` tokens, and the context tokens are cut
into windows of `max_seq_length - len(question) - 3` tokens, each starting `doc_stride` tokens
after the previous one (`start += min(window length, doc_stride)`) until one reaches the end.
A window is `[CLS] question [SEP] context window [SEP]`, segment 0 up to the first [SEP] and 1
after it, zero-padded. A token seen by several windows is "max context" in the window where
`min(left context, right context) + 0.01 * window length` is largest (the first on ties).

Training labels: the gold token span (narrowed by `improve_answer_span` to the tokens of the
answer text) at its position in the window; a window that does not hold the whole span, and
every window of an unanswerable question, points at [CLS] (0, 0). `is_impossible` is the
example's. `unique_id = 1000 * example_index + doc_span_index`, as the original's `eid`.

Tokenization is batched: a chunk of examples (256 by default) has its questions, answers and
the context words not seen before (a cache keeps up to 200,000) tokenized in one call of the
in-graph tokenizer. Text is first cleaned as BERT's BasicTokenizer cleans it (control
characters dropped, Unicode spaces made ASCII spaces), which the in-graph tokenizer does not do.
"""

from __future__ import annotations

import dataclasses
import itertools
import multiprocessing
import random
import unicodedata
from typing import Iterable, Iterator, Sequence

import numpy as np
import tensorflow as tf

from electra_tf.task_data.squad import SquadDataError, SquadExample
from electra_tf.text import vocab_files
from electra_tf.text.tokenization import load_vocabulary, make_tokenizer, special_ids

CHUNK_EXAMPLES = 256
WORD_CACHE_SIZE = 200_000  # context words whose ids are kept between chunks
MAX_WINDOWS_PER_EXAMPLE = 1000  # unique_id = 1000 * example_index + doc_span_index
INT_FEATURES = ("input_ids", "input_mask", "segment_ids")
LABEL_FEATURES = ("start_positions", "end_positions", "is_impossible")
MIN_RECORD_BYTES = 16  # a TFRecord's length, its CRC, an empty payload and its CRC


@dataclasses.dataclass
class SquadFeature:
    """One window of one example.

    `input_ids`, `input_mask`, `segment_ids`: int32 [max_seq_length]. `tokens`: the unpadded
    token strings (for detokenizing predictions). `token_to_orig_map`: window position ->
    whitespace word index, for the context tokens. `token_is_max_context`: window position ->
    whether this window is the token's max-context one. Labels (training; 0/0 otherwise):
    `start_position`, `end_position` (window positions, inclusive) and `is_impossible`.
    """

    unique_id: int
    example_index: int
    doc_span_index: int
    tokens: list[str]
    input_ids: np.ndarray
    input_mask: np.ndarray
    segment_ids: np.ndarray
    token_to_orig_map: dict[int, int]
    token_is_max_context: dict[int, bool]
    start_position: int = 0
    end_position: int = 0
    is_impossible: bool = False


def clean_text(text: str) -> str:
    """BERT's `_clean_text`: drops NUL, U+FFFD and control characters (category C* except tab,
    CR, LF) and turns every whitespace character (tab, CR, LF, category Zs) into a space."""
    if text.isascii() and text.isprintable():
        return text
    output = []
    for char in text:
        if char in "\t\n\r":
            output.append(" ")
            continue
        category = unicodedata.category(char)
        if char == "\x00" or char == "\ufffd" or category.startswith("C"):
            continue
        output.append(" " if category == "Zs" else char)
    return "".join(output)


def improve_answer_span(doc_ids: Sequence[int], start: int, end: int,
                        answer_ids: Sequence[int]) -> tuple[int, int]:
    """The first sub-span of doc_ids[start:end + 1] whose tokens are exactly the answer's (e.g.
    "1895" inside the word "(1895-1943)."); (start, end) unchanged when there is none."""
    length = len(answer_ids)
    answer = list(answer_ids)
    if length:
        for new_start in range(start, end - length + 2):
            if list(doc_ids[new_start:new_start + length]) == answer:
                return new_start, new_start + length - 1
    return start, end


def doc_spans(num_tokens: int, window: int, doc_stride: int) -> list[tuple[int, int]]:
    """(start, length) of the sliding windows over `num_tokens` context tokens."""
    spans, start = [], 0
    while start < num_tokens:
        length = min(num_tokens - start, window)
        spans.append((start, length))
        if start + length == num_tokens:
            break
        start += min(length, doc_stride)
    return spans


def max_context_windows(spans: list[tuple[int, int]], num_tokens: int) -> list[int]:
    """For every context token, the index of the window where it has the most context."""
    best_window = [-1] * num_tokens
    best_score = [0.0] * num_tokens
    for index, (start, length) in enumerate(spans):
        end = start + length - 1
        for position in range(start, end + 1):
            score = min(position - start, end - position) + 0.01 * length
            if best_window[position] < 0 or score > best_score[position]:
                best_window[position], best_score[position] = index, score
    return best_window


@dataclasses.dataclass
class _Context:
    """A context's WordPiece ids, with the word of every token and first token of every word."""

    ids: list[int]
    tok_to_orig_index: list[int]
    orig_to_tok_index: list[int]


class QAFeaturizer:
    """SquadExamples -> SquadFeatures (see the module docstring).

    Args:
      vocabulary: a vocab.txt path or the token list.
      lower_case: uncased tokenization (lower-case and strip accents).
      max_seq_length: window length in tokens, [CLS] and both [SEP]s included.
      doc_stride: tokens between the starts of consecutive windows.
      max_query_length: questions are cut to this many tokens.
      chunk_examples: examples tokenized together in one tokenizer call.
    """

    def __init__(self, vocabulary: str | list[str], lower_case: bool = True,
                 max_seq_length: int = 512, doc_stride: int = 128, max_query_length: int = 64,
                 chunk_examples: int = CHUNK_EXAMPLES):
        smallest_window = max_seq_length - max_query_length - 3
        if max_query_length < 1 or smallest_window < 1:
            raise SquadDataError(
                f"max_query_length {max_query_length} leaves no room for the context in "
                f"max_seq_length {max_seq_length} (a window holds max_seq_length - "
                "max_query_length - 3 context tokens)")
        if not 1 <= doc_stride <= smallest_window:
            raise SquadDataError(
                f"doc_stride {doc_stride} must be between 1 and the context window of "
                f"{smallest_window} tokens (max_seq_length {max_seq_length} - max_query_length "
                f"{max_query_length} - 3)")
        # A SentencePiece model (a ".model" path) tokenizes each context word alone, as WordPiece
        # does; its pieces carry "▁" where a word starts (`squad_decoding` maps them back).
        self.sentencepiece = isinstance(vocabulary, str) and vocab_files.is_sentencepiece(
            vocabulary)
        if self.sentencepiece:
            self.vocabulary = vocab_files.load_tokens(vocabulary)
            self.special = vocab_files.load_special_ids(vocabulary)
            self.tokenizer = vocab_files.make_file_tokenizer(vocabulary)
        else:
            self.vocabulary = (load_vocabulary(vocabulary) if isinstance(vocabulary, str)
                               else list(vocabulary))
            self.special = special_ids(self.vocabulary)
            self.tokenizer = make_tokenizer(self.vocabulary, lower_case=lower_case)
        self.max_seq_length = max_seq_length
        self.doc_stride = doc_stride
        self.max_query_length = max_query_length
        self.chunk_examples = chunk_examples
        self._word_ids: dict[str, list[int]] = {}  # word -> WordPiece ids, across chunks

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """WordPiece (or SentencePiece) ids of every text, in one tokenizer call."""
        if not texts:
            return []
        ids = self.tokenizer(tf.constant([clean_text(t) for t in texts], tf.string))
        return ids if isinstance(ids, list) else ids.to_list()

    def featurize(self, examples: Iterable[SquadExample], is_training: bool,
                  example_index_offset: int = 0) -> Iterator[SquadFeature]:
        """The windows of every example, in order; example i gets example_index offset + i."""
        iterator = iter(examples)
        index = example_index_offset
        while chunk := list(itertools.islice(iterator, self.chunk_examples)):
            yield from self._featurize_chunk(chunk, is_training, index)
            index += len(chunk)

    def _featurize_chunk(self, chunk: list[SquadExample], is_training: bool,
                         first_index: int) -> Iterator[SquadFeature]:
        new_words: dict[str, None] = {}
        seen_contexts = set()
        for example in chunk:
            if id(example.doc_tokens) not in seen_contexts:
                seen_contexts.add(id(example.doc_tokens))
                new_words.update(dict.fromkeys(w for w in example.doc_tokens
                                               if w not in self._word_ids))
        labelled = [e for e in chunk if is_training and not e.is_impossible]
        ids = self.tokenize([e.question_text for e in chunk]
                            + [e.orig_answer_text or "" for e in labelled] + list(new_words))
        questions, ids = ids[:len(chunk)], ids[len(chunk):]
        answers = dict(zip(map(id, labelled), ids[:len(labelled)]))
        if len(self._word_ids) + len(new_words) > WORD_CACHE_SIZE:
            self._word_ids = {w: self._word_ids[w] for w in self._words_in(chunk)
                              if w in self._word_ids}
        self._word_ids.update(zip(new_words, ids[len(labelled):]))
        contexts: dict[int, _Context] = {}
        for example in chunk:  # before yielding: another generator may evict cached words
            if id(example.doc_tokens) not in contexts:
                contexts[id(example.doc_tokens)] = self._context(example.doc_tokens)
        for offset, example in enumerate(chunk):
            yield from self._windows(example, first_index + offset, is_training,
                                     questions[offset][:self.max_query_length],
                                     contexts[id(example.doc_tokens)], answers.get(id(example)))

    @staticmethod
    def _words_in(chunk: list[SquadExample]) -> set[str]:
        return {w for example in chunk for w in example.doc_tokens}

    def _context(self, doc_tokens: list[str]) -> _Context:
        context = _Context([], [], [])
        for word_index, word in enumerate(doc_tokens):
            context.orig_to_tok_index.append(len(context.ids))
            pieces = self._word_ids[word]
            context.ids.extend(pieces)
            context.tok_to_orig_index.extend([word_index] * len(pieces))
        return context

    def _answer_tokens(self, example: SquadExample, context: _Context,
                       answer_ids) -> tuple[int, int]:
        """The gold answer's inclusive token span in the context."""
        if example.start_word is None or example.end_word is None:
            raise SquadDataError(f"question {example.qas_id} has no answer span: read training "
                                 "data with is_training=True")
        start = context.orig_to_tok_index[example.start_word]
        if example.end_word < len(example.doc_tokens) - 1:
            end = context.orig_to_tok_index[example.end_word + 1] - 1
        else:
            end = len(context.ids) - 1
        return improve_answer_span(context.ids, start, end, answer_ids)

    def _windows(self, example: SquadExample, example_index: int, is_training: bool,
                 query: list[int], context: _Context, answer_ids) -> Iterator[SquadFeature]:
        labelled = is_training and not example.is_impossible
        if labelled:
            answer_start, answer_end = self._answer_tokens(example, context, answer_ids)
        spans = doc_spans(len(context.ids), self.max_seq_length - len(query) - 3,
                          self.doc_stride)
        if len(spans) > MAX_WINDOWS_PER_EXAMPLE:
            raise SquadDataError(f"question {example.qas_id} needs {len(spans)} windows, more "
                                 f"than {MAX_WINDOWS_PER_EXAMPLE}: raise doc_stride")
        best_window = max_context_windows(spans, len(context.ids))
        special, vocabulary = self.special, self.vocabulary
        doc_offset = len(query) + 2
        for span_index, (start, length) in enumerate(spans):
            ids = [special.cls, *query, special.sep, *context.ids[start:start + length],
                   special.sep]
            segments = [0] * doc_offset + [1] * (length + 1)
            positions = range(doc_offset, doc_offset + length)
            feature = SquadFeature(
                unique_id=MAX_WINDOWS_PER_EXAMPLE * example_index + span_index,
                example_index=example_index, doc_span_index=span_index,
                tokens=[vocabulary[i] for i in ids],
                input_ids=_padded(ids, self.max_seq_length),
                input_mask=_padded([1] * len(ids), self.max_seq_length),
                segment_ids=_padded(segments, self.max_seq_length),
                token_to_orig_map={p: context.tok_to_orig_index[start + p - doc_offset]
                                   for p in positions},
                token_is_max_context={p: best_window[start + p - doc_offset] == span_index
                                      for p in positions},
                is_impossible=bool(is_training and example.is_impossible))
            if labelled and start <= answer_start and answer_end <= start + length - 1:
                feature.start_position = answer_start - start + doc_offset
                feature.end_position = answer_end - start + doc_offset
            yield feature


def _padded(values: list[int], length: int) -> np.ndarray:
    array = np.zeros([length], np.int32)
    array[:len(values)] = values
    return array


def featurize_in_chunks(examples: Sequence[SquadExample], featurizer: QAFeaturizer,
                        chunk_examples: int = 1000
                        ) -> Iterator[tuple[list[SquadExample], list[SquadFeature]]]:
    """(examples, their windows) a chunk at a time, for evaluation that featurizes, predicts and
    decodes one chunk before the next. Example indices (and so unique ids) are global."""
    for start in range(0, len(examples), chunk_examples):
        chunk = list(examples[start:start + chunk_examples])
        yield chunk, list(featurizer.featurize(chunk, is_training=False,
                                               example_index_offset=start))


# ---------------------------------------------------------------------------------------------
# Training records


def serialize_training_feature(feature: SquadFeature) -> bytes:
    """A window as a tf.train.Example of int64 features: input_ids, input_mask, segment_ids
    [max_seq_length]; start_positions, end_positions, is_impossible [1]."""
    def int64s(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))

    features = {name: int64s(getattr(feature, name)) for name in INT_FEATURES}
    features["start_positions"] = int64s([feature.start_position])
    features["end_positions"] = int64s([feature.end_position])
    features["is_impossible"] = int64s([feature.is_impossible])
    example = tf.train.Example(features=tf.train.Features(feature=features))
    return example.SerializeToString(deterministic=True)  # map keys sorted: same bytes anywhere


def _serialize_chunk(featurizer: QAFeaturizer, task: tuple[int, list[SquadExample]]
                     ) -> list[bytes]:
    first_index, chunk = task
    return [serialize_training_feature(f) for f in
            featurizer.featurize(chunk, is_training=True, example_index_offset=first_index)]


_WORKER_FEATURIZER: QAFeaturizer | None = None  # one per pool worker process


def _start_worker(featurizer_args: dict) -> None:
    global _WORKER_FEATURIZER
    _WORKER_FEATURIZER = QAFeaturizer(**featurizer_args)


def _serialize_in_worker(task: tuple[int, list[SquadExample]]) -> list[bytes]:
    return _serialize_chunk(_WORKER_FEATURIZER, task)


def write_training_records(examples: Sequence[SquadExample], featurizer_args: dict, path: str,
                           num_workers: int = 1, shuffle_seed: int | None = None) -> int:
    """Featurizes training examples into a TFRecord file; returns the number of windows.

    Windows are streamed to the file a chunk at a time. `featurizer_args` are QAFeaturizer's
    keyword arguments. With `num_workers > 1` chunks are featurized by a "spawn" process pool
    (each worker builds its tokenizer once) and written in order, so the file is byte-identical
    for any number of workers. `shuffle_seed`: shuffle the examples first (the original shuffles
    its training examples before writing them). The file appears under `path` when complete.
    """
    examples = list(examples)
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(examples)
    chunk_size = featurizer_args.get("chunk_examples", CHUNK_EXAMPLES)
    tasks = [(start, examples[start:start + chunk_size])
             for start in range(0, len(examples), chunk_size)]
    temporary = path + ".incomplete"
    count = 0
    with tf.io.TFRecordWriter(temporary) as writer:
        for records in _serialized_chunks(tasks, featurizer_args, num_workers):
            for record in records:
                writer.write(record)
            count += len(records)
    tf.io.gfile.rename(temporary, path, overwrite=True)
    return count


def _serialized_chunks(tasks, featurizer_args: dict, num_workers: int) -> Iterator[list[bytes]]:
    if num_workers <= 1 or len(tasks) <= 1:
        featurizer = QAFeaturizer(**featurizer_args)
        yield from (_serialize_chunk(featurizer, task) for task in tasks)
        return
    context = multiprocessing.get_context("spawn")
    group = 4 * num_workers  # bounds the results waiting to be written
    with context.Pool(min(num_workers, len(tasks)), initializer=_start_worker,
                      initargs=(featurizer_args,)) as pool:
        for first in range(0, len(tasks), group):
            yield from pool.imap(_serialize_in_worker, tasks[first:first + group])


def parse_training_record(serialized: tf.Tensor, max_seq_length: int):
    """A serialized window -> ({input_ids, input_mask, segment_ids: int32 [L]},
    {start_positions, end_positions: int32 [], is_impossible: float32 []})."""
    spec = {name: tf.io.FixedLenFeature([max_seq_length], tf.int64) for name in INT_FEATURES}
    spec.update({name: tf.io.FixedLenFeature([], tf.int64) for name in LABEL_FEATURES})
    parsed = tf.io.parse_single_example(serialized, spec)
    features = {name: tf.cast(parsed[name], tf.int32) for name in INT_FEATURES}
    labels = {"start_positions": tf.cast(parsed["start_positions"], tf.int32),
              "end_positions": tf.cast(parsed["end_positions"], tf.int32),
              "is_impossible": tf.cast(parsed["is_impossible"], tf.float32)}
    return features, labels


def training_dataset(path: str, max_seq_length: int, batch_size: int, *, seed: int = 0,
                     shuffle_buffer: int = 10000, skip_batches: int = 0, training: bool = True):
    """Batches of (features [batch, L], labels [batch]) from `write_training_records`' file.

    Training: shuffled anew each epoch (a pure function of `seed`), repeated, static batches
    (drop_remainder), the first `skip_batches` skipped (resume). Otherwise one ordered pass.
    """
    if not tf.io.gfile.exists(path):
        raise SquadDataError(f"training records not found: {path}")
    if training and tf.io.gfile.stat(path).length < MIN_RECORD_BYTES:
        raise SquadDataError(f"{path} holds no windows")  # repeating it would never yield
    dataset = tf.data.TFRecordDataset(path)
    if training:
        dataset = dataset.shuffle(shuffle_buffer, seed=seed,
                                  reshuffle_each_iteration=True).repeat()
    dataset = dataset.map(lambda record: parse_training_record(record, max_seq_length),
                          num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    dataset = dataset.batch(batch_size, drop_remainder=training)
    if skip_batches:
        dataset = dataset.skip(skip_batches)
    return dataset.prefetch(tf.data.AUTOTUNE)
