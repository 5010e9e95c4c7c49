"""electra_tf.evaluation.metrics against scikit-learn / SciPy, degenerate inputs, score()."""

import math
import warnings

import numpy as np
import pytest

from electra_tf.evaluation import metrics
from tests.conftest import require

TOL = 1e-12
SEEDS = range(6)
SIZES = (1, 2, 3, 7, 50, 200)


@pytest.fixture(scope="module")
def sk():
    return require("sklearn.metrics")


@pytest.fixture(scope="module")
def stats():
    return require("scipy.stats")


def _sk_f1(sk, labels, predictions, positive=1):
    return sk.f1_score(labels, predictions, labels=[positive], average=None, zero_division=0)[0]


def _sk_mcc(sk, labels, predictions):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "A single label was found" (n=1, one class)
        return sk.matthews_corrcoef(labels, predictions)


def _scipy(function, x, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConstantInputWarning
        return function(x, y).statistic


def _random_classes(seed, n, k):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    # Mostly-correct predictions, so the metrics are not all near zero.
    predictions = np.where(rng.random(n) < 0.6, labels, rng.integers(0, k, n))
    return labels, predictions


# Degenerate classification cases: (labels, predictions).
DEGENERATE = {
    "one_class_all_correct": ([1, 1, 1, 1], [1, 1, 1, 1]),
    "one_class_zero": ([0, 0, 0], [0, 0, 0]),
    "one_class_labels": ([1, 1, 1, 1], [1, 0, 1, 0]),
    "constant_predictions": ([0, 1, 1, 0, 1], [1, 1, 1, 1, 1]),
    "constant_zero_predictions": ([0, 1, 1, 0, 1], [0, 0, 0, 0, 0]),
    "all_correct": ([0, 1, 1, 0, 1], [0, 1, 1, 0, 1]),
    "all_wrong": ([0, 1, 1, 0, 1], [1, 0, 0, 1, 0]),
    "all_wrong_3class": ([0, 1, 2, 2, 1], [1, 2, 0, 1, 0]),
    "all_correct_3class": ([0, 1, 2, 2, 1], [0, 1, 2, 2, 1]),
    "no_positive_anywhere_3class": ([0, 2, 2, 0], [2, 0, 2, 0]),
    "n1_right": ([1], [1]),
    "n1_wrong": ([0], [1]),
    "n2": ([0, 1], [1, 1]),
    "n2_perfect": ([0, 1], [0, 1]),
    "n2_inverted": ([0, 1], [1, 0]),
}


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", SIZES)
def test_classification_random_matches_sklearn(sk, k, seed, n):
    labels, predictions = _random_classes(seed, n, k)
    assert metrics.accuracy(labels, predictions) == pytest.approx(
        sk.accuracy_score(labels, predictions), abs=TOL)
    assert metrics.matthews_corrcoef(labels, predictions) == pytest.approx(
        _sk_mcc(sk, labels, predictions), abs=TOL)
    for positive in range(k):
        assert metrics.f1(labels, predictions, positive=positive) == pytest.approx(
            _sk_f1(sk, labels, predictions, positive), abs=TOL)


@pytest.mark.parametrize("seed", SEEDS)
def test_binary_f1_matches_sklearn_default(sk, seed):
    labels, predictions = _random_classes(seed, 100, 2)
    assert metrics.f1(labels, predictions) == pytest.approx(
        sk.f1_score(labels, predictions, zero_division=0), abs=TOL)


@pytest.mark.parametrize("case", sorted(DEGENERATE))
def test_classification_degenerate_matches_sklearn(sk, case):
    labels, predictions = DEGENERATE[case]
    assert metrics.accuracy(labels, predictions) == pytest.approx(
        sk.accuracy_score(labels, predictions), abs=TOL)
    assert metrics.matthews_corrcoef(labels, predictions) == pytest.approx(
        _sk_mcc(sk, labels, predictions), abs=TOL)
    for positive in (0, 1, 2):
        assert metrics.f1(labels, predictions, positive=positive) == pytest.approx(
            _sk_f1(sk, labels, predictions, positive), abs=TOL)


def test_degenerate_values():
    assert metrics.matthews_corrcoef([1, 1, 1], [1, 1, 1]) == 0.0
    assert metrics.matthews_corrcoef([0, 1, 1, 0], [1, 1, 1, 1]) == 0.0
    assert metrics.matthews_corrcoef([0, 1, 2], [0, 1, 2]) == pytest.approx(1.0, abs=TOL)
    assert metrics.matthews_corrcoef([0, 1, 0, 1], [1, 0, 1, 0]) == pytest.approx(-1.0, abs=TOL)
    assert metrics.f1([0, 0, 0], [0, 0, 0]) == 0.0  # no gold and no predicted positives
    assert metrics.f1([1, 1, 0], [1, 1, 0]) == 1.0
    assert metrics.f1([1, 1, 0], [0, 0, 1]) == 0.0
    assert metrics.accuracy([0, 1, 1, 0], [0, 1, 0, 0]) == 0.75


def test_f1_counts_gold_from_labels_not_predictions():
    # The original's F1Scorer counted n_gold from predictions, giving precision == recall.
    # Here TP=1, FP=0, FN=2: precision 1, recall 1/3, F1 = 0.5.
    assert metrics.f1([1, 1, 1, 0], [1, 0, 0, 0]) == pytest.approx(0.5, abs=TOL)


def test_classification_input_forms():
    assert metrics.accuracy(np.array([True, False]), [1, 0]) == 1.0
    assert metrics.accuracy(np.array([1.0, 0.0]), np.array([1, 1], np.int32)) == 0.5
    assert metrics.matthews_corrcoef([-1, 1, 1, -1], [-1, 1, -1, -1]) == pytest.approx(
        1 / math.sqrt(3), abs=TOL)
    with pytest.raises(ValueError, match="integer class indices"):
        metrics.accuracy([0.5, 1.0], [0, 1])
    with pytest.raises(ValueError, match="1-D"):
        metrics.accuracy([[0, 1]], [[0, 1]])


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", [2, 3, 10, 57, 200])
def test_correlations_random_match_scipy(stats, seed, n):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = 0.7 * x + rng.normal(size=n)
    assert metrics.pearson(x, y) == pytest.approx(_scipy(stats.pearsonr, x, y), abs=TOL)
    assert metrics.spearman(x, y) == pytest.approx(_scipy(stats.spearmanr, x, y), abs=TOL)
    # STS-B-like: labels in [0, 5] rounded to 0.2 (many ties), float32 predictions.
    labels = np.round(rng.uniform(0, 5, n) * 5) / 5
    predictions = (labels + rng.normal(scale=0.8, size=n)).astype(np.float32)
    assert metrics.pearson(labels, predictions) == pytest.approx(
        _scipy(stats.pearsonr, labels, predictions), abs=TOL)
    assert metrics.spearman(labels, predictions) == pytest.approx(
        _scipy(stats.spearmanr, labels, predictions), abs=TOL)


@pytest.mark.parametrize("x, y", [
    ([1, 2, 2, 3, 3, 3], [2, 1, 4, 4, 3, 5]),
    ([1, 1, 2, 2], [3, 3, 4, 5]),
    ([5, 5, 5, 1, 1, 9, 9, 9, 9], [1, 2, 3, 4, 5, 6, 7, 8, 9]),
    ([0.5, 0.5, 0.25], [1.0, 0.0, 0.0]),
])
def test_spearman_ties_match_scipy(stats, x, y):
    assert metrics.spearman(x, y) == pytest.approx(_scipy(stats.spearmanr, x, y), abs=TOL)
    assert metrics.pearson(x, y) == pytest.approx(_scipy(stats.pearsonr, x, y), abs=TOL)


def test_average_ranks_match_scipy(stats):
    values = np.random.default_rng(3).integers(0, 8, 200).astype(np.float64)
    np.testing.assert_array_equal(metrics._average_ranks(values), stats.rankdata(values))


def test_correlations_n2_and_perfect(stats):
    assert metrics.pearson([1.0, 2.0], [3.0, 1.0]) == pytest.approx(-1.0, abs=TOL)
    assert metrics.spearman([1.0, 2.0], [1.0, 3.0]) == pytest.approx(1.0, abs=TOL)
    x = np.linspace(-3, 3, 50)
    assert metrics.pearson(x, 2 * x + 1) == pytest.approx(1.0, abs=TOL)
    assert metrics.spearman(x, np.exp(x)) == pytest.approx(1.0, abs=TOL)
    assert metrics.spearman(x, -x ** 3) == pytest.approx(-1.0, abs=TOL)


@pytest.mark.parametrize("x, y", [
    ([2.0, 2.0, 2.0], [1.0, 2.0, 3.0]),
    ([1.0, 2.0, 3.0], [0.5, 0.5, 0.5]),
    ([4.0, 4.0], [4.0, 4.0]),
    ([1.0, 2.0, float("nan")], [1.0, 2.0, 3.0]),
])
def test_correlations_undefined_are_nan_without_warning(stats, x, y):
    assert math.isnan(_scipy(stats.pearsonr, x, y))
    assert math.isnan(_scipy(stats.spearmanr, x, y))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(metrics.pearson(x, y))
        assert math.isnan(metrics.spearman(x, y))


def test_correlations_single_example_is_nan():
    assert math.isnan(metrics.pearson([1.0], [2.0]))
    assert math.isnan(metrics.spearman([1.0], [2.0]))


def test_pearson_large_offset_and_scale(stats):
    rng = np.random.default_rng(0)
    x = 1e8 + rng.normal(size=100)
    y = 1e-8 * rng.normal(size=100) + 1e-7 * x
    assert metrics.pearson(x, y) == pytest.approx(_scipy(stats.pearsonr, x, y), abs=1e-9)


@pytest.mark.parametrize("function", [metrics.accuracy, metrics.f1, metrics.matthews_corrcoef,
                                      metrics.pearson, metrics.spearman])
def test_empty_and_mismatched_inputs_raise(function):
    with pytest.raises(ValueError, match="at least one"):
        function([], [])
    with pytest.raises(ValueError, match="differ in length"):
        function([0, 1, 1], [0, 1])


def test_score_accuracy():
    assert metrics.score("accuracy", [0, 1, 2, 2], [0, 1, 2, 0]) == {"accuracy": 75.0}


def test_score_mcc(sk):
    labels, predictions = _random_classes(1, 120, 2)
    result = metrics.score("mcc", labels, predictions, num_labels=2)
    assert set(result) == {"mcc", "accuracy"}
    assert result["mcc"] == pytest.approx(100 * sk.matthews_corrcoef(labels, predictions), abs=1e-10)
    assert result["accuracy"] == pytest.approx(100 * sk.accuracy_score(labels, predictions), abs=1e-10)
    assert metrics.score("mcc", [1, 1, 1], [1, 1, 1]) == {"mcc": 0.0, "accuracy": 100.0}


def test_score_f1_accuracy():
    # TP=2, FP=1, FN=1, TN=1: accuracy 3/5, F1 = 4/6.
    result = metrics.score("f1_accuracy", [1, 1, 1, 0, 0], [1, 1, 0, 1, 0], num_labels=2)
    assert result.keys() == {"accuracy", "f1", "f1_accuracy_mean"}
    assert result["accuracy"] == pytest.approx(60.0, abs=1e-10)
    assert result["f1"] == pytest.approx(200 / 3, abs=1e-10)
    assert result["f1_accuracy_mean"] == pytest.approx((60.0 + 200 / 3) / 2, abs=1e-10)


def test_score_pearson_spearman(stats):
    rng = np.random.default_rng(2)
    labels = rng.uniform(0, 5, 80)
    predictions = (labels + rng.normal(size=80)).astype(np.float32)[:, None]  # head output (n, 1)
    result = metrics.score("pearson_spearman", labels, predictions)
    flat = predictions[:, 0]
    assert result.keys() == {"pearson", "spearman", "pearson_spearman_mean", "mse"}
    pearson = 100 * _scipy(stats.pearsonr, labels, flat)
    spearman = 100 * _scipy(stats.spearmanr, labels, flat)
    assert result["pearson"] == pytest.approx(pearson, abs=1e-10)
    assert result["spearman"] == pytest.approx(spearman, abs=1e-10)
    assert result["pearson_spearman_mean"] == pytest.approx((pearson + spearman) / 2, abs=1e-10)
    assert result["mse"] == pytest.approx(np.mean((flat.astype(np.float64) - labels) ** 2), abs=1e-12)
    constant = metrics.score("pearson_spearman", [1.0, 2.0, 3.0], [2.0, 2.0, 2.0], num_labels=1)
    assert math.isnan(constant["pearson"]) and math.isnan(constant["spearman"])
    assert math.isnan(constant["pearson_spearman_mean"])
    assert constant["mse"] == pytest.approx(2 / 3, abs=1e-15)


def test_headline_names_a_reported_metric():
    examples = {"accuracy": ([0, 1], [0, 1]), "mcc": ([0, 1], [0, 1]),
                "f1_accuracy": ([0, 1], [0, 1]), "pearson_spearman": ([0.0, 1.0], [0.0, 2.0])}
    assert metrics.HEADLINE == {"accuracy": "accuracy", "mcc": "mcc", "f1_accuracy": "accuracy",
                                "pearson_spearman": "spearman"}
    for kind, headline in metrics.HEADLINE.items():
        assert headline in metrics.score(kind, *examples[kind])


def test_score_errors():
    with pytest.raises(ValueError, match="accuracy, f1_accuracy, mcc, pearson_spearman"):
        metrics.score("f1", [0], [0])
    with pytest.raises(ValueError, match="at least one"):
        metrics.score("accuracy", [], [])
    with pytest.raises(ValueError, match="at least one"):
        metrics.score("pearson_spearman", [], [])
    with pytest.raises(ValueError, match="differ in length"):
        metrics.score("mcc", [0, 1], [0])
    with pytest.raises(ValueError, match="differ in length"):
        metrics.score("pearson_spearman", [0.0, 1.0], [0.0])
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        metrics.score("f1_accuracy", [0, 1, 2], [0, 1, 1], num_labels=2)
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        metrics.score("accuracy", [0, 1, 2], [0, -1, 2], num_labels=3)
    with pytest.raises(ValueError, match="num_labels"):
        metrics.score("pearson_spearman", [0.0, 1.0], [0.0, 1.0], num_labels=2)
