"""Vocabulary loading and WordPiece tokenization (electra_tf/text/tokenization.py).

tests/text/test_tokenization_parity.py checks the ids against the original BERT tokenizer.
"""

import pytest
import tensorflow as tf

from electra_tf.text.tokenization import (SpecialIds, VocabularyError, load_vocabulary,
                                          make_tokenizer, special_ids)

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


@pytest.mark.slow
def test_cased_mode_keeps_case_and_accents(vocab_file):
    vocabulary = load_vocabulary(vocab_file)
    tokenizer = make_tokenizer(vocabulary, lower_case=False, strip_accents=False)
    ids = tokenize(tokenizer, ["Héllo World hello"])
    assert [vocabulary[i] for i in ids[0]] == ["Héllo", "World", "hello"]


@pytest.mark.slow
def test_lower_case_without_strip_accents_keeps_accents(vocab_file):
    vocabulary = load_vocabulary(vocab_file)
    tokenizer = make_tokenizer(vocabulary, lower_case=True, strip_accents=False)
    ids = tokenize(tokenizer, ["HÉLLO Héllo"])
    assert [vocabulary[i] for i in ids[0]] == ["héllo", "héllo"]


@pytest.mark.slow
def test_punctuation_is_split_off(vocab_file):
    vocabulary = load_vocabulary(vocab_file)
    ids = tokenize(make_tokenizer(vocabulary), ["hello,world!(the cat)."])
    assert [vocabulary[i] for i in ids[0]] == ["hello", ",", "world", "!", "(", "the", "cat",
                                               ")", "."]


def test_a_duplicated_token_is_named_with_its_line_numbers(tmp_path):
    tokens = bert_style_vocabulary() + ["world", "cat"]  # both already listed
    with pytest.raises(VocabularyError) as error:
        load_vocabulary(write_vocab(tmp_path / "vocab.txt", tokens))
    message = str(error.value)
    assert "vocab.txt" in message
    assert "'world' on lines 106, 123" in message  # 1-based, as an editor shows them
    assert "'cat' on lines 117, 124" in message


@pytest.mark.parametrize("normalization", ["bert", "keras_hub"])
def test_a_vocabulary_list_with_a_duplicate_is_refused(normalization):
    with pytest.raises(VocabularyError, match="'hello' on lines 105, 106"):
        make_tokenizer(bert_style_vocabulary()[:105] + ["hello"], normalization=normalization)


@pytest.mark.slow
def test_cleaning_and_word_limits_follow_the_original(vocab_file):
    vocabulary = load_vocabulary(vocab_file)
    ids = tokenize(make_tokenizer(vocabulary), [
        "hel\u00adlo\u00a0world\x00!",  # soft hyphen and NUL deleted, NBSP separates words
        "un" + "##" + "ffa" * 10,  # "#" is punctuation
        "una" + "ffa" * 65 + "ble",  # 201 characters: [UNK]
        "una" + "ffa" * 64 + "ble"])  # 198 characters: pieces
    assert [vocabulary[i] for i in ids[0]] == ["hello", "world", "!"]
    assert [vocabulary[i] for i in ids[1]] == ["un", "[UNK]", "[UNK]", "[UNK]"]
    assert [vocabulary[i] for i in ids[2]] == ["[UNK]"]
    assert [vocabulary[i] for i in ids[3]] == ["una"] + ["##ffa"] * 64 + ["##ble"]


@pytest.mark.slow
def test_keras_hub_normalization_is_kept_as_an_option():
    vocabulary = bert_style_vocabulary() + ["ss", "ß", "fine", "ﬁ", "##ne"]
    bert = make_tokenizer(vocabulary)
    previous = make_tokenizer(vocabulary, normalization="keras_hub")
    lines = ["ß ﬁne hel\u00adlo"]
    assert [vocabulary[i] for i in bert(lines)[0]] == ["ß", "ﬁ", "##ne", "hello"]
    # NFKC case folding, and the soft hyphen splits the word
    assert [vocabulary[i] for i in previous(lines)[0]] == ["ss", "fine", "[UNK]", "[UNK]"]
    with pytest.raises(ValueError, match="normalization must be one of"):
        make_tokenizer(vocabulary, normalization="nfkc")


@pytest.mark.slow
def test_strings_scalars_and_tf_data(vocab_file):
    vocabulary = load_vocabulary(vocab_file)
    tokenizer = make_tokenizer(vocabulary)
    assert tokenizer("hello world") == [104, 105]  # a scalar gives one id list
    assert tokenizer(tf.constant(["hello", ""])) == [[104], []]
    lines = tf.data.Dataset.from_tensor_slices(["hello world", "the cat", ""]).batch(2)
    batches = [t.to_list() for t in lines.map(tokenizer)]  # ragged int32 [batch, (tokens)]
    assert batches == [[[104, 105], [115, 116]], [[]]]
    single = tf.data.Dataset.from_tensor_slices(["the cat"]).map(tokenizer)
    assert [t.numpy().tolist() for t in single] == [[115, 116]]  # a scalar gives [tokens]


def test_vocabulary_entries_holding_whitespace_never_match():
    # tensorflow-text's learner wrote " " and "## "; the original splits words at whitespace
    # first, so such entries never apply.
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", " ", "## ", "the", "follow", "##ing"]
    ids = make_tokenizer(vocabulary).tokenize(["The following"])
    assert [vocabulary[i] for i in ids[0]] == ["the", "follow", "##ing"]


@pytest.mark.slow
def test_a_process_tokenizing_with_several_tokenizers_sees_no_retracing_warning(vocab_file,
                                                                                  caplog):
    # Each tokenizer traces once; TensorFlow warned when it counted them as one function's.
    for _ in range(8):
        make_tokenizer(vocab_file)(["hello world", "a b"])
    assert not [r for r in caplog.records if "retracing" in r.getMessage()]
