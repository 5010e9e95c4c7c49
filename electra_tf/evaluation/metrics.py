"""GLUE metrics in plain NumPy, matching scikit-learn / SciPy and the original ELECTRA scorers.

The original ELECTRA code (``finetune/classification/classification_metrics.py``) reports
every metric x100: accuracy, Matthews correlation (CoLA), Pearson/Spearman (STS-B). Its
``F1Scorer`` is unused and counts gold positives from the predictions; :func:`f1` here is the
standard F1 of the positive class. :func:`score` reports each task kind the way GLUE does, and
:data:`HEADLINE` names the metric the paper and the original report per kind.
"""

import numpy as np

HEADLINE = {"accuracy": "accuracy", "mcc": "mcc", "f1_accuracy": "accuracy",
            "pearson_spearman": "spearman"}


def _classes(values, name):
    """Integer class indices as a 1-D int64 array (integral floats and bools accepted)."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D class indices, got shape {array.shape}")
    if array.dtype == bool or np.issubdtype(array.dtype, np.integer):
        return array.astype(np.int64)
    if np.issubdtype(array.dtype, np.floating) and np.all(np.isfinite(array)) \
            and np.all(array == np.round(array)):
        return array.astype(np.int64)
    raise ValueError(f"{name} must be integer class indices, got dtype {array.dtype}")


def _reals(values, name):
    """A 1-D float64 array; a trailing axis of size 1 (regression head output) is dropped."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim == 2 and array.shape[1] == 1:
        array = array[:, 0]
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {array.shape}")
    return array


def _pair(convert, a, b, names=("labels", "predictions")):
    a, b = convert(a, names[0]), convert(b, names[1])
    if a.size == 0 or b.size == 0:
        raise ValueError("metrics need at least one example")
    if a.shape != b.shape:
        raise ValueError(f"{names[0]} and {names[1]} differ in length: {a.size} != {b.size}")
    return a, b


def accuracy(labels, predictions):
    """Fraction of predictions equal to the label, in [0, 1]."""
    labels, predictions = _pair(_classes, labels, predictions)
    return float(np.mean(labels == predictions))


def f1(labels, predictions, positive=1):
    """F1 of the ``positive`` class: 2TP / (2TP + FP + FN), 0.0 when that is 0/0.

    Equals ``sklearn.metrics.f1_score(..., pos_label=positive, zero_division=0)``.
    """
    labels, predictions = _pair(_classes, labels, predictions)
    gold, guessed = labels == positive, predictions == positive
    true_pos = np.sum(gold & guessed)
    denominator = np.sum(gold) + np.sum(guessed)  # = 2TP + FP + FN
    return float(2.0 * true_pos / denominator) if denominator else 0.0


def matthews_corrcoef(labels, predictions):
    """Matthews correlation (Gorodkin's K-class form); 0.0 when undefined, as scikit-learn."""
    labels, predictions = _pair(_classes, labels, predictions)
    _, index = np.unique(np.concatenate([labels, predictions]), return_inverse=True)
    k, n = int(index.max()) + 1, labels.size
    confusion = np.bincount(index[:n] * k + index[n:], minlength=k * k).reshape(k, k)
    true_sum = confusion.sum(axis=1, dtype=np.float64)
    pred_sum = confusion.sum(axis=0, dtype=np.float64)
    samples = float(n)
    cov_true_pred = np.trace(confusion, dtype=np.float64) * samples - true_sum @ pred_sum
    cov_pred_pred = samples ** 2 - pred_sum @ pred_sum
    cov_true_true = samples ** 2 - true_sum @ true_sum
    denominator = cov_pred_pred * cov_true_true
    return float(cov_true_pred / np.sqrt(denominator)) if denominator else 0.0


def pearson(x, y):
    """Pearson correlation in float64, as ``scipy.stats.pearsonr(x, y).statistic``.

    NaN (without a warning) if either input is constant, has one element, or contains NaN.
    """
    x, y = _pair(_reals, x, y, names=("x", "y"))
    if x.size < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return float("nan")
    x, y = x - x.mean(), y - y.mean()
    x, y = x / np.max(np.abs(x)), y / np.max(np.abs(y))  # rescale as SciPy does (no overflow)
    r = (x / np.linalg.norm(x)) @ (y / np.linalg.norm(y))
    return float(np.clip(r, -1.0, 1.0))


def _average_ranks(values):
    """1-based ranks, ties sharing their average rank (``scipy.stats.rankdata`` 'average')."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1], True])  # tie runs + end
    group = np.cumsum(np.r_[True, ordered[1:] != ordered[:-1]]) - 1
    ranks = np.empty(values.size, dtype=np.float64)
    ranks[order] = ((starts[:-1] + starts[1:] + 1) / 2.0)[group]
    return ranks


def spearman(x, y):
    """Spearman rank correlation (average ranks for ties), as ``scipy.stats.spearmanr``.

    NaN (without a warning) if either input is constant, has one element, or contains NaN.
    """
    x, y = _pair(_reals, x, y, names=("x", "y"))
    if np.isnan(x).any() or np.isnan(y).any():
        return float("nan")
    return pearson(_average_ranks(x), _average_ranks(y))


def _check_range(name, values, num_labels):
    if num_labels is not None and (values.min() < 0 or values.max() >= num_labels):
        raise ValueError(f"{name} must be class indices in [0, {num_labels}), "
                         f"got values in [{values.min()}, {values.max()}]")


def score(metric, labels, predictions, *, num_labels=None):
    """Task-level results in percent (x100, like the original scorers); ``mse`` is not scaled.

    ``metric`` is the task's kind:
      * ``"accuracy"`` (SST-2, MNLI, QNLI, RTE): ``accuracy``.
      * ``"mcc"`` (CoLA): ``mcc``, ``accuracy``.
      * ``"f1_accuracy"`` (MRPC, QQP): ``accuracy``, ``f1`` (positive class = label 1),
        ``f1_accuracy_mean``.
      * ``"pearson_spearman"`` (STS-B; float labels and predictions): ``pearson``,
        ``spearman``, ``pearson_spearman_mean``, ``mse``.

    ``num_labels``, if given, bounds the class indices of classification tasks to
    [0, num_labels); regression accepts only None or 1. :data:`HEADLINE` names each kind's
    headline metric.
    """
    if metric not in HEADLINE:
        raise ValueError(f"unknown metric {metric!r}; known: {', '.join(sorted(HEADLINE))}")
    if metric == "pearson_spearman":
        if num_labels not in (None, 1):
            raise ValueError(f"regression has one output, got num_labels={num_labels}")
        labels, predictions = _pair(_reals, labels, predictions)
        p, s = 100.0 * pearson(labels, predictions), 100.0 * spearman(labels, predictions)
        return {"pearson": p, "spearman": s, "pearson_spearman_mean": (p + s) / 2.0,
                "mse": float(np.mean(np.square(predictions - labels)))}

    labels, predictions = _pair(_classes, labels, predictions)
    _check_range("labels", labels, num_labels)
    _check_range("predictions", predictions, num_labels)
    acc = 100.0 * accuracy(labels, predictions)
    if metric == "accuracy":
        return {"accuracy": acc}
    if metric == "mcc":
        return {"mcc": 100.0 * matthews_corrcoef(labels, predictions), "accuracy": acc}
    f1_score = 100.0 * f1(labels, predictions, positive=1)
    return {"accuracy": acc, "f1": f1_score, "f1_accuracy_mean": (acc + f1_score) / 2.0}
