"""electra_tf.evaluation.squad_metrics against hand-computed SQuAD v1.1 / v2.0 scores."""

import pytest

from electra_tf.evaluation.squad_metrics import (evaluate_v1, evaluate_v2, exact_match, f1,
                                                 normalize_answer)


def _qa(qid, *texts):
    return {"id": qid, "question": "?",
            "answers": [{"text": t, "answer_start": 0} for t in texts]}


def _dataset(*qa_groups):
    """One article per group of qas, each with a single paragraph."""
    return [{"title": f"a{i}", "paragraphs": [{"context": "ctx", "qas": list(group)}]}
            for i, group in enumerate(qa_groups)]


@pytest.mark.parametrize("text, expected", [
    ("The  Cat's hat!", "cats hat"),        # lower, drop ' and !, drop "the", squeeze spaces
    ("an apple a day", "apple day"),
    ("theater and another", "theater and another"),   # articles inside words stay
    ("A.  (the)  end", "end"),              # "a." -> "a" -> removed; "(the)" -> "the" -> removed
    ("", ""),
])
def test_normalize_answer(text, expected):
    assert normalize_answer(text) == expected


def test_exact_match():
    assert exact_match("The Cat!", "cat") == 1.0
    assert exact_match("Denver Broncos", "the denver broncos.") == 1.0
    assert exact_match("big cat", "cat") == 0.0


@pytest.mark.parametrize("v2", [True, False])
def test_f1_hand_computed(v2):
    # ["big", "cat"] vs ["cat"]: common 1, P = 1/2, R = 1 -> 2*(1/2)/(3/2) = 2/3.
    assert f1("the big cat", "a cat", v2=v2) == pytest.approx(2 / 3)
    # ["cat", "cat", "dog"] vs ["cat", "dog", "dog", "bird"]: multiset common {cat:1, dog:1}
    # = 2, P = 2/3, R = 2/4 = 1/2 -> 2*(1/3)/(7/6) = 4/7.
    assert f1("cat cat dog", "cat dog dog bird", v2=v2) == pytest.approx(4 / 7)
    assert f1("Cat!", "the cat", v2=v2) == 1.0
    assert f1("dog", "cat", v2=v2) == 0.0


def test_f1_empty_rules():
    # v2.0: an empty side gives int(both empty); "the" and "." normalize to empty.
    assert f1("", "", v2=True) == 1.0
    assert f1("the", ".", v2=True) == 1.0
    assert f1("", "cat", v2=True) == 0.0
    assert f1("cat", "", v2=True) == 0.0
    # v1.1: no common token -> 0, so the empty cases are all 0 (no division by zero).
    assert f1("", "", v2=False) == 0.0
    assert f1("", "cat", v2=False) == 0.0
    assert f1("cat", "", v2=False) == 0.0


def test_evaluate_v1():
    dataset = _dataset(
        [_qa("q1", "Denver Broncos", "Broncos"),
         _qa("q2", "Santa Clara, California", "Levi's Stadium")],
        [_qa("q3", "Super Bowl 50")])
    predictions = {"q1": "the Broncos", "q2": "Santa Clara"}   # q3 has no prediction
    # q1: "broncos" == "broncos" -> EM 1, F1 1.
    # q2: EM 0; F1 vs "santa clara california": P = 1, R = 2/3 -> 0.8; vs "levis stadium" 0.
    # q3: missing -> 0 but counted. EM = 1/3, F1 = (1 + 0.8 + 0) / 3 = 0.6.
    result = evaluate_v1(dataset, predictions)
    assert result == {"exact_match": pytest.approx(100 / 3), "f1": pytest.approx(60.0)}


# q1, q2 answerable; q3, q4 unanswerable (empty answers list).
V2_DATASET = _dataset(
    [_qa("q1", "Denver Broncos", "the Denver Broncos"), _qa("q2", "1990")],
    [_qa("q3"), _qa("q4")])
# Raw scores (EM, F1):
#   q1 "Broncos" vs "denver broncos": EM 0; P = 1, R = 1/2 -> F1 2/3.
#   q2 exact                        : EM 1, F1 1.
#   q3 "" vs gold [""]              : EM 1, F1 1 (both empty).
#   q4 "Paris" vs gold [""]         : EM 0, F1 0.
V2_PREDICTIONS = {"q1": "Broncos", "q2": "1990", "q3": "", "q4": "Paris"}


def test_evaluate_v2_without_na_probs():
    result = evaluate_v2(V2_DATASET, V2_PREDICTIONS)
    expected = {
        "exact": 50.0, "f1": 100 * (2 / 3 + 1 + 1 + 0) / 4, "total": 4,        # f1 = 66.67
        "HasAns_exact": 50.0, "HasAns_f1": 100 * (2 / 3 + 1) / 2, "HasAns_total": 2,
        "NoAns_exact": 50.0, "NoAns_f1": 50.0, "NoAns_total": 2,
    }
    assert result == pytest.approx(expected)
    assert "best_f1" not in result


def test_evaluate_v2_with_na_probs_and_best_threshold():
    na_probs = {"q1": 0.1, "q3": 0.2, "q4": 0.4, "q2": 0.7}
    result = evaluate_v2(V2_DATASET, V2_PREDICTIONS, na_probs, na_prob_thresh=0.5)
    # Only q2 (0.7 > 0.5) is forced to "no answer": answerable -> EM 0, F1 0.
    # EM: q1 0, q2 0, q3 1, q4 0 -> 25.  F1: 2/3, 0, 1, 0 -> (5/3)/4 = 41.67.
    # Best EM sweep (start 2 = #unanswerable, thresh 0.0), ascending na_prob:
    #   q1 +0 -> 2; q3 +0 (empty pred) -> 2; q4 -1 -> 1; q2 +1 -> 2 (not > 2).
    #   best 2/4 = 50 at thresh 0.0.
    # Best F1 sweep: q1 +2/3 -> 8/3 (best, thresh 0.1); q3 +0; q4 -1 -> 5/3; q2 +1 -> 8/3
    #   (not >). best (8/3)/4 = 66.67 at thresh 0.1.
    expected = {
        "exact": 25.0, "f1": 100 * (5 / 3) / 4, "total": 4,
        "HasAns_exact": 0.0, "HasAns_f1": 100 * (2 / 3) / 2, "HasAns_total": 2,
        "NoAns_exact": 50.0, "NoAns_f1": 50.0, "NoAns_total": 2,
        "best_exact": 50.0, "best_exact_thresh": 0.0,
        "best_f1": 100 * (8 / 3) / 4, "best_f1_thresh": 0.1,
    }
    assert result == pytest.approx(expected)


def test_evaluate_v2_best_threshold_improves_on_fixed_one():
    # Same data, q4 (wrong non-empty answer to an unanswerable question) now most likely null.
    na_probs = {"q1": 0.1, "q2": 0.3, "q3": 0.6, "q4": 0.9}
    result = evaluate_v2(V2_DATASET, V2_PREDICTIONS, na_probs, na_prob_thresh=0.5)
    # Threshold 0.5 nulls q3, q4 -> both 1: EM 0,1,1,1 = 75; F1 2/3,1,1,1 = (11/3)/4.
    # EM sweep: q1 +0 -> 2; q2 +1 -> 3 (best, 0.3); q3 +0; q4 -1 -> 2. best 75 at 0.3.
    # F1 sweep: q1 -> 8/3 (0.1); q2 -> 11/3 (best, 0.3); q3 +0; q4 -> 8/3. best 91.67 at 0.3.
    assert result["exact"] == pytest.approx(75.0)
    assert result["f1"] == pytest.approx(100 * (11 / 3) / 4)
    assert result["NoAns_exact"] == result["NoAns_f1"] == 100.0
    assert (result["best_exact"], result["best_exact_thresh"]) == (pytest.approx(75.0), 0.3)
    assert (result["best_f1"], result["best_f1_thresh"]) == (pytest.approx(275 / 3), 0.3)


def test_evaluate_v2_missing_prediction_and_only_answerable():
    # Missing predictions are skipped (total counts scored questions); with no unanswerable
    # question scored there are no NoAns_* keys. Gold "the" normalizes to empty -> dropped.
    dataset = _dataset([_qa("a", "the", "Broncos"), _qa("b", "1990")])
    result = evaluate_v2(dataset, {"a": "broncos"})
    assert result == {"exact": 100.0, "f1": 100.0, "total": 1, "HasAns_exact": 100.0,
                      "HasAns_f1": 100.0, "HasAns_total": 1}
