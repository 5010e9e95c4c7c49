"""SQuAD v1.1 / v2.0 (and MRQA) reading: files or TFDS -> `SquadExample`s, as the original's
`QATask._add_examples`.

A context is split into whitespace words (`whitespace_split`); training questions keep their
*first* answer as a word span `[start_word, end_word]` (inclusive). A training answer whose
`answer_start` does not point at its text (the original's check: the answer's whitespace-joined
words, lower-cased, must occur in the lower-cased words it covers) is skipped and counted.
Dev/test answers are not parsed: the official evaluation scores predictions against the JSON
itself (`load_squad_json`). No TensorFlow is needed here except for the TFDS reader.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Iterable, Iterator

from absl import logging

from electra_tf.task_data.classification_data import TaskDataError, read_text

VERSIONS = ("v1.1", "v2.0")
_TFDS_SPLITS = {"train": "train", "dev": "validation", "validation": "validation"}


class SquadDataError(TaskDataError):
    """SQuAD data that cannot be read as asked (not SQuAD's format, wrong version, no answers)."""


@dataclasses.dataclass(frozen=True)
class SquadExample:
    """One question about one context.

    `doc_tokens` are the context's whitespace words (shared by the questions of a paragraph).
    Training examples carry the first answer: its text and inclusive word span; unanswerable
    (v2.0) training examples have text "" and no span. Dev/test examples carry no answer.
    """

    qas_id: str
    question_text: str
    doc_tokens: list[str]
    orig_answer_text: str | None = None
    start_word: int | None = None
    end_word: int | None = None
    is_impossible: bool = False
    context_text: str | None = None


def is_whitespace(char: str) -> bool:
    """The original's word separators: space, tab, CR, LF and U+202F (narrow no-break space)."""
    return char in " \t\r\n" or ord(char) == 0x202F


def whitespace_split(context: str) -> tuple[list[str], list[int]]:
    """(words, char_to_word_offset): `char_to_word_offset[k]` is the index of the word holding
    character k, or for a separator the word before it (-1 before the first word)."""
    words: list[str] = []
    char_to_word_offset = []
    previous_was_space = True
    for char in context:
        if is_whitespace(char):
            previous_was_space = True
        else:
            if previous_was_space:
                words.append(char)
            else:
                words[-1] += char
            previous_was_space = False
        char_to_word_offset.append(len(words) - 1)
    return words, char_to_word_offset


def normalize_version(version: str) -> str:
    """"v1.1" or "v2.0" from "v1.1", "1.1", "squad/v1.1", "v2", ..."""
    key = str(version).strip().lower().removeprefix("squad/").removeprefix("squad").lstrip("v")
    key = {"1": "1.1", "2": "2.0"}.get(key, key)
    if f"v{key}" not in VERSIONS:
        raise SquadDataError(f"unknown SQuAD version {version!r} (choose v1.1 or v2.0)")
    return f"v{key}"


# ---------------------------------------------------------------------------------------------
# Validation


def _require(container, key: str, kind: type, where: str):
    if not isinstance(container, dict) or key not in container:
        raise SquadDataError(f'{where} has no "{key}"')
    value = container[key]
    if not isinstance(value, kind):
        raise SquadDataError(f'{where}: "{key}" is a {type(value).__name__}, '
                             f'expected a {kind.__name__}')
    return value


def _check_question(qa, where: str, with_answers: bool) -> None:
    if not isinstance(qa, dict):
        raise SquadDataError(f"{where} is not an object")
    if "id" not in qa:
        raise SquadDataError(f'{where} has no "id"')
    _require(qa, "question", str, where)
    if with_answers or "answers" in qa:
        for k, answer in enumerate(_require(qa, "answers", list, where)):
            _require(answer, "text", str, f"{where}.answers[{k}]")
            _require(answer, "answer_start", int, f"{where}.answers[{k}]")


def validate_squad_json(dataset, source: str = "SQuAD JSON", with_answers: bool = False) -> None:
    """Raises SquadDataError naming the first missing key and where it is missing, e.g.
    `train.json: data[3].paragraphs[0].qas[2] has no "question"`."""
    if not isinstance(dataset, dict):
        raise SquadDataError(f'{source} is not a SQuAD file: expected an object with "data"')
    for i, article in enumerate(_require(dataset, "data", list, source)):
        where = f"{source}: data[{i}]"
        for j, paragraph in enumerate(_require(article, "paragraphs", list, where)):
            where_p = f"{where}.paragraphs[{j}]"
            _require(paragraph, "context", str, where_p)
            for k, qa in enumerate(_require(paragraph, "qas", list, where_p)):
                _check_question(qa, f"{where_p}.qas[{k}]", with_answers)


def load_squad_json(path: str, with_answers: bool = False) -> dict:
    """The whole official JSON file ({"version", "data"}), checked to be in SQuAD's format.

    `with_answers`: every question must have an "answers" list (what evaluation needs).
    """
    try:
        dataset = json.loads(read_text(path))
    except json.JSONDecodeError as e:
        raise SquadDataError(f"{path} is not JSON: {e}") from None
    validate_squad_json(dataset, path, with_answers)
    return dataset


# ---------------------------------------------------------------------------------------------
# Examples


@dataclasses.dataclass
class _Tally:
    answerable: int = 0
    failures: int = 0
    first_failure: str | None = None

    def fail(self, qas_id: str) -> None:
        self.failures += 1
        if self.first_failure is None:
            self.first_failure = qas_id


def _answer_span(doc_tokens, char_to_word_offset, text: str, offset: int):
    """(start_word, end_word) of an answer, or None when `offset` does not point at `text`."""
    end_char = offset + len(text) - 1
    if offset < 0 or offset >= len(char_to_word_offset) or end_char >= len(char_to_word_offset):
        return None
    start_word, end_word = char_to_word_offset[offset], char_to_word_offset[end_char]
    if start_word < 0 or not text:  # starts on leading whitespace, or an empty answer
        return None
    actual = " ".join(doc_tokens[start_word:end_word + 1]).lower()
    if actual.find(" ".join(text.strip().split()).lower()) == -1:
        return None
    return start_word, end_word


def _first_answer(qa) -> tuple[str, int] | None:
    """(text, character offset) of a question's first answer (SQuAD or MRQA layout)."""
    if "detected_answers" in qa:  # MRQA
        answers = qa["detected_answers"]
        return (answers[0]["text"], answers[0]["char_spans"][0][0]) if answers else None
    answers = qa.get("answers") or []
    return (answers[0]["text"], answers[0]["answer_start"]) if answers else None


def _paragraph_examples(paragraph, where: str, v2: bool, is_training: bool, tally: _Tally,
                        id_key: str = "id") -> Iterator[SquadExample]:
    context = paragraph["context"]
    doc_tokens, char_to_word_offset = whitespace_split(context)
    for k, qa in enumerate(paragraph["qas"]):
        qas_id = str(qa[id_key])
        common = dict(qas_id=qas_id, question_text=qa["question"], doc_tokens=doc_tokens,
                      context_text=context)
        if not is_training:
            yield SquadExample(**common)
            continue
        if v2 and qa.get("is_impossible", False):
            yield SquadExample(**common, orig_answer_text="", is_impossible=True)
            continue
        answer = _first_answer(qa)
        if answer is None:
            raise SquadDataError(f"{where}.qas[{k}] (id {qas_id}) has no answer; a training "
                                 "question needs one" + ("" if v2 else " (v1.1 has no "
                                                         "unanswerable questions)"))
        text, offset = answer
        span = _answer_span(doc_tokens, char_to_word_offset, text, offset)
        if span is None:
            tally.fail(qas_id)
            continue
        tally.answerable += 1
        yield SquadExample(**common, orig_answer_text=text, start_word=span[0], end_word=span[1])


def _check_version(dataset: dict, version: str, source: str) -> None:
    declared = str(dataset.get("version", "")).lower().lstrip("v")
    if version == "v1.1":
        impossible = any(qa.get("is_impossible") for article in dataset["data"]
                         for paragraph in article["paragraphs"] for qa in paragraph["qas"])
        if declared.startswith("2") or impossible:
            reason = "has unanswerable questions" if impossible else "says version 2.0"
            raise SquadDataError(f"{source} {reason}: it is SQuAD v2.0 data, use the task "
                                 "squad/v2.0 (version v2.0) for it")
    elif declared.startswith("1"):
        logging.warning("%s says version %s but is read as SQuAD v2.0: every question counts "
                        "as answerable", source, dataset.get("version"))


def _finish(examples: list, tally: _Tally, source: str, is_training: bool) -> list[SquadExample]:
    if is_training and tally.failures:
        if not tally.answerable:
            raise SquadDataError(f"{source}: no training answer matches its text at its "
                                 f"answer_start ({tally.failures} tried, e.g. question "
                                 f"{tally.first_failure}); are the offsets character offsets "
                                 "into the context?")
        logging.warning("%s: skipped %d of %d training questions whose answer_start does not "
                        "point at their answer text (e.g. question %s)", source, tally.failures,
                        tally.failures + len(examples), tally.first_failure)
    if not examples:
        raise SquadDataError(f"{source} holds no questions")
    return examples


def read_squad(path_or_json: str | dict, *, version: str, is_training: bool) -> list[SquadExample]:
    """The examples of an official SQuAD JSON file (a path, or the loaded JSON), in file order.

    Args:
      path_or_json: the file (local or gs://) or its parsed content.
      version: "v1.1" or "v2.0". v2.0 data read as v1.1 is an error.
      is_training: parse the first answer (v2.0: or `is_impossible`); skip and count answers
        whose `answer_start` does not match their text.
    """
    version = normalize_version(version)
    if isinstance(path_or_json, dict):
        source, dataset = "SQuAD JSON", path_or_json
        validate_squad_json(dataset, source)
    else:
        source, dataset = path_or_json, load_squad_json(path_or_json)
    _check_version(dataset, version, source)
    tally, examples = _Tally(), []
    for i, article in enumerate(dataset["data"]):
        for j, paragraph in enumerate(article["paragraphs"]):
            examples.extend(_paragraph_examples(paragraph, f"{source}: data[{i}].paragraphs[{j}]",
                                                version == "v2.0", is_training, tally))
    return _finish(examples, tally, source, is_training)


def _mrqa_paragraphs(path: str) -> Iterator[tuple[str, dict]]:
    """(where, paragraph) for each context line of an MRQA file (.jsonl, or .jsonl.gz as
    distributed), the header line skipped."""
    text = read_text(path)
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path} line {number}"
        try:
            paragraph = json.loads(line)
        except json.JSONDecodeError as e:
            raise SquadDataError(f"{where} is not JSON: {e}") from None
        if isinstance(paragraph, dict) and "header" in paragraph:
            continue
        _require(paragraph, "context", str, where)
        yield where, paragraph


def read_mrqa_jsonl(path: str, is_training: bool) -> list[SquadExample]:
    """MRQA 2019 JSON Lines: a header line, then one context per line with `qas` holding `qid`,
    `question` and (training) `detected_answers[0].char_spans[0]`. Ids are the `qid`s."""
    tally, examples = _Tally(), []
    for where, paragraph in _mrqa_paragraphs(path):
        for k, qa in enumerate(_require(paragraph, "qas", list, where)):
            _require(qa, "qid", str, f"{where} qas[{k}]")
            _require(qa, "question", str, f"{where} qas[{k}]")
            if is_training:
                answers = _require(qa, "detected_answers", list, f"{where} qas[{k}]")
                for m, answer in enumerate(answers[:1]):
                    _require(answer, "text", str, f"{where} qas[{k}].detected_answers[{m}]")
                    _require(answer, "char_spans", list, f"{where} qas[{k}].detected_answers[{m}]")
        examples.extend(_paragraph_examples(paragraph, where, False, is_training, tally, "qid"))
    return _finish(examples, tally, path, is_training)


def mrqa_answers_json(path: str) -> dict:
    """An MRQA file's questions and gold answer texts (`qas[].answers`) in the SQuAD v1.1
    layout, which `squad_metrics.evaluate_v1` scores as MRQA's official script does (a v1.1
    clone keyed by qid)."""
    paragraphs = []
    for where, paragraph in _mrqa_paragraphs(path):
        qas = []
        for k, qa in enumerate(_require(paragraph, "qas", list, where)):
            qid = _require(qa, "qid", str, f"{where} qas[{k}]")
            answers = _require(qa, "answers", list, f"{where} qas[{k}]")
            if not answers or not all(isinstance(a, str) for a in answers):
                raise SquadDataError(f"{where} qas[{k}]: 'answers' must be a non-empty list of "
                                     f"strings, got {answers!r}")
            qas.append({"id": qid, "question": qa.get("question", ""),
                        "answers": [{"text": a} for a in answers]})
        paragraphs.append({"context": paragraph["context"], "qas": qas})
    return {"version": "mrqa", "data": [{"title": path, "paragraphs": paragraphs}]}


# ---------------------------------------------------------------------------------------------
# TFDS


def _text(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def official_json(records: Iterable[dict], version: str) -> dict:
    """TFDS-style question records (title, context, id, question, answers{text, answer_start},
    v2.0: is_impossible) -> the official JSON layout, grouped by title then context in order of
    first appearance."""
    articles: dict[str, dict] = {}
    paragraphs: dict[tuple[str, str], dict] = {}
    for record in records:
        title, context = _text(record["title"]), _text(record["context"])
        if title not in articles:
            articles[title] = {"title": title, "paragraphs": []}
        if (title, context) not in paragraphs:
            paragraphs[title, context] = {"context": context, "qas": []}
            articles[title]["paragraphs"].append(paragraphs[title, context])
        answers = record["answers"]
        qa = {"id": _text(record["id"]), "question": _text(record["question"]),
              "answers": [{"text": _text(text), "answer_start": int(start)}
                          for text, start in zip(answers["text"], answers["answer_start"])]}
        if version == "v2.0":
            qa["is_impossible"] = bool(record.get("is_impossible", False))
        paragraphs[title, context]["qas"].append(qa)
    return {"version": version, "data": list(articles.values())}


def read_tfds_squad(version: str, split: str, data_dir: str | None = None,
                    is_training: bool | None = None) -> tuple[list[SquadExample], dict]:
    """(examples, official JSON) of TFDS `squad/v1.1` or `squad/v2.0`, split "train" or "dev"
    ("validation"). `is_training` defaults to split == "train". The JSON is what the official
    evaluation scores predictions against."""
    import tensorflow_datasets as tfds

    version = normalize_version(version)
    if split not in _TFDS_SPLITS:
        raise SquadDataError(f"unknown SQuAD split {split!r} (TFDS has train and dev)")
    name, tfds_split = f"squad/{version}", _TFDS_SPLITS[split]
    try:
        dataset = tfds.load(name, split=tfds_split, data_dir=data_dir, shuffle_files=False)
    except (tfds.core.registered.DatasetNotFoundError, ValueError, KeyError) as e:
        first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SquadDataError(f"cannot load TFDS dataset {name!r} split {tfds_split!r}: "
                             f"{first_line}") from None
    dataset_json = official_json(tfds.as_numpy(dataset), version)
    if is_training is None:
        is_training = split == "train"
    examples = read_squad(dataset_json, version=version, is_training=is_training)
    return examples, dataset_json
