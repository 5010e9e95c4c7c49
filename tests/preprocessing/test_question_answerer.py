"""ElectraQuestionAnswererPreprocessor: run_finetuning's SQuAD windows, labels and maps."""

import random

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.preprocessing.question_answerer import (ElectraQuestionAnswererPreprocessor,
                                                        clean_text)
from electra_tf.task_data.squad import read_squad
from electra_tf.task_data.squad_features import QAFeaturizer
from electra_tf.task_data.squad_features import clean_text as python_clean_text

VOCAB = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "what", "?"] + [f"t{i}" for i in range(12)]
         + ["play", "##ing", "cafe", "au", "lait", ".", "the", "leader", "was", "john", "smith",
            "(", ")", "-", "1895", "1943", "japanese", "japan", "中", "é"])
WORDS = [f"t{i}" for i in range(12)] + [
    "playing", "café", "(1895-1943).", "John", "Smith", "中中", "xyz", "the", "\u00a0t1",
    "t2\x01t3", "what?", "Japanese"]
SEPARATORS = [" ", "  ", "\t", "\n", " \u202f"]


def squad_paragraphs(count=40, seed=0):
    """Random SQuAD 2.0 paragraphs of fixture words: leading spaces, odd separators, control and
    no-break characters, words split into pieces, empty contexts, unanswerable questions."""
    rng = random.Random(seed)
    paragraphs = []
    for i in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randint(0, 30))]
        separators = [rng.choice(SEPARATORS) for _ in words]
        context, starts = rng.choice(["", " "]), []
        for word, separator in zip(words, separators):
            starts.append(len(context))
            context += word + separator
        question = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 8)))
        answers, impossible = [], True
        if words and rng.random() < 0.8:
            first = rng.randrange(len(words))
            last = min(first + rng.randint(0, 2), len(words) - 1)
            answers = [{"text": context[starts[first]:starts[last] + len(words[last])],
                        "answer_start": starts[first]}]
            impossible = False
        paragraphs.append({"context": context, "qas": [{
            "id": f"q{i}", "question": question, "is_impossible": impossible,
            "answers": answers}]})
    return paragraphs


@pytest.fixture(scope="module")
def paragraphs():
    return squad_paragraphs()


def inputs_and_labels(paragraphs):
    qas = [p["qas"][0] for p in paragraphs]
    x = ([qa["question"] for qa in qas], [p["context"] for p in paragraphs])
    y = {"answer_start": [qa["answers"][0]["answer_start"] if qa["answers"] else -1 for qa in qas],
         "answer_text": [qa["answers"][0]["text"] if qa["answers"] else "" for qa in qas]}
    return x, y


@pytest.mark.parametrize("length,stride,query", [(12, 2, 4), (10, 1, 3), (24, 7, 8)])
@pytest.mark.slow
def test_windows_labels_and_maps_are_run_finetunings(paragraphs, length, stride, query):
    examples = read_squad({"version": "2.0", "data": [{"paragraphs": paragraphs}]},
                          version="v2.0", is_training=True)
    kept = [p for p in paragraphs if p["qas"][0]["id"] in {e.qas_id for e in examples}]
    assert len(kept) == len(examples) > 30
    featurizer = QAFeaturizer(VOCAB, max_seq_length=length, doc_stride=stride,
                              max_query_length=query)
    want = list(featurizer.featurize(examples, is_training=True))
    preprocessor = ElectraQuestionAnswererPreprocessor.from_vocabulary(
        VOCAB, sequence_length=length, doc_stride=stride, max_query_length=query)
    x, y = inputs_and_labels(kept)
    features, labels = preprocessor(x, y)
    features = {name: value.numpy() for name, value in features.items()}
    assert len(features["input_ids"]) == len(want) > len(examples)  # several windows each
    for row, feature in enumerate(want):
        for name in ("input_ids", "input_mask", "segment_ids"):
            np.testing.assert_array_equal(features[name][row], getattr(feature, name))
        assert features["example_index"][row] == feature.example_index
        words = {p: w for p, w in enumerate(features["token_to_word"][row]) if w >= 0}
        assert words == feature.token_to_orig_map
        assert {p: bool(features["token_is_max_context"][row][p]) for p in words} == (
            feature.token_is_max_context)
        assert (labels["start_positions"][row], labels["end_positions"][row],
                bool(labels["is_impossible"][row])) == (
            feature.start_position, feature.end_position, feature.is_impossible)
        example, context = examples[feature.example_index], x[1][feature.example_index]
        for position, word in words.items():
            start, end = features["char_start"][row][position], features["char_end"][row][position]
            assert context[start:end] == example.doc_tokens[word]
    assert sum(labels["start_positions"].numpy() > 0) > 10  # answers do land in windows


def test_the_graph_cleans_text_as_berts_clean_text():
    texts = ["a\tb\nc\rd", "x\x00y\x01z\ufffd", "no\u00a0break\u2003em", "soft\u00adhyphen",
             "zero\u200bwidth", "café 中文", "private\ue000use"]
    got = [t.decode() for t in clean_text(tf.constant(texts)).numpy()]
    assert got == [python_clean_text(t) for t in texts]


@pytest.mark.slow
def test_in_tf_data_and_weights_follow_their_windows(paragraphs):
    preprocessor = ElectraQuestionAnswererPreprocessor.from_vocabulary(
        VOCAB, sequence_length=12, doc_stride=2, max_query_length=4)
    x, y = inputs_and_labels(paragraphs[:8])
    weights = np.arange(8, dtype=np.float32)
    dataset = tf.data.Dataset.from_tensor_slices((x, y, weights)).batch(3).map(preprocessor)
    eager_features, eager_labels = preprocessor(x, y)
    rows = 0
    for features, labels, batch_weights in dataset:
        windows = len(features["input_ids"])
        np.testing.assert_array_equal(
            features["input_ids"], eager_features["input_ids"][rows:rows + windows])
        np.testing.assert_array_equal(labels["start_positions"],
                                      eager_labels["start_positions"][rows:rows + windows])
        example = eager_features["example_index"][rows:rows + windows].numpy()
        np.testing.assert_array_equal(batch_weights, weights[example])
        rows += windows
    assert rows == len(eager_features["input_ids"])


def test_an_empty_context_has_no_window_and_a_batch_of_them_works():
    preprocessor = ElectraQuestionAnswererPreprocessor.from_vocabulary(
        VOCAB, sequence_length=12, doc_stride=2, max_query_length=4)
    features, labels = preprocessor((["what ?", "what"], ["", " "]),
                                    {"answer_start": [-1, 0], "answer_text": ["", "t1"]})
    assert features["input_ids"].shape == (0, 12) and labels["start_positions"].shape == (0,)
    features = preprocessor(x=(["what", "what"], ["t0 t1", ""]))
    np.testing.assert_array_equal(features["example_index"], [0])


def test_config_round_trip_and_bad_settings():
    preprocessor = ElectraQuestionAnswererPreprocessor.from_vocabulary(
        VOCAB, sequence_length=20, doc_stride=5, max_query_length=6)
    again = ElectraQuestionAnswererPreprocessor.from_config(preprocessor.get_config())
    assert (again.sequence_length, again.doc_stride, again.max_query_length) == (20, 5, 6)
    with pytest.raises(ValueError, match="doc_stride 20 must be between 1"):
        ElectraQuestionAnswererPreprocessor.from_vocabulary(
            VOCAB, sequence_length=20, doc_stride=20, max_query_length=6)
    with pytest.raises(ValueError, match=r"x=\(questions, contexts\)"):
        preprocessor(["only questions"])
