"""ElectraTextClassifierPreprocessor: the features run_finetuning makes, from raw strings."""

import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.preprocessing.text_classifier import ElectraTextClassifierPreprocessor
from electra_tf.task_data.classification_data import Example
from electra_tf.task_data.classification_features import LabelSpace, featurize
from electra_tf.text.tokenization import make_tokenizer, special_ids

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "film", "was", "great", "a", "dull",
         "story", "i", "liked", "it", "##s", "##ing", "café", "cafe", ".", ",", "!", "?", "'",
         "un", "##like", "##ly", "ride", "what", "naïve", "naive", "中", "文", "—"]
TEXTS = ["The film was great.", "A dull story, I liked it!", "What a ride?", "unlikely",
         "Café naïve — the STORY", "中文 film", "", "it's the film the film the film the film",
         "un ##like ly", "I   liked\tit\n."]
PAIRS = [("The film was great.", "I liked it"),
         ("a dull story a dull story a dull story", "what a ride"),
         ("it", "the film was great the film was great the film was great"),
         ("Café", "naïve 中文"), ("", "dull")]
LENGTH = 12


def expected(examples, lower_case=True):
    tokenizer = make_tokenizer(VOCAB, lower_case=lower_case)
    return featurize(examples, tokenizer, special_ids(VOCAB), LENGTH, LabelSpace(("x", "y")))


@pytest.mark.parametrize("lower_case", [True, False])
def test_single_texts_give_run_finetunings_features(lower_case):
    preprocessor = ElectraTextClassifierPreprocessor.from_vocabulary(
        VOCAB, lower_case=lower_case, sequence_length=LENGTH)
    features = preprocessor(TEXTS)
    want = expected([Example(str(i), t, None, "x") for i, t in enumerate(TEXTS)], lower_case)
    for name in ("input_ids", "input_mask", "segment_ids"):
        assert features[name].dtype == tf.int32
        np.testing.assert_array_equal(features[name].numpy(), want[name], err_msg=name)


def test_pairs_are_truncated_as_the_original():
    preprocessor = ElectraTextClassifierPreprocessor.from_vocabulary(VOCAB, sequence_length=LENGTH)
    features = preprocessor(x=([a for a, _ in PAIRS], [b for _, b in PAIRS]))
    want = expected([Example(str(i), a, b, "x") for i, (a, b) in enumerate(PAIRS)])
    for name in ("input_ids", "input_mask", "segment_ids"):
        np.testing.assert_array_equal(features[name].numpy(), want[name], err_msg=name)
    assert want["segment_ids"][0].sum() > 0  # the fixture does hold pairs


def test_a_scalar_text_gives_unbatched_features():
    preprocessor = ElectraTextClassifierPreprocessor.from_vocabulary(VOCAB, sequence_length=LENGTH)
    single = preprocessor("the film")
    assert single["input_ids"].shape == (LENGTH,)
    np.testing.assert_array_equal(single["input_ids"], preprocessor(["the film"])["input_ids"][0])


def test_in_tf_data_labels_and_weights_pass_through():
    preprocessor = ElectraTextClassifierPreprocessor.from_vocabulary(VOCAB, sequence_length=LENGTH)
    pairs = tf.data.Dataset.from_tensor_slices(
        (([a for a, _ in PAIRS], [b for _, b in PAIRS]), np.arange(len(PAIRS)),
         np.ones(len(PAIRS), np.float32))).batch(2).map(preprocessor)
    features, labels, weights = next(iter(pairs))
    want = expected([Example(str(i), a, b, "x") for i, (a, b) in enumerate(PAIRS)])
    np.testing.assert_array_equal(features["input_ids"], want["input_ids"][:2])
    np.testing.assert_array_equal(labels, [0, 1])
    assert weights.shape == (2,)


def test_keras_hub_normalization_is_keras_hubs_tokenizer():
    preprocessor = ElectraTextClassifierPreprocessor.from_vocabulary(
        VOCAB, sequence_length=LENGTH, normalization="keras_hub")
    tokenizer = keras_hub.models.ElectraTokenizer(vocabulary=VOCAB, lowercase=True,
                                                  strip_accents=True)
    ids = preprocessor(["The film was great."])["input_ids"].numpy()[0]
    pieces = np.asarray(tokenizer("The film was great.")).tolist()
    assert ids[:len(pieces) + 2].tolist() == [2, *pieces, 3]


def test_the_two_normalizations_differ_where_documented():
    # keras-hub folds case with NFKC ("ß" -> "ss"); the original lower-cases and keeps "ß"
    vocab = VOCAB + ["ss", "ß"]
    bert, hub = (ElectraTextClassifierPreprocessor.from_vocabulary(
        vocab, sequence_length=LENGTH, normalization=n) for n in ("bert", "keras_hub"))
    assert bert(["ß"])["input_ids"][0, 1] == vocab.index("ß")
    assert hub(["ß"])["input_ids"][0, 1] == vocab.index("ss")


def test_unknown_normalization_is_refused():
    with pytest.raises(ValueError, match="normalization must be one of"):
        ElectraTextClassifierPreprocessor.from_vocabulary(VOCAB, normalization="nfkc")


def test_config_round_trip_and_preset(tmp_path):
    preprocessor = ElectraTextClassifierPreprocessor.from_vocabulary(VOCAB, sequence_length=LENGTH)
    again = ElectraTextClassifierPreprocessor.from_config(preprocessor.get_config())
    assert again.sequence_length == LENGTH and again.normalization == "bert"
    backbone = keras_hub.models.ElectraBackbone(
        vocab_size=len(VOCAB), num_layers=1, num_heads=1, hidden_dim=8, embedding_dim=8,
        intermediate_dim=16, max_sequence_length=LENGTH)
    backbone.save_to_preset(str(tmp_path))  # a keras-hub preset is a backbone and the rest
    preprocessor.save_to_preset(str(tmp_path))
    loaded = ElectraTextClassifierPreprocessor.from_preset(str(tmp_path))
    np.testing.assert_array_equal(loaded(TEXTS)["input_ids"], preprocessor(TEXTS)["input_ids"])
    # the tokenizer in the preset is keras-hub's own class, loadable without electra_tf
    tokenizer = keras_hub.models.ElectraTokenizer.from_preset(str(tmp_path))
    assert type(tokenizer) is keras_hub.models.ElectraTokenizer
    assert tokenizer.get_vocabulary() == VOCAB
