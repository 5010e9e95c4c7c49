"""WordPiece vocabularies and in-graph tokenization (keras-hub on top of tensorflow-text).

BERT's basic rules apply: split on whitespace and punctuation, CJK characters on their own;
lower-casing and accent stripping are on by default (uncased) and switchable separately
(`lower_case=False, strip_accents=False` is the cased mode). A BERT/ELECTRA `vocab.txt` (30,522
entries, [PAD]=0 [UNK]=100 [CLS]=101 [SEP]=102 [MASK]=103) loads as is; a learned vocabulary
starts with [PAD] [UNK] [CLS] [SEP] [MASK] (ids 0-4).
"""

from __future__ import annotations

from typing import NamedTuple

import keras_hub
import tensorflow as tf

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


class VocabularyError(ValueError):
    """A vocabulary file that cannot be used for ELECTRA."""


class SpecialIds(NamedTuple):
    pad: int
    unk: int
    cls: int
    sep: int
    mask: int


def load_vocabulary(path: str) -> list[str]:
    """Reads a vocab.txt (one token per line) and checks it holds ELECTRA's special tokens."""
    if not tf.io.gfile.exists(path):
        raise VocabularyError(f"vocabulary file not found: {path}")
    with tf.io.gfile.GFile(path) as f:
        vocabulary = [line.rstrip("\n").rstrip("\r") for line in f]
    while vocabulary and not vocabulary[-1]:
        vocabulary.pop()
    if not vocabulary:
        raise VocabularyError(f"vocabulary file is empty: {path}")
    special_ids(vocabulary, source=path)
    return vocabulary


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


def make_tokenizer(vocabulary: list[str] | str, lower_case: bool = True,
                   strip_accents: bool | None = None) -> keras_hub.tokenizers.WordPieceTokenizer:
    """An in-graph WordPiece tokenizer: strings [n] -> ragged int32 ids [n, (tokens)].

    `strip_accents` defaults to `lower_case`, as in BERT's uncased and cased models.
    """
    if isinstance(vocabulary, str):
        vocabulary = load_vocabulary(vocabulary)
    return keras_hub.tokenizers.WordPieceTokenizer(
        vocabulary=vocabulary, lowercase=lower_case,
        strip_accents=lower_case if strip_accents is None else strip_accents,
        oov_token="[UNK]", special_tokens=list(SPECIAL_TOKENS), dtype="int32")
