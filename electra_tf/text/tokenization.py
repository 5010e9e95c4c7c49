"""WordPiece vocabularies and in-graph tokenization that reproduces the original BERT's ids.

`make_tokenizer(vocabulary, lower_case=True, strip_accents=None, *, normalization="bert")`
returns a tokenizer for TensorFlow graphs (tf.data, tf.function, SavedModel signatures): strings
[n] -> ragged int32 ids [n, (tokens)]; called eagerly it returns Python lists. Normalizations:

- "bert" (default): the token ids of the original `tokenization.py` (google-research/bert, which
  ELECTRA's checkpoints were trained with): BasicTokenizer's cleaning (code point 0, U+FFFD and
  control / format / private-use / unassigned characters deleted, every Unicode space a word
  separator), Python `str.lower()` when lower-casing, NFD with category Mn removed when stripping
  accents, words split at punctuation (ASCII symbols and Unicode P*) and around CJK ideographs,
  then greedy longest-match-first WordPiece where a word of more than 200 characters is [UNK].
  The character classes come from the running Python's `unicodedata`, as the original's do
  (`text_normalization.py`), so a character newer than that Python's Unicode is deleted as
  unassigned, by both. tests/text/test_tokenization_parity.py checks the ids against Hugging
  Face's port of the original. Texts must be valid UTF-8 (Python strings always are).
- "keras_hub": keras-hub's `WordPieceTokenizer` as this project used before: NFKC case folding
  ("ß" -> "ss", "ﬁ" -> "fi"), nothing deleted, only ASCII whitespace separates words, words over
  100 bytes are [UNK].

Lower-casing and accent stripping are on by default (uncased) and switchable separately
(`lower_case=False, strip_accents=False` is the cased mode; `strip_accents` defaults to
`lower_case`, as in BERT's uncased and cased models). A BERT/ELECTRA `vocab.txt` (30,522 entries,
[PAD]=0 [UNK]=100 [CLS]=101 [SEP]=102 [MASK]=103) loads as is; a learned vocabulary starts with
[PAD] [UNK] [CLS] [SEP] [MASK] (ids 0-4). A vocabulary that lists a token twice is an error.
"""

from __future__ import annotations

import collections
import functools
import re
from typing import NamedTuple

import keras_hub
import tensorflow as tf
import tensorflow_text as tf_text

from electra_tf.text import text_normalization
from electra_tf.errors import UserError

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
SENTENCEPIECE_SUFFIX = ".model"  # a vocabulary file with this name is a SentencePiece model
UNKNOWN_TOKEN = "[UNK]"
NORMALIZATIONS = ("bert", "keras_hub")
MAX_CHARS_PER_WORD = 200  # the original's `max_input_chars_per_word`
MAX_UTF8_BYTES_PER_CHAR = 4


def is_sentencepiece(path: str) -> bool:
    """Whether the vocabulary file `path` is a SentencePiece model (by its name) rather than a
    WordPiece vocab.txt."""
    return str(path).endswith(SENTENCEPIECE_SUFFIX)


class VocabularyError(UserError):
    """A vocabulary file that cannot be used for ELECTRA."""


class SpecialIds(NamedTuple):
    pad: int
    unk: int
    cls: int
    sep: int
    mask: int


def load_vocabulary(path: str) -> list[str]:
    """Reads a vocab.txt (one token per line) and checks it holds ELECTRA's special tokens, each
    token once."""
    if is_sentencepiece(path):
        raise VocabularyError(
            f"{path} is a SentencePiece model, and this step takes a WordPiece vocab.txt: for "
            f"a tokenizer of either kind use electra_tf.text.vocab_files.make_file_tokenizer"
            f"(path), for a preprocessor ElectraTextClassifierPreprocessor.from_vocabulary(path) "
            f"(docs/tokenization.md lists what takes a SentencePiece model)")
    if not tf.io.gfile.exists(path):
        raise VocabularyError(f"vocabulary file not found: {path}")
    with tf.io.gfile.GFile(path) as f:
        vocabulary = [line.rstrip("\n").rstrip("\r") for line in f]
    while vocabulary and not vocabulary[-1]:
        vocabulary.pop()
    if not vocabulary:
        raise VocabularyError(f"vocabulary file is empty: {path}")
    check_unique(vocabulary, source=path)
    special_ids(vocabulary, source=path)
    return vocabulary


def check_unique(vocabulary: list[str], source: str = "vocabulary") -> None:
    """Raises VocabularyError naming every token listed more than once, with its 1-based line
    numbers (as in a vocab.txt): the id of such a token would be ambiguous."""
    lines = collections.defaultdict(list)
    for line, token in enumerate(vocabulary, start=1):
        lines[token].append(line)
    repeated = [f"{token!r} on lines {', '.join(map(str, numbers))}"
                for token, numbers in lines.items() if len(numbers) > 1]
    if repeated:
        raise VocabularyError(f"{source} lists tokens more than once: {'; '.join(repeated)}")


def special_ids(vocabulary: list[str], source: str = "vocabulary") -> SpecialIds:
    """Ids of [PAD] [UNK] [CLS] [SEP] [MASK]; an error names every one that is missing."""
    index = {}
    for i, token in enumerate(vocabulary):
        index.setdefault(token, i)
    missing = [t for t in SPECIAL_TOKENS if t not in index]
    if missing:
        raise VocabularyError(f"{source} lacks {', '.join(missing)}: ELECTRA needs "
                              f"{', '.join(SPECIAL_TOKENS)} (look-ups are by these exact strings)")
    return SpecialIds(*(index[t] for t in SPECIAL_TOKENS))


class BertWordPieceTokenizer:
    """The original BERT tokenizer's ids, in the graph: strings [n] -> ragged int32 [n, (tokens)].

    A scalar string gives int32 [tokens]. Called eagerly, it runs a traced function and returns
    Python lists (a list of id lists for [n], an id list for a scalar).
    """

    def __init__(self, vocabulary: list[str], lower_case: bool = True,
                 strip_accents: bool | None = None):
        if UNKNOWN_TOKEN not in vocabulary:
            raise VocabularyError(f"the vocabulary lacks {UNKNOWN_TOKEN}")
        check_unique(vocabulary)
        self.vocabulary = list(vocabulary)
        self.lower_case = lower_case
        self.strip_accents = lower_case if strip_accents is None else strip_accents
        self._lower_case_gaps = (text_normalization.lower_case_gaps(self.strip_accents)
                                 if lower_case else ())
        # Rows holding one of these ids are tokenized again word by word (see _tokenize_batch).
        self._retokenize_id = tf.constant(
            [token == UNKNOWN_TOKEN or any(text in token for text, _ in self._lower_case_gaps)
             for token in self.vocabulary])
        # The original's words never hold whitespace, so it never produces a token that does
        # (tensorflow-text's learner wrote " " and "## "); FastWordpiece would match one across
        # words. Such entries keep their ids but become strings no normalized text contains.
        matchable = [f"\x01{i}" if any(c.isspace() for c in token) else token
                     for i, token in enumerate(self.vocabulary)]
        self._end_to_end = tf_text.FastWordpieceTokenizer(
            vocab=matchable, suffix_indicator="##", unknown_token=UNKNOWN_TOKEN,
            max_bytes_per_word=MAX_CHARS_PER_WORD, token_out_type=tf.int32)
        self._word_by_word = tf_text.FastWordpieceTokenizer(
            vocab=matchable, suffix_indicator="##", unknown_token=UNKNOWN_TOKEN,
            max_bytes_per_word=MAX_CHARS_PER_WORD * MAX_UTF8_BYTES_PER_CHAR,
            token_out_type=tf.int32, no_pretokenization=True)
        # A partial, not the bound method: TensorFlow counts traces per code object, so each
        # tokenizer's one trace (a process loading a few models) read as "excessive retracing".
        self._traced = tf.function(functools.partial(type(self)._tokenize_batch, self),
                                   autograph=False,
                                   input_signature=[tf.TensorSpec([None], tf.string)])

    def tokenize(self, texts):
        texts = tf.convert_to_tensor(texts, tf.string)
        if texts.shape.rank not in (0, 1):
            raise ValueError(f"expected a string or strings [n], got shape {texts.shape}")
        batch = tf.reshape(texts, [-1])
        if not tf.executing_eagerly():
            tokens = self._tokenize_batch(batch)
            return tokens[0] if texts.shape.rank == 0 else tokens
        tokens = self._traced(batch)
        ids = tokens.flat_values.numpy().tolist()
        splits = tokens.row_splits.numpy().tolist()
        rows = [ids[start:end] for start, end in zip(splits[:-1], splits[1:])]
        return rows[0] if texts.shape.rank == 0 else rows

    __call__ = tokenize

    def ragged(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """strings [n] -> ragged int32 ids [n, (tokens)], in a graph or eagerly."""
        texts = tf.convert_to_tensor(texts, tf.string)
        return self._tokenize_batch(texts) if not tf.executing_eagerly() else self._traced(texts)

    def _tokenize_batch(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """strings [n] -> int32 ids [n, (tokens)].

        tensorflow-text's end-to-end WordPiece splits words exactly as `split_words` does once
        the text is normalized (checked for every code point in the tests), and is faster than
        splitting with a regular expression. It limits words by bytes, not characters: with a
        200-byte limit a row without [UNK] is right as it is, and the rows with an [UNK] (an
        unknown word, or one of over 200 bytes) are tokenized again word by word with the
        original's 200-character limit, as are rows whose tokens hold a letter ICU does not
        lower-case (`lower_case_gaps`).
        """
        texts = text_normalization.normalize(texts, self.lower_case, self.strip_accents)
        ids = self._end_to_end.tokenize(texts)  # [n, (tokens)]
        again = tf.reduce_any(tf.gather(self._retokenize_id, ids), axis=1)  # [n]
        retokenized = self._tokenize_words(tf.boolean_mask(texts, again))  # [redone, (tokens)]
        rows = tf.range(tf.size(again, out_type=tf.int64))
        redone_rows = tf.size(again, out_type=tf.int64) + tf.cumsum(tf.cast(again, tf.int64)) - 1
        return tf.gather(tf.concat([ids, retokenized], axis=0), tf.where(again, redone_rows, rows))

    def _tokenize_words(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """Normalized strings [n] -> int32 ids [n, (tokens)], split by a regular expression."""
        for text, original in self._lower_case_gaps:  # rare rows: a pass per letter is cheap
            texts = tf.strings.regex_replace(texts, re.escape(text),
                                             original.replace("\\", "\\\\"))
        words = text_normalization.split_words(texts)  # [n, (words)]
        too_long = tf.strings.length(words.flat_values, unit="UTF8_CHAR") > MAX_CHARS_PER_WORD
        pieces = self._word_by_word.tokenize(  # [words, (pieces)]; the word "[UNK]" is [UNK]
            tf.where(too_long, UNKNOWN_TOKEN, words.flat_values))
        return tf.RaggedTensor.from_row_splits(
            pieces.flat_values, tf.gather(pieces.row_splits, words.row_splits), validate=False)


def make_tokenizer(vocabulary: list[str] | str, lower_case: bool = True,
                   strip_accents: bool | None = None, *, normalization: str = "bert"):
    """An in-graph WordPiece tokenizer: strings [n] -> ragged int32 ids [n, (tokens)].

    `strip_accents` defaults to `lower_case`, as in BERT's uncased and cased models;
    `normalization` is "bert" (the original's ids) or "keras_hub" (see the module docstring).
    """
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got {normalization!r}")
    if isinstance(vocabulary, str):
        vocabulary = load_vocabulary(vocabulary)
    strip_accents = lower_case if strip_accents is None else strip_accents
    if normalization == "bert":
        return BertWordPieceTokenizer(vocabulary, lower_case, strip_accents)
    check_unique(vocabulary)
    return keras_hub.tokenizers.WordPieceTokenizer(
        vocabulary=vocabulary, lowercase=lower_case, strip_accents=strip_accents,
        oov_token=UNKNOWN_TOKEN, special_tokens=list(SPECIAL_TOKENS), dtype="int32")
