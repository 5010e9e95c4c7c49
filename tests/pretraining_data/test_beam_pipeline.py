"""The pretraining-data build on Apache Beam writes what the local builder writes, byte for byte,
survives a retried shard group, and fails the way the local builder fails.

The multi-process DirectRunner starts worker processes (about 10 s); the tests of retries and
errors use the in-process BundleBasedDirectRunner, which retries a failed bundle as a cluster
runner does (the multi-process DirectRunner fails the pipeline instead).
"""

import os
import sys

import pytest

from electra_tf.pretraining_data import beam_pipeline
from electra_tf.pretraining_data import builder
from electra_tf.pretraining_data import pretraining_records as records
from tests.pretraining_data.test_builder import MAX_LEN, write_fixture_corpus
from tests.conftest import require
from tests.test_build_commands import run_main

BUILD = "electra_tf.build_pretraining_dataset"
IN_PROCESS = ["--runner=BundleBasedDirectRunner"]
# 1 KiB units and 64 shards: 4 shard groups of 16 shards from about 30 units.
SETTINGS = dict(max_seq_length=MAX_LEN, seed=0, num_shards=64, block_bytes=1024)


@pytest.fixture(scope="module")
def needs_beam():
    """apache_beam (electra_tf[beam]): skipped locally without it, a failure under CI."""
    require("apache_beam")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("beam")
    vocab, _ = write_fixture_corpus(str(root / "corpus"))
    (root / "vocab.txt").write_text("".join(t + "\n" for t in vocab), encoding="utf-8")
    return {"root": root, "corpus": str(root / "corpus"), "vocab_file": str(root / "vocab.txt")}


def inputs(corpus):
    return dict(corpus=corpus["corpus"], vocab_file=corpus["vocab_file"], **SETTINGS)


def files_of(directory):
    """{file name: bytes} of a build directory."""
    return {name: (directory / name).read_bytes() for name in sorted(os.listdir(directory))}


@pytest.fixture(scope="module")
def local_build(corpus):
    out = corpus["root"] / "local"
    builder.build_pretraining_data(output_dir=str(out), num_processes=1, **inputs(corpus))
    return files_of(out)


@pytest.fixture(scope="module")
def beam_build(needs_beam, corpus):
    out = corpus["root"] / "beam"
    summary = beam_pipeline.build_with_beam(output_dir=str(out), num_processes=2,
                                            **inputs(corpus))
    return out, summary


@pytest.mark.slow
@pytest.mark.usefixtures("needs_beam")
def test_beam_build_writes_the_local_builds_bytes(local_build, beam_build):
    out, summary = beam_build
    assert len(local_build) == 65 and records.METADATA_FILE in local_build
    beam_files = files_of(out)
    assert sorted(beam_files) == sorted(local_build)  # no temporary or extra file
    different = [name for name in local_build if beam_files[name] != local_build[name]]
    assert not different
    assert summary.num_processes == 2  # the DirectRunner ran two worker processes
    assert summary.stats.examples == sum(
        shard["examples"] for shard in builder.load_metadata(str(out))["shards"])


@pytest.mark.slow
@pytest.mark.usefixtures("needs_beam")
def test_finished_build_is_not_overwritten_without_the_flag(corpus, beam_build):
    out, _ = beam_build
    before = files_of(out)
    with pytest.raises(builder.DatasetBuildError, match="--overwrite"):
        beam_pipeline.build_with_beam(output_dir=str(out), beam_args=IN_PROCESS,
                                      **inputs(corpus))
    assert files_of(out) == before


@pytest.mark.slow
@pytest.mark.usefixtures("needs_beam")
def test_a_retried_group_leaves_complete_shards_and_no_duplicate(corpus, local_build, tmp_path,
                                                                monkeypatch):
    out = tmp_path / "retried"
    attempts, at_failure = [], []
    write_group = builder.ShardWriter.write_group

    def fail_first_attempt_of_group_1(self, group, report, *args, **kwargs):
        attempts.append(group.index)
        if group.index != 1 or attempts.count(1) > 1:
            return write_group(self, group, report, *args, **kwargs)

        def fail_after_the_first_unit(stats):  # its examples are written by now
            at_failure.extend(sorted(os.listdir(out)))
            raise RuntimeError("injected failure")
        return write_group(self, group, fail_after_the_first_unit, *args, **kwargs)

    monkeypatch.setattr(builder.ShardWriter, "write_group", fail_first_attempt_of_group_1)
    beam_pipeline.build_with_beam(output_dir=str(out), beam_args=IN_PROCESS, **inputs(corpus))
    assert attempts.count(1) == 2  # the runner ran group 1 again
    # The failed attempt's half-written shards were under temporary names only.
    group_1 = {records.shard_name(i, 64) for i in range(1, 64, 4)}
    assert at_failure and not group_1 & set(at_failure)
    assert files_of(out) == local_build  # nothing missing, nothing twice, no temporary file


def test_missing_apache_beam_is_one_error_line(corpus, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "apache_beam", None)  # import apache_beam: ImportError
    code, _, stderr = run_main(BUILD, "--runner", "beam", "--corpus", corpus["corpus"],
                               "--vocab_file", corpus["vocab_file"],
                               "--output_dir", tmp_path / "out")
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert code == 1 and "Traceback" not in stderr
    assert errors == ["error: --runner beam needs Apache Beam, which is not installed: "
                      "pip install 'electra_tf[beam]'"]
    assert not (tmp_path / "out").exists()


@pytest.mark.usefixtures("needs_beam")
def test_given_pipeline_flags_override_the_direct_runner_defaults():
    from apache_beam.options.pipeline_options import (DirectOptions, PipelineOptions,
                                                      StandardOptions)

    default = beam_pipeline.pipeline_flags([], num_workers=3)
    given = beam_pipeline.pipeline_flags(["--runner=DataflowRunner", "--direct_num_workers=5"], 3)
    for flags, runner, workers in ((default, "DirectRunner", 3), (given, "DataflowRunner", 5)):
        options = PipelineOptions(flags)
        assert options.view_as(StandardOptions).runner == runner
        assert options.view_as(DirectOptions).direct_num_workers == workers
        assert options.view_as(DirectOptions).direct_running_mode == "multi_processing"


def test_beam_options_without_the_beam_runner_are_refused(corpus, tmp_path):
    code, _, stderr = run_main(BUILD, "--beam_pipeline_options", "--runner=DataflowRunner",
                               "--corpus", corpus["corpus"], "--vocab_file",
                               corpus["vocab_file"], "--output_dir", tmp_path / "out")
    assert code == 1 and "error: --beam_pipeline_options needs --runner beam" in stderr


@pytest.mark.slow
@pytest.mark.usefixtures("needs_beam")
def test_bad_inputs_give_the_local_builders_error_line(corpus, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "a.txt").write_text("\n  \n\n")
    no_specials = tmp_path / "no_specials.txt"
    no_specials.write_text("".join(t + "\n" for t in ["the", "cat"]))
    # One file of several holds a byte that is not UTF-8: found only while its group is written.
    latin1 = tmp_path / "latin1"
    latin1.mkdir()
    for i in range(3):
        (latin1 / f"{i}.txt").write_bytes(b"D1w1 D1w2\nD2w3\n\n" * 20)
    (latin1 / "3.txt").write_bytes(b"D1w1 D1w2\n" * 50 + "caf\u00e9\n".encode("latin-1"))
    cases = {"empty corpus": (empty, corpus["vocab_file"]),
             "no special tokens": (corpus["corpus"], no_specials),
             "not UTF-8": (latin1, corpus["vocab_file"])}
    for name, (corpus_dir, vocab_file) in cases.items():
        lines = {}
        for runner, extra in (("local", []), ("beam", ["--beam_pipeline_options", IN_PROCESS[0]])):
            out = tmp_path / f"{name}-{runner}"
            code, _, stderr = run_main(BUILD, "--runner", runner, *extra, "--corpus", corpus_dir,
                                       "--vocab_file", vocab_file, "--output_dir", out,
                                       "--max_seq_length", MAX_LEN, "--num_processes", 1)
            assert code == 1 and "Traceback" not in stderr, (name, runner, stderr[-3000:])
            lines[runner] = [line for line in stderr.splitlines() if line.startswith("error:")]
            assert len(lines[runner]) == 1, (name, runner, stderr[-3000:])
            assert not out.exists(), (name, runner)
        assert lines["beam"] == lines["local"], name
    assert "not UTF-8" in lines["local"][0] and "3.txt" in lines["local"][0]
