"""ElectraTaggerPreprocessor: words in, the tagging features run_finetuning makes."""

import random

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.preprocessing.tagger import ElectraTaggerPreprocessor
from electra_tf.task_data.tagging import TaggedSentence, TagSpace, featurize_tagging, to_bioes
from electra_tf.text.tokenization import make_tokenizer, special_ids

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "eu", "rejects", "german", "call", "##s",
         "peter", "black", "##burn", "to", "boycott", "british", "lamb", ".", "un", "##like"]
WORDS = ["EU", "rejects", "German", "calls", "Peter", "Blackburn", "to", "boycott", "British",
         "lamb", ".", "unlikes", "", "Zürich", "x" * 250]
TAGS = ["O", "B-ORG", "I-ORG", "B-PER", "I-PER"]


def sentences(n, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(0, 14))]
        out.append(TaggedSentence(words, [rng.choice(["O", "B-ORG", "B-PER"]) for _ in words]))
    return out


@pytest.mark.parametrize("length", [6, 12, 24])
def test_words_give_run_finetunings_tagging_features(length):
    data = sentences(60, seed=length)
    tag_space = TagSpace.from_sentences(data)
    want = featurize_tagging(data, make_tokenizer(VOCAB), special_ids(VOCAB), length, tag_space)
    preprocessor = ElectraTaggerPreprocessor.from_vocabulary(VOCAB, sequence_length=length)
    tag_ids = [tag_space.encode(to_bioes(s.tags)) for s in data]
    features, labels = preprocessor([s.words for s in data], tag_ids)
    for name in ("input_ids", "input_mask", "segment_ids"):
        np.testing.assert_array_equal(features[name], want[name], err_msg=name)
    got_positions = features["word_positions"].numpy()
    np.testing.assert_array_equal(got_positions[:, :want["word_positions"].shape[1]],
                                  want["word_positions"])
    np.testing.assert_array_equal(labels["tags"], want["tags"])
    np.testing.assert_array_equal(labels["tag_mask"], want["tag_mask"])
    assert (want["input_ids"][:, 0] == 3).any() or length > 6  # the [SEP]-alone rule is covered


def test_in_tf_data_from_ragged_words():
    words = tf.ragged.constant([["EU", "rejects"], ["Peter", "Blackburn", "."]])
    dataset = tf.data.Dataset.from_tensor_slices(words).batch(2).map(
        ElectraTaggerPreprocessor.from_vocabulary(VOCAB, sequence_length=8))
    features = next(iter(dataset))
    # the original reserves room by the word count: 3 words + 2 + 4 ids + 1 > 8 cuts the "."
    np.testing.assert_array_equal(features["input_ids"][1], [2, 10, 11, 12, 3, 0, 0, 0])
    np.testing.assert_array_equal(features["word_positions"], [[1, 2, -1], [1, 2, -1]])
