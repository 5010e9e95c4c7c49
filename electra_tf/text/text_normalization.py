"""The original BERT BasicTokenizer's text rules, in the TensorFlow graph.

google-research/bert's `tokenization.py` (which ELECTRA copies) cleans, lower-cases, strips
accents and splits text one character at a time with Python's `unicodedata`. The same rules as
regular-expression character classes, built from the running Python's `unicodedata` (so the
categories are the ones the original sees on this Python):

- deleted: code point 0, U+FFFD and every character whose category starts with "C" (control,
  format, private use, unassigned), except tab, newline and carriage return;
- word separators: category Zs, tab, newline, carriage return, and the characters Python's
  `str.split()` also splits at once the deleted ones are gone (U+2028, U+2029);
- punctuation, a word of its own: ASCII 33-47, 58-64, 91-96, 123-126 and categories P*;
- CJK ideographs (the original's `_is_chinese_char` ranges), a word of their own;
- accents, removed when stripping accents after NFD: category Mn.

`normalize` applies the cleaning, lower-casing (`str.lower()`, which TensorFlow's ICU
`tf.strings.lower` matches, final sigma and "İ" included, except for the letters newer than ICU:
`lower_case_gaps`, which the tokenizer puts right) and accent stripping to whole strings;
`split_words` then splits them. The original lower-cases and strips accents one whitespace word
at a time before splitting punctuation; doing it to the whole string first gives the same words
because no character changes its word-separator or CJK class under these mappings, and the ones
that become punctuation (U+1FEF, U+2260, U+226E, U+226F under NFD) become it before the original
splits punctuation too. tests/text/test_tokenization_parity.py checks all of this for every code
point. The patterns are constants in the graph: a SavedModel keeps those of the Python that
exported it.
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata

import tensorflow as tf
import tensorflow_text as tf_text

CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
              (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
ASCII_PUNCTUATION = tuple(chr(c) for c in (*range(33, 48), *range(58, 65), *range(91, 97),
                                           *range(123, 127)))
SURROGATES = range(0xD800, 0xE000)  # never in UTF-8 text; RE2 cannot name them
KIND_OF_CATEGORY = {"Cc": "deleted", "Cf": "deleted", "Cn": "deleted", "Co": "deleted",
                    "Zs": "separator", "Mn": "accent",
                    **{f"P{c}": "punctuation" for c in "cdefios"}}


@functools.lru_cache(maxsize=None)
def _ranges_by_kind() -> dict[str, list[tuple[int, int]]]:
    """Inclusive code point ranges of every class, from one pass over `unicodedata` (0.5 s)."""
    every_char = "".join(map(chr, range(0x110000)))
    kinds = [KIND_OF_CATEGORY.get(c) for c in map(unicodedata.category, every_char)]
    for low, high in CJK_RANGES:  # unassigned code points in these ranges stay deleted
        kinds[low:high + 1] = ["deleted" if k == "deleted" else "cjk" for k in kinds[low:high + 1]]
    for char in ASCII_PUNCTUATION:
        kinds[ord(char)] = "punctuation"
    for match in re.finditer(r"\s", every_char):  # str.split()'s whitespace: Zs, U+2028, ...
        if kinds[match.start()] != "deleted":
            kinds[match.start()] = "separator"
    kinds[ord("\t")] = kinds[ord("\n")] = kinds[ord("\r")] = "separator"
    kinds[0] = kinds[0xFFFD] = "deleted"
    kinds[SURROGATES.start:SURROGATES.stop] = [None] * len(SURROGATES)
    ranges: dict[str, list[tuple[int, int]]] = {}
    code = 0
    for kind, run in itertools.groupby(kinds):
        length = sum(1 for _ in run)
        if kind is not None:
            ranges.setdefault(kind, []).append((code, code + length - 1))
        code += length
    return ranges


def _original_lower_case(char: str, strip_accents: bool) -> str:
    """What the original makes of one character when lower-casing."""
    lower = char.lower()
    if strip_accents:
        lower = "".join(c for c in unicodedata.normalize("NFD", lower)
                        if unicodedata.category(c) != "Mn")
    return lower


@functools.lru_cache(maxsize=None)
def lower_case_gaps(strip_accents: bool) -> tuple[tuple[str, str], ...]:
    """((what `normalize` leaves, what the original makes of it), ...) for the characters whose
    lower case ICU (in `tf.strings.lower`) does not know: letters newer than TensorFlow's ICU,
    such as Unicode 14.0's Vithkuqi capitals with Python 3.11. Only letters ICU left in upper
    case: replacing anything else could change other text (the tests would show such a gap)."""
    cased = [chr(code) for code in range(0x110000)
             if code not in SURROGATES and chr(code).lower() != chr(code)]
    with tf.init_scope():  # eager, even when a tokenizer is built inside a tf.function
        ours = normalize(tf.constant(cased), lower_case=True, strip_accents=strip_accents)
        ours = [text.decode() for text in ours.numpy()]
    return tuple((text, _original_lower_case(char, strip_accents))
                 for char, text in zip(cased, ours)
                 if text != _original_lower_case(char, strip_accents) and text.lower() != text)


@functools.lru_cache(maxsize=None)
def character_class(*kinds: str) -> str:
    """An RE2 class `[...]` of the code points of the given kinds ("deleted", "separator",
    "punctuation", "cjk", "accent")."""
    spans = sorted(span for kind in kinds for span in _ranges_by_kind()[kind])
    return "[" + "".join(f"\\x{{{low:X}}}" if low == high else f"\\x{{{low:X}}}-\\x{{{high:X}}}"
                         for low, high in spans) + "]"


def normalize(texts: tf.Tensor, lower_case: bool, strip_accents: bool) -> tf.Tensor:
    """The original's cleaning, lower-casing and accent stripping: strings [n] -> strings [n].

    Word separators are left in place (`split_words` splits at them).
    """
    if strip_accents:
        # The original cleans, then decomposes (NFD) and removes the accents. Decomposing first
        # lets one pass delete both; the second NFD puts back in canonical order the combining
        # marks that a deleted character kept apart (NFD on the cleaned text would have).
        texts = tf_text.normalize_utf8(texts, "NFD")
        texts = tf.strings.regex_replace(texts, character_class("deleted", "accent"), "")
        texts = tf_text.normalize_utf8(texts, "NFD")
    else:
        texts = tf.strings.regex_replace(texts, character_class("deleted"), "")
    if lower_case:
        # After the cleaning: ICU stops at NUL, and final sigma looks at the cleaned neighbours.
        texts = tf.strings.lower(texts, encoding="utf-8")
    return texts


def split_words(texts: tf.Tensor) -> tf.RaggedTensor:
    """Normalized strings [n] -> words [n, (words)]: separators dropped, each punctuation and
    CJK character a word of its own, as the original's whitespace and punctuation splitting."""
    kept = character_class("punctuation", "cjk")
    return tf_text.regex_split(texts, character_class("separator", "punctuation", "cjk"),
                               kept)
