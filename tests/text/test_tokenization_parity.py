"""The default tokenizer gives the original BERT tokenizer's ids (electra_tf/text/tokenization.py).

The reference is Hugging Face's slow `BertTokenizerLegacy` (transformers'
`models/bert/tokenization_bert_legacy.py`), the Python port of google-research/bert's
`tokenization.py`, built from a local vocab.txt and used the way the original's `FullTokenizer`
is: its basic tokenizer, then its WordPiece tokenizer on each word. Two settings of the port
differ from the original and are put back: the word limit is the original's 200 characters
(`max_input_chars_per_word`, 100 in the port), and "[MASK]" typed in text is not a special token
(the basic tokenizer is called without `never_split`). One difference cannot be configured: the
port NFC-normalizes the text before splitting it, which the original does not. The original is
that port without its NFC step (`without_nfc`); every line must give its ids exactly, and the
port's own ids differ on exactly the lines that STRESS_LINES marks as changed by NFC, in the
modes that keep accents.
"""

import collections
import functools
import types
import unicodedata
from unittest import mock

import pytest
import tensorflow as tf
from transformers import BertTokenizerLegacy
from transformers.models.bert import tokenization_bert_legacy

from electra_tf.pretraining_data import corpus
from electra_tf.text.text_normalization import (CJK_RANGES, character_class,
                                                lower_case_gaps, normalize)
from electra_tf.text.tokenization import (SPECIAL_TOKENS, BertWordPieceTokenizer,
                                          load_vocabulary, make_tokenizer)

# (lower_case, strip_accents): uncased (the default), cased, lower-cased with accents kept
MODES = {"uncased": (True, True), "cased": (False, False), "lower_keep_accents": (True, False)}
NFC = "NFC changes it"  # the port's NFC step changes this line's ids when accents are kept
NFC_CASED = "NFC changes it, not its lower case"  # ... when case and accents are kept

# (line, note): a note marks the lines the port's NFC step changes.
STRESS_LINES = [
    ("Café, naïve résumé; ÉCOLE Ångström — déjà vu!", ""),
    ("Cafe\u0301 and nai\u0308ve, written decomposed", NFC),
    ("Straße STRASSE ẞ, ligatures ﬁne ﬂow ﬀ, and Ꜳ", ""),
    ("Ｆｕｌｌ－ｗｉｄｔｈ ＡＢＣ　１２３！ and half-width ｶﾀｶﾅ", ""),
    ("İstanbul ISTANBUL ıi Iİ, DİYARBAKIR", ""),
    ("ΟΔΟΣ ΟΔΟΣ. ΣΑΣ ΑΣ-Β ΑΣ.Β Σ σ ς ΌΣΟΣ Ά\u0301Σ", ""),
    ("中文字符测试，日本語のテキスト、한국어 텍스트", ""),
    ("CJK extension B \U00020000\U00020001 and compatibility \uf900 \uf901 and \U0002f800", NFC),
    ("emoji 😀👍🏽 👨\u200d👩\u200d👧 🇫🇷 1\ufe0f\u20e3 ❤️", ""),
    ("soft\u00adhyphen co\u00adoperate zero\u200bwidth\u200bspace joiner\u200dnon\u200cjoiner", ""),
    ("nul\x00char, replacement\ufffdchar, bell\x07, escape\x1b[0m, delete\x7f", ""),
    ("bom\ufeffstart, lrm\u200eand\u200frlm, word\u2060joiner, tag\U000e0041chars", ""),
    ("private\ue000use, unassigned\u0378, noncharacter\ufffe, plane16\U00100000", ""),
    ("nbsp\u00a0here, en\u2002em\u2003thin\u2009hair\u200a, narrow\u202fnbsp", ""),
    ("ideographic\u3000space, ogham\u1680mark, medium\u205fmath, figure\u2007space", ""),
    ("line\u2028separator, paragraph\u2029separator, next\x85line", ""),
    ("vertical\x0btab, form\x0cfeed, file\x1csep\x1dgroup\x1erecord\x1funit", ""),
    ("tabs\tbetween\twords\t\tand carriage\rreturns\r\r and a trailing tab\t", ""),
    ("combining a\u0301\u0316 Z\u0351\u0334a\u0300\u0317l\u0352g\u0315o\u0329 e\u0338", NFC),
    ("stacked marks q\u0307\u0323 versus dotted \u1e69 and \u0073\u0323\u0307", NFC),
    ("Angstrom \u212b Ohm \u2126 Kelvin \u212a degrees", NFC_CASED),
    ("marks with a deleted character between: a\u0301\u00ad\u0316 o\u0308\u200b\u0301", NFC),
    ("and spacing marks NFD reorders once it is gone: x\U0001d16d\u200b\U0001d165", NFC),
    ("Arabic: مرحبا بالعالم، مَرْحَبًا ١٢٣ ؟", ""),
    ("Hebrew: שָׁלוֹם עוֹלָם, \u05d0\u05b8\u200f!", ""),
    ("Devanagari हिन्दी, Thai ภาษาไทย, Vietnamese Tiếng Việt", ""),
    ("Cyrillic ПРИВЕТ мир, Armenian ԲԱՐԵՎ, Georgian ᲒᲐᲛᲐᲠᲯᲝᲑᲐ", ""),
    ("“quotes” ‘single’ «guillemets» ¿qué? ¡hola! … ・ 〜", ""),
    ("symbols © ® ™ $ € £ ^ ` ~ ≠ ≮ ≯ ᾿ ῾ \u1fef \u037e \u0387", NFC),
    ("Math 𝐀𝐁𝐂 𝑥², Roman Ⅻ ⅻ, circled Ⓐ ⓐ, titlecase ǅ Ǆ ǆ", ""),
    ("Deseret 𐐀𐐨, Cherokee ᎠᎡ ꭰ, Vithkuqi \U00010570\U00010597", ""),
    ("Unicode 15 and 16 letters, unassigned in Python 3.11: \u0cf3 \U00011b00 \u1c89", ""),
    ("literal special tokens [MASK] [CLS] [SEP] [UNK] and ##ing pieces", ""),
    ("a" * 100 + " " + "b" * 150 + " " + "c" * 200 + " " + "d" * 201 + " " + "e" * 250, ""),
    ("é" * 101 + " " + "ж" * 120 + " " + "ж" * 201 + " " + "😀" * 60 + " " + "中" * 250, ""),
    ("x" * 199 + "é" + " " + "X" * 198 + "É" + "e\u0301", NFC),  # 201 characters, NFC: 200
    ("e\u0301" * 150 + " " + "\u00ad" * 300 + "word" + " " + "\u0301" * 5, NFC),
    ("", ""),
    ("   \t  \u3000 ", ""),
    ("ASCII only: The QUICK brown fox (jumps) over the lazy dog's back -- 42 times.", ""),
]


@pytest.fixture(scope="module")
def corpus_lines():
    return [line for document in corpus.embedded_documents() for line in document]


def stress_file_lines(tmp_path):
    """STRESS_LINES written to a file and read back (split at "\\n" only: "\\r" stays in)."""
    path = tmp_path / "stress.txt"
    path.write_bytes("\n".join(line for line, _ in STRESS_LINES).encode("utf-8"))
    return path.read_bytes().decode("utf-8").split("\n")


def without_nfc():
    """A stand-in for `unicodedata` whose NFC does nothing, for the port's module."""
    def normalize(form, text):
        return text if form == "NFC" else unicodedata.normalize(form, text)
    return types.SimpleNamespace(normalize=normalize, category=unicodedata.category)


def reference_tokenizer(vocab_file, lower_case, strip_accents):
    port = BertTokenizerLegacy(vocab_file, do_lower_case=lower_case, strip_accents=strip_accents)
    port.wordpiece_tokenizer.max_input_chars_per_word = 200  # the original's limit
    return port


def reference_ids(port, lines):
    return [port.convert_tokens_to_ids([piece for word in port.basic_tokenizer.tokenize(line)
                                        for piece in port.wordpiece_tokenizer.tokenize(word)])
            for line in lines]


def fixture_vocabulary(corpus_lines, lower_case, strip_accents):
    """Specials, the 1,500 most frequent words, frequent word beginnings and endings, and the
    characters (alone and as "##" pieces) of the stress lines and the corpus's common ones:
    words split into several pieces, words with a rare corpus character are [UNK], and a
    stress character normalized otherwise than by the original (or the port) becomes another
    piece or [UNK]."""
    port = tokenization_bert_legacy.BasicTokenizer(do_lower_case=lower_case,
                                                   strip_accents=strip_accents)
    stress_lines = [line for line, _ in STRESS_LINES]
    words = collections.Counter(w for line in corpus_lines + stress_lines
                                for w in port.tokenize(line))
    stress_words = {w for line in stress_lines for w in port.tokenize(line)}
    with mock.patch.object(tokenization_bert_legacy, "unicodedata", without_nfc()):
        stress_words.update(w for line in stress_lines for w in port.tokenize(line))
    words.update(stress_words - set(words))
    ranked = [w for w, _ in sorted(words.items(), key=lambda item: (-item[1], item[0]))]
    char_counts = collections.Counter(c for w, n in words.items() for c in w * n)
    chars = sorted({c for c, n in char_counts.items() if n >= 100}
                   | {c for w in stress_words for c in w})
    starts = collections.Counter(w[:k] for w in ranked[1500:] for k in (3, 4, 5) if len(w) > k)
    ends = collections.Counter("##" + w[-k:] for w in ranked[1500:] for k in (2, 3, 4)
                               if len(w) > k)
    common = [piece for counts in (starts, ends)
              for piece, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:400]]
    tokens = [*SPECIAL_TOKENS, *ranked[:1500], *chars, *("##" + c for c in chars), *common]
    return list(dict.fromkeys(tokens))


@pytest.fixture(scope="module", params=list(MODES))
def mode(request, tmp_path_factory, corpus_lines):
    """(mode name, our tokenizer, the port), on a fixture vocabulary for that mode."""
    lower_case, strip_accents = MODES[request.param]
    vocabulary = fixture_vocabulary(corpus_lines, lower_case, strip_accents)
    vocab_file = tmp_path_factory.mktemp(request.param) / "vocab.txt"
    vocab_file.write_text("".join(t + "\n" for t in vocabulary), encoding="utf-8")
    ours = make_tokenizer(load_vocabulary(str(vocab_file)), lower_case, strip_accents)
    return request.param, ours, reference_tokenizer(str(vocab_file), lower_case, strip_accents)


def in_graph(tokenizer, lines):
    """Ids from the traced path (as tf.data and SavedModels run it)."""
    graph = tf.function(tokenizer.tokenize, input_signature=[tf.TensorSpec([None], tf.string)],
                        autograph=False)
    return graph(tf.constant(lines)).to_list()


@pytest.mark.slow
def test_every_corpus_line_gives_the_original_ids(mode, corpus_lines):
    _, ours, port = mode
    expected = reference_ids(port, corpus_lines)
    tokens = [port.convert_ids_to_tokens(i) for ids in expected for i in ids]
    assert sum(t.startswith("##") for t in tokens) > 20_000  # words split into pieces
    assert in_graph(ours, corpus_lines) == expected  # 13,327 lines, 100% identical
    # The port's NFC step changes nothing here: its ids are the original's.
    assert all(unicodedata.normalize("NFC", line) == line for line in corpus_lines)


@pytest.mark.slow
def test_every_stress_line_gives_the_original_ids(mode, tmp_path, monkeypatch):
    name, ours, port = mode
    lines = stress_file_lines(tmp_path)
    assert len(lines) == len(STRESS_LINES)
    ids = in_graph(ours, lines)
    assert ours(lines) == ids  # eager calls give the same lists
    port_ids = reference_ids(port, lines)
    monkeypatch.setattr(tokenization_bert_legacy, "unicodedata", without_nfc())
    original_ids = reference_ids(port, lines)
    differing = [i for i, line in enumerate(lines) if original_ids[i] != ids[i]]
    assert differing == [], [(lines[i], ids[i], original_ids[i]) for i in differing]
    # The port's own ids differ on the lines NFC changes when accents are kept, and there
    # they are ours on the line cleaned and NFC-normalized (as the port does it): NFC is the
    # one difference.
    nfc_changed = [i for i in range(len(lines)) if port_ids[i] != original_ids[i]]
    lower_case, strip_accents = MODES[name]
    expected_notes = set() if strip_accents else {NFC} if lower_case else {NFC, NFC_CASED}
    assert nfc_changed == [i for i, (_, note) in enumerate(STRESS_LINES)
                           if note in expected_notes]
    assert [port_ids[i] for i in nfc_changed] == ours([unicodedata.normalize(
        "NFC", "".join(c for c in lines[i] if original_class(c) != "deleted"))
        for i in nfc_changed])


EVERY_CHARACTER = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
BECOME_PUNCTUATION_UNDER_NFD = {"\u1fef", "\u2260", "\u226e", "\u226f"}  # "`", "=", "<", ">"


def original_class(char):
    """The original's rules (`_clean_text`, `_is_whitespace`, `_is_punctuation`,
    `_is_chinese_char`, `whitespace_tokenize`), one character at a time."""
    code, category = ord(char), unicodedata.category(char)
    if code in (0, 0xFFFD) or (category.startswith("C") and char not in "\t\n\r"):
        return "deleted"
    if category == "Zs" or char.isspace():
        return "separator"
    if (33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126
            or category.startswith("P")):
        return "punctuation"
    if any(low <= code <= high for low, high in CJK_RANGES):
        return "cjk"
    return "accent" if category == "Mn" else "other"


def original_normalized(char, lower_case, strip_accents):
    """The original's lower-casing and accent stripping of one (kept) character."""
    text = char.lower() if lower_case else char
    if strip_accents:
        text = "".join(c for c in unicodedata.normalize("NFD", text)
                       if unicodedata.category(c) != "Mn")
    return text


@functools.lru_cache(maxsize=None)
def original_classes():
    return [original_class(c) for c in EVERY_CHARACTER]


@pytest.mark.parametrize("kind", ["deleted", "separator", "punctuation", "cjk", "accent"])
def test_character_classes_are_the_originals_for_every_code_point(kind):
    every = tf.constant("".join(EVERY_CHARACTER))
    outside = tf.strings.regex_replace(every, character_class(kind), "").numpy().decode()
    assert outside == "".join(c for c, k in zip(EVERY_CHARACTER, original_classes())
                              if k != kind)


@pytest.mark.slow
def test_end_to_end_split_is_the_original_split_for_every_code_point():
    """The fast path's word splitting (tensorflow-text's end-to-end WordPiece) against the
    regular expression, around every character the cleaning keeps."""
    ours = BertWordPieceTokenizer([*SPECIAL_TOKENS, "a", "##a"], lower_case=False)
    kept = [c for c, k in zip(EVERY_CHARACTER, original_classes()) if k != "deleted"]
    texts = tf.constant(["a" + c + "a" for c in kept])
    end_to_end = ours._end_to_end.tokenize(texts).to_list()  # [UNK] a, or a [UNK] a, or a a
    by_regex = ours._tokenize_words(texts).to_list()
    assert len(kept) > 100_000
    assert [c for c, a, b in zip(kept, end_to_end, by_regex) if a != b] == []


@pytest.mark.parametrize("lower_case, strip_accents", [(True, False), (False, True), (True, True)])
def test_normalizing_keeps_every_character_class(lower_case, strip_accents):
    """What lets `normalize` work on whole strings before `split_words`: lower-casing and accent
    stripping move no character into or out of the separators, CJK characters or deleted
    characters, and make punctuation of four only (before the original splits punctuation)."""
    changed = {}
    for char, kind in zip(EVERY_CHARACTER, original_classes()):
        if kind != "deleted" and any(original_class(c) not in (kind, "accent", "other")
                                     or (kind not in ("accent", "other")
                                         and original_class(c) != kind)
                                     for c in original_normalized(char, lower_case, strip_accents)):
            changed[char] = original_normalized(char, lower_case, strip_accents)
    assert set(changed) == (BECOME_PUNCTUATION_UNDER_NFD if strip_accents else set())


@pytest.mark.parametrize("lower_case, strip_accents", list(MODES.values()))
def test_normalize_is_the_originals_for_every_code_point(lower_case, strip_accents):
    """`normalize` (ICU's lower case and NFD, the character classes) on each character alone
    against the original's steps: they differ on exactly the letters ICU does not lower-case,
    `lower_case_gaps`, which the tokenizer puts right."""
    ours = normalize(tf.constant(EVERY_CHARACTER), lower_case, strip_accents).numpy()
    differing = set()
    for char, kind, text in zip(EVERY_CHARACTER, original_classes(), ours):
        original = "" if kind == "deleted" else original_normalized(char, lower_case,
                                                                    strip_accents)
        if text.decode() != original:
            differing.add((text.decode(), original))
    assert differing == (set(lower_case_gaps(strip_accents)) if lower_case else set())
