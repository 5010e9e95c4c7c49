"""Learning a WordPiece vocabulary (electra_tf/text/vocab_learning.py)."""

import logging
import random

import pytest
import tensorflow as tf

from electra_tf.text.tokenization import (SPECIAL_TOKENS, VocabularyError, load_vocabulary,
                                          make_tokenizer)
from electra_tf.text.vocab_learning import DEFAULT_MIN_FREQUENCY, learn_vocabulary
from tests.text.test_tokenization import tokenize

LINES = ["the quick brown fox jumps over the lazy dog.",
         "a quick brown dog naps, the fox does not!"] * DEFAULT_MIN_FREQUENCY * 2


def random_word_lines(num_lines=200, seed=0):
    """Lines of 60 made-up words over 10 letters: many pairs are equally frequent, the case in
    which `tokenizers`' trainer on its own gives a different vocabulary run after run."""
    rng = random.Random(seed)
    words = ["".join(rng.choice("abcdefghij") for _ in range(rng.randint(2, 7)))
             for _ in range(60)]
    return [" ".join(rng.choice(words) for _ in range(12)) for _ in range(num_lines)]


@pytest.mark.slow
def test_learned_vocabulary_starts_with_the_special_tokens(tmp_path):
    output = tmp_path / "sub" / "vocab.txt"
    vocabulary = learn_vocabulary(LINES, 100, str(output))
    assert tuple(vocabulary[:5]) == SPECIAL_TOKENS
    assert output.read_text(encoding="utf-8").splitlines() == vocabulary
    assert load_vocabulary(str(output)) == vocabulary
    assert len(set(vocabulary)) == len(vocabulary)
    assert {"quick", "brown", "fox", "the", ","} <= set(vocabulary)
    ids = tokenize(make_tokenizer(vocabulary), ["The QUICK fox."])
    assert [vocabulary[i] for i in ids[0]] == ["the", "quick", "fox", "."]


@pytest.mark.slow
def test_unseen_words_are_spelled_with_continuation_pieces(tmp_path):
    vocabulary = learn_vocabulary(LINES, 100, str(tmp_path / "vocab.txt"))
    assert "##x" in vocabulary and "##." not in vocabulary  # punctuation never continues a word
    pieces = [vocabulary[i] for i in tokenize(make_tokenizer(vocabulary), ["foxes"])[0]]
    assert pieces[0] == "fox" and len(pieces) > 1 and all(p.startswith("##") for p in pieces[1:])
    assert "".join(p.removeprefix("##") for p in pieces) == "foxes"


def test_the_same_corpus_gives_the_same_file(tmp_path):
    lines = random_word_lines()
    files = [tmp_path / f"vocab{i}.txt" for i in range(3)]
    for path in files:
        learn_vocabulary(lines, 150, str(path))
    assert len({path.read_bytes() for path in files}) == 1
    assert len(files[0].read_text(encoding="utf-8").splitlines()) == 150


def test_lists_generators_and_datasets_give_the_same_vocabulary(tmp_path):
    lines = random_word_lines(50)
    from_list = learn_vocabulary(lines, 80, str(tmp_path / "a.txt"), min_frequency=2)
    from_generator = learn_vocabulary((line for line in lines), 80, str(tmp_path / "b.txt"),
                                      min_frequency=2)
    from_dataset = learn_vocabulary(tf.data.Dataset.from_tensor_slices(lines), 80,
                                    str(tmp_path / "c.txt"), min_frequency=2)
    assert from_list == from_generator == from_dataset


def test_a_small_corpus_gives_fewer_tokens_with_a_warning(tmp_path, caplog):
    lines = random_word_lines(50)
    with caplog.at_level(logging.WARNING):
        vocabulary = learn_vocabulary(lines, 1000, str(tmp_path / "vocab.txt"))
    assert len(vocabulary) < 1000
    assert f"learned {len(vocabulary)} tokens, fewer than the 1000 asked" in caplog.text
    assert f"min_frequency={DEFAULT_MIN_FREQUENCY}" in caplog.text
    lower = learn_vocabulary(lines, 1000, str(tmp_path / "lower.txt"), min_frequency=2)
    assert len(vocabulary) < len(lower)
    assert set(vocabulary) <= set(lower)


def test_bert_normalization_cased_and_uncased(tmp_path):
    lines = ["Café au lait, 東京 and Ünïcode words."] * DEFAULT_MIN_FREQUENCY
    uncased = learn_vocabulary(lines, 200, str(tmp_path / "uncased.txt"))
    assert {"cafe", "unicode", "東", "京"} <= set(uncased)
    assert not any(token.startswith("##") and token[2:] in "東京,." for token in uncased)
    cased = learn_vocabulary(lines, 200, str(tmp_path / "cased.txt"), lower_case=False)
    assert {"Café", "Ünïcode"} <= set(cased) and "cafe" not in cased


def test_learning_from_an_empty_corpus_is_an_error(tmp_path):
    with pytest.raises(VocabularyError, match="empty corpus"):
        learn_vocabulary(["", "  "], 100, str(tmp_path / "vocab.txt"))
