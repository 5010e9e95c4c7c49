"""Builds pretraining data on Apache Beam: the local builder's plan and writer, run by a runner.

The pipeline's elements are the shard groups of `build_plan` (the same plan as the local
build), each packed and written by `builder.ShardWriter.write_group`, so the shards are
byte-identical to a local build's with the same seed, and so is metadata.json, which one last
step writes from the groups' counts:

    Create(groups) -> Reshuffle -> Map(write group) -> ToList -> Map(write metadata)

Retries: a runner may run a group more than once (a retried or a speculative attempt). Each
attempt writes its shards under names of its own ending in ".incomplete" and renames them once
the group is complete; attempts write the same bytes, so whichever rename lands last leaves the
same shard, and the last step removes the temporary files of failed attempts.

Errors the user caused (bytes that are not UTF-8, a corpus without a token) cannot come back
as exceptions from every runner, so the last step writes their message to `build_error.json`
in the output directory and the launcher raises it as the local builder would.

apache_beam is imported in `build_with_beam` only: it is an optional extra (`electra_tf[beam]`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
import uuid
from typing import Sequence

from absl import logging

from electra_tf.errors import UserError, is_disk_full
from electra_tf.pretraining_data import builder
from electra_tf.pretraining_data import corpus as corpus_lib
from electra_tf.pretraining_data import pretraining_records as records
from electra_tf.pretraining_data.example_packing import PackingStats

ERROR_FILE = "build_error.json"
INSTALL_HINT = "pip install 'electra_tf[beam]'"


@dataclasses.dataclass(frozen=True)
class GroupFailure:
    """A shard group that failed on an input the user gave (retrying would fail again)."""

    index: int
    message: str


def import_beam():
    """The apache_beam module; DatasetBuildError naming the extra when it is not installed."""
    try:
        import apache_beam  # lazy: an optional extra, only --runner beam needs it
    except ImportError:
        raise builder.DatasetBuildError(
            f"--runner beam needs Apache Beam, which is not installed: {INSTALL_HINT}") from None
    return apache_beam


def pipeline_flags(beam_args: Sequence[str], num_workers: int) -> list[str]:
    """Beam's flags: the multi-process DirectRunner with `num_workers` workers, then
    `beam_args`, whose flags win (Beam's parser keeps a flag's last value)."""
    return ["--runner=DirectRunner", "--direct_running_mode=multi_processing",
            f"--direct_num_workers={num_workers}", *beam_args]


_WRITERS: dict = {}  # one ShardWriter per worker process and build (its tokenizer is traced)


def write_group(group, settings: builder.BuildSettings):
    """Writes one shard group in a Beam worker: a GroupResult, or a GroupFailure for an error
    the user caused."""
    writer = _WRITERS.get(settings)
    if writer is None:
        builder.limit_tensorflow_to_one_thread()  # a runner starts one worker per core
        writer = _WRITERS[settings] = builder.ShardWriter(settings)
    try:
        result = writer.write_group(group, lambda stats: None,
                                    temporary_suffix=f".{uuid.uuid4().hex}.incomplete")
    except UserError as e:
        return GroupFailure(group.index, str(e))
    logging.info("wrote shard group %d (%d examples) in %.1f s", group.index,
                 sum(result.examples_per_shard), result.seconds)
    return result


def finish(outcomes: list, output_dir: str, metadata: dict) -> None:
    """The pipeline's last step: removes failed attempts' temporary files, then writes
    metadata.json, or build_error.json when a group or the whole build failed on the input."""
    import tensorflow as tf
    for path in tf.io.gfile.glob(os.path.join(corpus_lib.glob_escape(output_dir),
                                              records.SHARD_PREFIX + "-*.incomplete")):
        tf.io.gfile.remove(path)
    failures = sorted((o for o in outcomes if isinstance(o, GroupFailure)), key=lambda f: f.index)
    try:
        if failures:
            raise UserError(failures[0].message)
        builder.write_build_metadata(output_dir, metadata, outcomes)
    except UserError as e:
        with tf.io.gfile.GFile(os.path.join(output_dir, ERROR_FILE), "w") as f:
            f.write(json.dumps({"error": str(e)}) + "\n")


def build_with_beam(*, beam_args: Sequence[str] = (), **build_args) -> builder.BuildSummary:
    """Builds what `builder.build_pretraining_data(**build_args)` builds, on a Beam runner.

    `beam_args` are Beam pipeline flags (e.g. "--runner=DataflowRunner", "--project=..."); by
    default the DirectRunner with one worker process per core (--num_processes: per process).
    Raises what the local builder raises, with the same messages, and DatasetBuildError when
    apache_beam is missing; a build that fails removes the shards it wrote.
    """
    beam = import_beam()
    from apache_beam.options.pipeline_options import PipelineOptions  # lazy: an optional extra

    build_args.pop("log_every_s", None)  # the runner reports progress its own way
    prepared = builder.prepare_build(**build_args)
    output_dir = build_args["output_dir"]
    options = PipelineOptions(pipeline_flags(beam_args, prepared.workers))
    _take_error(output_dir)  # a stale one, left by a launcher stopped before it read it
    try:
        with beam.Pipeline(options=options) as pipeline:
            _ = (pipeline
                 | "Groups" >> beam.Create(prepared.groups)
                 | "Spread" >> beam.Reshuffle()
                 | "WriteGroup" >> beam.Map(write_group, prepared.settings)
                 | "Collect" >> beam.combiners.ToList()
                 | "Finish" >> beam.Map(finish, output_dir, prepared.metadata))
        error = _take_error(output_dir)
        if error is not None:
            raise builder.DatasetBuildError(error)
    except BaseException as e:
        _take_error(output_dir)
        builder.remove_partial_build(output_dir, prepared.created_output_dir)
        if is_disk_full(e):  # a worker's OSError reaches here as the text of its traceback
            raise builder.shards_disk_full_error(output_dir) from None
        raise
    metadata = builder.load_metadata(output_dir)
    stats = PackingStats(**{f.name: metadata[f.name] for f in dataclasses.fields(PackingStats)})
    summary = builder.BuildSummary(
        output_dir, [os.path.join(output_dir, shard["file"]) for shard in metadata["shards"]],
        stats, time.perf_counter() - prepared.start_time, prepared.workers,
        busy_seconds=float("nan"),  # spent in the runner's workers, not reported back
        num_units=prepared.num_units)
    logging.info("done: %s", summary.line())
    return summary


def _take_error(output_dir: str) -> str | None:
    """The message of build_error.json in `output_dir`, which it removes; None without one."""
    import tensorflow as tf
    path = os.path.join(output_dir, ERROR_FILE)
    if not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path) as f:
        message = json.load(f)["error"]
    tf.io.gfile.remove(path)
    return message
