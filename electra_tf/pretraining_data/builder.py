"""Builds ELECTRA pretraining data: a corpus -> packed examples -> TFRecord shards + metadata.

The jobs are split over modules: `example_packing` (the original's packing rules),
`pretraining_records` (the record format and metadata), `build_plan` (shard count, which work
units feed which shards) and this one, which runs the build: it tokenizes every unit in the
TensorFlow graph, packs it, writes each shard group's shards (in worker processes when there are
several groups and processes) and writes the metadata last.

Determinism: each unit's random stream is seeded from (seed, unit) and the plan depends on the
seed and the corpus only, so the shards' bytes depend on the seed, the corpus and the shard count,
never on the number of processes. (The original ran one random stream per process over whole
files; here the stream, and the target length, restart every 1 MiB block: a difference in the
random draws only, not in their distribution.)
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import glob
import math
import multiprocessing
import os
import queue as queue_lib
import random
import time
from typing import Callable, Iterable, Iterator, Sequence

from absl import logging

from electra_tf.pretraining_data import build_plan
from electra_tf.pretraining_data import corpus as corpus_lib
from electra_tf.pretraining_data import pretraining_records as records
from electra_tf.pretraining_data.example_packing import (MAX_SEQ_LENGTH, MIN_SEQ_LENGTH, ExamplePacker,
                                             PackingStats)
from electra_tf.errors import UserError, disk_full_error, is_disk_full

# A worker process spends about 3 s of CPU importing TensorFlow and keras-hub before it
# tokenizes anything, about as long as it takes to build 16 MiB of text; with the default
# --num_processes, smaller corpora get fewer processes (same output: shards do not change).
AUTO_BYTES_PER_PROCESS = 16 << 20
TOKENIZE_BATCH_LINES = 2000
TFDS_EXAMPLES_PER_UNIT = 20000


class DatasetBuildError(UserError):
    """Settings or an output directory that a pretraining-data build cannot use."""


def existing_outputs(output_dir: str) -> list[str]:
    """Shards (finished or not) and metadata of an earlier build in `output_dir`."""
    pattern = os.path.join(corpus_lib.glob_escape(output_dir), records.SHARD_PREFIX + "-*")
    metadata = os.path.join(output_dir, records.METADATA_FILE)
    if corpus_lib.is_remote(output_dir):
        import tensorflow as tf
        if not tf.io.gfile.isdir(output_dir):
            return []
        return sorted(tf.io.gfile.glob(pattern)) + (
            [metadata] if tf.io.gfile.exists(metadata) else [])
    return sorted(glob.glob(pattern)) + ([metadata] if os.path.exists(metadata) else [])


def load_metadata(directory: str) -> dict:
    """The metadata of a finished build; DatasetBuildError when there is none."""
    metadata = records.read_metadata(directory)
    if metadata is None:
        raise DatasetBuildError(f"{directory} has no {records.METADATA_FILE}: not a finished "
                                "pretraining-data build (run electra_tf.build_pretraining_dataset)")
    return metadata


# ---------------------------------------------------------------------------------------------
# Writing shard groups (in this process or in worker processes)


@dataclasses.dataclass(frozen=True)
class BuildSettings:
    vocab_file: str
    output_dir: str
    max_seq_length: int
    lower_case: bool
    strip_accents: bool
    seed: int
    num_shards: int
    replace_invalid_utf8: bool = False
    normalization: str = "bert"


@dataclasses.dataclass
class GroupResult:
    """What writing one shard group produced: its shard files and their example counts."""

    index: int
    shards: tuple[int, ...]  # the shard indices of `paths`
    paths: list[str]
    examples_per_shard: list[int]
    stats: PackingStats
    seconds: float


class ShardWriter:
    """Tokenizes and packs work units and writes shard groups; one per process."""

    def __init__(self, settings: BuildSettings):
        import tensorflow as tf

        # lazy: splitting the corpus into work units needs no TensorFlow; the workers do
        from electra_tf.text.vocab_files import load_special_ids, make_file_tokenizer

        self.settings = settings
        self.special = load_special_ids(settings.vocab_file)
        tokenizer = make_file_tokenizer(settings.vocab_file, settings.lower_case,
                                        settings.strip_accents, settings.normalization)
        # In graph: called eagerly, keras-hub 0.32 tokenizes with its pure-Python fallback.
        # No autograph: the method has no tensor-dependent Python control flow, and converting
        # it costs about 1 s in every process.
        self._tokenize = tf.function(tokenizer.tokenize, autograph=False,
                                     input_signature=[tf.TensorSpec([None], tf.string)])
        self.tokenize(["warm up"])  # trace now: group timings then measure steady-state work

    def tokenize(self, lines: list[str]) -> list[list[int]]:
        """WordPiece ids per line, in one in-graph call."""
        import tensorflow as tf
        if not lines:
            return []
        ragged = self._tokenize(tf.constant(lines, dtype=tf.string))
        flat = ragged.flat_values.numpy().tolist()
        splits = ragged.row_splits.numpy().tolist()
        return [flat[start:end] for start, end in zip(splits[:-1], splits[1:])]

    def examples(self, unit, report: Callable[[PackingStats], None]
                 ) -> Iterator[tuple[list[int], list[int]]]:
        """The (input ids, segment ids) of one work unit, packed with the unit's own stream."""
        s = self.settings
        rng = random.Random(f"electra_tf:{s.seed}:{unit.key}")
        packer = ExamplePacker(s.max_seq_length, self.special.cls, self.special.sep, rng)
        invalid_lines = []
        on_invalid = invalid_lines.append if s.replace_invalid_utf8 else None
        for batch in _batches(unit.documents(on_invalid), TOKENIZE_BATCH_LINES):
            before = dataclasses.replace(packer.stats)
            ids = iter(self.tokenize([line for document in batch for line in document]))
            for document in batch:
                yield from packer.add_document([next(ids) for _ in document])
            packer.stats.invalid_utf8_lines += len(invalid_lines)
            invalid_lines.clear()
            report(packer.stats.minus(before))

    def write_group(self, group: build_plan.ShardGroup, report: Callable[[PackingStats], None],
                    temporary_suffix: str = ".incomplete") -> GroupResult:
        """Writes the group's shards: example j of its units' stream to its (j mod n)-th shard.

        Each shard is written under `<shard><temporary_suffix>` and renamed once the group is
        complete; the suffix must end in ".incomplete" (readers skip such files).
        """
        import tensorflow as tf

        start_time = time.perf_counter()
        s = self.settings
        paths = [os.path.join(s.output_dir, records.shard_name(i, s.num_shards))
                 for i in group.shards]
        writers = [tf.io.TFRecordWriter(path + temporary_suffix) for path in paths]
        counts = [0] * len(paths)
        stats = PackingStats()
        written = 0

        def count(delta: PackingStats) -> None:
            stats.add(delta)
            report(delta)

        try:
            for unit in group.units:
                for input_ids, segment_ids in self.examples(unit, count):
                    shard = written % len(writers)
                    writers[shard].write(records.serialize_example(
                        input_ids, segment_ids, s.max_seq_length, self.special.pad))
                    counts[shard] += 1
                    written += 1
        finally:
            for writer in writers:
                writer.close()
        for path in paths:
            tf.io.gfile.rename(path + temporary_suffix, path, overwrite=True)
        return GroupResult(group.index, group.shards, paths, counts, stats,
                           time.perf_counter() - start_time)


def _batches(documents: Iterable[list[str]], max_lines: int) -> Iterator[list[list[str]]]:
    batch, lines = [], 0
    for document in documents:
        batch.append(document)
        lines += len(document)
        if lines >= max_lines:
            yield batch
            batch, lines = [], 0
    if batch:
        yield batch


_WORKER: dict = {}


def limit_tensorflow_to_one_thread() -> None:
    """One process per core: keeps this process's TensorFlow to one thread, unless TensorFlow
    has already started (then its threads stay as they are)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    try:
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except RuntimeError:  # "cannot be modified after initialization"
        pass


def _init_worker(settings: BuildSettings, progress_queue) -> None:
    limit_tensorflow_to_one_thread()
    _WORKER["writer"] = ShardWriter(settings)
    _WORKER["queue"] = progress_queue


def _worker_write_group(group: build_plan.ShardGroup) -> GroupResult:
    return _WORKER["writer"].write_group(group, _WORKER["queue"].put)


# ---------------------------------------------------------------------------------------------
# The build


@dataclasses.dataclass
class BuildSummary:
    output_dir: str
    shards: list[str]
    stats: PackingStats
    seconds: float
    num_processes: int
    busy_seconds: float  # summed over shard groups, process start-up excluded
    num_units: int

    @property
    def tokens_per_s(self) -> float:
        return self.stats.tokens / max(self.seconds, 1e-9)

    @property
    def single_segment_share(self) -> float:
        return self.stats.single_segment_examples / max(self.stats.examples, 1)

    def line(self) -> str:
        s = self.stats
        return (f"{s.documents:,} documents, {s.examples:,} examples, {s.tokens:,} tokens "
                f"({self.tokens_per_s:,.0f} tokens/s, {self.num_processes} processes), "
                f"{len(self.shards)} shards in {self.output_dir}, single-segment share "
                f"{100 * self.single_segment_share:.1f}%, {s.discarded_tokens:,} tokens "
                f"discarded past max_seq_length")


class _Progress:
    def __init__(self, log_every_s: float):
        self.stats = PackingStats()
        self.start = self.last_log = time.perf_counter()
        self.log_every_s = log_every_s

    def add(self, delta: PackingStats) -> None:
        self.stats.add(delta)
        self.maybe_log()

    def maybe_log(self) -> None:
        now = time.perf_counter()
        if now - self.last_log >= self.log_every_s:
            self.last_log = now
            s = self.stats
            if not s.documents:
                logging.info("starting: worker processes import TensorFlow and trace the "
                             "tokenizer (a few seconds)")
                return
            logging.info("%d documents, %d examples, %d tokens so far, %.0f tokens/s",
                         s.documents, s.examples, s.tokens, s.tokens / (now - self.start))


@dataclasses.dataclass
class PreparedBuild:
    """A build whose settings and output directory are checked and whose plan is made: what
    writing its shard groups (`ShardWriter.write_group`, here or on a Beam runner) and then its
    metadata (`write_build_metadata`) needs."""

    settings: BuildSettings
    groups: list[build_plan.ShardGroup]
    num_units: int
    corpus_bytes: int
    workers: int  # processes that help: at most one per group (and per 16 MiB when automatic)
    created_output_dir: bool
    metadata: dict  # metadata.json less the counts, which only the written groups know
    start_time: float


def build_pretraining_data(
    *, output_dir: str, vocab_file: str, corpus: str | Sequence[str] | None = None,
    tfds_name: str | None = None, tfds_split: str = "train", tfds_text_key: str = "text",
    tfds_data_dir: str | None = None, max_seq_length: int = 128,
    num_processes: int | None = None, num_shards: int | None = None, lower_case: bool = True,
    strip_accents: bool | None = None, seed: int = 0, overwrite: bool = False,
    replace_invalid_utf8: bool = False, normalization: str = "bert", log_every_s: float = 10.0,
    block_bytes: int = corpus_lib.BLOCK_BYTES,
) -> BuildSummary:
    """Builds pretraining TFRecords from text files (`corpus`) or a TFDS dataset (`tfds_name`).

    Args (the less obvious ones):
      vocab_file: a WordPiece vocab.txt, or a SentencePiece model (".model", `build_vocab
        --model_type sentencepiece`), which normalizes text by its own stored rule:
        `lower_case`, `strip_accents` and `normalization` apply to WordPiece only.
      num_shards: default `build_plan.choose_num_shards` (64 to 1,000 by corpus size).
      replace_invalid_utf8: replace bytes that are not UTF-8 (and count the lines) instead of
        refusing the corpus.
      normalization: of the tokenizer, "bert" (the original's ids) or "keras_hub" (see
        `tokenization.make_tokenizer`).
      block_bytes: size of the text work units (tests and benchmarks shrink it).

    Raises DatasetBuildError (bad settings, output already there without `overwrite`),
    corpus.CorpusError (nothing matches, no text, bytes that are not UTF-8) or
    tokenization.VocabularyError. Settings and the output directory are checked before anything
    is deleted or written; a build that fails midway removes the shards it wrote.
    """
    prepared = prepare_build(
        output_dir=output_dir, vocab_file=vocab_file, corpus=corpus, tfds_name=tfds_name,
        tfds_split=tfds_split, tfds_text_key=tfds_text_key, tfds_data_dir=tfds_data_dir,
        max_seq_length=max_seq_length, num_processes=num_processes, num_shards=num_shards,
        lower_case=lower_case, strip_accents=strip_accents, seed=seed, overwrite=overwrite,
        replace_invalid_utf8=replace_invalid_utf8, normalization=normalization,
        block_bytes=block_bytes)
    progress = _Progress(log_every_s)
    try:
        if prepared.workers == 1:
            writer = ShardWriter(prepared.settings)
            results = [writer.write_group(group, progress.add) for group in prepared.groups]
        else:
            results = _write_in_processes(prepared.settings, prepared.groups, prepared.workers,
                                          progress)
        total = write_build_metadata(output_dir, prepared.metadata, results)
    except BaseException as e:
        remove_partial_build(output_dir, prepared.created_output_dir)
        if is_disk_full(e):
            raise shards_disk_full_error(output_dir) from None
        raise
    shards = sorted((i, p) for r in results for i, p in zip(r.shards, r.paths))
    summary = BuildSummary(output_dir, [path for _, path in shards], total,
                           time.perf_counter() - prepared.start_time, prepared.workers,
                           sum(r.seconds for r in results), prepared.num_units)
    logging.info("done: %s", summary.line())
    return summary


def prepare_build(
    *, output_dir: str, vocab_file: str, corpus: str | Sequence[str] | None = None,
    tfds_name: str | None = None, tfds_split: str = "train", tfds_text_key: str = "text",
    tfds_data_dir: str | None = None, max_seq_length: int = 128,
    num_processes: int | None = None, num_shards: int | None = None, lower_case: bool = True,
    strip_accents: bool | None = None, seed: int = 0, overwrite: bool = False,
    replace_invalid_utf8: bool = False, normalization: str = "bert",
    block_bytes: int = corpus_lib.BLOCK_BYTES,
) -> PreparedBuild:
    """Checks a build's settings (`build_pretraining_data`'s arguments), plans it, deletes an
    earlier build with `overwrite` and creates the output directory.

    Raises what `build_pretraining_data` raises for bad settings, before anything is deleted.
    """
    start_time = time.perf_counter()
    # Cheap checks first: they need neither TensorFlow nor the vocabulary.
    if not MIN_SEQ_LENGTH <= max_seq_length <= MAX_SEQ_LENGTH:
        raise DatasetBuildError(f"max_seq_length must be in [{MIN_SEQ_LENGTH}, {MAX_SEQ_LENGTH}] "
                                f"([CLS] A [SEP] B [SEP] needs 5; positions stop at 512), "
                                f"got {max_seq_length}")
    if (corpus is None) == (tfds_name is None):
        raise DatasetBuildError("give exactly one of a text corpus or a TFDS dataset name")
    auto_processes = num_processes is None
    num_processes = num_processes or os.cpu_count() or 1
    if num_processes < 1:
        raise DatasetBuildError(f"num_processes must be positive, got {num_processes}")
    if num_shards is not None and num_shards < 1:
        raise DatasetBuildError(f"num_shards must be positive, got {num_shards}")
    if corpus is not None:
        files = corpus_lib.corpus_files(corpus)
        corpus_lib.check_has_text(files)
    if corpus_lib.is_file(output_dir):
        raise DatasetBuildError(f"output directory {output_dir} is an existing file")
    existing = existing_outputs(output_dir)
    if existing and not overwrite:
        raise DatasetBuildError(
            f"output directory {output_dir} already holds {len(existing)} files of an earlier "
            f"build (e.g. {os.path.basename(existing[0])}); pass --overwrite to replace them")

    import tensorflow as tf

    # lazy: `import electra_tf.pretraining_data.builder` and the command's --help need no TensorFlow
    from electra_tf.text.tokenization import NORMALIZATIONS
    from electra_tf.text.vocab_files import is_sentencepiece, load_special_ids, load_tokens

    if normalization not in NORMALIZATIONS:
        raise DatasetBuildError(f"normalization must be one of {', '.join(NORMALIZATIONS)}, "
                                f"got {normalization!r}")
    strip_accents = lower_case if strip_accents is None else strip_accents
    vocabulary = load_tokens(vocab_file)
    specials = load_special_ids(vocab_file)
    sentencepiece = is_sentencepiece(vocab_file)  # normalizes by its own rule, stored in it
    if corpus is not None:
        units = corpus_lib.split_into_blocks(files, block_bytes)
        corpus_bytes = sum(unit.size for unit in units)
        corpus_info = {"files": files, "bytes": corpus_bytes}
    else:
        num_examples = corpus_lib.check_tfds(tfds_name, tfds_split, tfds_text_key, tfds_data_dir)
        count = max(1, math.ceil(num_examples / TFDS_EXAMPLES_PER_UNIT))
        units = [corpus_lib.TfdsBlock(tfds_name, tfds_split, tfds_text_key, tfds_data_dir, i,
                                      count) for i in range(count)]
        corpus_bytes = corpus_lib.tfds_split_bytes(tfds_name, tfds_split, tfds_data_dir)
        corpus_info = {"tfds": {"name": tfds_name, "split": tfds_split, "text_key": tfds_text_key},
                       "bytes": corpus_bytes}

    num_shards = build_plan.choose_num_shards(corpus_bytes, max_seq_length, num_shards)
    groups = build_plan.plan_shard_groups(units, num_shards, seed)
    if existing:
        logging.info("--overwrite: deleting %d files of an earlier build in %s",
                     len(existing), output_dir)
        for path in existing:
            tf.io.gfile.remove(path)
    created_output_dir = not tf.io.gfile.isdir(output_dir)
    tf.io.gfile.makedirs(output_dir)

    settings = BuildSettings(vocab_file, output_dir, max_seq_length, lower_case, strip_accents,
                             seed, num_shards, replace_invalid_utf8, normalization)
    workers = min(num_processes, len(groups))
    if auto_processes and corpus_bytes:
        workers = min(workers, max(1, math.ceil(corpus_bytes / AUTO_BYTES_PER_PROCESS)))
    logging.info("building %d shards in %d groups from %d work units (%s bytes) with %d "
                 "processes", num_shards, len(groups), len(units), f"{corpus_bytes:,}", workers)
    metadata = {
        "features": {name: ["int64", max_seq_length] for name in records.FEATURES},
        "max_seq_length": max_seq_length,
        "vocab_file": vocab_file,
        "vocab_size": len(vocabulary),
        "vocab_sha256": records.vocab_sha256(vocab_file),
        "tokenizer": "sentencepiece" if sentencepiece else "wordpiece",
        "lower_case": None if sentencepiece else lower_case,
        "strip_accents": None if sentencepiece else strip_accents,
        "normalization": None if sentencepiece else normalization,
        "special_token_ids": specials._asdict(),
        "seed": seed,
        "corpus": corpus_info,
        "num_shards": num_shards,
        "shard_groups": len(groups),
    }
    return PreparedBuild(settings, groups, len(units), corpus_bytes, workers, created_output_dir,
                         metadata, start_time)


def write_build_metadata(output_dir: str, metadata: dict, results: Iterable[GroupResult]
                         ) -> PackingStats:
    """Writes metadata.json (`metadata` plus every shard's example count and the summed
    statistics) once all shard groups are written; returns the summed statistics.

    Raises CorpusError when the groups wrote no example.
    """
    results = list(results)
    total = PackingStats()
    for result in results:
        total.add(result.stats)
    if not total.examples:
        raise corpus_lib.CorpusError("the corpus produced no examples (no line has a token)")
    shards = sorted(item for r in results for item in zip(r.shards, r.paths, r.examples_per_shard))
    if total.invalid_utf8_lines:
        logging.warning("%d lines held bytes that are not UTF-8: replaced by U+FFFD, which the "
                        "tokenizer removes (--replace_invalid_utf8)", total.invalid_utf8_lines)
    records.write_metadata(output_dir, {
        **metadata,
        "shards": [{"file": os.path.basename(path), "examples": count}
                   for _, path, count in shards],
        **dataclasses.asdict(total),
    })
    return total


def shards_disk_full_error(output_dir: str) -> UserError:
    """The error of a build that ran out of space writing its shards (and removed them)."""
    return disk_full_error(f"the shards in {output_dir}", output_dir,
                           "removed the shards this build wrote; free some space and run it "
                           "again")


def remove_partial_build(output_dir: str, created_output_dir: bool) -> None:
    """Removes the shard files (finished or not) of a build that failed, and the output
    directory when the build created it and it is left empty."""
    import tensorflow as tf
    # Nothing of an earlier build is left in output_dir: every shard file is this build's.
    for path in tf.io.gfile.glob(os.path.join(corpus_lib.glob_escape(output_dir),
                                              records.SHARD_PREFIX + "-*")):
        tf.io.gfile.remove(path)
    if created_output_dir and not tf.io.gfile.listdir(output_dir):
        tf.io.gfile.rmtree(output_dir)


def _write_in_processes(settings: BuildSettings, groups: list[build_plan.ShardGroup],
                        workers: int, progress: _Progress) -> list[GroupResult]:
    # spawn: TensorFlow is not fork-safe. A dead worker fails the build (BrokenProcessPool)
    # instead of hanging it.
    context = multiprocessing.get_context("spawn")
    progress_queue = context.Queue()

    def drain():
        while True:
            try:
                progress.add(progress_queue.get_nowait())
            except queue_lib.Empty:
                return

    results = []
    with concurrent.futures.ProcessPoolExecutor(
            workers, mp_context=context, initializer=_init_worker,
            initargs=(settings, progress_queue)) as executor:
        try:
            pending = {executor.submit(_worker_write_group, group) for group in groups}
            while pending:
                done, pending = concurrent.futures.wait(pending, timeout=0.5)
                drain()
                progress.maybe_log()
                results.extend(future.result() for future in done)
        except BaseException:
            executor.shutdown(wait=True, cancel_futures=True)
            raise
    drain()
    return results
