"""Pretraining corpora: plain-text files, TFDS text datasets and a small embedded demo corpus.

Text files use the original's format (reference notes section 4.1): one "sentence" per line, a
blank (or whitespace-only) line ends a document, and so does the end of a file. Lines are
decoded as UTF-8 and stripped. Bytes that are not UTF-8 stop the read with a CorpusError naming
the file and byte offset (the original's `convert_to_unicode` dropped them silently); a caller
that asks for it gets U+FFFD instead and a call per such line, to count them.

Large files are read in byte ranges (`TextBlock`) so that several processes can share one file:
a block owns the documents whose first line starts inside it, so every document is read exactly
once, whole, by one block, and the split depends on the file alone (not on the number of
processes). Local paths are read with Python's `open`; other paths (gs://, ...) through
`tf.io.gfile`.
"""

from __future__ import annotations

import ast
import dataclasses
import glob as globlib
import inspect
import io
import os
import sysconfig
import tokenize
from typing import Callable, Iterable, Iterator

from absl import logging

from electra_tf.errors import UserError

BLOCK_BYTES = 1 << 20  # documents are handed out to processes in blocks of about 1 MiB
EMBEDDED_SKIP_DIRS = frozenset({"test", "tests", "idlelib", "site-packages", "__pycache__"})


class CorpusError(UserError):
    """A corpus that cannot be read: nothing matches, a file is missing, or it holds no text."""


# ---------------------------------------------------------------------------------------------
# Files


def is_remote(path: str) -> bool:
    return "://" in path


def _open_binary(path: str):
    if is_remote(path):
        import tensorflow as tf
        return tf.io.gfile.GFile(path, "rb")
    return open(path, "rb")


def file_size(path: str) -> int:
    if is_remote(path):
        import tensorflow as tf
        return tf.io.gfile.stat(path).length
    return os.path.getsize(path)


def is_file(path: str) -> bool:
    if is_remote(path):
        import tensorflow as tf
        return tf.io.gfile.exists(path) and not tf.io.gfile.isdir(path)
    return os.path.isfile(path)


def _isdir(path: str) -> bool:
    if is_remote(path):
        import tensorflow as tf
        return tf.io.gfile.isdir(path)
    return os.path.isdir(path)


def _glob(pattern: str) -> list[str]:
    if is_remote(pattern):
        import tensorflow as tf
        return [p for p in tf.io.gfile.glob(pattern) if not tf.io.gfile.isdir(p)]
    return [p for p in globlib.glob(pattern) if os.path.isfile(p)]


def corpus_files(paths_or_glob: str | Iterable[str]) -> list[str]:
    """The text files of a corpus, in a deterministic order.

    `paths_or_glob` is a directory (its non-hidden files, sorted, not recursive), a glob
    pattern (matches sorted), a file, or a comma-separated list (or a list) of those; the
    order of the items is kept and duplicates are dropped.
    """
    items = paths_or_glob.split(",") if isinstance(paths_or_glob, str) else list(paths_or_glob)
    items = [item.strip() for item in items if item and item.strip()]
    if not items:
        raise CorpusError("no corpus given (pass a directory, a glob or a comma-separated list "
                          "of text files)")
    files: list[str] = []
    for item in items:
        if any(c in item for c in "*?["):
            matches = sorted(_glob(item))
            if not matches:
                raise CorpusError(f"corpus pattern {item!r} matches no files")
        elif _isdir(item):
            matches = sorted(_glob(os.path.join(glob_escape(item), "*")))
            matches = [m for m in matches if not os.path.basename(m).startswith(".")]
            if not matches:
                raise CorpusError(f"corpus directory {item!r} holds no files")
        elif is_remote(item) or os.path.isfile(item):
            matches = [item]
        else:
            raise CorpusError(f"corpus file not found: {item!r}")
        files.extend(m for m in matches if m not in files)
    return files


def glob_escape(path: str) -> str:
    return path if is_remote(path) else globlib.escape(path)


# ---------------------------------------------------------------------------------------------
# Reading documents


@dataclasses.dataclass(frozen=True)
class TextBlock:
    """The documents whose first line starts in bytes [start, end) of a file (end None: EOF).

    `file_index` and `block_index` identify the block within its corpus; the pretraining-data
    builder seeds one random stream per block from them.
    """

    path: str
    start: int = 0
    end: int | None = None
    file_index: int = 0
    block_index: int = 0

    @property
    def key(self) -> str:
        return f"file{self.file_index}:block{self.block_index}"

    @property
    def size(self) -> int:
        return (self.end if self.end is not None else file_size(self.path)) - self.start

    def documents(self, on_invalid_utf8: Callable[[int], None] | None = None
                  ) -> Iterator[list[str]]:
        return read_block_documents(self, on_invalid_utf8)


def split_into_blocks(files: list[str], block_bytes: int = BLOCK_BYTES) -> list[TextBlock]:
    """Cuts each file into byte ranges of `block_bytes` (the last one may be shorter)."""
    blocks = []
    for file_index, path in enumerate(files):
        size = file_size(path)
        starts = range(0, max(size, 1), block_bytes)
        for block_index, start in enumerate(starts):
            end = min(start + block_bytes, size) if start + block_bytes < size else None
            blocks.append(TextBlock(path, start, end, file_index, block_index))
    return blocks


def _decode(line: bytes) -> str:
    """A line as text for blank-line tests, whatever its encoding."""
    return line.decode("utf-8", "ignore").strip()


def _decode_strictly(line: bytes, path: str, offset: int,
                     on_invalid: Callable[[int], None] | None) -> str:
    """A line of `path` (starting at byte `offset`) as stripped text; see the module docstring."""
    try:
        return line.decode("utf-8").strip()
    except UnicodeDecodeError as e:
        if on_invalid is None:
            raise CorpusError(
                f"{path}: byte {offset + e.start:,} is not UTF-8 ({line[e.start:e.start + 4]!r} "
                "...); convert the file to UTF-8, or pass --replace_invalid_utf8 to replace such "
                "bytes (the lines are counted)") from None
        on_invalid(offset)
        return line.decode("utf-8", "replace").strip()


def _previous_line_is_blank(f, line_start: int) -> bool:
    """Whether the line ending just before `line_start` (at its newline) holds only whitespace."""
    end = line_start - 1  # the newline that ends the previous line
    pos, chunks = end, []
    while pos > 0:
        step = min(pos, 1 << 16)
        f.seek(pos - step)
        chunk = f.read(step)
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            chunks.append(chunk[newline + 1:])
            break
        chunks.append(chunk)
        pos -= step
    f.seek(line_start)
    return not _decode(b"".join(reversed(chunks)))


def read_block_documents(block: TextBlock,
                         on_invalid_utf8: Callable[[int], None] | None = None
                         ) -> Iterator[list[str]]:
    """Yields the documents (lists of stripped, non-blank lines) that start in `block`.

    `on_invalid_utf8`: None refuses bytes that are not UTF-8 (CorpusError); a callable is
    called with the offset of each line holding some, which is read with U+FFFD for them.
    """
    with _open_binary(block.path) as f:
        if block.start > 0:
            f.seek(block.start - 1)
            f.readline()  # the rest of the line holding byte start-1: now at a line start >= start
            line_start = f.tell()
            if not _previous_line_is_blank(f, line_start):
                while True:  # a document that began in an earlier block: skip to its end
                    line = f.readline()
                    if not line or not _decode(line):
                        break
        document: list[str] = []
        while True:
            line_start = f.tell()
            line = f.readline()
            if not line:
                break
            text = _decode_strictly(line, block.path, line_start, on_invalid_utf8)
            if not text:
                if document:
                    yield document
                    document = []
            elif document or block.end is None or line_start < block.end:
                document.append(text)
            else:
                return  # the next document starts in the next block
        if document:
            yield document


def read_documents(paths_or_glob: str | Iterable[str]) -> Iterator[list[str]]:
    """Yields the documents of text files as lists of lines (see the module docstring).

    Raises CorpusError when nothing matches, a file is missing, or the corpus holds no text.
    """
    files = corpus_files(paths_or_glob)
    found = False
    for file_index, path in enumerate(files):
        for document in read_block_documents(TextBlock(path, file_index=file_index)):
            found = True
            yield document
    if not found:
        raise CorpusError(f"corpus {describe(files)} holds no text (only empty or blank lines)")


def check_has_text(files: list[str]) -> None:
    """Raises CorpusError unless some file holds a non-blank line (stops at the first one)."""
    for path in files:
        with _open_binary(path) as f:
            for line in f:
                if _decode(line):
                    return
    raise CorpusError(f"corpus {describe(files)} holds no text (only empty or blank lines)")


def describe(files: list[str]) -> str:
    if len(files) <= 3:
        return ", ".join(files)
    return f"{files[0]}, ... ({len(files)} files)"


# ---------------------------------------------------------------------------------------------
# TFDS


def _text_to_document(text) -> list[str]:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "ignore")
    return [line.strip() for line in text.split("\n") if line.strip()]


def _load_tfds(name: str, split, text_key: str, data_dir: str | None):
    import tensorflow_datasets as tfds

    try:
        dataset = tfds.load(name, split=split, data_dir=data_dir, shuffle_files=False)
    except (tfds.core.registered.DatasetNotFoundError, ValueError, KeyError) as e:
        first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CorpusError(f"cannot load TFDS dataset {name!r} split {str(split)!r}: {first_line}")
    spec = dataset.element_spec
    if not isinstance(spec, dict) or text_key not in spec:
        keys = sorted(spec) if isinstance(spec, dict) else type(spec).__name__
        raise CorpusError(f"TFDS dataset {name!r} has no feature {text_key!r} "
                          f"(features: {keys}); pass --tfds_text_key")
    return dataset


def tfds_documents(name: str, split, text_key: str = "text",
                   data_dir: str | None = None) -> Iterator[list[str]]:
    """Yields documents from a TFDS text dataset: each example's text, split on newlines.

    Blank lines inside an example are dropped (the example stays one document), as the
    original does for OpenWebText. Raises CorpusError for an unknown dataset or text key.
    """
    import tensorflow_datasets as tfds

    for example in tfds.as_numpy(_load_tfds(name, split, text_key, data_dir)):
        document = _text_to_document(example[text_key])
        if document:
            yield document


@dataclasses.dataclass(frozen=True)
class TfdsBlock:
    """Slice `index` of `count` even slices of a TFDS split: a work unit, like `TextBlock`."""

    name: str
    split: str
    text_key: str
    data_dir: str | None
    index: int = 0
    count: int = 1

    @property
    def key(self) -> str:
        return f"tfds{self.index}"

    def documents(self, on_invalid_utf8: Callable[[int], None] | None = None
                  ) -> Iterator[list[str]]:
        del on_invalid_utf8  # TFDS hands over decoded text
        split = self.split
        if self.count > 1:
            import tensorflow_datasets as tfds
            split = tfds.even_splits(self.split, n=self.count)[self.index]
        return tfds_documents(self.name, split, self.text_key, self.data_dir)


def check_tfds(name: str, split: str, text_key: str = "text", data_dir: str | None = None) -> int:
    """Loads a TFDS split (preparing it if needed) and checks its text feature.

    Returns the split's number of examples, 0 when unknown (e.g. under tfds.testing.mock_data).
    """
    import tensorflow_datasets as tfds

    _load_tfds(name, split, text_key, data_dir)
    try:
        return int(tfds.builder(name, data_dir=data_dir).info.splits[split].num_examples)
    except Exception:  # noqa: BLE001 - only a sizing hint
        return 0


def tfds_split_bytes(name: str, split: str, data_dir: str | None = None) -> int:
    """Size of a prepared TFDS split in bytes, 0 if unknown (not prepared, mocked)."""
    try:
        import tensorflow_datasets as tfds
        return int(tfds.builder(name, data_dir=data_dir).info.splits[split].num_bytes)
    except Exception:  # noqa: BLE001 - only a sizing hint
        return 0


# ---------------------------------------------------------------------------------------------
# The embedded demonstration corpus


def embedded_documents() -> list[list[str]]:
    """The English documentation shipped with Python, one document per text.

    Module docstrings of the standard library's .py files (parsed with `ast`, never imported:
    importing some modules has side effects), sorted by path, skipping test, idlelib and
    site-packages directories; then the topics of `pydoc_data.topics`, sorted by name.
    """
    root = sysconfig.get_paths()["stdlib"]
    documents = []
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d not in EMBEDDED_SKIP_DIRS)
        for name in sorted(names):
            if not name.endswith(".py"):
                continue
            try:
                with open(os.path.join(directory, name), "rb") as f:
                    docstring = module_docstring(f.read())
            except OSError:
                continue
            document = _text_to_document(docstring or "")
            if document:
                documents.append(document)
    from pydoc_data.topics import topics  # lazy: a large module, read only for this corpus
    for name in sorted(topics):
        document = _text_to_document(topics[name])
        if document:
            documents.append(document)
    return documents


def module_docstring(source: bytes) -> str | None:
    """What `ast.get_docstring(ast.parse(source))` returns (the module's leading string literal,
    cleaned), read from the tokens before the first statement ends: a parse of the whole file,
    for ~700 files of the standard library, took most of the demo corpus's seconds."""
    literals, depth, closed = [], 0, False
    try:
        for token in tokenize.tokenize(io.BytesIO(source).readline):
            kind, text = token.type, token.string
            if kind in (tokenize.ENCODING, tokenize.COMMENT, tokenize.NL):
                continue
            if literals and depth == 0 and (kind in (tokenize.NEWLINE, tokenize.ENDMARKER)
                                            or text == ";"):
                break  # the first statement ends
            if kind == tokenize.STRING and not closed:
                literals.append(text)  # adjacent literals concatenate
            elif text == "(" and not literals:
                depth += 1
            elif text == ")" and literals and depth:
                depth -= 1
                closed = depth == 0
            else:
                return None  # the first statement is not a lone string literal
        value = ast.literal_eval(" ".join(literals)) if literals else None
    except (tokenize.TokenError, SyntaxError, ValueError, UnicodeDecodeError):
        return None  # f-strings are not docstrings, and literal_eval refuses them
    return inspect.cleandoc(value) if isinstance(value, str) else None


def _write_documents(documents: list[list[str]], output_dir: str, num_files: int,
                     prefix: str) -> list[str]:
    """Document i goes to file i % num_files, one sentence a line, a blank line after each."""
    os.makedirs(output_dir, exist_ok=True)
    paths = [os.path.join(output_dir, f"{prefix}-{i:02d}-of-{num_files:02d}.txt")
             for i in range(num_files)]
    for i, path in enumerate(paths):
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join("\n".join(doc) + "\n\n" for doc in documents[i::num_files]))
    return paths


def write_embedded_corpus(output_dir: str, num_files: int = 4, held_out_dir: str | None = None,
                          held_out_every: int = 10) -> list[str]:
    """Writes the embedded corpus as `num_files` text files; returns their paths.

    The output is deterministic for a given Python installation (about 600 documents, 13,000
    lines, 100,000 words for CPython 3.11). With `held_out_dir`, every `held_out_every`-th
    document goes there instead (one file), for held-out evaluation.
    """
    documents = embedded_documents()
    if held_out_dir is not None:
        held_out = documents[::held_out_every]
        documents = [doc for i, doc in enumerate(documents) if i % held_out_every]
        _write_documents(held_out, held_out_dir, 1, "python_docs_heldout")
        logging.info("embedded corpus: %d documents held out under %s", len(held_out), held_out_dir)
    paths = _write_documents(documents, output_dir, num_files, "python_docs")
    lines = sum(len(doc) for doc in documents)
    words = sum(len(line.split()) for doc in documents for line in doc)
    logging.info("embedded corpus: %d documents, %d lines, %d words in %d files under %s",
                 len(documents), lines, words, num_files, output_dir)
    return paths


class CorpusLines:
    """The lines of every document `read_documents()` yields, read anew on each iteration (the
    vocabulary learner reads its corpus twice)."""

    def __init__(self, read_documents: Callable[[], Iterable[list[str]]]):
        self._read_documents = read_documents

    def __iter__(self) -> Iterator[str]:
        return (line for document in self._read_documents() for line in document)
