"""Token tagging data (CoNLL chunking, NER): readers, BIOES spans, a tag set and features.

As the original (`finetune/tagging/`): a file's tags are read as spans and re-encoded as BIOES,
the tag set is the sorted set of BIOES tags over the splits, and only the first word piece of
each word carries a tag. A sentence becomes `[CLS] pieces of each word [SEP]` with every segment
id 1 (the original's choice; padding is 0), truncated by the original's rule (`align_words`).

Spans are read with one of two rules (`SPAN_RULES`), which agree on every well-formed BIO, IOB1
or BIOES sequence except IOB1's adjacent spans of different types (`I-PER I-LOC`):
- "electra", the original's `get_span_labels`: only B-, S- and O end a span, and a span takes
  the type of its last tag (`I-PER I-LOC` is one LOC span; `E-X I-X` runs on). The metrics use
  it on predictions by default, to score malformed predictions as the original did.
- "conlleval", the CoNLL scripts' rule (seqeval's default mode): E- and S- also end a span and a
  change of type starts a new one. Reading files uses it, so IOB1 data (CoNLL-2003's original
  files) keeps adjacent spans of different types apart.

Words are tokenized one at a time by the project's WordPiece tokenizer (clean, lower-case, strip
accents, split punctuation, WordPiece, as the original's `tokenize_and_align`; it also splits
CJK characters, which the original does not). A word with no pieces becomes [UNK], so it keeps a
position of its own (the original points it at the next word's first piece).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

from electra_tf.task_data.classification_data import TaskDataError, read_text

SPAN_RULES = ("electra", "conlleval")
ENCODINGS = ("BIOES", "BIO", "IOB1")
DOCUMENT_START = "-DOCSTART-"

Span = tuple[int, int, str]  # (first word, last word inclusive, type)


@dataclasses.dataclass(frozen=True)
class TaggedSentence:
    """The words of one sentence and their tags as given (None for unlabelled data).

    `line` is the 1-based file line of its first word (0 when not read from a file).
    """

    words: list[str]
    tags: list[str] | None
    line: int = 0


# ---------------------------------------------------------------------------------------------
# Tags and spans


def split_tag(tag: str) -> tuple[str, str]:
    """"B-NP" -> ("B", "NP"); "O" -> ("O", ""). ValueError for anything else."""
    if tag == "O":
        return "O", ""
    if len(tag) > 2 and tag[0] in "BIES" and tag[1] == "-":
        return tag[0], tag[2:]
    raise ValueError(f"tag {tag!r} is neither O nor B-, I-, E- or S- followed by a type")


def get_span_labels(tags: Sequence[str], rule: str = "electra") -> list[Span]:
    """The spans (start, end inclusive, type) of a BIO, IOB1 or BIOES tag sequence, in order."""
    if rule not in SPAN_RULES:
        raise ValueError(f"rule must be one of {SPAN_RULES}, got {rule!r}")
    spans, start = [], 0
    previous, previous_type = "O", ""
    for i, tag in enumerate(tags):
        prefix, tag_type = split_tag(tag)
        if rule == "electra":
            ends = previous != "O" and prefix in "BSO"
            starts = prefix in "BS" or previous == "O"
        else:
            type_changes = prefix != "O" and previous != "O" and tag_type != previous_type
            ends = previous in "ES" or (previous in "BI" and prefix in "BSO") or type_changes
            starts = prefix in "BS" or (previous in "ESO" and prefix in "IE") or type_changes
        if ends:
            spans.append((start, i - 1, previous_type))
        if starts and prefix != "O":
            start = i
        previous, previous_type = prefix, tag_type
    if previous != "O":
        spans.append((start, len(tags) - 1, previous_type))
    return spans


def spans_to_tags(spans: Iterable[Span], length: int, encoding: str = "BIOES") -> list[str]:
    """Tags for `length` words with the given spans; IOB1 marks B- only where a span directly
    follows one of the same type."""
    if encoding not in ENCODINGS:
        raise ValueError(f"encoding must be one of {ENCODINGS}, got {encoding!r}")
    tags = ["O"] * length
    previous_end, previous_type = -2, None
    for start, end, tag_type in sorted(spans):
        tags[start:end + 1] = [f"I-{tag_type}"] * (end + 1 - start)
        if encoding == "BIOES":
            tags[end] = f"E-{tag_type}"
            tags[start] = f"{'S' if start == end else 'B'}-{tag_type}"
        elif encoding == "BIO" or (start == previous_end + 1 and tag_type == previous_type):
            tags[start] = f"B-{tag_type}"
        previous_end, previous_type = end, tag_type
    return tags


def to_bioes(tags: Sequence[str], rule: str = "conlleval") -> list[str]:
    """BIO, IOB1 or BIOES tags -> BIOES tags of the same spans."""
    return spans_to_tags(get_span_labels(tags, rule), len(tags), "BIOES")


def from_bioes(tags: Sequence[str], encoding: str = "BIO", rule: str = "electra") -> list[str]:
    """BIOES tags (e.g. predictions) -> the same spans in `encoding`."""
    return spans_to_tags(get_span_labels(tags, rule), len(tags), encoding)


# ---------------------------------------------------------------------------------------------
# Readers


def _where(source: str, sentence: TaggedSentence, index: int, word: int = 0) -> str:
    """Where a word is: its file line (a sentence's words are on consecutive lines) or its
    sentence's index."""
    if sentence.line:
        return f"{source}, line {sentence.line + word}"
    return f"{source}, sentence {index}" + (f", word {word}" if word else "")


def _check_tags(sentences: Sequence[TaggedSentence], source: str) -> None:
    for index, sentence in enumerate(sentences):
        for word, tag in enumerate(sentence.tags or ()):
            try:
                split_tag(tag)
            except ValueError as e:
                raise TaskDataError(f"{_where(source, sentence, index, word)}: {e}") from None


def read_conll(path: str, tag_column: int = -1, word_column: int = 0,
               labelled: bool = True) -> list[TaggedSentence]:
    """A CoNLL file: one word a line in whitespace-separated columns, a blank line between
    sentences, `-DOCSTART-` lines skipped. Every word line must have as many columns as the
    file's first; `labelled=False` reads words only (test files without tags)."""
    sentences, words, tags = [], [], []
    width, first_line, start = None, 0, 0
    for number, line in enumerate(read_text(path).split("\n"), 1):
        fields = line.split()
        if not fields or fields[0] == DOCUMENT_START:  # a document start ends a sentence too
            if words:
                sentences.append(TaggedSentence(words, tags if labelled else None, start))
                words, tags = [], []
            continue
        if width is None:
            width, first_line = len(fields), number
            for name, column in (("word", word_column), ("tag", tag_column)):
                if not -width <= column < width:
                    raise TaskDataError(f"{path}, line {number}: no {name} column {column} in a "
                                        f"line of {width} columns")
            if labelled and tag_column % width == word_column % width:
                raise TaskDataError(f"{path}, line {number}: the tag column is the word column "
                                    f"({width} columns); read files without tags with "
                                    f"labelled=False")
        elif len(fields) != width:
            raise TaskDataError(f"{path}, line {number}: {len(fields)} columns, but the first word "
                                f"line ({first_line}) has {width}")
        if not words:
            start = number
        words.append(fields[word_column])
        tags.append(fields[tag_column])
    if words:
        sentences.append(TaggedSentence(words, tags if labelled else None, start))
    if labelled:
        _check_tags(sentences, path)
    return sentences


def read_tfds_conll(name: str, split: str, tag_feature: str, data_dir: str | None = None,
                    word_feature: str = "tokens") -> list[TaggedSentence]:
    """A TFDS CoNLL dataset (e.g. `conll2003`, tag_feature "ner" or "chunks"); the tags are
    ClassLabel ids, returned as their names. Downloads and prepares the data if it is not there."""
    import tensorflow_datasets as tfds

    try:
        dataset, info = tfds.load(name, split=split, data_dir=data_dir, with_info=True)
    except Exception as e:  # unknown name or split, failed download, ...
        raise TaskDataError(f"cannot load TFDS dataset {name} split {split}: {e}") from None
    source = f"TFDS {name}/{split}"
    features = dict(info.features.items())
    tag_names = getattr(getattr(features.get(tag_feature), "feature", None), "names", None)
    if tag_names is None or word_feature not in features:
        raise TaskDataError(f"{source} has no sequence of tag names {tag_feature!r} or words "
                            f"{word_feature!r}; its features are {sorted(features.keys())}")
    sentences = []
    for index, example in enumerate(tfds.as_numpy(dataset)):
        words = [w.decode("utf-8") for w in example[word_feature]]
        tags = [tag_names[t] for t in example[tag_feature]]
        if len(words) != len(tags):
            raise TaskDataError(f"{source}, sentence {index}: {len(words)} words but "
                                f"{len(tags)} tags")
        sentences.append(TaggedSentence(words, tags))
    _check_tags(sentences, source)
    return sentences


# ---------------------------------------------------------------------------------------------
# Tag set


@dataclasses.dataclass(frozen=True)
class TagSpace:
    """The BIOES tags a model predicts, sorted as the original's label map; id = index."""

    labels: tuple[str, ...]

    @classmethod
    def from_sentences(cls, train: Sequence[TaggedSentence],
                       others: Mapping[str, Sequence[TaggedSentence]] | None = None,
                       train_source: str = "train") -> "TagSpace":
        """The BIOES tags of the training sentences and of `others` (e.g. {"dev.txt": dev}), as
        the original builds its map over all splits. A span type in another split that the
        training data never uses is a TaskDataError naming the tag, the source and the line."""
        if any(s.tags is None for s in train):
            raise TaskDataError(f"{train_source}: the training sentences must have tags")
        seen_types = {split_tag(t)[1] for s in train for t in s.tags}
        labels = {t for s in train for t in to_bioes(s.tags)}
        for source, sentences in (others or {}).items():
            for index, sentence in enumerate(sentences):
                for word, tag in enumerate(sentence.tags or ()):
                    if tag != "O" and split_tag(tag)[1] not in seen_types:
                        raise TaskDataError(
                            f"{_where(source, sentence, index, word)}: tag {tag!r} has a type "
                            f"that the training data ({train_source}) never uses")
                labels.update(to_bioes(sentence.tags or ()))
        return cls(tuple(sorted(labels)))

    @property
    def num_tags(self) -> int:
        return len(self.labels)

    @functools.cached_property
    def _ids(self) -> dict[str, int]:
        return {label: i for i, label in enumerate(self.labels)}

    def encode(self, bioes_tags: Sequence[str]) -> list[int]:
        """BIOES tags -> ids; a tag outside the set is a TaskDataError."""
        try:
            return [self._ids[t] for t in bioes_tags]
        except KeyError as e:
            raise TaskDataError(f"tag {e.args[0]!r} is not one of the {self.num_tags} tags of "
                                f"the training data") from None

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.labels[int(i)] for i in ids]


# ---------------------------------------------------------------------------------------------
# Features


def align_words(word_pieces: Sequence[Sequence[int]], cls_id: int, sep_id: int,
                max_seq_length: int) -> tuple[list[int], list[int]]:
    """Word piece ids of each word -> (input ids `[CLS] pieces [SEP]`, the position of each kept
    word's first piece).

    The original's truncation rule: walking over [CLS], the words and [SEP], stop with a [SEP] as
    soon as (number of words + 2) + (ids so far) + 1 > max_seq_length. It reserves room by the
    word count, so long sentences lose words early, and a sentence of max_seq_length - 2 or more
    words becomes `[SEP]` alone. One guard is added: a word whose pieces would leave no room for
    the closing [SEP] is cut too (there the original overruns and fails an assertion).
    """
    units = [[cls_id], *word_pieces, [sep_id]]
    ids, positions = [], []
    for k, pieces in enumerate(units):
        original_stop = len(units) + len(ids) + 1 > max_seq_length
        if original_stop or len(ids) + len(pieces) + 1 > max_seq_length:
            ids.append(sep_id)
            break
        if 0 < k < len(units) - 1:
            positions.append(len(ids))
        ids.extend(pieces)
    return ids, positions


def featurize_tagging(sentences: Sequence[TaggedSentence], tokenizer: Callable, special_ids,
                      max_seq_length: int, tag_space: TagSpace) -> dict[str, np.ndarray]:
    """Sentences -> features, with n sentences, L = max_seq_length, W = the most words:

    - `input_ids`, `input_mask`, `segment_ids`: int32 [n, L] (segment 1 on every real token);
    - `tags`: int32 [n, L], the BIOES tag id at each kept word's first piece, 0 elsewhere (and
      everywhere for unlabelled sentences);
    - `tag_mask`: float32 [n, L], 1.0 at each kept word's first piece;
    - `word_positions`: int32 [n, W], the token position of each word's first piece; -1 for
      words cut by truncation and after the sentence's last word.
    """
    # lazy: reading data and scoring (evaluation.tagging_metrics) need no TensorFlow.
    from electra_tf.task_data.classification_features import wordpiece_ids

    pieces = iter(wordpiece_ids(tokenizer, [w for s in sentences for w in s.words]))
    n, length = len(sentences), max_seq_length
    features = {name: np.zeros([n, length], np.int32)
                for name in ("input_ids", "input_mask", "segment_ids", "tags")}
    features["tag_mask"] = np.zeros([n, length], np.float32)
    features["word_positions"] = np.full(
        [n, max((len(s.words) for s in sentences), default=0)], -1, np.int32)
    for i, sentence in enumerate(sentences):
        word_pieces = [next(pieces) or [special_ids.unk] for _ in sentence.words]
        ids, positions = align_words(word_pieces, special_ids.cls, special_ids.sep, length)
        features["input_ids"][i, :len(ids)] = ids
        features["input_mask"][i, :len(ids)] = 1
        features["segment_ids"][i, :len(ids)] = 1
        features["tag_mask"][i, positions] = 1.0
        features["word_positions"][i, :len(positions)] = positions
        if sentence.tags is not None:
            try:
                tag_ids = tag_space.encode(to_bioes(sentence.tags))
            except (TaskDataError, ValueError) as e:
                raise TaskDataError(f"{_where('tagging data', sentence, i)}: {e}") from None
            features["tags"][i, positions] = tag_ids[:len(positions)]
    return features


def predicted_word_tags(predicted_ids: np.ndarray, word_positions: np.ndarray,
                        tag_space: TagSpace) -> list[list[str]]:
    """Predicted tag ids int [n, L] -> the BIOES tags of each sentence's kept words (a prefix of
    its words). The original scores only these words; pad with "O" to score whole sentences."""
    predicted_ids = np.asarray(predicted_ids)
    result = []
    for ids, positions in zip(predicted_ids, np.asarray(word_positions)):
        result.append(tag_space.decode(ids[positions[positions >= 0]]))
    return result
