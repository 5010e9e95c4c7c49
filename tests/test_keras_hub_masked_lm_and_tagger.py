"""keras-hub users: ELECTRA's generator as a MaskedLM (fill-mask) and a tagger as a token
classifier, converted from ours, on raw text, through presets."""

import keras
import keras_hub
import numpy as np
import pytest

from electra_tf.keras_hub_tasks import (ElectraMaskedLM, ElectraMaskedLMPreprocessor,
                                        ElectraTokenClassifier, to_keras_hub_masked_lm,
                                        to_keras_hub_token_classifier)
from electra_tf.models import ElectraPretrainer, ElectraTagger
from electra_tf.preprocessing.tagger import ElectraTaggerPreprocessor
from tests.models.helpers import objective, tiny_model_config

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "cat", "dog", "sat", "ran",
         "on", "mat", "in", "park", "eu", "rejects", "german", "call", "to", "boycott",
         "british", "lamb", "peter", "black", "##burn", "met", "with", "brussels", "."]
SENTENCES = [["EU", "rejects", "German", "call"], ["Peter", "Blackburn", "met", "the", "EU"],
             ["Peter"]]
TAG_IDS = [[3, 0, 4, 0], [1, 2, 0, 0, 3], [0]]  # O, B-PER, E-PER, S-ORG, S-MISC
TEXTS = ["the [MASK] sat on the [MASK] .", "a dog ran in the [MASK]", "no mask here"]
LENGTH = 16


def _randomize(variables, seed):
    """Random values for every variable, zero biases and unit LayerNorm scales included, so
    that a conversion that forgot one shows."""
    rng = np.random.default_rng(seed)
    for variable in variables:
        variable.assign(rng.normal(0.0, 0.5, variable.shape).astype(np.float32))


@pytest.fixture(scope="module")
def generator():
    """(our pretrainer, whose generator (hidden 8) is narrower than the shared embedding table
    (16), and its keras-hub masked LM)."""
    keras.utils.set_random_seed(0)
    pretrainer = ElectraPretrainer(tiny_model_config(
        activation="gelu_approximate", generator_fraction=0.25, max_position_embeddings=LENGTH))
    head = pretrainer.generator_head
    _randomize([w for w in head.weights if w is not head.token_embedding.embeddings], seed=1)
    return pretrainer, to_keras_hub_masked_lm(pretrainer, VOCAB)


@pytest.fixture(scope="module")
def tagger():
    """(our tagger with a preprocessor, its keras-hub token classifier)."""
    keras.utils.set_random_seed(0)
    ours = ElectraTagger(tiny_model_config(activation="gelu_approximate",
                                           max_position_embeddings=LENGTH), num_tags=5,
                         preprocessor=ElectraTaggerPreprocessor.from_vocabulary(
                             VOCAB, sequence_length=LENGTH))
    _randomize(ours.head.output_dense.weights, seed=2)
    return ours, to_keras_hub_token_classifier(ours)


def _our_mlm_logits(pretrainer, features):
    return keras.ops.convert_to_numpy(pretrainer.generator_logits(
        features["token_ids"], features["padding_mask"], features["segment_ids"],
        features["mask_positions"]))


def test_the_masked_lm_is_our_generator_and_its_head(generator):
    pretrainer, masked_lm = generator
    assert isinstance(masked_lm, ElectraMaskedLM)
    assert masked_lm.backbone.hidden_dim == 8 and masked_lm.backbone.embedding_dim == 16
    features = masked_lm.preprocessor.fill_mask_features(TEXTS)
    assert features["mask_positions"].tolist() == [[2, 6], [6, 0], [0, 0]]
    np.testing.assert_allclose(keras.ops.convert_to_numpy(masked_lm(features)),
                               _our_mlm_logits(pretrainer, features), atol=1e-5, rtol=0)


def test_fill_mask_ranks_the_vocabulary_at_each_written_mask(generator):
    pretrainer, masked_lm = generator
    filled = masked_lm.fill_mask(TEXTS, top_k=3)
    assert [len(slots) for slots in filled] == [2, 1, 0]
    features = masked_lm.preprocessor.fill_mask_features(TEXTS)
    probabilities = keras.ops.convert_to_numpy(
        keras.ops.softmax(_our_mlm_logits(pretrainer, features)))
    for row, slots in enumerate(filled):
        for slot, candidates in enumerate(slots):
            ours = probabilities[row, slot, :len(VOCAB)]
            assert candidates[0][0] == VOCAB[int(np.argmax(ours))]
            np.testing.assert_allclose([p for _, p in candidates],
                                       [ours[VOCAB.index(token)] for token, _ in candidates],
                                       atol=1e-6)
            assert [p for _, p in candidates] == sorted((p for _, p in candidates), reverse=True)


def test_a_masked_lm_preset_loads_through_keras_hubs_base_class(generator, tmp_path):
    _, masked_lm = generator
    masked_lm.save_to_preset(str(tmp_path))
    loaded = keras_hub.models.MaskedLM.from_preset(str(tmp_path))
    assert isinstance(loaded, ElectraMaskedLM)
    assert isinstance(loaded.preprocessor, ElectraMaskedLMPreprocessor)
    assert loaded.intermediate_activation == "gelu_approximate"  # as the converted model's
    features = masked_lm.preprocessor.fill_mask_features(TEXTS)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(loaded(features)),
                               keras.ops.convert_to_numpy(masked_lm(features)), atol=1e-6)
    # keras-hub's own MaskedLM API on raw strings: tokens masked at random, as in training
    logits = loaded.predict(["the cat sat on the mat"], verbose=0)
    assert logits.shape == (1, loaded.preprocessor.mask_selection_length, 120)
    # the backbone and the tokenizer stay loadable by keras-hub alone
    assert type(keras_hub.models.ElectraBackbone.from_preset(str(tmp_path))) is \
        keras_hub.models.ElectraBackbone
    assert keras_hub.models.ElectraTokenizer.from_preset(str(tmp_path)).get_vocabulary() == VOCAB


def test_a_pretraining_run_directory_converts_with_its_vocabulary(generator, tmp_path, caplog):
    """`to_keras_hub_masked_lm(run_dir)`: the run's pretrainer, and its vocabulary where the
    demo keeps it (data/vocab.txt, not beside config.yaml)."""
    from electra_tf.convert_checkpoint import write_electra_tf

    pretrainer, masked_lm = generator
    run = tmp_path / "run"
    run.mkdir()
    (tmp_path / "vocab.txt").write_text("".join(token + "\n" for token in VOCAB))
    write_electra_tf(pretrainer, str(run), None)
    (run / "data").mkdir()
    (tmp_path / "vocab.txt").rename(run / "data" / "vocab.txt")
    converted = to_keras_hub_masked_lm(str(run))
    assert converted.preprocessor.tokenizer.get_vocabulary() == VOCAB
    features = masked_lm.preprocessor.fill_mask_features(TEXTS)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(converted(features)),
                               keras.ops.convert_to_numpy(masked_lm(features)), atol=1e-6)
    with caplog.at_level("WARNING"):
        converted.fill_mask(TEXTS[:1])
    assert "never trained" not in caplog.text  # the generator's head


def test_a_backbone_only_preset_warns_that_its_head_is_random(generator, tmp_path, caplog):
    """keras-hub's MaskedLM.from_preset on a preset of a backbone and tokenizer (as
    `convert_checkpoint --to keras_hub` writes the discriminator) builds a random head:
    fill_mask says its answers are noise and how to write the generator's preset."""
    _, masked_lm = generator
    masked_lm.backbone.save_to_preset(str(tmp_path))
    masked_lm.preprocessor.tokenizer.save_to_preset(str(tmp_path))
    loaded = keras_hub.models.MaskedLM.from_preset(str(tmp_path))
    assert isinstance(loaded, ElectraMaskedLM) and not loaded.head_trained
    with caplog.at_level("WARNING"):
        loaded.fill_mask(TEXTS[:1])
    assert "masked-LM head was never trained or loaded" in caplog.text
    assert "to_keras_hub_masked_lm(run_dir).save_to_preset(dir)" in caplog.text
    whole = tmp_path / "whole"  # a task preset keeps its trained head
    masked_lm.save_to_preset(str(whole))
    assert keras_hub.models.MaskedLM.from_preset(str(whole)).head_trained


def test_the_token_classifier_is_our_tagger(tagger):
    ours, classifier = tagger
    assert isinstance(classifier.preprocessor, ElectraTaggerPreprocessor)
    features = ours.preprocessor(SENTENCES)  # word_positions included: accepted, not read
    want = keras.ops.convert_to_numpy(ours(features, training=False))
    theirs = classifier.predict(SENTENCES, verbose=0)
    assert theirs.shape == (3, LENGTH, 5) and theirs.dtype == np.float32
    np.testing.assert_allclose(theirs, want, atol=1e-5, rtol=0)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(classifier(features)), want,
                               atol=1e-5, rtol=0)
    assert classifier.predict_word_tags(SENTENCES) == ours.predict_word_tags(SENTENCES)


@pytest.mark.slow
def test_the_token_classifier_learns_tags_per_word_and_saves_as_a_preset(tmp_path):
    keras.utils.set_random_seed(0)
    backbone = keras_hub.models.ElectraBackbone(
        vocab_size=len(VOCAB), num_layers=1, num_heads=2, hidden_dim=16, embedding_dim=16,
        intermediate_dim=32, max_sequence_length=LENGTH)
    classifier = ElectraTokenClassifier(
        backbone, num_tags=5,
        preprocessor=ElectraTaggerPreprocessor.from_vocabulary(VOCAB, sequence_length=LENGTH))
    classifier.compile(optimizer=keras.optimizers.Adam(1e-2))
    history = classifier.fit(x=SENTENCES * 8, y=TAG_IDS * 8, batch_size=4, epochs=3,
                             verbose=0).history
    assert history["loss"][-1] < history["loss"][0] / 5
    assert classifier.predict_word_tags(SENTENCES) == TAG_IDS
    names = ["O", "B-PER", "E-PER", "S-ORG", "S-MISC"]
    assert classifier.predict_word_tags(SENTENCES[:1], tag_names=names) == [
        ["S-ORG", "O", "S-MISC", "O"]]
    logits = classifier.predict(SENTENCES, verbose=0)
    positions = classifier.preprocessor(SENTENCES)["word_positions"].numpy()
    for row, tags in enumerate(TAG_IDS):
        at_words = logits[row, positions[row, :len(tags)]]
        right = at_words[np.arange(len(tags)), tags]
        others = np.where(np.eye(5, dtype=bool)[tags], -np.inf, at_words).max(-1)
        assert np.all(right - others > 2.0), (right, others)  # memorised with a wide margin

    classifier.save_to_preset(str(tmp_path))
    loaded = ElectraTokenClassifier.from_preset(str(tmp_path))
    assert loaded.num_tags == 5 and isinstance(loaded.preprocessor, ElectraTaggerPreprocessor)
    np.testing.assert_allclose(loaded.predict(SENTENCES, verbose=0), logits, atol=1e-5)


def test_bad_inputs_are_refused_with_one_clear_error(generator):
    backbone = generator[1].backbone  # 120 ids
    too_many = VOCAB + [f"w{i}" for i in range(100)]
    with pytest.raises(ValueError, match="has 130 tokens, more than the backbone's 120"):
        ElectraMaskedLM(backbone, preprocessor=ElectraMaskedLMPreprocessor.from_vocabulary(
            too_many))
    with pytest.raises(ValueError, match="has 130 tokens, more than the backbone's 120"):
        ElectraTokenClassifier(backbone, num_tags=3,
                               preprocessor=ElectraTaggerPreprocessor.from_vocabulary(too_many))
    with pytest.raises(ValueError, match="needs an ElectraTaggerPreprocessor"):
        to_keras_hub_token_classifier(ElectraTagger(tiny_model_config(), num_tags=3))
    with pytest.raises(ValueError, match="no generator network"):
        to_keras_hub_masked_lm(ElectraPretrainer(tiny_model_config(),
                                                 objective(uniform_generator=True)))
