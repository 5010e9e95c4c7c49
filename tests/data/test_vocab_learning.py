"""Learning a WordPiece vocabulary (electra_tf/data/vocab_learning.py)."""

import pytest

from electra_tf.data.tokenization import (SPECIAL_TOKENS, VocabularyError, load_vocabulary,
                                          make_tokenizer)
from electra_tf.data.vocab_learning import learn_vocabulary
from tests.data.test_tokenization import tokenize


def test_learned_vocabulary_starts_with_the_special_tokens(tmp_path):
    # tensorflow-text's learner keeps only pieces seen at least 10 times: repeat the lines.
    lines = ["the quick brown fox jumps over the lazy dog.",
             "a quick brown dog naps, the fox does not!"] * 20
    output = tmp_path / "sub" / "vocab.txt"
    vocabulary = learn_vocabulary(lines, 100, str(output))
    assert tuple(vocabulary[:5]) == SPECIAL_TOKENS
    assert output.read_text(encoding="utf-8").splitlines() == vocabulary
    assert load_vocabulary(str(output)) == vocabulary
    assert {"quick", "brown", "fox", "the", ","} <= set(vocabulary)
    ids = tokenize(make_tokenizer(vocabulary), ["The QUICK fox."])
    assert [vocabulary[i] for i in ids[0]] == ["the", "quick", "fox", "."]


def test_learning_from_an_empty_corpus_is_an_error(tmp_path):
    with pytest.raises(VocabularyError, match="empty corpus"):
        learn_vocabulary(["", "  "], 100, str(tmp_path / "vocab.txt"))
