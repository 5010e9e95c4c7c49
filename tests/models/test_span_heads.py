"""The QA span heads against NumPy: masking, the conditioned end logits, the in-graph beam
(compared with a brute-force search over every (start, end) pair), the loss, the model."""

import numpy as np
import pytest
import tensorflow as tf
from scipy.special import erf, log_softmax, softmax

from electra_tf.config import ModelConfig
from electra_tf.models.question_answerer import ElectraQuestionAnswerer
from electra_tf.models.question_answers import BEAM_OUTPUTS
from electra_tf.models.span_heads import IndependentSpanHead, JointSpanHead, answer_mask

BATCH, SEQ, HIDDEN = 3, 12, 8


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    hidden = rng.normal(size=(BATCH, SEQ, HIDDEN)).astype(np.float32)
    # [CLS] q q [SEP] c c ... c [SEP] pad: question 2 tokens, context lengths vary, then padding
    lengths = [12, 10, 8]
    input_mask = np.array([[1] * n + [0] * (SEQ - n) for n in lengths], np.int32)
    segment_ids = np.array([[0] * 4 + [1] * (n - 4) + [0] * (SEQ - n) for n in lengths], np.int32)
    return hidden, input_mask, segment_ids


def _gelu(x):
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def _weights(layer):
    return [v.numpy().astype(np.float64) for v in layer.weights]


def _numpy_joint(head, hidden, input_mask, segment_ids):
    """Start log-probs [B, S] and end log-probs for every start [B, S(start), S(end)], with the
    original's formulas: the dense layer applied to the concatenation [h_start ; h_end]."""
    mask = input_mask * segment_ids
    mask[:, 0] = 1
    penalty = 1000.0 * (mask - 1.0)
    w_s, b_s = _weights(head.start_dense)
    w_h, b_h = _weights(head.end_hidden)
    w_e, b_e = _weights(head.end_dense)
    h = hidden.astype(np.float64)
    start = (h @ w_s)[..., 0] + b_s[0] + penalty
    pairs = np.concatenate([np.repeat(h[:, :, None], SEQ, 2), np.repeat(h[:, None], SEQ, 1)], -1)
    end = (_gelu(pairs @ w_h + b_h) @ w_e)[..., 0] + b_e[0] + penalty[:, None, :]
    return log_softmax(start, -1), log_softmax(end, -1), start, end


def _joint_head(beam_size):
    head = JointSpanHead(beam_size=beam_size)
    head.build((None, SEQ, HIDDEN))
    return head


def test_answer_mask_allows_cls_context_and_final_sep_only():
    _, input_mask, segment_ids = _inputs()
    mask = answer_mask(input_mask, segment_ids).numpy()
    np.testing.assert_array_equal(mask[1], [1, 0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0])


def test_beam_equals_numpy_top_k_of_start_and_of_each_starts_end():
    hidden, input_mask, segment_ids = _inputs()
    head = _joint_head(beam_size=5)
    out = {k: v.numpy() for k, v in head(tf.constant(hidden), input_mask, segment_ids).items()}
    start_lp, end_lp, _, _ = _numpy_joint(head, hidden, input_mask, segment_ids)
    assert out["start_top_index"].shape == (BATCH, 5) and out["end_top_index"].shape == (BATCH, 5, 5)
    for b in range(BATCH):
        expected_starts = np.argsort(-start_lp[b], kind="stable")[:5]
        np.testing.assert_array_equal(out["start_top_index"][b], expected_starts)
        np.testing.assert_allclose(out["start_top_log_probs"][b], start_lp[b, expected_starts], atol=1e-4)
        for i, s in enumerate(expected_starts):
            expected_ends = np.argsort(-end_lp[b, s], kind="stable")[:5]
            np.testing.assert_array_equal(out["end_top_index"][b, i], expected_ends)
            np.testing.assert_allclose(out["end_top_log_probs"][b, i], end_lp[b, s, expected_ends],
                                       atol=1e-4)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_full_width_beam_finds_the_brute_force_best_span(seed):
    hidden, input_mask, segment_ids = _inputs(seed)
    head = _joint_head(beam_size=SEQ)
    out = {k: v.numpy() for k, v in head(tf.constant(hidden), input_mask, segment_ids).items()}
    start_lp, end_lp, _, _ = _numpy_joint(head, hidden, input_mask, segment_ids)
    joint = start_lp[:, :, None] + end_lp  # [B, start, end]: every pair
    for b in range(BATCH):
        scores = out["start_top_log_probs"][b][:, None] + out["end_top_log_probs"][b]
        i, j = np.unravel_index(scores.argmax(), scores.shape)
        best = (out["start_top_index"][b, i], out["end_top_index"][b, i, j])
        assert best == np.unravel_index(joint[b].argmax(), joint[b].shape)
        np.testing.assert_allclose(scores.max(), joint[b].max(), atol=1e-4)


def test_training_end_logits_condition_on_the_gold_start_and_loss_matches_numpy():
    hidden, input_mask, segment_ids = _inputs()
    head = _joint_head(beam_size=4)
    starts, ends, impossible = np.array([5, 0, 4]), np.array([7, 0, 6]), np.array([0.0, 1.0, 0.0])
    out = head(tf.constant(hidden), input_mask, segment_ids, start_positions=starts)
    _, _, start_logits, end_logits = _numpy_joint(head, hidden, input_mask, segment_ids)
    np.testing.assert_allclose(out["start_logits"], start_logits, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(out["end_logits"], end_logits[np.arange(BATCH), starts],
                               rtol=1e-4, atol=1e-3)
    # answerability: [h_CLS ; sum_j softmax(start)_j h_j] -> dense 512 gelu -> dense 1
    w_a, b_a = _weights(head.answer_hidden)
    w_o, b_o = _weights(head.answer_dense)
    h = hidden.astype(np.float64)
    expected = np.einsum("bs,bsh->bh", softmax(start_logits, -1), h)
    answerable = (_gelu(np.concatenate([h[:, 0], expected], -1) @ w_a + b_a) @ w_o)[:, 0] + b_o[0]
    np.testing.assert_allclose(out["answerable_logit"], answerable, rtol=1e-4, atol=1e-4)
    loss = head.loss(out, starts, ends, impossible).numpy()
    ce = lambda logits, pos: -log_softmax(logits, -1)[np.arange(BATCH), pos]
    bce = np.logaddexp(0, answerable) - impossible * answerable
    expected_loss = (ce(start_logits, starts) + ce(end_logits[np.arange(BATCH), starts], ends)) / 2
    np.testing.assert_allclose(loss, expected_loss + 0.5 * bce, rtol=1e-4, atol=1e-4)


def test_training_end_gelu_is_the_xla_kernel_with_the_same_logits_and_gradients():
    """In training the joint head's end GELU is `gelu_with_analytic_gradient` (IdentityN, no
    Erfc); its end logits and gradients are the plain GELU's, which inference keeps."""
    hidden, input_mask, segment_ids = _inputs(seed=3)
    head = _joint_head(beam_size=4)
    x, starts = tf.constant(hidden), tf.constant([5, 0, 4])

    def end_logits(x, training):
        return head(x, input_mask, segment_ids, start_positions=starts,
                    training=training)["end_logits"]

    results = []
    for training in (True, False):
        with tf.GradientTape() as tape:
            tape.watch(x)
            logits = end_logits(x, training)
            loss = tf.reduce_sum(tf.sin(logits))
        results.append([logits, *tape.gradient(loss, [x, *head.end_hidden.trainable_variables])])
    for fast, plain in zip(*results):
        np.testing.assert_allclose(fast, plain, rtol=1e-5, atol=1e-5 * np.abs(plain).max())

    def op_types(training):
        graph = tf.function(lambda x: end_logits(x, training)).get_concrete_function(x).graph
        return [op.type for op in graph.get_operations()]

    # the answerability layer's GELU, on [batch, 512], stays Keras' (one Erfc) either way
    assert "IdentityN" in op_types(True) and op_types(True).count("Erfc") == 1
    assert "IdentityN" not in op_types(False) and op_types(False).count("Erfc") == 2


def test_question_and_padding_positions_are_pushed_down_by_1000():
    hidden, input_mask, segment_ids = _inputs()
    head = _joint_head(beam_size=4)
    out = head(tf.constant(hidden), input_mask, segment_ids, start_positions=np.zeros(BATCH, int))
    _, _, start_logits, _ = _numpy_joint(head, hidden, input_mask, segment_ids)
    raw = start_logits + 1000.0 * (1 - answer_mask(input_mask, segment_ids).numpy())
    assert np.all(raw[:, 1:4] - out["start_logits"].numpy()[:, 1:4] == pytest.approx(1000.0, abs=1e-3))
    assert np.all(out["start_logits"].numpy()[2, 8:] < -500)


def test_independent_head_beams_the_top_starts_and_the_top_ends():
    hidden, input_mask, segment_ids = _inputs()
    head = IndependentSpanHead(beam_size=4)
    head.build((None, SEQ, HIDDEN))
    out = {k: v.numpy() for k, v in head(tf.constant(hidden), input_mask, segment_ids).items()}
    train = head(tf.constant(hidden), input_mask, segment_ids, start_positions=np.zeros(BATCH, int))
    for name, index, values in (("start_logits", "start_top_index", "start_top_log_probs"),
                                ("end_logits", "end_top_index", "end_top_log_probs")):
        logits = train[name].numpy()
        top = np.argsort(-logits, -1, kind="stable")[:, :4]
        got_index = out[index] if index.startswith("start") else out[index][:, 2]
        got_values = out[values] if values.startswith("start") else out[values][:, 2]
        np.testing.assert_array_equal(got_index, top)
        np.testing.assert_allclose(got_values, np.take_along_axis(logits, top, -1), atol=1e-5)
    assert (out["end_top_index"] == out["end_top_index"][:, :1]).all()  # same ends for every start


def test_beam_wider_than_the_sequence_is_refused():
    head = _joint_head(beam_size=SEQ + 1)
    hidden, input_mask, segment_ids = _inputs()
    with pytest.raises(ValueError, match="beam_size"):
        head(tf.constant(hidden), input_mask, segment_ids)


TINY = ModelConfig(vocab_size=40, embedding_size=16, hidden_size=32, num_layers=2, num_heads=2,
                   intermediate_size=64, max_position_embeddings=32)


@pytest.mark.slow
def test_question_answerer_outputs_the_beam_and_trains_with_fit():
    model = ElectraQuestionAnswerer(TINY, beam_size=3)
    assert all(v.path.startswith(("embeddings/", "discriminator/", "task_specific/"))
               for v in model.trainable_variables)
    assert {v.path for v in model.trainable_variables} >= {"task_specific/qa_hidden/kernel",
                                                            "task_specific/answer_logit/bias"}
    rng = np.random.default_rng(0)
    inputs = {"input_ids": rng.integers(5, 40, (8, 16)).astype(np.int32),
              "input_mask": np.ones((8, 16), np.int32),
              "segment_ids": np.array([[0] * 6 + [1] * 10] * 8, np.int32)}
    labels = {"start_positions": np.full(8, 7, np.int32), "end_positions": np.full(8, 9, np.int32),
              "is_impossible": np.zeros(8, np.float32)}
    outputs = model(inputs)
    assert set(outputs) == set(BEAM_OUTPUTS)
    assert outputs["end_top_log_probs"].shape == (8, 3, 3)
    import keras
    model.compile(optimizer=keras.optimizers.Adam(1e-3), jit_compile=False)
    history = model.fit(tf.data.Dataset.from_tensors((inputs, labels)), epochs=30, verbose=0,
                        shuffle=False)
    losses = history.history["loss"]
    assert losses[-1] < losses[0]
    assert model(inputs)["start_top_index"].numpy()[:, 0].tolist() == [7] * 8


def test_question_answerer_config_round_trip():
    model = ElectraQuestionAnswerer(TINY, head="independent", beam_size=4, answerable_weight=0.25,
                                    loss_reduction="mean")
    clone = ElectraQuestionAnswerer.from_config(model.get_config())
    assert clone.get_config() == model.get_config()
    assert isinstance(clone.head, IndependentSpanHead) and clone.head.answerable_weight == 0.25
