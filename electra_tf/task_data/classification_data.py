"""Sentence and sentence-pair task data: examples and a reader for CSV, TSV and JSON Lines files.

`read_table` turns a file into `Example`s (plain Python objects; no TensorFlow needed). Columns
are named (from the header line of a CSV/TSV file, or the keys of JSON objects) or indexed
(0-based, negative from the end). TSV files are read as the original reads GLUE's
(`csv.reader(f, delimiter="\\t", quotechar=None)`: no quoting, one row a line); CSV files use the
usual CSV quoting. Text is kept as it is in the file. Files must be UTF-8 (a byte-order mark is
accepted). Local paths are read with Python's `open`, other paths (gs://, ...) via `tf.io.gfile`.
"""

from __future__ import annotations

import csv
import dataclasses
import gzip
import io
import json
import math
import os
import re
from typing import Iterator, Sequence

from absl import logging

from electra_tf.errors import UserError

FORMATS = ("csv", "tsv", "jsonl")
EXTENSION_FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "jsonl"}
UTF8_BOM = b"\xef\xbb\xbf"
_INTEGER = re.compile(r"[+-]?\d+")

Column = int | str


@dataclasses.dataclass(frozen=True)
class Example:
    """One text (or text pair) with its label.

    `guid` is "<split>-<row>" (0-based data row), or for test files the id the GLUE submission
    needs. `label` is the label string (classification), a float (regression) or None (no
    labels). `line` is the 1-based line of the file the example starts on.
    """

    guid: str
    text_a: str
    text_b: str | None
    label: str | float | None
    line: int = 0


class TaskDataError(UserError):
    """Task data that cannot be read as asked (missing file, column or label, bad encoding)."""


@dataclasses.dataclass(frozen=True)
class _Row:
    line: int
    fields: list | dict


# ---------------------------------------------------------------------------------------------
# Files


def is_remote(path: str) -> bool:
    return "://" in path


def path_exists(path: str) -> bool:
    if is_remote(path):
        import tensorflow as tf
        return tf.io.gfile.exists(path)
    return os.path.exists(path)


def _read_bytes(path: str) -> bytes:
    if not path_exists(path) or (not is_remote(path) and os.path.isdir(path)):
        raise TaskDataError(f"task data file not found: {path}")
    if is_remote(path):
        import tensorflow as tf
        with tf.io.gfile.GFile(path, "rb") as f:
            return f.read()
    with open(path, "rb") as f:
        return f.read()


def read_text(path: str) -> str:
    """The file decoded as UTF-8 without its byte-order mark (a path ending in .gz decompressed
    first); TaskDataError if it is not UTF-8 (or not gzip)."""
    data = _read_bytes(path)
    if path.endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as e:
            raise TaskDataError(f"{path} ends in .gz but is not gzip data: {e}") from None
    skipped = len(UTF8_BOM) if data.startswith(UTF8_BOM) else 0
    try:
        return data[skipped:].decode("utf-8")
    except UnicodeDecodeError as e:
        offset = skipped + e.start
        raise TaskDataError(f"{path} is not UTF-8: invalid byte 0x{data[offset]:02x} "
                            f"at byte offset {offset}") from None


def table_format(path: str, file_format: str | None = None) -> str:
    """"csv", "tsv" or "jsonl": `file_format` if given, else from the file's extension."""
    if file_format is not None:
        if file_format not in FORMATS:
            raise TaskDataError(f"unknown file format {file_format!r} for {path} "
                                f"(known: {', '.join(FORMATS)})")
        return file_format
    extension = os.path.splitext(path)[1].lower()
    if extension not in EXTENSION_FORMATS:
        raise TaskDataError(f"cannot tell the format of {path} from its extension; pass "
                            f"file_format (one of {', '.join(FORMATS)})")
    return EXTENSION_FORMATS[extension]


# ---------------------------------------------------------------------------------------------
# Rows


def _delimited_rows(text: str, file_format: str) -> Iterator[_Row]:
    """The non-blank rows of a CSV or TSV text, each with the line it starts on."""
    if file_format == "tsv":
        reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t", quotechar=None)
    else:
        reader = csv.reader(io.StringIO(text, newline=""))
    start = 1
    for fields in reader:
        if fields:
            yield _Row(start, fields)
        start = reader.line_num + 1


def _json_rows(path: str, text: str) -> Iterator[_Row]:
    """The non-blank lines of a JSON Lines text, parsed; each an object or an array."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as e:
            raise TaskDataError(f"{path} line {number} is not valid JSON: {e.msg}") from None
        if not isinstance(value, (dict, list)):
            raise TaskDataError(f"{path} line {number} is not a JSON object or array")
        yield _Row(number, value)


# ---------------------------------------------------------------------------------------------
# Columns


def parse_column(column: Column) -> Column:
    """An int index for ints and integer strings ("3", "-1"), else the column name."""
    if isinstance(column, bool):
        raise TaskDataError(f"column must be a name or an index, got {column!r}")
    if isinstance(column, int):
        return column
    if _INTEGER.fullmatch(column.strip()):
        return int(column)
    return column


def _header_index(path: str, header: list[str], column: Column) -> int:
    if isinstance(column, int):
        return column
    if column not in header:
        raise TaskDataError(f"{path} has no column {column!r} (columns: {', '.join(header)})")
    return header.index(column)


def _field(path: str, row: _Row, column: Column):
    """The value of `column` in `row`: an index into a list, or a key of a JSON object."""
    fields = row.fields
    if isinstance(fields, dict):
        if column not in fields:
            keys = ", ".join(map(str, fields)) or "none"
            raise TaskDataError(f"{path} line {row.line} has no key {column!r} (keys: {keys})")
        return fields[column]
    if isinstance(column, str):
        raise TaskDataError(f"{path} line {row.line} is a JSON array; name its columns "
                            f"by index, not {column!r}")
    if not -len(fields) <= column < len(fields):
        raise TaskDataError(f"{path} line {row.line} has {len(fields)} fields, "
                            f"no column {column}")
    return fields[column]


def _fits(row: _Row, columns: Sequence[Column]) -> bool:
    if isinstance(row.fields, dict):
        return True
    return all(not isinstance(c, int) or -len(row.fields) <= c < len(row.fields)
               for c in columns)


def _as_text(path: str, row: _Row, column: Column) -> str:
    value = _field(path, row, column)
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, (dict, list)):
        raise TaskDataError(f"{path} line {row.line}: column {column!r} holds "
                            f"{json.dumps(value)}, not text")
    return json.dumps(value)


# ---------------------------------------------------------------------------------------------
# Labels


def _classification_label(path: str, row: _Row, value: str, labels: Sequence[str] | None) -> str:
    if labels is not None and value not in labels:
        known = ", ".join(repr(label) for label in labels)
        raise TaskDataError(f"{path} line {row.line}: label {value!r} is not one of {known}")
    return value


def _regression_label(path: str, row: _Row, value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise TaskDataError(f"{path} line {row.line}: label {value!r} is not a number")
    return number


# ---------------------------------------------------------------------------------------------
# Reading


def read_table(path: str | os.PathLike, *, text_a_column: Column,
               text_b_column: Column | None = None, label_column: Column | None = None,
               labels: Sequence[str] | None = None,
               regression: bool = False, label_range: tuple[float, float] | None = None,
               split: str = "train", file_format: str | None = None,
               header: bool | None = None, id_column: Column | None = None,
               skip_short_rows: bool = False) -> list[Example]:
    """Reads the examples of a CSV, TSV or JSON Lines file.

    Columns are names or indices (ints or integer strings, negative from the end). A CSV/TSV
    file has a header line when any column is a name, or when `header=True`. Without
    `label_column` the labels are None (a test file). Classification labels are kept as
    strings and must be in `labels` when it is given; regression labels must be numbers.
    `label_range` is carried for the caller; the reader does not use it. The guid is the
    `id_column` value if given, else "<split>-<row>". With `skip_short_rows`, rows too short
    for an indexed column are skipped (and counted in a warning) instead of being an error.
    """
    del label_range
    path = os.fspath(path)
    file_format = table_format(path, file_format)
    roles = {"text_a": text_a_column, "text_b": text_b_column, "label": label_column,
             "id": id_column}
    columns = {role: parse_column(c) for role, c in roles.items() if c is not None}
    text = read_text(path)
    if file_format == "jsonl":
        rows = _json_rows(path, text)
    else:
        rows = _delimited_rows(text, file_format)
        columns = _resolve_header(path, rows, columns, header)
    examples, skipped = [], 0
    for row in rows:
        if skip_short_rows and not _fits(row, list(columns.values())):
            skipped += 1
            continue
        examples.append(_example(path, row, columns, labels, regression, split, len(examples)))
    if skipped:
        logging.warning("%s: skipped %d line(s) with too few fields", path, skipped)
    if not examples:
        raise TaskDataError(f"{path} holds no examples")
    return examples


def _resolve_header(path: str, rows: Iterator[_Row], columns: dict[str, Column],
                    header: bool | None) -> dict[str, Column]:
    """Consumes the header line when there is one; returns the columns as indices."""
    named = [c for c in columns.values() if isinstance(c, str)]
    if header is None:
        header = bool(named)
    if not header:
        if named:
            raise TaskDataError(f"column names ({', '.join(map(repr, named))}) need a header "
                                f"line, but {path} is read without one")
        return columns
    first = next(rows, None)
    if first is None:
        raise TaskDataError(f"{path} holds no examples")
    return {role: _header_index(path, first.fields, c) for role, c in columns.items()}


def _example(path: str, row: _Row, columns: dict[str, Column], labels: Sequence[str] | None,
             regression: bool, split: str, index: int) -> Example:
    text_b = _as_text(path, row, columns["text_b"]) if "text_b" in columns else None
    label = None
    if "label" in columns:
        value = _as_text(path, row, columns["label"])
        if regression:
            label = _regression_label(path, row, value)
        else:
            label = _classification_label(path, row, value, labels)
    guid = _as_text(path, row, columns["id"]) if "id" in columns else f"{split}-{index}"
    return Example(guid=guid, text_a=_as_text(path, row, columns["text_a"]), text_b=text_b,
                   label=label, line=row.line)
