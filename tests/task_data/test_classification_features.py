"""Featurization of classification examples as the original's `_featurize`."""

import random

import numpy as np
import pytest

from electra_tf.task_data.classification_data import Example
from electra_tf.task_data.classification_features import (LabelSpace, featurize, swap_pairs,
                                                      truncate_pair)
from electra_tf.text.tokenization import SpecialIds, make_tokenizer

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(20)]
IDS = SpecialIds(pad=0, unk=1, cls=2, sep=3, mask=4)


def original_truncate(a, b, max_length):
    """google-research/electra `_truncate_seq_pair`, verbatim in logic."""
    while True:
        total_length = len(a) + len(b)
        if total_length <= max_length:
            break
        if len(a) > len(b):
            a.pop()
        else:
            b.pop()


def test_truncation_is_longest_first_and_pops_b_on_ties():
    rng = random.Random(0)
    for _ in range(500):
        a, b = list(range(rng.randint(0, 12))), list(range(100, 100 + rng.randint(0, 12)))
        budget = rng.randint(0, 20)
        expected_a, expected_b = list(a), list(b)
        original_truncate(expected_a, expected_b, budget)
        truncate_pair(a, b, budget)
        assert (a, b) == (expected_a, expected_b)
    a, b = [1, 2, 3], [4, 5, 6]
    truncate_pair(a, b, 5)
    assert (a, b) == ([1, 2, 3], [4, 5])


def word(i):
    return VOCAB.index(f"w{i}")


def test_pair_and_single_layouts_with_truncation():
    tokenizer = make_tokenizer(VOCAB)
    examples = [Example("a", "w1 w2 w3", "w4 w5", "yes"),
                Example("b", "w1 w2 w3 w4 w5 w6 w7 w8", "w9", "no"),
                Example("c", "w1 w2 w3 w4 w5 w6 w7 w8 w9", None, "no"),
                Example("d", "W3", None, None)]
    features = featurize(examples, tokenizer, IDS, 8, LabelSpace(("no", "yes")))
    np.testing.assert_array_equal(features["input_ids"][0],
                                  [2, word(1), word(2), word(3), 3, word(4), word(5), 3])
    np.testing.assert_array_equal(features["segment_ids"][0], [0, 0, 0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(features["input_mask"][0], [1] * 8)
    # budget 8 - 3 = 5: a loses tokens until a + b fit
    np.testing.assert_array_equal(features["input_ids"][1],
                                  [2, word(1), word(2), word(3), word(4), 3, word(9), 3])
    np.testing.assert_array_equal(features["input_ids"][2], [2] + [word(i) for i in range(1, 7)] + [3])
    np.testing.assert_array_equal(features["segment_ids"][2], [0] * 8)
    np.testing.assert_array_equal(features["input_ids"][3], [2, word(3), 3, 0, 0, 0, 0, 0])  # lower-cased
    np.testing.assert_array_equal(features["input_mask"][3], [1, 1, 1, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(features["labels"], [1, 0, 0, 0])
    assert features["input_ids"].dtype == np.int32 and features["input_ids"].shape == (4, 8)


def test_regression_targets_are_scaled_to_the_unit_interval():
    space = LabelSpace(None, (0.0, 5.0))
    features = featurize([Example("a", "w1", "w2", 4.0), Example("b", "w1", "w2", "1.5")],
                         make_tokenizer(VOCAB), IDS, 8, space)
    np.testing.assert_allclose(features["labels"], [0.8, 0.3])
    assert features["labels"].dtype == np.float32
    np.testing.assert_allclose(space.decode_regression(features["labels"]), [4.0, 1.5], rtol=1e-6)
    shifted = LabelSpace(None, (1.0, 3.0))
    assert shifted.encode(2.0) == pytest.approx(0.5)


def test_swap_pairs_doubles_with_a_and_b_exchanged():
    swapped = swap_pairs([Example("t-1", "first", "second", "1")])
    assert swapped == [Example("t-1-swapped", "second", "first", "1")]


def test_unknown_label_is_an_error():
    with pytest.raises(ValueError):
        LabelSpace(("a", "b")).encode("c")
