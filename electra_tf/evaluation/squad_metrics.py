"""SQuAD v1.1 / v2.0 exact-match and F1, re-implementing the official evaluation scripts.

Pure Python (stdlib only). ``dataset`` arguments are the ``data`` list of an official SQuAD
JSON file (articles -> ``paragraphs`` -> ``qas``, each qa with ``id`` and ``answers``, a list
of ``{"text", "answer_start"}``; v2.0 unanswerable questions have an empty ``answers`` list).
``predictions`` maps question id -> predicted answer text ("" means "no answer" in v2.0).
"""

import collections
import re
import string

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text):
    """Lower-case, drop punctuation, drop the articles a/an/the, collapse whitespace."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction, truth):
    """1.0 if ``prediction`` and ``truth`` are equal after normalization, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(truth))


def f1(prediction, truth, v2=True):
    """Token-level F1 between the normalized whitespace tokens of ``prediction`` and ``truth``.

    Overlap is a multiset intersection. With ``v2`` (the v2.0 script's rule) an empty token
    list on either side gives 1.0 if both are empty, else 0.0. Without it (v1.1), no shared
    token -- including any empty side -- gives 0.0.
    """
    pred_tokens = normalize_answer(prediction).split()
    truth_tokens = normalize_answer(truth).split()
    if v2 and (not pred_tokens or not truth_tokens):
        return float(pred_tokens == truth_tokens)
    common = collections.Counter(pred_tokens) & collections.Counter(truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0.0
    precision = num_same / len(pred_tokens)
    recall = num_same / len(truth_tokens)
    return 2 * precision * recall / (precision + recall)


def _questions(dataset):
    """Yield every qa dict of a SQuAD ``data`` list, in file order."""
    for article in dataset:
        for paragraph in article["paragraphs"]:
            yield from paragraph["qas"]


def evaluate_v1(dataset, predictions):
    """SQuAD v1.1 scores: {"exact_match", "f1"}, both 100 * mean over all questions.

    Each question takes the max over its gold answers; a question without a prediction
    scores 0 and still counts in the total.
    """
    total = em_sum = f1_sum = 0
    for qa in _questions(dataset):
        total += 1
        if qa["id"] not in predictions:
            continue
        prediction = predictions[qa["id"]]
        golds = [answer["text"] for answer in qa["answers"]]
        em_sum += max(exact_match(prediction, gold) for gold in golds)
        f1_sum += max(f1(prediction, gold, v2=False) for gold in golds)
    return {"exact_match": 100.0 * em_sum / total, "f1": 100.0 * f1_sum / total}


def _gold_answers_v2(qa):
    """Gold texts whose normalized form is non-empty; [""] for an unanswerable question."""
    golds = [a["text"] for a in qa["answers"] if normalize_answer(a["text"])]
    return golds or [""]


def _raw_scores_v2(dataset, predictions):
    """(has_ans, exact, f1): qid -> bool(answers) over all questions; qid -> raw max score
    over the predicted questions only (missing predictions are skipped, as officially)."""
    has_ans, exact, f1s = {}, {}, {}
    for qa in _questions(dataset):
        qid = qa["id"]
        has_ans[qid] = bool(qa["answers"])
        if qid not in predictions:
            continue
        golds = _gold_answers_v2(qa)
        exact[qid] = max(exact_match(predictions[qid], g) for g in golds)
        f1s[qid] = max(f1(predictions[qid], g, v2=True) for g in golds)
    return has_ans, exact, f1s


def _apply_threshold(scores, na_probs, has_ans, thresh):
    """Scores where a question with na_prob > thresh counts as a "no answer" prediction."""
    return {qid: (float(not has_ans[qid]) if na_probs[qid] > thresh else score)
            for qid, score in scores.items()}


def _summary(exact, f1s, qids, prefix=""):
    """Percentages of the scores over ``qids`` plus their count, with key prefix."""
    total = len(qids)
    return {prefix + "exact": 100.0 * sum(exact[q] for q in qids) / total,
            prefix + "f1": 100.0 * sum(f1s[q] for q in qids) / total,
            prefix + "total": total}


def _best_thresh(predictions, scores, na_probs, has_ans):
    """Oracle threshold sweep of the official ``find_best_thresh``: (best score %, thresh).

    Starts from predicting "no answer" everywhere (score = #unanswerable questions), then
    answers questions in ascending na_prob order: an answerable one adds its raw score, an
    unanswerable one adds -1 if its prediction is non-empty.
    """
    num_no_ans = sum(1 for qid in has_ans if not has_ans[qid])
    cur_score = best_score = num_no_ans
    best_thresh = 0.0
    for qid in sorted(na_probs, key=lambda k: na_probs[k]):
        if qid not in scores:
            continue
        if has_ans[qid]:
            diff = scores[qid]
        else:
            diff = -1 if predictions[qid] else 0
        cur_score += diff
        if cur_score > best_score:
            best_score = cur_score
            best_thresh = na_probs[qid]
    return 100.0 * best_score / len(scores), best_thresh


def evaluate_v2(dataset, predictions, na_probs=None, na_prob_thresh=1.0):
    """SQuAD v2.0 scores as the official script computes them.

    ``na_probs`` (optional) maps qid -> probability/score that the question has no answer;
    a question with na_prob > ``na_prob_thresh`` scores 1 if unanswerable else 0. Questions
    without a prediction are skipped (``total`` counts scored questions). Returns "exact",
    "f1", "total", the "HasAns_*" / "NoAns_*" splits when present, and with ``na_probs`` also
    "best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh".
    """
    has_ans, exact_raw, f1_raw = _raw_scores_v2(dataset, predictions)
    if not exact_raw:
        raise ValueError("no question of the dataset has a prediction")
    probs = na_probs if na_probs is not None else {qid: 0.0 for qid in predictions}
    exact = _apply_threshold(exact_raw, probs, has_ans, na_prob_thresh)
    f1s = _apply_threshold(f1_raw, probs, has_ans, na_prob_thresh)
    result = _summary(exact, f1s, list(exact))
    has_ans_qids = [q for q in exact if has_ans[q]]
    no_ans_qids = [q for q in exact if not has_ans[q]]
    if has_ans_qids:
        result.update(_summary(exact, f1s, has_ans_qids, "HasAns_"))
    if no_ans_qids:
        result.update(_summary(exact, f1s, no_ans_qids, "NoAns_"))
    if na_probs is not None:
        result["best_exact"], result["best_exact_thresh"] = _best_thresh(
            predictions, exact_raw, na_probs, has_ans)
        result["best_f1"], result["best_f1_thresh"] = _best_thresh(
            predictions, f1_raw, na_probs, has_ans)
    return result
