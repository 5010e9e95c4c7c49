"""Vocabulary loading and WordPiece tokenization (electra_tf/data/tokenization.py)."""

import pytest
import tensorflow as tf

from electra_tf.data.tokenization import (SPECIAL_TOKENS, SpecialIds, VocabularyError,
                                          load_vocabulary, make_tokenizer, special_ids)

WORDS = ["hello", "world", "héllo", "Héllo", "World", "un", "una", "##ffa", "##ble", "##aff",
         "##able", "the", "cat", ",", "!", ".", "(", ")"]


def bert_style_vocabulary():
    """BERT's layout: [PAD]=0, [unused0..98], [UNK]=100 [CLS]=101 [SEP]=102 [MASK]=103, words."""
    return (["[PAD]"] + [f"[unused{i}]" for i in range(99)]
            + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS)


def write_vocab(path, tokens):
    path.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
    return str(path)


def tokenize(tokenizer, lines):
    """The in-graph path (what the data builder uses), checked against keras-hub's eager path."""
    graph = tf.function(tokenizer.tokenize, input_signature=[tf.TensorSpec([None], tf.string)],
                        autograph=False)  # as pretraining_data.ShardWriter traces it
    ids = graph(tf.constant(lines)).to_list()
    assert ids == tokenizer(lines)  # eager calls take keras-hub's pure-Python path
    return ids


@pytest.fixture()
def vocab_file(tmp_path):
    return write_vocab(tmp_path / "vocab.txt", bert_style_vocabulary())


def test_missing_vocab_file(tmp_path):
    with pytest.raises(VocabularyError, match="not found"):
        load_vocabulary(str(tmp_path / "nope.txt"))


def test_empty_vocab_file(tmp_path):
    with pytest.raises(VocabularyError, match="empty"):
        load_vocabulary(write_vocab(tmp_path / "vocab.txt", ["", ""]))


@pytest.mark.parametrize("missing", ["[MASK]", "[CLS]", "[SEP]", "[UNK]"])
def test_vocab_lacking_a_special_token_names_it(tmp_path, missing):
    tokens = [t for t in bert_style_vocabulary() if t != missing]
    with pytest.raises(VocabularyError) as error:
        load_vocabulary(write_vocab(tmp_path / "vocab.txt", tokens))
    message = str(error.value)
    assert f"lacks {missing}" in message
    assert "vocab.txt" in message  # names the file


def test_every_missing_special_token_is_named():
    with pytest.raises(VocabularyError, match=r"lacks \[CLS\], \[SEP\], \[MASK\]"):
        special_ids(["[PAD]", "[UNK]", "hello"])


def test_bert_layout_gives_bert_special_ids(vocab_file):
    vocabulary = load_vocabulary(vocab_file)
    assert len(vocabulary) == 104 + len(WORDS)
    assert special_ids(vocabulary) == SpecialIds(pad=0, unk=100, cls=101, sep=102, mask=103)


def test_longest_match_first_wordpiece(vocab_file):
    vocabulary = load_vocabulary(vocab_file)
    tokenizer = make_tokenizer(vocabulary)
    ids = tokenize(tokenizer, ["unaffable", "unaffablex the", "[MASK]"])
    # Greedy longest prefix: "una" beats "un", then "##ffa" beats nothing longer, then "##ble"
    # (a best-split search could have picked un ##aff ##able instead).
    assert [vocabulary[i] for i in ids[0]] == ["una", "##ffa", "##ble"]
    # A word with an unmatched remainder becomes a single [UNK]; other words are unaffected.
    assert [vocabulary[i] for i in ids[1]] == ["[UNK]", "the"]
    # As in BERT's tokenizer, "[MASK]" typed in text is punctuation and a word, never the
    # special token (text cannot inject [MASK]/[SEP] into an example).
    assert 103 not in ids[2] and len(ids[2]) == 3


def test_lower_case_and_accent_stripping_are_the_default(vocab_file):
    vocabulary = load_vocabulary(vocab_file)
    ids = tokenize(make_tokenizer(vocabulary), ["Héllo WORLD"])
    assert [vocabulary[i] for i in ids[0]] == ["hello", "world"]


def test_cased_mode_keeps_case_and_accents(vocab_file):
    vocabulary = load_vocabulary(vocab_file)
    tokenizer = make_tokenizer(vocabulary, lower_case=False, strip_accents=False)
    ids = tokenize(tokenizer, ["Héllo World hello"])
    assert [vocabulary[i] for i in ids[0]] == ["Héllo", "World", "hello"]


def test_lower_case_without_strip_accents_keeps_accents(vocab_file):
    vocabulary = load_vocabulary(vocab_file)
    tokenizer = make_tokenizer(vocabulary, lower_case=True, strip_accents=False)
    ids = tokenize(tokenizer, ["HÉLLO Héllo"])
    assert [vocabulary[i] for i in ids[0]] == ["héllo", "héllo"]


def test_punctuation_is_split_off(vocab_file):
    vocabulary = load_vocabulary(vocab_file)
    ids = tokenize(make_tokenizer(vocabulary), ["hello,world!(the cat)."])
    assert [vocabulary[i] for i in ids[0]] == ["hello", ",", "world", "!", "(", "the", "cat",
                                               ")", "."]
