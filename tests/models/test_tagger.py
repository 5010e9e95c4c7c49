"""ElectraTagger: shapes, the original's summed masked loss, and learning a synthetic span task."""

import keras
import numpy as np
import pytest

from electra_tf.task_data.tagging import (TagSpace, featurize_tagging,
                                     predicted_word_tags, to_bioes)
from electra_tf.text.tokenization import make_tokenizer, special_ids
from electra_tf.evaluation.tagging_metrics import tagging_scores
from electra_tf.models.tagger import ElectraTagger
from tests.models.helpers import random_ids, tiny_model_config
from tests.tagging_helpers import MAX_SEQ_LENGTH, VOCAB, topic_sentences

INPUTS = ("input_ids", "input_mask", "segment_ids")


def batch(size=3, length=12, num_tags=5, seed=0):
    ids, mask = random_ids(size, length, seed=seed)
    rng = np.random.default_rng(seed)
    tag_mask = (mask * (rng.random(mask.shape) < 0.6)).astype(np.float32)
    tags = rng.integers(0, num_tags, size=ids.shape).astype(np.int32)
    return ({"input_ids": ids, "input_mask": mask, "segment_ids": mask},
            {"tags": tags, "tag_mask": tag_mask})


def test_logits_shape_and_head_variables():
    model = ElectraTagger(tiny_model_config(), num_tags=5)
    inputs, _ = batch()
    logits = model(inputs)
    assert logits.shape == (3, 12, 5) and logits.dtype == "float32"
    head = sorted(v.path for v in model.trainable_variables if v.path.startswith("task_specific/"))
    assert head == ["task_specific/output/bias", "task_specific/output/kernel"]


def test_config_round_trip_rebuilds_the_same_model():
    model = ElectraTagger(tiny_model_config(), num_tags=4, loss_reduction="mean", name="tagger")
    clone = ElectraTagger.from_config(model.get_config())
    clone.set_weights(model.get_weights())
    inputs, _ = batch(num_tags=4)
    assert (clone.num_tags, clone.loss_reduction, clone.name) == (4, "mean", "tagger")
    np.testing.assert_allclose(clone(inputs), model(inputs), atol=1e-6)
    with pytest.raises(ValueError, match="at least 1 tag"):
        ElectraTagger(tiny_model_config(), num_tags=0)


def log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_loss_is_the_masked_cross_entropy_summed_over_tokens():
    model = ElectraTagger(tiny_model_config(), num_tags=5)
    inputs, labels = batch()
    logits = model(inputs).numpy()
    log_probs = log_softmax(logits.astype(np.float64))
    picked = np.take_along_axis(log_probs, labels["tags"][..., None], -1)[..., 0]
    expected = -(picked * labels["tag_mask"]).sum(-1)  # [batch]: summed, not averaged
    np.testing.assert_allclose(model.per_example_loss(labels, model(inputs)), expected, rtol=1e-5)
    # Hand-made logits: two tokens, the second masked out.
    # -log softmax([2, 0, 0])[0] = log(e^2 + 2) - 2 = log(1 + 2e^-2).
    tiny = np.array([[[2.0, 0, 0], [0, 5, 0]]], np.float32)
    hand_labels = {"tags": np.array([[0, 2]]), "tag_mask": np.array([[1.0, 0.0]])}
    loss = model.per_example_loss(hand_labels, tiny)
    np.testing.assert_allclose(loss, [np.log(1 + 2 * np.exp(-2))], rtol=1e-6)
    # evaluate() reports the batch's mean per-example loss and the masked token accuracy.
    model.compile(optimizer=keras.optimizers.Adam(), jit_compile=False)
    result = model.evaluate(inputs, labels, batch_size=3, verbose=0, return_dict=True)
    assert result["loss"] == pytest.approx(expected.mean(), rel=1e-5)
    correct = (logits.argmax(-1) == labels["tags"]) * labels["tag_mask"]
    assert result["accuracy"] == pytest.approx(correct.sum() / labels["tag_mask"].sum(), rel=1e-6)


# ---------------------------------------------------------------------------------------------
# A synthetic task: spans of 1-3 words from one topic's vocabulary, typed by that topic.
@pytest.mark.slow
def test_tiny_tagger_learns_topic_spans():
    tokenizer = make_tokenizer(VOCAB)
    train, dev = topic_sentences(640, 0), topic_sentences(200, 1)
    tag_space = TagSpace.from_sentences(train, {"dev": dev})
    assert tag_space.num_tags == 9  # B E I S for two types, and O
    features = {name: featurize_tagging(sentences, tokenizer, special_ids(VOCAB), MAX_SEQ_LENGTH,
                                        tag_space)
                for name, sentences in (("train", train), ("dev", dev))}
    assert (features["train"]["tag_mask"].sum(1) > 0).all()

    def split(name):
        f = features[name]
        return {k: f[k] for k in INPUTS}, {"tags": f["tags"], "tag_mask": f["tag_mask"]}

    gold = [to_bioes(s.tags) for s in dev]
    for seed in (0, 1):
        keras.utils.set_random_seed(seed)
        config = tiny_model_config(vocab_size=len(VOCAB), max_position_embeddings=MAX_SEQ_LENGTH)
        model = ElectraTagger(config, num_tags=tag_space.num_tags)
        model.compile(optimizer=keras.optimizers.Adam(5e-3), jit_compile=False)
        dev_inputs, _ = split("dev")

        def dev_f1():
            predicted = model.predict(dev_inputs, batch_size=100, verbose=0).argmax(-1)
            words = predicted_word_tags(predicted, features["dev"]["word_positions"], tag_space)
            # As the original, score the words that truncation kept.
            return tagging_scores([g[:len(w)] for g, w in zip(gold, words)], words)

        before = dev_f1()
        model.fit(*split("train"), batch_size=32, epochs=20, verbose=0, shuffle=True)
        after = dev_f1()
        assert before["f1"] < 20.0, before
        assert after["f1"] > 90.0 and after["accuracy"] > 95.0, (seed, after)
