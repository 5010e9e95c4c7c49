"""Packs a corpus into ELECTRA pretraining examples and writes them as TFRecord shards.

The packing follows the original `build_pretraining_dataset.py` (reference notes section 4.1):

- every line is a "sentence"; its WordPiece ids accumulate until their count reaches the target
  length, or the document ends; examples never cross documents, and tokens past the maximum
  are discarded, not carried over;
- segment split: with probability 0.1 segment A takes everything (a single-segment example);
  otherwise A's target is (target_length - 3) // 2 and a line goes to A if A is empty, or if it
  still fits under the target, or (while B is empty and A is under its target) on a coin flip;
  the rest goes to B. A is cut to max_len - 2 tokens, then B to max_len - len(A) - 3;
- after each example, with probability 0.05 the next target length is randint(5, max_len);
- layout `[CLS] A [SEP]` (segment 0), then `B [SEP]` (segment 1) when B is non-empty; padding
  with the vocabulary's [PAD] id (0), segment 0, input_mask 0.

Output: shards `pretrain_data.tfrecord-<i>-of-<n>` of tf.train.Examples with int64 features
`input_ids`, `input_mask`, `segment_ids` of length max_seq_length (the original's contract), and
`metadata.json` beside them (sequence length, vocabulary size and hash, casing,
counts), written last, so a directory with metadata holds a finished build.

Parallelism and determinism: the corpus is cut into work units (byte blocks of text files, see
`corpus.TextBlock`, or even slices of a TFDS split), each with its own random stream seeded from
(seed, unit); units are assigned to shards by size, and each shard is written by one process.
So the examples depend on the seed and the corpus only, and the shards' bytes also on the shard
count, never on the number of processes. (The original ran one random stream per process over
whole files; here the stream, and the target length, restart every 1 MiB block: a difference in
the random draws only, not in their distribution.)
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import glob
import hashlib
import json
import math
import multiprocessing
import os
import queue as queue_lib
import random
import time
from typing import Callable, Iterable, Iterator, Sequence

from absl import logging

from electra_tf.data import corpus as corpus_lib

SHARD_PREFIX = "pretrain_data.tfrecord"
METADATA_FILE = "metadata.json"  # the name electra_tf/data/pipeline.py reads
FEATURES = ("input_ids", "input_mask", "segment_ids")
MIN_SEQ_LENGTH, MAX_SEQ_LENGTH = 5, 512
SINGLE_SEGMENT_PROB = 0.1
SHORT_TARGET_PROB = 0.05
SHARD_BYTES = 256 << 20  # default: about one shard per 256 MiB of input text
# A worker process spends about 3 s of CPU importing TensorFlow and keras-hub before it
# tokenizes anything, about as long as it takes to build 16 MiB of text; with the default
# --num_processes, smaller corpora get fewer processes (same output: shards do not change).
AUTO_BYTES_PER_PROCESS = 16 << 20
MAX_SHARDS = 1000
TOKENIZE_BATCH_LINES = 2000
TFDS_EXAMPLES_PER_UNIT = 20000


class DatasetBuildError(ValueError):
    """Settings or an output directory that a pretraining-data build cannot use."""


# ---------------------------------------------------------------------------------------------
# Packing


@dataclasses.dataclass
class PackingStats:
    documents: int = 0
    examples: int = 0
    tokens: int = 0  # WordPiece tokens of the corpus lines
    example_tokens: int = 0  # real positions written, [CLS] and [SEP] included
    discarded_tokens: int = 0
    single_segment_examples: int = 0
    short_target_examples: int = 0  # examples built towards a random short target length

    def add(self, other: "PackingStats") -> None:
        for field in dataclasses.fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))

    def minus(self, other: "PackingStats") -> "PackingStats":
        return PackingStats(*(getattr(self, f.name) - getattr(other, f.name)
                              for f in dataclasses.fields(self)))


class ExamplePacker:
    """Packs the token ids of one stream of documents into examples (module docstring rules).

    Args:
      max_seq_length: length of every example, [CLS] and [SEP]s included.
      cls_id, sep_id: ids of [CLS] and [SEP].
      rng: the stream's random.Random (segment split, coin flips, target lengths).
    """

    def __init__(self, max_seq_length: int, cls_id: int, sep_id: int, rng: random.Random):
        if not MIN_SEQ_LENGTH <= max_seq_length <= MAX_SEQ_LENGTH:
            raise DatasetBuildError(f"max_seq_length must be in [{MIN_SEQ_LENGTH}, "
                                    f"{MAX_SEQ_LENGTH}], got {max_seq_length}")
        self.max_seq_length = max_seq_length
        self.cls_id, self.sep_id = cls_id, sep_id
        self.rng = rng
        self.target_length = max_seq_length
        self.stats = PackingStats()
        self._lines: list[list[int]] = []
        self._length = 0

    def add_document(self, lines: Iterable[Sequence[int]]) -> list[tuple[list[int], list[int]]]:
        """Adds one document (token ids per line); returns the finished (ids, segment ids)."""
        examples = []
        self.stats.documents += 1
        for ids in lines:
            if not ids:
                continue
            self._lines.append(list(ids))
            self._length += len(ids)
            self.stats.tokens += len(ids)
            if self._length >= self.target_length:
                examples.append(self._make_example())
        if self._length:
            examples.append(self._make_example())
        return examples

    def _make_example(self) -> tuple[list[int], list[int]]:
        rng, max_len = self.rng, self.max_seq_length
        if self.target_length < max_len:
            self.stats.short_target_examples += 1
        if rng.random() < SINGLE_SEGMENT_PROB:
            target_a = math.inf
        else:
            target_a = (self.target_length - 3) // 2
        a: list[int] = []
        b: list[int] = []
        for line in self._lines:
            # The short-circuit matters: the coin is only flipped when the first two tests fail.
            if (not a or len(a) + len(line) < target_a
                    or (not b and len(a) < target_a and rng.random() < 0.5)):
                a += line
            else:
                b += line
        total = len(a) + len(b)
        a = a[:max_len - 2]
        b = b[:max(0, max_len - len(a) - 3)]
        input_ids = [self.cls_id] + a + [self.sep_id]
        segment_ids = [0] * len(input_ids)
        if b:
            input_ids += b + [self.sep_id]
            segment_ids += [1] * (len(b) + 1)
        else:
            self.stats.single_segment_examples += 1
        self.stats.examples += 1
        self.stats.example_tokens += len(input_ids)
        self.stats.discarded_tokens += total - len(a) - len(b)

        self._lines, self._length = [], 0
        if rng.random() < SHORT_TARGET_PROB:
            self.target_length = rng.randint(MIN_SEQ_LENGTH, max_len)
        else:
            self.target_length = max_len
        return input_ids, segment_ids


def serialize_example(input_ids: Sequence[int], segment_ids: Sequence[int], max_seq_length: int,
                      pad_id: int = 0) -> bytes:
    """A tf.train.Example with `input_ids`, `input_mask`, `segment_ids` (int64, padded)."""
    import tensorflow as tf

    padding = max_seq_length - len(input_ids)
    if padding < 0:
        raise ValueError(f"example of length {len(input_ids)} exceeds {max_seq_length}")

    def feature(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))

    return tf.train.Example(features=tf.train.Features(feature={
        "input_ids": feature(list(input_ids) + [pad_id] * padding),
        "input_mask": feature([1] * len(input_ids) + [0] * padding),
        "segment_ids": feature(list(segment_ids) + [0] * padding),
    })).SerializeToString(deterministic=True)  # map order: sorted keys, byte-identical


def feature_spec(max_seq_length: int) -> dict:
    """`tf.io.parse_example` spec of the shards: three int64 features of length max_seq_length."""
    import tensorflow as tf
    return {name: tf.io.FixedLenFeature([max_seq_length], tf.int64) for name in FEATURES}


def read_examples(paths: Sequence[str], max_seq_length: int):
    """A tf.data.Dataset of parsed examples (dicts of int64 [max_seq_length]), in file order."""
    import tensorflow as tf
    spec = feature_spec(max_seq_length)
    return tf.data.TFRecordDataset(list(paths)).map(lambda x: tf.io.parse_single_example(x, spec))


# ---------------------------------------------------------------------------------------------
# Work units, shards, metadata


@dataclasses.dataclass(frozen=True)
class TfdsBlock:
    """Slice `index` of `count` even slices of a TFDS split."""

    name: str
    split: str
    text_key: str
    data_dir: str | None
    index: int = 0
    count: int = 1

    @property
    def key(self) -> str:
        return f"tfds{self.index}"

    def documents(self) -> Iterator[list[str]]:
        split = self.split
        if self.count > 1:
            import tensorflow_datasets as tfds
            split = tfds.even_splits(self.split, n=self.count)[self.index]
        return corpus_lib.tfds_documents(self.name, split, self.text_key, self.data_dir)


def _unit_documents(unit) -> Iterator[list[str]]:
    if isinstance(unit, corpus_lib.TextBlock):
        return corpus_lib.read_block_documents(unit)
    return unit.documents()


def shard_name(index: int, num_shards: int) -> str:
    return f"{SHARD_PREFIX}-{index}-of-{num_shards}"


def choose_num_shards(corpus_bytes: int, num_processes: int, num_units: int,
                      requested: int | None = None) -> int:
    """The shard count: `requested`, or about one per 256 MiB of text.

    The default is at least `num_processes` (every process has a shard to write), at most 1000
    (the original's fixed count, which starves small corpora) and at most `num_units` (more
    shards than work units would leave some empty).
    """
    if requested is not None:
        if requested < 1:
            raise DatasetBuildError(f"num_shards must be positive, got {requested}")
        return requested
    count = max(math.ceil(corpus_bytes / SHARD_BYTES), num_processes)
    return max(1, min(count, MAX_SHARDS, num_units))


def assign_units(sizes: Sequence[int], num_shards: int) -> list[list[int]]:
    """Unit indices per shard: largest unit first to the least-loaded shard (ties: lower index).

    Deterministic, and independent of the number of processes. Each shard's list is sorted.
    """
    loads = [(0, shard) for shard in range(num_shards)]
    shards: list[list[int]] = [[] for _ in range(num_shards)]
    for unit in sorted(range(len(sizes)), key=lambda u: (-sizes[u], u)):
        load, shard = min(loads)
        loads[shard] = (load + max(sizes[unit], 1), shard)
        shards[shard].append(unit)
    return [sorted(units) for units in shards]


def vocab_sha256(path: str) -> str:
    import tensorflow as tf
    with tf.io.gfile.GFile(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def load_metadata(directory: str) -> dict:
    """The metadata of a finished build; DatasetBuildError when there is none."""
    import tensorflow as tf
    path = os.path.join(directory, METADATA_FILE)
    if not tf.io.gfile.exists(path):
        raise DatasetBuildError(f"{directory} has no {METADATA_FILE}: not a finished "
                                "pretraining-data build (run electra_tf.build_pretraining_dataset)")
    with tf.io.gfile.GFile(path) as f:
        return json.load(f)


def existing_outputs(output_dir: str) -> list[str]:
    """Shards (finished or not) and metadata of an earlier build in `output_dir`."""
    pattern = os.path.join(corpus_lib.glob_escape(output_dir), SHARD_PREFIX + "-*")
    metadata = os.path.join(output_dir, METADATA_FILE)
    if corpus_lib.is_remote(output_dir):
        import tensorflow as tf
        if not tf.io.gfile.isdir(output_dir):
            return []
        return sorted(tf.io.gfile.glob(pattern)) + (
            [metadata] if tf.io.gfile.exists(metadata) else [])
    return sorted(glob.glob(pattern)) + ([metadata] if os.path.exists(metadata) else [])


# ---------------------------------------------------------------------------------------------
# Writing shards (in this process or in worker processes)


@dataclasses.dataclass(frozen=True)
class BuildSettings:
    vocab_file: str
    output_dir: str
    max_seq_length: int
    lower_case: bool
    strip_accents: bool
    seed: int
    num_shards: int


@dataclasses.dataclass
class ShardResult:
    index: int
    path: str
    stats: PackingStats
    seconds: float


class ShardWriter:
    """Tokenizes and packs work units and writes shards; one per process."""

    def __init__(self, settings: BuildSettings):
        import tensorflow as tf

        from electra_tf.data.tokenization import load_vocabulary, make_tokenizer, special_ids

        self.settings = settings
        vocabulary = load_vocabulary(settings.vocab_file)
        self.special = special_ids(vocabulary, source=settings.vocab_file)
        tokenizer = make_tokenizer(vocabulary, settings.lower_case, settings.strip_accents)
        # In graph: called eagerly, keras-hub 0.32 tokenizes with its pure-Python fallback.
        # No autograph: the method has no tensor-dependent Python control flow, and converting
        # it costs about 1 s in every process.
        self._tokenize = tf.function(tokenizer.tokenize, autograph=False,
                                     input_signature=[tf.TensorSpec([None], tf.string)])
        self.tokenize(["warm up"])  # trace now: shard timings then measure steady-state work

    def tokenize(self, lines: list[str]) -> list[list[int]]:
        """WordPiece ids per line, in one in-graph call."""
        import tensorflow as tf
        if not lines:
            return []
        ragged = self._tokenize(tf.constant(lines, dtype=tf.string))
        flat = ragged.flat_values.numpy().tolist()
        splits = ragged.row_splits.numpy().tolist()
        return [flat[start:end] for start, end in zip(splits[:-1], splits[1:])]

    def write_shard(self, index: int, units: Sequence, report: Callable[[PackingStats], None]
                    ) -> ShardResult:
        import tensorflow as tf

        start_time = time.perf_counter()
        s = self.settings
        path = os.path.join(s.output_dir, shard_name(index, s.num_shards))
        incomplete = path + ".incomplete"
        stats = PackingStats()
        with tf.io.TFRecordWriter(incomplete) as writer:
            for unit in units:
                rng = random.Random(f"electra_tf:{s.seed}:{unit.key}")
                packer = ExamplePacker(s.max_seq_length, self.special.cls, self.special.sep, rng)
                for batch in _batches(_unit_documents(unit), TOKENIZE_BATCH_LINES):
                    before = dataclasses.replace(packer.stats)
                    ids = iter(self.tokenize([line for document in batch for line in document]))
                    for document in batch:
                        for input_ids, segment_ids in packer.add_document(
                                [next(ids) for _ in document]):
                            writer.write(serialize_example(input_ids, segment_ids,
                                                           s.max_seq_length, self.special.pad))
                    report(packer.stats.minus(before))
                stats.add(packer.stats)
        tf.io.gfile.rename(incomplete, path, overwrite=True)
        return ShardResult(index, path, stats, time.perf_counter() - start_time)


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


def _init_worker(settings: BuildSettings, progress_queue) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    # One process per core: keep each process's TensorFlow to one thread.
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    _WORKER["writer"] = ShardWriter(settings)
    _WORKER["queue"] = progress_queue


def _worker_write_shard(index: int, units: Sequence) -> ShardResult:
    return _WORKER["writer"].write_shard(index, units, _WORKER["queue"].put)


# ---------------------------------------------------------------------------------------------
# The build


@dataclasses.dataclass
class BuildSummary:
    output_dir: str
    shards: list[str]
    stats: PackingStats
    seconds: float
    num_processes: int
    busy_seconds: float  # summed over shards, process start-up excluded

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


def build_pretraining_data(
    *, output_dir: str, vocab_file: str, corpus: str | Sequence[str] | None = None,
    tfds_name: str | None = None, tfds_split: str = "train", tfds_text_key: str = "text",
    tfds_data_dir: str | None = None, max_seq_length: int = 128,
    num_processes: int | None = None, num_shards: int | None = None, lower_case: bool = True,
    strip_accents: bool | None = None, seed: int = 0, overwrite: bool = False,
    log_every_s: float = 10.0,
) -> BuildSummary:
    """Builds pretraining TFRecords from text files (`corpus`) or a TFDS dataset (`tfds_name`).

    Raises DatasetBuildError (bad settings, output already there without `overwrite`),
    corpus.CorpusError (nothing matches, no text) or tokenization.VocabularyError. Everything
    is checked before anything is deleted or written.
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
    existing = existing_outputs(output_dir)
    if existing and not overwrite:
        raise DatasetBuildError(
            f"output directory {output_dir} already holds {len(existing)} files of an earlier "
            f"build (e.g. {os.path.basename(existing[0])}); pass --overwrite to replace them")

    import tensorflow as tf

    from electra_tf.data.tokenization import load_vocabulary, special_ids

    strip_accents = lower_case if strip_accents is None else strip_accents
    vocabulary = load_vocabulary(vocab_file)
    specials = special_ids(vocabulary, source=vocab_file)
    if corpus is not None:
        units = corpus_lib.split_into_blocks(files)
        sizes = [unit.size for unit in units]
        corpus_bytes = sum(sizes)
        corpus_info = {"files": files, "bytes": corpus_bytes}
    else:
        num_examples = corpus_lib.check_tfds(tfds_name, tfds_split, tfds_text_key, tfds_data_dir)
        count = max(1, math.ceil(num_examples / TFDS_EXAMPLES_PER_UNIT))
        units = [TfdsBlock(tfds_name, tfds_split, tfds_text_key, tfds_data_dir, i, count)
                 for i in range(count)]
        sizes = [1] * count
        corpus_bytes = corpus_lib.tfds_split_bytes(tfds_name, tfds_split, tfds_data_dir)
        corpus_info = {"tfds": {"name": tfds_name, "split": tfds_split, "text_key": tfds_text_key},
                       "bytes": corpus_bytes}

    num_shards = choose_num_shards(corpus_bytes, num_processes, len(units), num_shards)
    if num_shards > len(units):
        logging.warning("%d shards for %d work units: %d shards will be empty", num_shards,
                        len(units), num_shards - len(units))
    if existing:
        logging.info("--overwrite: deleting %d files of an earlier build in %s",
                     len(existing), output_dir)
        for path in existing:
            tf.io.gfile.remove(path)
    tf.io.gfile.makedirs(output_dir)

    settings = BuildSettings(vocab_file, output_dir, max_seq_length, lower_case, strip_accents,
                             seed, num_shards)
    assignment = assign_units(sizes, num_shards)
    tasks = [(index, [units[u] for u in unit_ids]) for index, unit_ids in enumerate(assignment)]
    workers = min(num_processes, num_shards)
    if auto_processes and corpus_bytes:
        workers = min(workers, max(1, math.ceil(corpus_bytes / AUTO_BYTES_PER_PROCESS)))
    logging.info("building %d shards from %d work units (%s bytes) with %d processes",
                 num_shards, len(units), f"{corpus_bytes:,}", workers)
    progress = _Progress(log_every_s)
    try:
        if workers == 1:
            writer = ShardWriter(settings)
            results = [writer.write_shard(index, shard_units, progress.add)
                       for index, shard_units in tasks]
        else:
            results = _write_in_processes(settings, tasks, workers, progress)
    except BaseException:
        for path in tf.io.gfile.glob(os.path.join(corpus_lib.glob_escape(output_dir),
                                                  SHARD_PREFIX + "-*.incomplete")):
            tf.io.gfile.remove(path)
        raise
    results.sort(key=lambda r: r.index)

    total = PackingStats()
    for result in results:
        total.add(result.stats)
    if not total.examples:
        raise corpus_lib.CorpusError("the corpus produced no examples (no line has a token)")
    metadata = {
        "format": "electra_tf pretraining examples v1",
        "features": {name: ["int64", max_seq_length] for name in FEATURES},
        "max_seq_length": max_seq_length,
        "vocab_file": vocab_file,
        "vocab_size": len(vocabulary),
        "vocab_sha256": vocab_sha256(vocab_file),
        "lower_case": lower_case,
        "strip_accents": strip_accents,
        "special_token_ids": specials._asdict(),
        "seed": seed,
        "corpus": corpus_info,
        "num_shards": num_shards,
        "shards": [{"file": os.path.basename(r.path), "examples": r.stats.examples}
                   for r in results],
        **dataclasses.asdict(total),
    }
    metadata_path = os.path.join(output_dir, METADATA_FILE)
    with tf.io.gfile.GFile(metadata_path + ".incomplete", "w") as f:
        f.write(json.dumps(metadata, indent=1) + "\n")
    tf.io.gfile.rename(metadata_path + ".incomplete", metadata_path, overwrite=True)

    summary = BuildSummary(output_dir, [r.path for r in results], total,
                           time.perf_counter() - start_time, workers,
                           sum(r.seconds for r in results))
    logging.info("done: %s", summary.line())
    return summary


def _write_in_processes(settings: BuildSettings, tasks, workers: int, progress: _Progress
                        ) -> list[ShardResult]:
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
            pending = {executor.submit(_worker_write_shard, index, units)
                       for index, units in tasks}
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
