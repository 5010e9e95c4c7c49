"""Span-level P/R/F1 and token accuracy: hand-computed cases and agreement with seqeval."""

import random

import pytest

from electra_tf.task_data.tagging import spans_to_tags
from electra_tf.evaluation.tagging_metrics import (sentence_spans, span_scores, tagging_scores,
                                                   token_accuracy)
from tests.conftest import require
from tests.task_data.test_tagging import random_spans

GOLD = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
PREDICTED = [["B-PER", "I-PER", "O", "B-ORG"], ["B-ORG", "B-MISC"]]


def test_hand_computed_scores():
    # Gold spans: PER 0-1 and LOC 3-3 in sentence 0, ORG 0-0 in sentence 1 (3 spans).
    # Predicted: PER 0-1 and ORG 3-3 in sentence 0, ORG 0-0 and MISC 1-1 in sentence 1 (4 spans).
    # Right: PER and sentence 1's ORG -> P = 2/4 = 50, R = 2/3 = 66.67, F1 = 2PR/(P+R) = 4/7.
    # Words: 6, of which 4 are tagged right (all but LOC/ORG and O/MISC) -> accuracy 66.67.
    assert sentence_spans(GOLD) == {(0, 0, 1, "PER"), (0, 3, 3, "LOC"), (1, 0, 0, "ORG")}
    scores = tagging_scores(GOLD, PREDICTED)
    assert scores == pytest.approx({"precision": 50.0, "recall": 200 / 3, "f1": 400 / 7,
                                    "accuracy": 200 / 3})


def test_spans_must_match_sentence_bounds_and_type():
    assert span_scores({(0, 0, 1, "X")}, {(1, 0, 1, "X"), (0, 0, 0, "X"), (0, 0, 1, "Y")}) == {
        "precision": 0.0, "recall": 0.0, "f1": 0.0}
    assert span_scores(set(), set())["f1"] == 0.0  # nothing right: all 0, as the original
    # One of one gold span found among two predictions: P = 50, R = 100, F1 = 100/1.5.
    assert span_scores({(0, 0, 1, "X")}, {(0, 0, 1, "X"), (0, 3, 3, "X")}) == pytest.approx(
        {"precision": 50.0, "recall": 100.0, "f1": 200 / 3})


def test_the_original_rule_scores_malformed_predictions_as_the_original():
    gold = [["B-NP", "E-NP", "B-NP", "E-NP"]]
    predicted = [["B-NP", "E-NP", "I-NP", "E-NP"]]  # E- then I-: one span 0-3 for the original
    assert tagging_scores(gold, predicted)["f1"] == 0.0
    assert tagging_scores(gold, predicted, rule="conlleval")["f1"] == 100.0
    assert token_accuracy(gold, predicted) == 75.0


def test_length_mismatches_are_errors():
    with pytest.raises(ValueError, match="2 gold sentences but 1 predicted"):
        tagging_scores(GOLD, PREDICTED[:1])
    with pytest.raises(ValueError, match="sentence 1: 2 gold tags but 1 predicted"):
        token_accuracy(GOLD, [PREDICTED[0], ["O"]])


def seqeval_scores(gold, predicted):
    metrics = require("seqeval.metrics")
    return {"precision": 100 * metrics.precision_score(gold, predicted, zero_division=0),
            "recall": 100 * metrics.recall_score(gold, predicted, zero_division=0),
            "f1": 100 * metrics.f1_score(gold, predicted, zero_division=0),
            "accuracy": 100 * metrics.accuracy_score(gold, predicted)}


def random_tags(rng, length):
    choices = ["O", "O"] + [f"{prefix}-{tag_type}" for prefix in "BIES" for tag_type in "AB"]
    return [rng.choice(choices) for _ in range(length)]


def test_conlleval_rule_agrees_with_seqeval_on_any_tag_sequences():
    rng = random.Random(0)
    for _ in range(200):
        lengths = [rng.randint(1, 10) for _ in range(rng.randint(1, 5))]
        gold = [random_tags(rng, n) for n in lengths]
        predicted = [random_tags(rng, n) for n in lengths]
        ours = tagging_scores(gold, predicted, rule="conlleval")
        assert ours == pytest.approx(seqeval_scores(gold, predicted)), (gold, predicted)


@pytest.mark.parametrize("encoding", ["BIO", "BIOES"])
def test_both_rules_agree_with_seqeval_on_well_formed_sequences(encoding):
    rng = random.Random(1)
    for _ in range(200):
        lengths = [rng.randint(1, 10) for _ in range(rng.randint(1, 5))]
        gold = [spans_to_tags(random_spans(rng, n), n, encoding) for n in lengths]
        predicted = [spans_to_tags(random_spans(rng, n), n, encoding) for n in lengths]
        expected = seqeval_scores(gold, predicted)
        for rule in ("electra", "conlleval"):
            ours = tagging_scores(gold, predicted, rule)
            assert ours == pytest.approx(expected), (rule, gold, predicted)
