"""Reading SQuAD v1.1 / v2.0 JSON, MRQA JSON Lines and TFDS squad as the original reads them."""

import json

import numpy as np
import pytest

from electra_tf.task_data import squad
from electra_tf.task_data.squad import SquadDataError, read_squad, whitespace_split


def squad_json(paragraphs, version="1.1"):
    return {"version": version, "data": [{"title": "T", "paragraphs": paragraphs}]}


def write(tmp_path, value, name="train.json"):
    path = tmp_path / name
    path.write_text(json.dumps(value), encoding="utf-8")
    return str(path)


def qa(qid, question, *answers, **extra):
    return {"id": qid, "question": question,
            "answers": [{"text": t, "answer_start": s} for t, s in answers], **extra}


CONTEXT = "The  cat sat\ton the mat.\n"  # two spaces, a tab, a trailing newline


def test_whitespace_split_offsets():
    words, offsets = whitespace_split(" ab  c\u202fd\te\n")
    assert words == ["ab", "c", "d", "e"]
    #                  ' ' a  b  ' ' ' ' c  nnbsp d  \t e  \n
    assert offsets == [-1, 0, 0, 0, 0, 1, 1, 2, 2, 3, 3]
    assert whitespace_split("") == ([], [])
    # U+00A0 is not a separator for the original (only U+202F is)
    assert whitespace_split("a\u00a0b")[0] == ["a\u00a0b"]


def test_v11_training_uses_the_first_answer(tmp_path):
    path = write(tmp_path, squad_json([{"context": CONTEXT, "qas": [
        qa("q1", "Who sat?", ("cat", 5), ("The  cat", 0)),
        qa("q2", "Where?", ("the mat.", 16)),
        qa("q3", "First?", ("The", 0))]}]))
    examples = read_squad(path, version="v1.1", is_training=True)
    assert [e.qas_id for e in examples] == ["q1", "q2", "q3"]
    first, second, third = examples
    assert first.doc_tokens == ["The", "cat", "sat", "on", "the", "mat."]
    assert (first.orig_answer_text, first.start_word, first.end_word) == ("cat", 1, 1)
    assert (second.start_word, second.end_word) == (4, 5)  # ends at the last word
    assert (third.start_word, third.end_word) == (0, 0)  # starts at the first character
    assert not any(e.is_impossible for e in examples)
    assert first.doc_tokens is second.doc_tokens  # one context, shared
    assert first.context_text == CONTEXT and first.question_text == "Who sat?"


def test_answer_text_whitespace_and_case_are_normalized_for_the_check():
    data = squad_json([{"context": "Hello  World again", "qas": [
        qa("q", "?", ("hello\tworld", 0))]}])
    (example,) = read_squad(data, version="v1.1", is_training=True)
    assert (example.start_word, example.end_word) == (0, 1)
    assert example.orig_answer_text == "hello\tworld"


def test_v20_training_and_unanswerable_questions():
    data = squad_json([{"context": "a b c", "qas": [
        qa("q1", "x", ("b", 2), is_impossible=False),
        {"id": "q2", "question": "y", "answers": [], "is_impossible": True,
         "plausible_answers": [{"text": "c", "answer_start": 4}]},
        qa("q3", "z", ("c", 4))]}], version="v2.0")
    examples = read_squad(data, version="v2.0", is_training=True)
    assert [(e.qas_id, e.is_impossible, e.start_word, e.orig_answer_text) for e in examples] == [
        ("q1", False, 1, "b"), ("q2", True, None, ""), ("q3", False, 2, "c")]


def test_dev_answers_are_not_parsed(tmp_path):
    path = write(tmp_path, squad_json([{"context": "a b", "qas": [
        qa("q1", "x", ("zzz", 99)), {"id": "q2", "question": "y"}]}]), "dev.json")
    examples = read_squad(path, version="v1.1", is_training=False)
    assert [(e.qas_id, e.orig_answer_text, e.start_word, e.end_word) for e in examples] == [
        ("q1", None, None, None), ("q2", None, None, None)]


def test_mismatched_answers_are_counted_and_skipped(monkeypatch):
    warnings = []
    monkeypatch.setattr(squad.logging, "warning", lambda *args: warnings.append(args[0] % args[1:]))
    data = squad_json([{"context": "one two three", "qas": [
        qa("good", "?", ("two", 4)),
        qa("bad-offset", "?", ("two", 0)),       # offset points at "one"
        qa("past-end", "?", ("three", 10)),      # runs past the document
        qa("negative", "?", ("one", -3))]}])
    examples = read_squad(data, version="v1.1", is_training=True)
    assert [e.qas_id for e in examples] == ["good"]
    assert len(warnings) == 1
    assert "skipped 3 of 4" in warnings[0] and "bad-offset" in warnings[0]


def test_every_answer_failing_is_an_error():
    data = squad_json([{"context": "one two", "qas": [qa("a", "?", ("two", 0)),
                                                     qa("b", "?", ("one", 4))]}])
    with pytest.raises(SquadDataError, match=r"no training answer matches .*\(2 tried, e.g. "
                                             r"question a"):
        read_squad(data, version="v1.1", is_training=True)


@pytest.mark.parametrize("version_field, qas", [
    ("v2.0", [qa("q", "?", ("a", 0))]),
    ("1.1", [{"id": "q", "question": "?", "answers": [], "is_impossible": True}]),
])
@pytest.mark.parametrize("is_training", [True, False])
def test_v20_data_read_as_v11_is_an_error(version_field, qas, is_training):
    data = squad_json([{"context": "a b", "qas": qas}], version=version_field)
    with pytest.raises(SquadDataError, match="squad/v2.0"):
        read_squad(data, version="v1.1", is_training=is_training)


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.pop("data"), r'train.json has no "data"'),
    (lambda d: d["data"][0].pop("paragraphs"), r'data\[0\] has no "paragraphs"'),
    (lambda d: d["data"][0]["paragraphs"][1].pop("context"),
     r'data\[0\]\.paragraphs\[1\] has no "context"'),
    (lambda d: d["data"][0]["paragraphs"][1]["qas"][2].pop("question"),
     r'data\[0\]\.paragraphs\[1\]\.qas\[2\] has no "question"'),
    (lambda d: d["data"][0]["paragraphs"][1]["qas"][0].pop("id"),
     r'data\[0\]\.paragraphs\[1\]\.qas\[0\] has no "id"'),
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][0]["answers"][0].pop("answer_start"),
     r'qas\[0\]\.answers\[0\] has no "answer_start"'),
    (lambda d: d["data"][0]["paragraphs"][0].update(qas={}),
     r'paragraphs\[0\]: "qas" is a dict, expected a list'),
])
def test_format_errors_name_the_missing_key(tmp_path, mutate, message):
    data = squad_json([{"context": "a b", "qas": [qa("q0", "?", ("a", 0))]},
                       {"context": "c d", "qas": [qa(f"q{i}", "?", ("c", 0)) for i in range(3)]}])
    mutate(data)
    path = write(tmp_path, data)
    with pytest.raises(SquadDataError, match=message):
        squad.load_squad_json(path)
    with pytest.raises(SquadDataError, match=message):
        read_squad(path, version="v1.1", is_training=False)


def test_other_file_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(SquadDataError, match="is not JSON"):
        squad.load_squad_json(str(bad))
    with pytest.raises(squad.TaskDataError, match="not found"):
        squad.load_squad_json(str(tmp_path / "missing.json"))
    with pytest.raises(SquadDataError, match="unknown SQuAD version"):
        read_squad(squad_json([]), version="3.0", is_training=False)
    with pytest.raises(SquadDataError, match="holds no questions"):
        read_squad(squad_json([]), version="v1.1", is_training=False)
    with pytest.raises(SquadDataError, match=r'qas\[0\] has no "answers"'):
        squad.load_squad_json(write(tmp_path, squad_json([{"context": "a", "qas": [
            {"id": "q", "question": "?"}]}])), with_answers=True)
    with pytest.raises(SquadDataError, match=r"id q\) has no answer"):
        read_squad(squad_json([{"context": "a", "qas": [{"id": "q", "question": "?",
                                                         "answers": []}]}]),
                   version="v1.1", is_training=True)


def test_load_squad_json_returns_the_whole_file(tmp_path):
    data = squad_json([{"context": "a", "qas": [qa("q", "?", ("a", 0))]}], version="v2.0")
    assert squad.load_squad_json(write(tmp_path, data), with_answers=True) == data
    assert [squad.normalize_version(v) for v in ("1.1", "v2.0", "squad/v2.0", "2")] == [
        "v1.1", "v2.0", "v2.0", "v2.0"]


def test_mrqa_jsonl(tmp_path):
    lines = [{"header": {"dataset": "NewsQA", "split": "train"}},
             {"context": "x y\u202fz", "qas": [
                 {"qid": "m1", "question": "?", "answers": ["z"],
                  "detected_answers": [{"text": "z", "char_spans": [[4, 4]]},
                                       {"text": "x", "char_spans": [[0, 0]]}]}]}]
    path = tmp_path / "train.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    (example,) = squad.read_mrqa_jsonl(str(path), is_training=True)
    assert (example.qas_id, example.doc_tokens, example.start_word, example.end_word) == (
        "m1", ["x", "y", "z"], 2, 2)
    (dev_example,) = squad.read_mrqa_jsonl(str(path), is_training=False)
    assert dev_example.start_word is None


# ---------------------------------------------------------------------------------------------
# TFDS (mocked: no download, no network)


def test_tfds_random_mock_has_the_expected_features(no_network):
    tfds = pytest.importorskip("tensorflow_datasets")
    with tfds.testing.mock_data(num_examples=4):
        examples, dataset_json = squad.read_tfds_squad("v2.0", "dev")
    assert len(examples) == 4
    qas = [q for a in dataset_json["data"] for p in a["paragraphs"] for q in p["qas"]]
    assert sorted(q["id"] for q in qas) == sorted(e.qas_id for e in examples)
    assert all(isinstance(q["is_impossible"], bool) for q in qas)
    squad.validate_squad_json(dataset_json, with_answers=True)


def _fixed_mock(records):
    import tensorflow as tf

    def generate():
        yield from records

    signature = {"id": tf.TensorSpec([], tf.string), "title": tf.TensorSpec([], tf.string),
                 "context": tf.TensorSpec([], tf.string), "question": tf.TensorSpec([], tf.string),
                 "is_impossible": tf.TensorSpec([], tf.bool),
                 "answers": {"text": tf.TensorSpec([None], tf.string),
                             "answer_start": tf.TensorSpec([None], tf.int32)}}

    def as_dataset(self, *args, **kwargs):
        return tf.data.Dataset.from_generator(generate, output_signature=signature)
    return as_dataset


def _record(qid, title, context, answers, impossible=False):
    return {"id": qid, "title": title, "context": context, "question": f"q {qid}?",
            "is_impossible": impossible,
            "answers": {"text": np.array([t for t, _ in answers], object).astype(bytes),
                        "answer_start": np.array([s for _, s in answers], np.int32)}}


def test_tfds_records_become_the_official_json(no_network):
    tfds = pytest.importorskip("tensorflow_datasets")
    records = [_record("a", "T1", "caf\u00e9 au lait", [("au", 5), ("au lait", 5)]),
               _record("b", "T2", "other text", [("text", 6)]),
               _record("c", "T1", "caf\u00e9 au lait", [], impossible=True),
               _record("d", "T1", "second para", [("second", 0)])]
    with tfds.testing.mock_data(as_dataset_fn=_fixed_mock(records)):
        examples, dataset_json = squad.read_tfds_squad("squad/v2.0", "train")
    assert dataset_json == {"version": "v2.0", "data": [
        {"title": "T1", "paragraphs": [
            {"context": "caf\u00e9 au lait", "qas": [
                {"id": "a", "question": "q a?", "is_impossible": False, "answers": [
                    {"text": "au", "answer_start": 5}, {"text": "au lait", "answer_start": 5}]},
                {"id": "c", "question": "q c?", "answers": [], "is_impossible": True}]},
            {"context": "second para", "qas": [
                {"id": "d", "question": "q d?", "is_impossible": False,
                 "answers": [{"text": "second", "answer_start": 0}]}]}]},
        {"title": "T2", "paragraphs": [
            {"context": "other text", "qas": [
                {"id": "b", "question": "q b?", "is_impossible": False,
                 "answers": [{"text": "text", "answer_start": 6}]}]}]}]}
    assert [(e.qas_id, e.is_impossible, e.start_word, e.end_word) for e in examples] == [
        ("a", False, 1, 1), ("c", True, None, None), ("d", False, 0, 0), ("b", False, 1, 1)]
    with tfds.testing.mock_data(as_dataset_fn=_fixed_mock(records[:2])):
        examples, dataset_json = squad.read_tfds_squad("v1.1", "dev")
    assert "is_impossible" not in dataset_json["data"][0]["paragraphs"][0]["qas"][0]
    assert examples[0].start_word is None
    with pytest.raises(SquadDataError, match="unknown SQuAD split"):
        squad.read_tfds_squad("v1.1", "test")
