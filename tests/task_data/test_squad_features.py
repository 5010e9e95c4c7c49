"""SQuAD windows, positions and max-context flags, worked out by hand (the original's featurize)."""

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.task_data import squad_features
from electra_tf.task_data.squad import SquadDataError, read_squad
from electra_tf.task_data.squad_features import (QAFeaturizer, doc_spans, featurize_in_chunks,
                                            improve_answer_span, max_context_windows,
                                            training_dataset, write_training_records)

VOCAB = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "what", "?"] + [f"t{i}" for i in range(12)]
         + ["play", "##ing", "cafe", "au", "lait", ".", "the", "leader", "was", "john", "smith",
            "(", ")", "-", "1895", "1943", "japanese", "japan"])
CLS, SEP = 2, 3


def ids(text):
    """Vocabulary ids of space-separated tokens ("[CLS]" and "[SEP]" included)."""
    return [VOCAB.index(token) for token in text.split()]


def padded(values, length):
    return list(values) + [0] * (length - len(values))


def examples(*questions, version="v1.1", is_training=True):
    """SquadExamples from (context, question, answers, is_impossible) tuples via read_squad."""
    paragraphs = [{"context": context, "qas": [{
        "id": f"q{i}", "question": question, "is_impossible": impossible,
        "answers": [{"text": t, "answer_start": s} for t, s in answers]}]}
        for i, (context, question, answers, impossible) in enumerate(questions)]
    return read_squad({"version": version[1:], "data": [{"paragraphs": paragraphs}]},
                      version=version, is_training=is_training)


@pytest.fixture(scope="module")
def featurizer():
    return QAFeaturizer(VOCAB, max_seq_length=12, doc_stride=2, max_query_length=4)


def test_layout_first_answer_at_the_start(featurizer):
    (example,) = examples(("t0 t1 t2", "what ?", [("t0", 0), ("t2", 6)], False))
    (feature,) = featurizer.featurize([example], is_training=True)
    assert feature.tokens == "[CLS] what ? [SEP] t0 t1 t2 [SEP]".split()
    assert list(feature.input_ids) == padded(ids("[CLS] what ? [SEP] t0 t1 t2 [SEP]"), 12)
    assert list(feature.segment_ids) == padded([0, 0, 0, 0, 1, 1, 1, 1], 12)
    assert list(feature.input_mask) == padded([1] * 8, 12)
    assert feature.input_ids.dtype == np.int32 and feature.input_ids.shape == (12,)
    assert (feature.start_position, feature.end_position, feature.is_impossible) == (4, 4, False)
    assert feature.token_to_orig_map == {4: 0, 5: 1, 6: 2}
    assert feature.token_is_max_context == {4: True, 5: True, 6: True}
    assert (feature.unique_id, feature.example_index, feature.doc_span_index) == (0, 0, 0)


def test_answers_ending_on_the_last_word_and_inside_a_split_word(featurizer):
    at_end, in_word = examples(("t0 t1 playing", "what ?", [("t1 playing", 3)], False),
                               ("playing t0", "what", [("playing", 0)], False))
    first, second = featurizer.featurize([at_end, in_word], is_training=True,
                                         example_index_offset=5)
    # [CLS] what ? [SEP] t0 t1 play ##ing [SEP]: the last word ends at the last token
    assert first.tokens[4:8] == ["t0", "t1", "play", "##ing"]
    assert (first.start_position, first.end_position) == (5, 7)
    assert first.token_to_orig_map == {4: 0, 5: 1, 6: 2, 7: 2}
    # [CLS] what [SEP] play ##ing t0 [SEP]: end = first token of the next word - 1
    assert (second.start_position, second.end_position) == (3, 4)
    assert (first.unique_id, second.unique_id) == (5000, 6000)


def test_three_and_more_windows_with_max_context_and_cls_labels():
    featurizer = QAFeaturizer(VOCAB, max_seq_length=10, doc_stride=2, max_query_length=1)
    context = " ".join(f"t{i}" for i in range(12))  # "tk" starts at character 3k
    (example,) = examples((context, "what ?", [("t8 t9", 24)], False))
    features = list(featurizer.featurize([example], is_training=True))
    # question cut to "what"; window = 10 - 1 - 3 = 6 tokens; starts 0, 2, 4, 6
    assert len(features) == 4
    for index, feature in enumerate(features):
        start = 2 * index
        assert feature.tokens == (["[CLS]", "what", "[SEP]"]
                                  + [f"t{i}" for i in range(start, start + 6)] + ["[SEP]"])
        assert feature.token_to_orig_map == {3 + k: start + k for k in range(6)}
        assert feature.doc_span_index == index and feature.unique_id == index
    # Max context, min(left, right) + 0.06: t0-t3 -> window 0, t4 t5 -> 1, t6 t7 -> 2, t8-t11 -> 3
    flags = [[feature.token_is_max_context[p] for p in range(3, 9)] for feature in features]
    assert flags == [[True, True, True, True, False, False],
                     [False, False, True, True, False, False],
                     [False, False, True, True, False, False],
                     [False, False, True, True, True, True]]
    # The answer t8 t9 (tokens 8, 9) is wholly inside windows 2 and 3 only.
    labels = [(f.start_position, f.end_position, f.is_impossible) for f in features]
    assert labels == [(0, 0, False), (0, 0, False), (8 - 4 + 3, 9 - 4 + 3, False),
                      (8 - 6 + 3, 9 - 6 + 3, False)]


def test_unanswerable_questions_point_at_cls_in_every_window():
    featurizer = QAFeaturizer(VOCAB, max_seq_length=10, doc_stride=2, max_query_length=1)
    context = " ".join(f"t{i}" for i in range(12))
    answerable, impossible = examples((context, "what", [("t0", 0)], False),
                                      (context, "what", [], True), version="v2.0")
    assert impossible.is_impossible
    features = list(featurizer.featurize([answerable, impossible], is_training=True))
    labels = [(f.example_index, f.start_position, f.end_position, f.is_impossible)
              for f in features]
    assert labels == [(0, 3, 3, False)] + [(0, 0, 0, False)] * 3 + [(1, 0, 0, True)] * 4


def test_unicode_accents_and_unusual_spaces(featurizer):
    accents, spaces = examples(("Caf\u00e9\u202fau lait.", "Wh\u00e0t ?", [("au lait", 5)], False),
                               ("t0\u00a0t1 t2", "what", [("t2", 6)], False))
    first, second = featurizer.featurize([accents, spaces], is_training=True)
    assert accents.doc_tokens == ["Caf\u00e9", "au", "lait."]  # U+202F separates words
    assert first.tokens == "[CLS] what ? [SEP] cafe au lait . [SEP]".split()
    assert (first.start_position, first.end_position) == (5, 6)  # "lait" without the "."
    assert first.token_to_orig_map == {4: 0, 5: 1, 6: 2, 7: 2}
    # U+00A0 does not split words but, as in BERT's tokenizer, splits tokens.
    assert spaces.doc_tokens == ["t0\u00a0t1", "t2"]
    assert second.tokens == "[CLS] what [SEP] t0 t1 t2 [SEP]".split()
    assert second.token_to_orig_map == {3: 0, 4: 0, 5: 1}
    assert (second.start_position, second.end_position) == (5, 5)


def test_answer_span_improvement():
    featurizer = QAFeaturizer(VOCAB, max_seq_length=24, doc_stride=4, max_query_length=4)
    context = "The leader was John Smith (1895-1943)."
    born, japan = examples((context, "what ?", [("1895", 27)], False),
                           ("the japanese leader", "what", [("japan", 4)], False))
    (feature,) = featurizer.featurize([born], is_training=True)
    assert feature.tokens[4:] == "the leader was john smith ( 1895 - 1943 ) . [SEP]".split()
    # the word "(1895-1943)." covers tokens 9..14; the answer's tokens are just "1895" (10)
    assert (feature.start_position, feature.end_position) == (10, 10)
    # "japanese" is one token: no sub-span is "japan", so the whole word stays the answer
    (feature,) = featurizer.featurize([japan], is_training=True)
    assert (feature.start_position, feature.end_position) == (4, 4)
    assert improve_answer_span([7, 8, 9, 8, 9], 0, 4, [8, 9]) == (1, 2)
    assert improve_answer_span([7, 8, 9], 0, 2, [5]) == (0, 2)
    assert improve_answer_span([7, 8, 9], 0, 2, []) == (0, 2)


def test_span_helpers():
    assert doc_spans(12, 6, 2) == [(0, 6), (2, 6), (4, 6), (6, 6)]
    assert doc_spans(6, 5, 2) == [(0, 5), (2, 4)]
    assert doc_spans(3, 5, 2) == [(0, 3)]
    assert doc_spans(0, 5, 2) == []
    # token 3: min(3, 1) + 0.05 in (0, 5) ties min(1, 2) + 0.04 in (2, 4): the longer window wins
    assert max_context_windows([(0, 5), (2, 4)], 6) == [0, 0, 0, 0, 1, 1]


@pytest.mark.slow
def test_evaluation_features_have_no_labels_and_chunking_does_not_matter(monkeypatch):
    context = " ".join(f"t{i}" for i in range(12))
    dev = examples((context, "what", [("t0", 0)], False), ("t1 t2", "what ?", [], False),
                   (context, "?", [], False), is_training=False)
    args = dict(max_seq_length=10, doc_stride=3, max_query_length=2)
    whole = list(QAFeaturizer(VOCAB, **args).featurize(dev, is_training=False))
    monkeypatch.setattr(squad_features, "WORD_CACHE_SIZE", 3)  # evicts between chunks
    one_by_one = list(QAFeaturizer(VOCAB, chunk_examples=1, **args).featurize(
        iter(dev), is_training=False))
    assert [f.unique_id for f in whole] == [0, 1, 2, 1000, 2000, 2001, 2002]
    assert all((f.start_position, f.end_position, f.is_impossible) == (0, 0, False)
               for f in whole)
    for a, b in zip(whole, one_by_one, strict=True):
        assert a.tokens == b.tokens and a.unique_id == b.unique_id
        np.testing.assert_array_equal(a.input_ids, b.input_ids)
        assert a.token_to_orig_map == b.token_to_orig_map
        assert a.token_is_max_context == b.token_is_max_context
    chunks = list(featurize_in_chunks(dev, QAFeaturizer(VOCAB, **args), chunk_examples=2))
    assert [[e.qas_id for e in chunk] for chunk, _ in chunks] == [["q0", "q1"], ["q2"]]
    assert [f.unique_id for _, features in chunks for f in features] == [
        f.unique_id for f in whole]


@pytest.mark.parametrize("args, message", [
    (dict(max_seq_length=10, max_query_length=7, doc_stride=1), "leaves no room"),
    (dict(max_seq_length=10, max_query_length=0, doc_stride=1), "leaves no room"),
    (dict(max_seq_length=12, max_query_length=4, doc_stride=6),
     "doc_stride 6 must be between 1 and the context window of 5 tokens"),
    (dict(max_seq_length=12, max_query_length=4, doc_stride=0), "doc_stride 0"),
])
def test_setting_errors(args, message):
    with pytest.raises(SquadDataError, match=message):
        QAFeaturizer(VOCAB, **args)


def test_training_examples_need_answer_spans(featurizer):
    (dev_example,) = examples(("t0", "what", [], False), is_training=False)
    with pytest.raises(SquadDataError, match="q0 has no answer span"):
        list(featurizer.featurize([dev_example], is_training=True))


@pytest.mark.slow
def test_training_records_are_identical_for_any_number_of_workers(tmp_path):
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    context = " ".join(f"t{i}" for i in range(12))
    train = examples(*[(context, "what ?", [(f"t{i}", 3 * i)], False) for i in range(5)],
                     ("t0 t1", "what", [], True), version="v2.0")
    args = dict(vocabulary=str(vocab_file), max_seq_length=11, doc_stride=2,
                max_query_length=2, chunk_examples=2)
    one, two = tmp_path / "one.tfrecord", tmp_path / "two.tfrecord"
    count = write_training_records(train, args, str(one), num_workers=1)
    assert write_training_records(train, args, str(two), num_workers=2) == count
    assert one.read_bytes() == two.read_bytes()
    assert not list(tmp_path.glob("*.incomplete"))

    expected = list(QAFeaturizer(**args).featurize(train, is_training=True))
    assert count == len(expected) == 5 * 4 + 1
    (features, labels), = training_dataset(str(one), 11, batch_size=count, training=False)
    np.testing.assert_array_equal(features["input_ids"], [f.input_ids for f in expected])
    np.testing.assert_array_equal(features["segment_ids"], [f.segment_ids for f in expected])
    np.testing.assert_array_equal(features["input_mask"], [f.input_mask for f in expected])
    np.testing.assert_array_equal(labels["start_positions"], [f.start_position for f in expected])
    np.testing.assert_array_equal(labels["end_positions"], [f.end_position for f in expected])
    np.testing.assert_array_equal(labels["is_impossible"], [0.0] * 20 + [1.0])
    assert features["input_ids"].dtype == tf.int32 and labels["is_impossible"].dtype == tf.float32
    assert labels["start_positions"].shape == (count,)

    batches = training_dataset(str(one), 11, batch_size=4, seed=3)
    features, labels = next(iter(batches))
    assert features["input_ids"].shape == (4, 11) and labels["end_positions"].shape == (4,)

    empty = tmp_path / "empty.tfrecord"
    assert write_training_records([], args, str(empty)) == 0
    with pytest.raises(SquadDataError, match="holds no windows"):
        training_dataset(str(empty), 11, batch_size=4)
    with pytest.raises(SquadDataError, match="not found"):
        training_dataset(str(tmp_path / "missing.tfrecord"), 11, batch_size=4)

    shuffled = tmp_path / "shuffled.tfrecord"
    assert write_training_records(train, args, str(shuffled), shuffle_seed=1) == count
    assert shuffled.read_bytes() != one.read_bytes()
