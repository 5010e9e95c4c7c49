"""n-best decoding of the span head's beam outputs and the SQuAD prediction files."""

import json

import numpy as np
import pytest

from electra_tf.task_data.squad import read_squad
from electra_tf.task_data.squad_features import QAFeaturizer, SquadFeature
from electra_tf.evaluation.squad_decoding import (RawResult, apply_null_threshold, basic_tokenize,
                                                  decode_example, detokenize, detokenize_pieces,
                                                  get_final_text, get_final_text_of_pieces,
                                                  write_prediction_files)

DOC = ["Steve", "Smith's", "car", "is", "red."]
#          0        1       2     3     4      5        6    7    8     9     10    11    12
TOKENS = ["[CLS]", "what", "?", "[SEP]", "steve", "smith", "'", "s", "car", "is", "red", ".",
          "[SEP]"]
WORDS = {4: 0, 5: 1, 6: 1, 7: 1, 8: 2, 9: 3, 10: 4, 11: 4}


class Example:
    doc_tokens = DOC


def window(unique_id, tokens, words, not_max_context=()):
    """A hand-made window: every context token max-context except `not_max_context`."""
    zeros = np.zeros([16], np.int32)
    return SquadFeature(unique_id=unique_id, example_index=0, doc_span_index=unique_id,
                        tokens=tokens, input_ids=zeros, input_mask=zeros, segment_ids=zeros,
                        token_to_orig_map=dict(words),
                        token_is_max_context={p: p not in not_max_context for p in words})


def result(unique_id, starts, start_scores, ends, end_scores, answerable_logit=0.0):
    return RawResult(unique_id, np.array(starts), np.array(start_scores, np.float32),
                     np.array(ends), np.array(end_scores, np.float32), answerable_logit)


def softmax(scores):
    e = np.exp(np.array(scores, np.float64) - max(scores))
    return e / e.sum()


def test_each_filter_rule():
    feature = window(0, TOKENS, WORDS, not_max_context={6})
    raw = result(0, starts=[0, 4, 10, 6, 14], start_scores=[-0.1, -0.5, -1.0, -2.0, -3.0],
                 ends=[[4, 5, 6, 7],     # start 0 ([CLS]): all dropped
                       [5, 3, 2, 8],     # (4,5) kept; 3 [SEP] and 2 "?" are not context;
                                         # (4,8) is 5 tokens > max_answer_length 4
                       [11, 9, 13, 12],  # (10,11) kept; 9 < 10; 13 >= len(tokens); 12 [SEP]
                       [7, 8, 9, 10],    # start 6 is not max-context here: all dropped
                       [14, 15, 15, 15]],  # start 14 >= len(tokens): dropped
                 end_scores=[[-0.1] * 4, [-0.2, -0.3, -0.4, -0.6], [-0.05, -0.1, -0.2, -0.3],
                             [-0.1] * 4, [-0.1] * 4], answerable_logit=1.5)
    best, nbest, null_odds = decode_example(Example(), [feature], [raw], max_answer_length=4)
    assert best == "Steve Smith"
    assert [e["text"] for e in nbest] == ["Steve Smith", "red."]
    np.testing.assert_allclose([e["start_log_prob"] for e in nbest], [-0.5, -1.0], rtol=1e-6)
    np.testing.assert_allclose([e["end_log_prob"] for e in nbest], [-0.2, -0.05], rtol=1e-6)
    np.testing.assert_allclose([e["probability"] for e in nbest], softmax([-0.7, -1.05]),
                               rtol=1e-6)
    assert null_odds == 1.5
    assert list(nbest[0]) == ["text", "probability", "start_log_prob", "end_log_prob"]
    # a longer limit keeps (4,8) at -0.5 - 0.6: "steve smith ' s car" -> "Steve Smith's car"
    _, nbest, _ = decode_example(Example(), [feature], [raw], max_answer_length=5)
    assert [e["text"] for e in nbest] == ["Steve Smith", "red.", "Steve Smith's car"]


def test_duplicates_across_windows_n_best_size_and_null_odds():
    first = window(0, TOKENS, WORDS)
    second = window(1, ["[CLS]", "what", "?", "[SEP]", "smith", "'", "s", "car", "[SEP]"],
                    {4: 1, 5: 1, 6: 1, 7: 2})
    results = {0: result(0, [5], [-0.1], [[5]], [[-0.2]], answerable_logit=0.7),   # "Smith" -0.3
               1: result(1, [4, 7], [-0.3, -0.5], [[4, 5], [7, 8]], [[-0.1, -0.2], [-0.4, -0.1]],
                         answerable_logit=-1.25)}
    # candidates: Smith -0.3 (window 0); Smith -0.4 (window 1, a duplicate); "Smith'" -0.5;
    # car -0.9; (7, 8) ends on [SEP]
    best, nbest, null_odds = decode_example(Example(), [first, second], results)
    assert [e["text"] for e in nbest] == ["Smith", "Smith'", "car"]
    np.testing.assert_allclose([e["probability"] for e in nbest], softmax([-0.3, -0.5, -0.9]),
                               rtol=1e-6)
    assert (best, null_odds) == ("Smith", -1.25)
    _, nbest, _ = decode_example(Example(), [first, second], results, n_best_size=2)
    assert [e["text"] for e in nbest] == ["Smith", "Smith'"]  # the duplicate does not count


def test_equal_scores_keep_window_and_beam_order():
    feature = window(0, TOKENS, WORDS)
    raw = result(0, [8, 4], [-1.0, -1.0], [[8, 9], [4, 5]], [[-1.0, -2.0], [-1.0, -2.0]])
    _, nbest, _ = decode_example(Example(), [feature], [raw])
    assert [e["text"] for e in nbest] == ["car", "Steve", "car is", "Steve Smith"]


def test_nothing_valid_gives_empty():
    feature = window(0, TOKENS, WORDS)
    raw = result(0, [0, 2], [-0.1, -0.2], [[0, 1], [3, 4]], [[-0.1, -0.1], [-0.1, -0.1]],
                 answerable_logit=-0.5)
    best, nbest, null_odds = decode_example(Example(), [feature], [raw])
    assert best == "empty" and null_odds == -0.5
    assert nbest == [{"text": "empty", "probability": 1.0, "start_log_prob": 0.0,
                      "end_log_prob": 0.0}]
    assert decode_example(Example(), [], [])[2] == 1000000.0


def test_decoding_featurizer_windows():
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "?", "steve", "smith", "'",
             "s", "car", "is", "red", "."]
    paragraph = {"context": "Steve Smith's car is red.", "qas": [{"id": "q", "question": "Who?"}]}
    data = {"version": "1.1", "data": [{"paragraphs": [paragraph]}]}
    (example,) = read_squad(data, version="v1.1", is_training=False)
    (feature,) = QAFeaturizer(vocab, max_seq_length=16, doc_stride=4, max_query_length=4
                              ).featurize([example], is_training=False)
    assert feature.tokens == ["[CLS]", "who", "?", "[SEP]"] + TOKENS[4:]
    raw = result(feature.unique_id, [4], [-0.1], [[5]], [[-0.1]])
    assert decode_example(example, [feature], [raw])[0] == "Steve Smith"


@pytest.mark.parametrize("pred, orig, lower_case, expected", [
    ("steve smith", "Steve Smith's", True, "Steve Smith"),
    ("cafe", "Caf\u00e9!", True, "Caf\u00e9"),
    ("elan", "\u00c9lan.", True, "\u00c9lan"),
    ("1895", "(1895-1943).", True, "1895"),
    ("- 1943 )", "(1895-1943).", True, "-1943)"),
    ("Steve", "Steve's", False, "Steve"),
    ("steve", "Steve", False, "Steve"),            # cased: not found -> the original text
    ("xyz", "Steve", True, "Steve"),               # not found
    ("abc", "ab\u200bc", True, "ab\u200bc"),       # lengths differ without spaces
    ("\u4e2d \u56fd", "\u4e2d\u56fd\u4eba", True, "\u4e2d\u56fd"),  # CJK characters alone
])
def test_get_final_text(pred, orig, lower_case, expected):
    assert get_final_text(pred, orig, lower_case) == expected


def test_basic_tokenize_and_detokenize():
    text = "Hello,  W\u00f6rld!\u00a0a\x00b\u4e2d\u6587 x\u200by"
    assert basic_tokenize(text) == ["hello", ",", "world", "!", "ab", "\u4e2d", "\u6587", "xy"]
    assert basic_tokenize(text, lower_case=False) == [
        "Hello", ",", "W\u00f6rld", "!", "ab", "\u4e2d", "\u6587", "xy"]
    assert basic_tokenize("") == []
    assert detokenize(["play", "##ing", "t0", "##"]) == "playing t0"
    assert detokenize(["##ing", "x"]) == "ing x"


def test_prediction_files(tmp_path):
    predictions = {"q2": "Steve Smith", "q1": "red."}
    nbest = {"q2": [{"text": "Steve Smith", "probability": np.float64(0.75),
                     "start_log_prob": np.float32(-0.5), "end_log_prob": -0.25}],
             "q1": [{"text": "empty", "probability": 1.0, "start_log_prob": 0.0,
                     "end_log_prob": 0.0}]}
    output = tmp_path / "out"
    paths = write_prediction_files(str(output), predictions, nbest, {"q2": np.float32(-3.5),
                                                                     "q1": 0.25})
    assert paths == {"predictions": str(output / "predictions.json"),
                     "nbest_predictions": str(output / "nbest_predictions.json"),
                     "null_odds": str(output / "null_odds.json")}
    assert (output / "predictions.json").read_text() == json.dumps(predictions, indent=4) + "\n"
    assert (output / "predictions.json").read_text().startswith('{\n    "q2": "Steve Smith",')
    assert json.loads((output / "nbest_predictions.json").read_text()) == {
        "q2": [{"text": "Steve Smith", "probability": 0.75, "start_log_prob": -0.5,
                "end_log_prob": -0.25}],
        "q1": [{"text": "empty", "probability": 1.0, "start_log_prob": 0.0,
                "end_log_prob": 0.0}]}
    assert json.loads((output / "null_odds.json").read_text()) == {"q2": -3.5, "q1": 0.25}
    assert sorted(p.name for p in output.iterdir()) == [
        "nbest_predictions.json", "null_odds.json", "predictions.json"]

    v1 = tmp_path / "v1"
    assert set(write_prediction_files(str(v1), predictions, nbest)) == {
        "predictions", "nbest_predictions"}
    assert not (v1 / "null_odds.json").exists()


def test_null_threshold():
    predictions = {"a": "x", "b": "y", "c": "z", "d": "w"}
    null_odds = {"a": -3.0, "b": -2.75, "c": 0.1}
    assert apply_null_threshold(predictions, null_odds) == {"a": "x", "b": "y", "c": "", "d": "w"}
    assert apply_null_threshold(predictions, null_odds, threshold=-5.0) == {
        "a": "", "b": "", "c": "", "d": "w"}


@pytest.mark.parametrize("pred, orig, expected", [
    ("steve smith", "Steve Smith's", "Steve Smith"),  # case folded; the "'s" left out
    ("smith's", "Smith's,", "Smith's"),  # punctuation inside a piece, none split off
    ("café", "CAFÉ!", "CAFÉ"),  # accents kept, as SentencePiece keeps them
    ("fine", "ﬁne.", "ﬁne"),  # NFKC: one original character, two normalized ones
    ("abc 12", "ＡＢＣ １２３", "ＡＢＣ １２"),  # full-width forms
    ("你好", "说你好吧", "你好"),  # no spaces: a part of one "word"
    ("[UNK] car", "Steve's car", "Steve's car"),  # not found: the words whole
    ("", "Steve", "Steve"),
])
def test_sentencepiece_answers_map_back_to_the_original_characters(pred, orig, expected):
    assert get_final_text_of_pieces(pred, orig) == expected


def test_sentencepiece_pieces_join_at_word_starts():
    assert detokenize_pieces(["\u2581steve", "\u2581sm", "ith", "'", "s"]) == "steve smith's"
    assert detokenize_pieces(["\u2581", "你好", "\u2581世界"]) == "你好 世界"
