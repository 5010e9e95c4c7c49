"""Task models with a preprocessor: raw strings in fit, evaluate and predict."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import electra_tf  # noqa: F401  registers compile_for_finetuning's recipe
from electra_tf.config import learning_rate_for_width
from electra_tf.models import ElectraClassifier, ElectraTagger
from electra_tf.preprocessing.text_classifier import ElectraTextClassifierPreprocessor
from tests.models.helpers import tiny_model_config

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "film", "was", "great", "dull",
         "story", "i", "liked", "it", "a", "ride", "."]
TEXTS = ["the film was great", "a dull story", "i liked it", "the story was dull",
         "great ride", "dull film ."] * 4
LABELS = np.array([1, 0, 1, 0, 1, 0] * 4)


def preprocessor():
    return ElectraTextClassifierPreprocessor.from_vocabulary(VOCAB, sequence_length=16)


def classifier(with_preprocessor=True, seed=0):
    keras.utils.set_random_seed(seed)
    return ElectraClassifier(tiny_model_config(), num_labels=2,
                             preprocessor=preprocessor() if with_preprocessor else None)


@pytest.mark.slow
def test_fit_on_strings_trains_as_on_the_same_features():
    by_text, by_features = classifier(), classifier()
    features = {k: v.numpy() for k, v in preprocessor()(TEXTS).items()}
    for model in (by_text, by_features):
        # 0.01: the loss falls (0.1 made it rise from 4.6 to 18.7, and the two trajectories
        # drifted apart by 1.3e-4 on an AVX2-only AMD Zen 1, chaos rather than a defect)
        model.compile(optimizer=keras.optimizers.SGD(0.01))
    text_history = by_text.fit(TEXTS, LABELS, batch_size=8, epochs=2, shuffle=False, verbose=0)
    feature_history = by_features.fit(features, LABELS, batch_size=8, epochs=2, shuffle=False,
                                      verbose=0)
    # The two step graphs round the embeddings' LayerNorm differently (float32 differences of
    # about 1e-7), which six SGD steps at 0.01 leave near 1e-6 relative (training moves the
    # logits by about 1); one token id changed in one text moves them by about 4e-4.
    np.testing.assert_allclose(text_history.history["loss"], feature_history.history["loss"],
                               rtol=1e-4)
    np.testing.assert_allclose(by_text.predict(TEXTS[:3], verbose=0),
                               by_features.predict({k: v[:3] for k, v in features.items()},
                                                   verbose=0), rtol=1e-4, atol=1e-6)


@pytest.mark.slow
def test_evaluate_predict_and_validation_data_take_strings():
    model = classifier()
    model.compile(optimizer=keras.optimizers.SGD(0.1))
    history = model.fit(TEXTS, LABELS, batch_size=8, epochs=1, verbose=0,
                        validation_data=(TEXTS[:6], LABELS[:6]))
    assert "val_loss" in history.history
    results = model.evaluate(TEXTS, LABELS, batch_size=8, return_dict=True, verbose=0)
    assert set(results) >= {"loss", "accuracy"}
    assert model.predict(["what a ride", "dull"], verbose=0).shape == (2, 2)
    assert model.predict("what a ride", verbose=0).shape == (1, 2)  # one text
    pairs = model.predict(x=(["the film"], ["was great"]), verbose=0)
    assert pairs.shape == (1, 2)


@pytest.mark.slow
def test_a_dataset_of_strings_is_mapped_through_the_preprocessor():
    model = classifier()
    model.compile(optimizer=keras.optimizers.SGD(0.1))
    dataset = tf.data.Dataset.from_tensor_slices((TEXTS, LABELS)).batch(8)
    model.fit(dataset, epochs=1, verbose=0)
    assert model.predict(tf.data.Dataset.from_tensor_slices(TEXTS).batch(8),
                         verbose=0).shape == (len(TEXTS), 2)


def test_strings_without_a_preprocessor_are_refused_clearly():
    model = classifier(with_preprocessor=False)
    model.compile(optimizer="sgd")
    with pytest.raises(ValueError, match="got raw strings but has no preprocessor"):
        model.fit(TEXTS, LABELS)
    with pytest.raises(ValueError, match="got raw strings but has no preprocessor"):
        model.predict(["the film"])
    tagger = ElectraTagger(tiny_model_config(), num_tags=3)
    with pytest.raises(ValueError, match="ElectraTagger got raw strings"):
        tagger.predict(np.array(["the film"]))


@pytest.mark.parametrize("labels", [[0, 1, 2], [-1, 0, 1], ["pos", "neg", "pos"]])
def test_labels_outside_the_label_set_are_refused(labels):
    model = classifier()
    model.compile(optimizer="sgd")
    with pytest.raises(ValueError, match="class ids 0 to 1 of this 2-label classifier"):
        model.fit(TEXTS[:3], labels)


def test_the_preprocessor_is_saved_with_the_model(tmp_path):
    model = classifier()
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded.preprocessor, ElectraTextClassifierPreprocessor)
    np.testing.assert_allclose(loaded.predict(TEXTS[:4], verbose=0),
                               model.predict(TEXTS[:4], verbose=0), rtol=1e-5, atol=1e-6)


def test_compile_for_finetuning_uses_run_finetunings_recipe():
    model = classifier()
    config = model.compile_for_finetuning(num_train_steps=100)
    width = model.model_config.hidden_size
    assert config.optimizer.learning_rate == pytest.approx(learning_rate_for_width(width))
    schedule = model.optimizer.learning_rate_schedule if hasattr(
        model.optimizer, "learning_rate_schedule") else model.optimizer._learning_rate
    warmup = int(100 * config.finetune.warmup_proportion)
    assert float(schedule(0)) == pytest.approx(0.0)
    # the original's schedule: linear decay from step 0, times the warmup ramp
    peak = config.optimizer.learning_rate * (1 - warmup / 100)
    assert float(schedule(warmup)) == pytest.approx(peak, rel=1e-5)
    assert float(schedule(100)) == pytest.approx(0.0, abs=1e-9)
    override = classifier().compile_for_finetuning(10, overrides=["optimizer.learning_rate=1e-4"])
    assert override.optimizer.learning_rate == pytest.approx(1e-4)
    history = model.fit(TEXTS, LABELS, batch_size=8, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])


def test_a_preprocessor_that_does_not_fit_the_encoder_is_refused():
    too_many = VOCAB + [f"w{i}" for i in range(200)]
    with pytest.raises(ValueError, match="vocabulary has 217 tokens, more than the 120 rows"):
        ElectraClassifier(tiny_model_config(), preprocessor=ElectraTextClassifierPreprocessor.
                          from_vocabulary(too_many, sequence_length=16))
    with pytest.raises(ValueError, match="sequence_length 128 is above ElectraClassifier's 64"):
        ElectraClassifier(tiny_model_config(), preprocessor=ElectraTextClassifierPreprocessor.
                          from_vocabulary(VOCAB, sequence_length=128))


@pytest.mark.slow
def test_a_tagger_trains_on_words_and_predicts_tags_per_word():
    from electra_tf.preprocessing.tagger import ElectraTaggerPreprocessor

    keras.utils.set_random_seed(0)
    tagger = ElectraTagger(tiny_model_config(), num_tags=3, preprocessor=ElectraTaggerPreprocessor
                           .from_vocabulary(VOCAB, sequence_length=16))
    sentences = [["the", "film", "was", "great"], ["a", "dull", "story"], ["i", "liked", "it"]] * 8
    tags = [[0, 1, 0, 2], [0, 2, 1], [0, 0, 0]] * 8
    tagger.compile(optimizer=keras.optimizers.Adam(1e-2))
    history = tagger.fit(sentences, tags, batch_size=8, epochs=15, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    predicted = tagger.predict_word_tags([["the", "film", "was", "great"], ["a", "dull"]],
                                         tag_names=["O", "NOUN", "ADJ"])
    assert [len(p) for p in predicted] == [4, 2]
    assert predicted[0] == ["O", "NOUN", "O", "ADJ"]  # learned from 8 copies
    ragged = tf.ragged.constant([["the", "film"], ["i", "liked", "it"]])
    assert tagger.predict(ragged, verbose=0).shape == (2, 16, 3)
    with pytest.raises(ValueError, match="tag ids 0 to 2 per word of this 3-tag tagger"):
        tagger.fit(sentences[:2], [[0, 1, 0, 5], [0, 2, 1]])
