"""Tagging metrics in plain Python: span-level precision / recall / F1 and token accuracy (x100).

As the original's `EntityLevelF1Scorer`: a predicted span counts when its (start, end, type)
equals a gold span of the same sentence; precision, recall and F1 are all 0 when no span is
right. The spans of a tag sequence are read by `get_span_labels` with the original's rule by
default (see `electra_tf.task_data.tagging` for the rules); with `rule="conlleval"` the scores are
those of seqeval's default mode and the CoNLL `conlleval` script.
"""

from __future__ import annotations

from typing import Collection, Sequence

from electra_tf.task_data.tagging import get_span_labels

SentenceSpan = tuple[int, int, int, str]  # (sentence, first word, last word inclusive, type)


def _check_lengths(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> None:
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentences but {len(predicted)} predicted")
    for i, (g, p) in enumerate(zip(gold, predicted)):
        if len(g) != len(p):
            raise ValueError(f"sentence {i}: {len(g)} gold tags but {len(p)} predicted")


def sentence_spans(tag_sequences: Sequence[Sequence[str]],
                   rule: str = "electra") -> set[SentenceSpan]:
    """All spans of all sentences as (sentence index, start, end, type)."""
    return {(i, *span) for i, tags in enumerate(tag_sequences)
            for span in get_span_labels(tags, rule)}


def span_scores(gold: Collection[SentenceSpan],
                predicted: Collection[SentenceSpan]) -> dict[str, float]:
    """{precision, recall, f1} x100 of predicted spans against gold spans."""
    correct = len(set(gold) & set(predicted))
    if correct == 0:
        return {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    precision, recall = 100.0 * correct / len(set(predicted)), 100.0 * correct / len(set(gold))
    return {"precision": precision, "recall": recall,
            "f1": 2 * precision * recall / (precision + recall)}


def token_accuracy(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> float:
    """Percentage of words whose predicted tag equals the gold tag."""
    _check_lengths(gold, predicted)
    total = sum(len(g) for g in gold)
    if total == 0:
        raise ValueError("token accuracy needs at least one word")
    correct = sum(a == b for g, p in zip(gold, predicted) for a, b in zip(g, p))
    return 100.0 * correct / total


def tagging_scores(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]],
                   rule: str = "electra") -> dict[str, float]:
    """{precision, recall, f1, accuracy} x100 of predicted tag sequences against gold ones."""
    _check_lengths(gold, predicted)
    scores = span_scores(sentence_spans(gold, rule), sentence_spans(predicted, rule))
    return {**scores, "accuracy": token_accuracy(gold, predicted)}
