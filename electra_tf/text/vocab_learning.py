"""Learning a WordPiece vocabulary from a corpus with Hugging Face `tokenizers`' WordPiece trainer.

The text is normalized and split into words by BERT's rules (`BertNormalizer`: clean text, spaces
around CJK characters, optional lower-casing and accent stripping; `BertPreTokenizer`: whitespace
and punctuation), the rules of the in-graph tokenizer (`tokenization.make_tokenizer`). The trainer
starts from the characters (a word's first character as is, the others as "##c") and merges the
most frequent pair of adjacent pieces until the vocabulary is full or no pair is seen
`min_frequency` times any more.

The trainer alone is not deterministic: it numbers the "##c" pieces in hash-map order, breaks ties
between equally frequent pairs by those numbers, and breaks ties between equally frequent
characters at random when it drops characters beyond `max_alphabet`. So the corpus is read twice:
first to count characters, which fixes the alphabet (`initial_alphabet`) and numbers every "##c"
in code-point order (given as special tokens, which the trainer numbers first); then to train.
The same corpus gives the same vocabulary file, byte for byte.
"""

from __future__ import annotations

import collections
import itertools
import os
import string
import sys
import time
from typing import Iterable, Iterator

import numpy as np
import tensorflow as tf
from absl import logging
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

from electra_tf.text.tokenization import SPECIAL_TOKENS, VocabularyError

# A new piece is merged only from a pair seen this often. It binds when the corpus is small for
# the size asked (18 MB of English: not for 8,000 tokens, whose last merges are seen 30 to 60
# times, but for 30,522, where it stops near 16,000), and there it keeps out pieces pretraining
# sees too rarely to learn, mostly whole rare words (identifiers, typos) that shorter pieces spell
# anyway. tensorflow-text's learner, which this one replaced, also stopped at 10 (a count of
# words); `tokenizers`' BertWordPieceTokenizer defaults to 2.
DEFAULT_MIN_FREQUENCY = 10
# Characters kept, the most frequent first (the others are dropped from the words they are in);
# 1,000 is the limit of tensorflow-text's learner and of `tokenizers`' BertWordPieceTokenizer.
MAX_ALPHABET = 1000
BATCH_LINES = 1000
CONTINUATION = "##"
_ASCII_SEPARATORS = np.array([chr(code) in " \t\n\r" + string.punctuation for code in range(128)])


def learn_vocabulary(lines: Iterable[str] | tf.data.Dataset, vocab_size: int, output_file: str,
                     lower_case: bool = True, strip_accents: bool | None = None, *,
                     min_frequency: int = DEFAULT_MIN_FREQUENCY,
                     max_alphabet: int = MAX_ALPHABET) -> list[str]:
    """Learns a WordPiece vocabulary of up to `vocab_size` tokens and writes it to `output_file`.

    Args:
      lines: the corpus: an iterable of str lines, or a tf.data.Dataset of scalar tf.string
        lines. It is read twice; a one-shot iterator (a generator) is first copied into a list,
        so pass a re-iterable (a list, or an object whose `__iter__` re-reads the files) for
        corpora that do not fit in memory.
      vocab_size: the target size, the 5 special tokens included.
      output_file: where the vocabulary is written, one token per line (any tf.io.gfile path).
      lower_case, strip_accents: BERT's normalization; `strip_accents` defaults to `lower_case`.
      min_frequency: a pair of pieces seen fewer times is never merged into a new piece. A
        corpus too small for `vocab_size` gives fewer tokens (a warning says so).
      max_alphabet: how many distinct characters are kept, the most frequent.

    Returns:
      The vocabulary, list[str]: [PAD] [UNK] [CLS] [SEP] [MASK] (ids 0-4), the "##c" pieces and
      the characters in code-point order, then the learned pieces in the order they were merged.

    Raises:
      VocabularyError: the corpus holds no text.
    """
    strip_accents = lower_case if strip_accents is None else strip_accents
    start = time.perf_counter()
    corpus = _reiterable(lines)
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]",
                                           continuing_subword_prefix=CONTINUATION))
    tokenizer.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                      strip_accents=strip_accents,
                                                      lowercase=lower_case)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    statistics = _CharacterStatistics()
    num_lines = 0
    for batch in _line_batches(corpus):
        num_lines += len(batch)
        statistics.add(batch)
    alphabet, continuing = statistics.alphabet(tokenizer, max_alphabet)
    if not alphabet:
        raise VocabularyError("cannot learn a vocabulary from an empty corpus")
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size, min_frequency=min_frequency, show_progress=False,
        special_tokens=[*SPECIAL_TOKENS, *(CONTINUATION + c for c in continuing)],
        initial_alphabet=alphabet, limit_alphabet=len(alphabet),
        continuing_subword_prefix=CONTINUATION)
    tokenizer.train_from_iterator(_line_batches(corpus), trainer=trainer)
    ids = tokenizer.get_vocab()
    vocabulary = sorted(ids, key=ids.__getitem__)
    _write_lines(vocabulary, output_file)
    logging.info("learned %d WordPiece tokens from %d lines in %.1f s", len(vocabulary), num_lines,
                 time.perf_counter() - start)
    if len(vocabulary) < vocab_size:
        logging.warning(
            "learned %d tokens, fewer than the %d asked: no pair of adjacent pieces is seen "
            "min_frequency=%d times any more. A lower min_frequency gives more tokens, seen "
            "fewer times each; more text is the better cure.", len(vocabulary), vocab_size,
            min_frequency)
    elif len(vocabulary) > vocab_size:
        logging.warning("learned %d tokens, more than the %d asked: the special tokens and the %d "
                        "characters (each also as %sc) alone exceed it", len(vocabulary),
                        vocab_size, len(alphabet), CONTINUATION)
    return vocabulary


def _reiterable(lines: Iterable[str] | tf.data.Dataset) -> Iterable[str] | tf.data.Dataset:
    if not isinstance(lines, tf.data.Dataset) and iter(lines) is lines:
        return list(lines)
    return lines


def _line_batches(corpus: Iterable[str] | tf.data.Dataset) -> Iterator[list[str]]:
    """Lists of up to BATCH_LINES str lines (the trainer takes batches faster than single lines)."""
    if isinstance(corpus, tf.data.Dataset):
        for batch in corpus.batch(BATCH_LINES).as_numpy_iterator():
            yield [line.decode("utf-8", errors="ignore") for line in batch]
        return
    iterator = iter(corpus)
    while batch := list(itertools.islice(iterator, BATCH_LINES)):
        yield batch


class _CharacterStatistics:
    """Counts of every code point, and which code points ever follow a character other than an
    ASCII space or punctuation mark (those may continue a word: a superset of what the trainer
    finds, which is what makes every "##c" it needs one we numbered)."""

    def __init__(self):
        self.counts = np.zeros(sys.maxunicode + 1, np.int64)
        self.follows_other = np.zeros(sys.maxunicode + 1, bool)

    def add(self, lines: list[str]) -> None:
        codes = np.frombuffer("\n".join(lines).encode("utf-32-le"), np.uint32)
        binned = np.bincount(codes)
        self.counts[:binned.size] += binned
        previous = codes[:-1]
        follows_other = np.ones(previous.size, bool)
        is_ascii = previous < 128
        follows_other[is_ascii] = ~_ASCII_SEPARATORS[previous[is_ascii]]
        self.follows_other[codes[1:][follows_other]] = True

    def alphabet(self, tokenizer: Tokenizer, max_alphabet: int) -> tuple[list[str], list[str]]:
        """(the `max_alphabet` most frequent characters of the normalized words, those of them
        that may continue a word), both in code-point order.

        Each raw character is normalized and split alone: lower-casing, accent stripping and the
        removal of control characters do not depend on the neighbours.
        """
        counts = collections.Counter()
        may_continue = set()
        for code in np.flatnonzero(self.counts):
            count = int(self.counts[code])
            for word, _ in tokenizer.pre_tokenizer.pre_tokenize_str(
                    tokenizer.normalizer.normalize_str(chr(code))):
                for position, character in enumerate(word):
                    counts[character] += count
                    if position or self.follows_other[code]:
                        may_continue.add(character)
        most_frequent = sorted(counts, key=lambda character: (-counts[character], character))
        alphabet = sorted(most_frequent[:max_alphabet])
        return alphabet, [c for c in alphabet
                          if c in may_continue and _can_continue_a_word(tokenizer, c)]


def _can_continue_a_word(tokenizer: Tokenizer, character: str) -> bool:
    """False for punctuation and CJK characters, which BERT's rules always make words alone."""
    return len(tokenizer.pre_tokenizer.pre_tokenize_str(
        tokenizer.normalizer.normalize_str("a" + character))) == 1


def _write_lines(tokens: list[str], output_file: str) -> None:
    directory = os.path.dirname(output_file)
    if directory:
        tf.io.gfile.makedirs(directory)
    with tf.io.gfile.GFile(output_file, "w") as f:
        f.write("".join(token + "\n" for token in tokens))
