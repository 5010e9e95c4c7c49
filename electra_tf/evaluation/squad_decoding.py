"""SQuAD answers from the span head's beam outputs, as the original's `write_predictions`.

For every window of an example and every (start i, end j of start i) pair of the beam, a
candidate span survives unless: start or end is past the window's tokens, the start is [CLS]
(position 0), start or end is not a context token, the start is not in its max-context window,
end < start, or it is longer than `max_answer_length` tokens. Candidates are ranked by
`start_top_log_probs[i] + end_top_log_probs[i, j]` (for the BERT-style head the same arrays hold
raw logits), turned into text (WordPiece pieces joined, then aligned with the original words by
`get_final_text`) and de-duplicated by text until `n_best_size` remain ("empty" if none do).
Probabilities are a softmax over the n-best scores. The null odds of an example are the
smallest `answerable_logit` (the logit of *no answer*) over its windows.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import unicodedata
from typing import Mapping, Sequence

import numpy as np
import tensorflow as tf

from electra_tf.text.vocab_files import SENTENCEPIECE_WORD_START

NULL_THRESHOLD = -2.75  # the original's qa_na_threshold for v2.0 test predictions
NO_WINDOW_NULL_ODDS = 1000000.0  # the original's initial "minimum" null score
PREDICTION_FILES = {"predictions": "predictions.json",
                    "nbest_predictions": "nbest_predictions.json",
                    "null_odds": "null_odds.json"}


@dataclasses.dataclass
class RawResult:
    """The model's beam outputs for one window (k = beam size).

    start_top_index: int [k]; start_top_log_probs: float [k]; end_top_index: int [k, k] and
    end_top_log_probs: float [k, k] (row i: the ends for start i); answerable_logit: float, the
    logit of *no answer*.
    """

    unique_id: int
    start_top_index: np.ndarray
    start_top_log_probs: np.ndarray
    end_top_index: np.ndarray
    end_top_log_probs: np.ndarray
    answerable_logit: float = 0.0


# ---------------------------------------------------------------------------------------------
# Text alignment (BERT's BasicTokenizer, in Python)


def _is_punctuation(char: str) -> bool:
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True  # every non-alphanumeric printable ASCII character
    return unicodedata.category(char).startswith("P")


def _is_cjk(char: str) -> bool:
    code = ord(char)
    return (0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0x20000 <= code <= 0x2A6DF
            or 0x2A700 <= code <= 0x2B73F or 0x2B740 <= code <= 0x2B81F
            or 0x2B820 <= code <= 0x2CEAF or 0xF900 <= code <= 0xFAFF
            or 0x2F800 <= code <= 0x2FA1F)


def _strip_accents(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", text)
                   if unicodedata.category(c) != "Mn")


def _split_punctuation(word: str) -> list[str]:
    pieces, current = [], ""
    for char in word:
        if _is_punctuation(char):
            pieces += [current, char] if current else [char]
            current = ""
        else:
            current += char
    return pieces + [current] if current else pieces


def basic_tokenize(text: str, lower_case: bool = True) -> list[str]:
    """BERT's BasicTokenizer: drop control characters, split on whitespace, lower-case and strip
    accents (if `lower_case`), split off punctuation, and put CJK characters on their own."""
    cleaned = []
    for char in text:
        category = unicodedata.category(char)
        if char in "\t\n\r" or category == "Zs":
            cleaned.append(" ")
        elif char == "\x00" or char == "\ufffd" or category.startswith("C"):
            continue
        else:
            cleaned.append(f" {char} " if _is_cjk(char) else char)
    words = []
    for word in "".join(cleaned).split():
        if lower_case:
            word = _strip_accents(word.lower())
        words.extend(_split_punctuation(word))
    return " ".join(words).split()


def _without_spaces(text: str) -> tuple[str, dict[int, int]]:
    """(text without " ", map from its character indices to the indices in `text`)."""
    kept = [(i, c) for i, c in enumerate(text) if c != " "]
    return "".join(c for _, c in kept), {k: i for k, (i, _) in enumerate(kept)}


def get_final_text(pred_text: str, orig_text: str, lower_case: bool = True) -> str:
    """The part of `orig_text` (original words) that the normalized `pred_text` covers.

    E.g. pred "steve smith", orig "Steve Smith's" -> "Steve Smith". `orig_text` is tokenized as
    BERT does; the two texts are aligned character by character after removing spaces. When the
    prediction is not found, or the alignment fails (the texts differ in length without spaces),
    `orig_text` is returned whole.
    """
    tok_text = " ".join(basic_tokenize(orig_text, lower_case))
    start = tok_text.find(pred_text)
    if start == -1:
        return orig_text
    end = start + len(pred_text) - 1
    orig_chars, orig_map = _without_spaces(orig_text)
    tok_chars, tok_map = _without_spaces(tok_text)
    if len(orig_chars) != len(tok_chars):
        return orig_text
    tok_to_chars = {tok_index: i for i, tok_index in tok_map.items()}
    orig_start = orig_map.get(tok_to_chars.get(start, -1))
    orig_end = orig_map.get(tok_to_chars.get(end, -1))
    if orig_start is None or orig_end is None:
        return orig_text
    return orig_text[orig_start:orig_end + 1]


def get_final_text_of_pieces(pred_text: str, orig_text: str) -> str:
    """The part of `orig_text` (original words) that `pred_text`, the text of SentencePiece
    pieces, covers: the two are aligned character by character after removing whitespace,
    `orig_text` NFKC-normalized and case-folded one character at a time (the normalization of
    the project's SentencePiece models; a cased model's pieces are case-folded the same way),
    so one original character may stand for several normalized ones ("ﬁ" -> "fi"). When the
    prediction is not found (an [UNK] piece, say), `orig_text` is returned whole."""
    normalized, origins = [], []
    for index, char in enumerate(orig_text):
        for piece_char in unicodedata.normalize("NFKC", char).casefold():
            if not piece_char.isspace():
                normalized.append(piece_char)
                origins.append(index)
    target = "".join(unicodedata.normalize("NFKC", pred_text).casefold().split())
    start = "".join(normalized).find(target) if target else -1
    if start == -1:
        return orig_text
    return orig_text[origins[start]:origins[start + len(target) - 1] + 1]


def detokenize_pieces(pieces: Sequence[str]) -> str:
    """SentencePiece pieces -> text: "▁" starts a word, whitespace collapsed."""
    return " ".join("".join(pieces).replace(SENTENCEPIECE_WORD_START, " ").split())


def detokenize(tokens: Sequence[str]) -> str:
    """WordPiece tokens -> text: "##" continuations joined to their word, whitespace collapsed."""
    text = " ".join(tokens).replace(" ##", "").replace("##", "")
    return " ".join(text.strip().split())


# ---------------------------------------------------------------------------------------------
# n-best decoding

_Candidate = collections.namedtuple("_Candidate", "score window start end start_value end_value")


def _candidates(feature, result: RawResult, window: int, max_answer_length: int):
    """The spans of one window that pass the original's filters, in beam order."""
    num_tokens = len(feature.tokens)
    start_values = np.asarray(result.start_top_log_probs)
    end_values = np.asarray(result.end_top_log_probs)
    end_indices = np.asarray(result.end_top_index)
    for i, start in enumerate(np.asarray(result.start_top_index).tolist()):
        for j, end in enumerate(end_indices[i].tolist()):
            if start >= num_tokens or end >= num_tokens or start == 0:
                continue
            if start not in feature.token_to_orig_map or end not in feature.token_to_orig_map:
                continue
            if not feature.token_is_max_context.get(start, False):
                continue
            if end < start or end - start + 1 > max_answer_length:
                continue
            score = start_values[i] + end_values[i, j]
            yield _Candidate(float(score), window, start, end, float(start_values[i]),
                             float(end_values[i, j]))


def _softmax(scores: list[float]) -> list[float]:
    exponentials = np.exp(np.asarray(scores, np.float64) - max(scores))
    return (exponentials / exponentials.sum()).tolist()


def decode_example(example, features: Sequence, results: Sequence[RawResult] | Mapping,
                   *, n_best_size: int = 20, max_answer_length: int = 30,
                   lower_case: bool = True,
                   sentencepiece: bool = False) -> tuple[str, list[dict], float]:
    """(best answer, n-best list, null odds) of one example.

    Args:
      example: the SquadExample (its `doc_tokens` give the original text).
      features: the example's windows (SquadFeatures, with `tokens`: WordPiece tokens, or
        SentencePiece pieces when `sentencepiece`).
      results: their RawResults, in the same order, or a mapping unique_id -> RawResult.
    Returns:
      best: the best non-empty n-best text ("empty" if no span survived the filters);
      nbest: up to n_best_size dicts {text, probability, start_log_prob, end_log_prob}, best
        first;
      null_odds: min over the windows of answerable_logit (1e6 if there is no window).
    """
    if isinstance(results, Mapping):
        results = [results[f.unique_id] for f in features]
    candidates, null_odds = [], NO_WINDOW_NULL_ODDS
    for window, (feature, result) in enumerate(zip(features, results)):
        null_odds = min(null_odds, float(result.answerable_logit))
        candidates.extend(_candidates(feature, result, window, max_answer_length))
    candidates.sort(key=lambda c: c.score, reverse=True)  # stable: ties keep beam order

    nbest, seen = [], set()
    for candidate in candidates:
        if len(nbest) >= n_best_size:
            break
        feature = features[candidate.window]
        first_word = feature.token_to_orig_map[candidate.start]
        last_word = feature.token_to_orig_map[candidate.end]
        tokens = feature.tokens[candidate.start:candidate.end + 1]
        orig_text = " ".join(example.doc_tokens[first_word:last_word + 1])
        text = (get_final_text_of_pieces(detokenize_pieces(tokens), orig_text) if sentencepiece
                else get_final_text(detokenize(tokens), orig_text, lower_case))
        if text in seen:
            continue
        seen.add(text)
        nbest.append({"text": text, "start_log_prob": candidate.start_value,
                      "end_log_prob": candidate.end_value, "score": candidate.score})
    if not nbest:
        nbest.append({"text": "empty", "start_log_prob": 0.0, "end_log_prob": 0.0, "score": 0.0})
    probabilities = _softmax([entry.pop("score") for entry in nbest])
    nbest = [{"text": entry["text"], "probability": p, "start_log_prob": entry["start_log_prob"],
              "end_log_prob": entry["end_log_prob"]} for entry, p in zip(nbest, probabilities)]
    best = next((entry["text"] for entry in nbest if entry["text"]), nbest[0]["text"])
    return best, nbest, null_odds


# ---------------------------------------------------------------------------------------------
# Prediction files


def apply_null_threshold(predictions: Mapping[str, str], null_odds: Mapping[str, float],
                         threshold: float = NULL_THRESHOLD) -> dict[str, str]:
    """The v2.0 test-time rule: "" (no answer) where null_odds > threshold."""
    return {qid: "" if null_odds.get(qid, -np.inf) > threshold else text
            for qid, text in predictions.items()}


def _write_json(path: str, value) -> None:
    temporary = path + ".incomplete"
    with tf.io.gfile.GFile(temporary, "w") as f:
        f.write(json.dumps(value, indent=4) + "\n")
    tf.io.gfile.rename(temporary, path, overwrite=True)


def write_prediction_files(output_dir: str, predictions: Mapping[str, str],
                           nbest: Mapping[str, list], null_odds: Mapping[str, float] | None = None
                           ) -> dict[str, str]:
    """Writes predictions.json ({qid: text}), nbest_predictions.json ({qid: [{text, probability,
    start_log_prob, end_log_prob}, ...]}) and, for v2.0, null_odds.json ({qid: float}), each
    JSON with indent 4, to a temporary file first. Returns {name: path}."""
    tf.io.gfile.makedirs(output_dir)
    contents = {"predictions": dict(predictions),
                "nbest_predictions": {qid: [{key: (float(value) if key != "text" else value)
                                             for key, value in entry.items()}
                                            for entry in entries]
                                      for qid, entries in nbest.items()}}
    if null_odds is not None:
        contents["null_odds"] = {qid: float(value) for qid, value in null_odds.items()}
    paths = {}
    for name, value in contents.items():
        paths[name] = os.path.join(output_dir, PREDICTION_FILES[name])
        _write_json(paths[name], value)
    return paths
