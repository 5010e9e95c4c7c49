"""Bad input to run_pretraining: one clear error, a non-zero exit, no traceback, nothing lost.

Every case runs the entry point's main in this process (tests.run_helpers.run_in_process: the
same flags, `error:` line and exit status as `python -m electra_tf.run_pretraining`, without a
TensorFlow import per case) on the fixture data; the input that used to make the run spin forever
still runs in its own process, under a timeout. Where a model_dir is involved it is a copy of one
finished 10-step run (checkpoint ckpt-10), rerun with --train_steps 20 so that a run which
wrongly went ahead would train and write ckpt-20; the checkpoint files are hashed before and
after and must be byte-identical, none added or deleted. That run (and any case that trains)
makes a case slow; the others are in the fast tier.
"""

import hashlib
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time

import pytest

from electra_tf.pretraining_data import pretraining_records as records
from tests.run_helpers import (REPO, SPECIALS, VOCAB_SIZE, cli_args, run_cli, run_in_process,
                               write_records, write_vocab)

HANG_TIMEOUT = 120  # for inputs that made the run spin forever (a refusal takes ~5 s)


@pytest.fixture(scope="module")
def fixture_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    return write_records(root / "records"), write_vocab(root / "vocab.txt")


@pytest.fixture(scope="module")
def finished_run(fixture_data, tmp_path_factory):
    """A model_dir holding ckpt-10 of a successful run, shared (copied) by the tests below."""
    data, vocab = fixture_data
    model_dir = tmp_path_factory.mktemp("finished") / "model"
    result = run_in_process(cli_args(data, vocab, model_dir, 10, "--noexport"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert (model_dir / "checkpoints" / "ckpt-10.index").exists()
    return model_dir


@pytest.fixture
def model_dir(finished_run, tmp_path):
    copy = tmp_path / "model"
    shutil.copytree(finished_run, copy)
    return copy


def _snapshot(root):
    """{relative path: sha256} of every file under root."""
    digests = {}
    for directory, _, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            with open(path, "rb") as f:
                digests[os.path.relpath(path, root)] = hashlib.sha256(f.read()).hexdigest()
    return digests


def _run_refused(args, timeout=None):
    """Runs the entry point expecting a refusal; returns (the single `error:` line, full output).
    With a timeout: in its own process, killed after `timeout` seconds."""
    if timeout is None:
        result = run_in_process(args)
    else:
        try:
            result = run_cli(args, timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"run_pretraining did not finish within {timeout} s (hangs on this input)")
    output = result.stdout + result.stderr
    assert result.returncode != 0, f"expected a refusal, the run succeeded:\n{output[-3000:]}"
    assert "Traceback" not in output, f"a traceback instead of one clear message:\n{output[-5000:]}"
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, f"expected exactly one 'error:' line, got {errors}:\n{output[-3000:]}"
    return errors[0], output


def _refused_keeping(model_dir, args, whole_dir=False, timeout=None):
    """_run_refused, asserting the checkpoints (or the whole model_dir) are byte-identical after."""
    root = model_dir if whole_dir else model_dir / "checkpoints"
    before = _snapshot(root)
    assert any(os.path.basename(name).startswith("ckpt-10.") for name in before)
    error, output = _run_refused(args, timeout)
    after = _snapshot(root)
    assert sorted(after) == sorted(before), f"files added or deleted under {root}: " \
        f"{sorted(set(after) ^ set(before))} (refused with: {error})"
    changed = [name for name in before if before[name] != after[name]]
    assert not changed, f"overwritten under {root}: {changed} (refused with: {error})"
    return error, output


def _vocab_without(path, *missing):
    tokens = [t for t in SPECIALS if t not in missing] + [f"w{i}" for i in range(VOCAB_SIZE - 5)]
    return write_vocab(path, tokens)


def _copy_records(data_glob, directory):
    source = os.path.dirname(data_glob)
    shutil.copytree(source, directory)
    return os.path.join(directory, os.path.basename(data_glob)), sorted(
        os.path.join(directory, n) for n in os.listdir(directory))


# ---- vocabulary ----------------------------------------------------------------------------


@pytest.mark.slow
def test_vocabulary_without_mask(fixture_data, model_dir, tmp_path):
    data, _ = fixture_data
    vocab = _vocab_without(tmp_path / "vocab.txt", "[MASK]")
    error, _ = _refused_keeping(model_dir, cli_args(data, vocab, model_dir, 20), whole_dir=True)
    missing = error.split(" lacks ", 1)[1].split(":", 1)[0]
    assert missing == "[MASK]", error
    assert "vocab.txt" in error


@pytest.mark.slow
def test_vocabulary_without_cls_and_sep_names_both(fixture_data, model_dir, tmp_path):
    data, _ = fixture_data
    vocab = _vocab_without(tmp_path / "vocab.txt", "[CLS]", "[SEP]")
    error, _ = _refused_keeping(model_dir, cli_args(data, vocab, model_dir, 20), whole_dir=True)
    missing = error.split(" lacks ", 1)[1].split(":", 1)[0]
    assert "[CLS]" in missing and "[SEP]" in missing and "[MASK]" not in missing, error


@pytest.fixture(scope="module")
def built_data(tmp_path_factory):
    """Data from build_pretraining_data (with its metadata.json), on the fixture vocabulary."""
    from electra_tf.pretraining_data.builder import build_pretraining_data

    root = tmp_path_factory.mktemp("built")
    vocab = write_vocab(root / "vocab.txt")
    words = [f"w{i}" for i in range(VOCAB_SIZE - 5)]
    lines = [" ".join(words[(7 * i + k) % len(words)] for k in range(9)) for i in range(400)]
    (root / "corpus.txt").write_text("\n".join(lines[:200]) + "\n\n" + "\n".join(lines[200:]))
    build_pretraining_data(output_dir=str(root / "records"), vocab_file=vocab,
                           corpus=str(root / "corpus.txt"), max_seq_length=32, num_shards=2)
    return str(root / "records"), vocab


@pytest.mark.slow
def test_without_vocab_file_the_data_metadata_gives_the_special_ids(built_data, tmp_path):
    import yaml

    data, _ = built_data
    args = [a for a in cli_args(data, "unused", tmp_path / "model", 2, "--noexport")
            if a not in ("--vocab_file", "unused")]
    result = run_in_process(args)
    assert result.returncode == 0, result.stderr[-3000:]
    config = yaml.safe_load((tmp_path / "model" / "config.yaml").read_text())
    # The fixture vocabulary's ids, not BERT's 101/102/103 defaults.
    assert {k: config["objective"][f"{k}_token_id"] for k in ("cls", "sep", "mask")} == {
        "cls": 2, "sep": 3, "mask": 4}
    assert config["model"]["vocab_size"] == VOCAB_SIZE


@pytest.mark.slow
def test_a_vocab_file_other_than_the_data_one_is_refused(built_data, model_dir, tmp_path):
    data, _ = built_data
    other = write_vocab(tmp_path / "other.txt", SPECIALS[::-1] + [f"w{i}" for i in range(115)])
    error, _ = _refused_keeping(model_dir, cli_args(data, other, model_dir, 20), whole_dir=True)
    assert "disagree" in error and "metadata.json" in error and "other.txt" in error, error


@pytest.mark.slow
def test_a_special_id_override_against_the_data_is_refused(built_data, model_dir):
    data, vocab = built_data
    error, _ = _refused_keeping(model_dir, cli_args(
        data, vocab, model_dir, 20, "--override", "objective.mask_token_id=103"), whole_dir=True)
    assert "mask_token_id=103" in error and "[MASK] is 4" in error, error


def test_data_without_metadata_or_vocab_file_is_refused(fixture_data, tmp_path):
    data, _ = fixture_data
    args = [a for a in cli_args(data, "unused", tmp_path / "model", 2)
            if a not in ("--vocab_file", "unused")]
    error, _ = _run_refused(args)
    assert "--assume_bert_vocabulary" in error and "--vocab_file" in error, error
    assert not (tmp_path / "model").exists()


def test_model_dir_that_is_a_file(fixture_data, tmp_path):
    data, vocab = fixture_data
    path = tmp_path / "model"
    path.write_text("not a directory")
    error, _ = _run_refused(cli_args(data, vocab, path, 2))
    assert str(path) in error and "is an existing file" in error, error
    assert path.read_text() == "not a directory"


# ---- data ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_glob_matching_nothing(fixture_data, model_dir, tmp_path):
    _, vocab = fixture_data
    pattern = str(tmp_path / "nowhere" / "*.tfrecord*")
    error, _ = _refused_keeping(model_dir, cli_args(pattern, vocab, model_dir, 20), whole_dir=True)
    assert pattern in error and "no TFRecord files" in error


@pytest.mark.slow
def test_empty_data_directory(fixture_data, model_dir, tmp_path):
    """An empty corpus given as a directory (--data accepts 'a glob ... or a directory')."""
    _, vocab = fixture_data
    empty = tmp_path / "empty_corpus"
    empty.mkdir()
    error, _ = _refused_keeping(model_dir, cli_args(str(empty), vocab, model_dir, 20),
                                whole_dir=True)
    assert str(empty) in error and "no TFRecord files" in error


@pytest.mark.slow
def test_shard_without_any_record(fixture_data, model_dir, tmp_path):
    """An empty corpus as an empty shard: must be refused, not spin forever looking for data."""
    _, vocab = fixture_data
    empty = tmp_path / "empty_corpus"
    empty.mkdir()
    (empty / "pretrain_data.tfrecord-0-of-1").write_bytes(b"")
    pattern = str(empty / "*.tfrecord*")
    error, _ = _refused_keeping(model_dir, cli_args(pattern, vocab, model_dir, 20),
                                timeout=HANG_TIMEOUT)
    assert "TFRecord" in error or "empty" in error or "no examples" in error, error


def _record_spans(path):
    """(start, end) byte offsets of each record of a TFRecord file (8+4 header, data, 4 crc)."""
    spans, offset = [], 0
    with open(path, "rb") as f:
        content = f.read()
    while offset < len(content):
        (length,) = struct.unpack("<Q", content[offset:offset + 8])
        spans.append((offset, offset + 12 + length + 4))
        offset += 12 + length + 4
    return spans


@pytest.mark.slow
def test_corrupt_tfrecord(fixture_data, model_dir, tmp_path):
    data, vocab = fixture_data
    pattern, shards = _copy_records(data, tmp_path / "corrupt")
    shard = shards[1]
    content = bytearray(open(shard, "rb").read())
    middle = len(content) // 2
    content[middle:middle + 64] = b"\xff" * 64
    open(shard, "wb").write(bytes(content))
    error, _ = _refused_keeping(model_dir, cli_args(pattern, vocab, model_dir, 20))
    assert "corrupt" in error and "TFRecord" in error, error
    assert shard in error, error  # names the shard


@pytest.mark.slow
def test_truncated_tfrecord(fixture_data, model_dir, tmp_path):
    """Cut in half, inside a record (a cut exactly between records leaves a valid, shorter file)."""
    data, vocab = fixture_data
    pattern, shards = _copy_records(data, tmp_path / "truncated")
    shard = shards[1]
    size = os.path.getsize(shard)
    start, end = next(span for span in _record_spans(shard) if span[1] > size // 2)
    cut = start + 12 + (end - start - 16) // 2  # the middle of that record's payload
    with open(shard, "rb") as f:
        content = f.read()
    open(shard, "wb").write(content[:cut])
    error, _ = _refused_keeping(model_dir, cli_args(pattern, vocab, model_dir, 20))
    assert "truncated" in error and "TFRecord" in error, error
    assert shard in error, error


@pytest.mark.slow
def test_records_of_another_sequence_length_with_metadata(fixture_data, model_dir, tmp_path):
    _, vocab = fixture_data
    data = write_records(tmp_path / "records48", seq_len=48)
    (tmp_path / "records48" / "metadata.json").write_text(json.dumps({"max_seq_length": 48}))
    error, _ = _refused_keeping(model_dir, cli_args(data, vocab, model_dir, 20), whole_dir=True)
    assert "max_seq_length 48" in error and "32" in error, error


@pytest.mark.slow
def test_records_of_another_sequence_length_with_builder_metadata(fixture_data, model_dir,
                                                                   tmp_path):
    """The metadata file electra_tf.build_pretraining_dataset writes is checked before training."""
    _, vocab = fixture_data
    data = write_records(tmp_path / "records48", seq_len=48)
    (tmp_path / "records48" / records.METADATA_FILE).write_text(
        json.dumps({"max_seq_length": 48, "vocab_size": VOCAB_SIZE}))
    error, _ = _refused_keeping(model_dir, cli_args(data, vocab, model_dir, 20), whole_dir=True)
    assert "max_seq_length 48" in error and "32" in error, error


@pytest.mark.slow
def test_records_of_another_sequence_length_without_metadata(fixture_data, model_dir, tmp_path):
    _, vocab = fixture_data
    data = write_records(tmp_path / "records48", seq_len=48)
    error, _ = _refused_keeping(model_dir, cli_args(data, vocab, model_dir, 20))
    assert "max_seq_length" in error, error


def test_records_built_with_a_larger_vocabulary(fixture_data, tmp_path):
    """Data of a 120-token vocabulary (per its builder metadata) with a 60-token vocab_file."""
    data, _ = fixture_data
    pattern, _ = _copy_records(data, tmp_path / "records")
    (tmp_path / "records" / records.METADATA_FILE).write_text(
        json.dumps({"max_seq_length": 32, "vocab_size": VOCAB_SIZE}))
    small = write_vocab(tmp_path / "small_vocab.txt", SPECIALS + [f"w{i}" for i in range(55)])
    error, _ = _run_refused(cli_args(pattern, small, tmp_path / "model", 10))
    assert str(VOCAB_SIZE) in error and "60" in error and "vocab" in error, error


# ---- config --------------------------------------------------------------------------------


@pytest.mark.slow
def test_unknown_override_key(fixture_data, model_dir):
    data, vocab = fixture_data
    error, _ = _refused_keeping(
        model_dir, cli_args(data, vocab, model_dir, 20, "--override", "model.nonsense=1"),
        whole_dir=True)
    assert "unknown config key" in error and "model.nonsense" in error, error


@pytest.mark.slow
def test_unknown_key_in_config_yaml(fixture_data, model_dir, tmp_path):
    data, vocab = fixture_data
    config = tmp_path / "mine.yaml"
    config.write_text("include: pretrain/demo\nobjective:\n  not_a_key: 3\n")
    args = cli_args(data, vocab, model_dir, 20)
    args[args.index("--config") + 1] = str(config)
    error, _ = _refused_keeping(model_dir, args, whole_dir=True)
    assert "unknown config key" in error and "objective.not_a_key" in error, error


@pytest.mark.slow
@pytest.mark.parametrize("where", ["override", "recipe"])
def test_a_negative_learning_rate_is_refused_not_trained_with(fixture_data, model_dir, tmp_path,
                                                              where):
    """Gradient ascent used to run to the end, writing checkpoints and an export."""
    data, vocab = fixture_data
    args = cli_args(data, vocab, model_dir, 20)
    if where == "override":
        args += ["--override", "optimizer.learning_rate=-1"]
    else:
        config = tmp_path / "mine.yaml"
        config.write_text("include: pretrain/demo\noptimizer:\n  learning_rate: -1\n")
        args[args.index("--config") + 1] = str(config)
    error, _ = _refused_keeping(model_dir, args, whole_dir=True)
    assert error == "error: optimizer.learning_rate must be positive, got -1.0", error


@pytest.mark.slow
def test_a_torn_newest_checkpoint_is_passed_over_and_the_run_goes_on(fixture_data, model_dir):
    """The newest checkpoint cut short (a full disk, a killed copy): the run resumes from the
    one before it, says so, and finishes; a run with no checkpoint that reads stops with one
    line naming them and deletes nothing."""
    data, vocab = fixture_data
    second = run_in_process(cli_args(data, vocab, model_dir, 20, "--noexport"))
    assert second.returncode == 0, second.stderr[-3000:]
    newest = model_dir / "checkpoints" / "ckpt-20.data-00000-of-00001"
    newest.write_bytes(newest.read_bytes()[: newest.stat().st_size // 2])
    resumed = run_in_process(cli_args(data, vocab, model_dir, 30, "--noexport"))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    checkpoints = model_dir / "checkpoints"
    assert (f"{checkpoints / 'ckpt-20'} cannot be read (" in resumed.stderr
            and f"resuming from {checkpoints / 'ckpt-10'}, the newest checkpoint that reads"
            in resumed.stderr), resumed.stderr[-3000:]
    assert f"resuming from {checkpoints / 'ckpt-10'} at step 10" in resumed.stderr
    assert (checkpoints / "ckpt-30.index").exists()

    for name in ("ckpt-10.index", "ckpt-20.index", "ckpt-30.index"):
        index = checkpoints / name
        index.write_bytes(index.read_bytes()[: index.stat().st_size // 2])
    before = _snapshot(checkpoints)
    config = (model_dir / "config.yaml").read_text()
    error, _ = _run_refused(cli_args(data, vocab, model_dir, 40, "--noexport"))
    assert error.startswith(f"error: no checkpoint in {checkpoints} can be read: ckpt-30: "), error
    assert "; ckpt-20: " in error and "; ckpt-10: " in error and "Nothing was deleted" in error
    assert _snapshot(checkpoints) == before
    # config.yaml is written once a checkpoint restored: it still describes the 30-step run
    assert (model_dir / "config.yaml").read_text() == config and "train_steps: 30" in config


def test_a_run_directory_in_use_is_refused_naming_its_holder(fixture_data, tmp_path):
    """A second run on a directory a live process holds: one line naming that process, and
    nothing written (the holder's lock left as it was)."""
    data, vocab = fixture_data
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        model_dir = tmp_path / "model"
        model_dir.mkdir()
        lock = model_dir / "run.lock"
        lock.write_text(json.dumps({"host": socket.gethostname(), "pid": holder.pid,
                                    "started": "2026-12-06T09:00:00"}))
        before = _snapshot(model_dir)
        error, _ = _run_refused(cli_args(data, vocab, model_dir, 20, "--noexport"))
        assert _snapshot(model_dir) == before
    finally:
        holder.kill()
        holder.wait()
    assert error.startswith(f"error: {model_dir} is in use by process {holder.pid} on "
                            f"{socket.gethostname()}, since 2026-12-06T09:00:00 (its lock: {lock})"
                            ), error


@pytest.mark.slow
def test_a_second_run_started_on_a_running_ones_directory_is_refused(fixture_data, tmp_path):
    """Two processes on one --model_dir half a second apart: the second, with another
    learning rate, is refused naming the first; the first finishes, and config.yaml is its own."""
    data, vocab = fixture_data
    model_dir = tmp_path / "model"
    first = subprocess.Popen(
        [sys.executable, "-m", "electra_tf.run_pretraining",
         *cli_args(data, vocab, model_dir, 60, "--noexport")],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    try:
        deadline = time.time() + 120
        while not (model_dir / "run.lock").exists():
            assert first.poll() is None and time.time() < deadline, "the first run did not start"
            time.sleep(0.05)
        error, _ = _run_refused(cli_args(data, vocab, model_dir, 60, "--noexport", "--override",
                                         "optimizer.learning_rate=1e-3"))
        _, stderr = first.communicate(timeout=300)
    finally:
        first.kill()
    assert error.startswith(f"error: {model_dir} is in use by process {first.pid} on "), error
    assert first.returncode == 0, stderr[-3000:]
    assert "learning_rate: 0.0005" in (model_dir / "config.yaml").read_text()
    assert not (model_dir / "run.lock").exists()


@pytest.mark.slow
def test_max_seq_length_above_max_positions(fixture_data, model_dir):
    data, vocab = fixture_data
    error, _ = _refused_keeping(
        model_dir, cli_args(data, vocab, model_dir, 20, "--override", "run.max_seq_length=128",
                            "--override", "model.max_position_embeddings=64"), whole_dir=True)
    assert "max_seq_length 128" in error and "max_position_embeddings 64" in error, error


@pytest.mark.slow
def test_model_dir_of_a_different_config(fixture_data, model_dir):
    data, vocab = fixture_data
    error, _ = _refused_keeping(
        model_dir, cli_args(data, vocab, model_dir, 20, "--override", "model.hidden_size=48",
                            "--override", "model.num_heads=2"), whole_dir=True)
    assert "different config" in error and "model.hidden_size" in error, error
    assert str(model_dir) in error


# ---- training ------------------------------------------------------------------------------


@pytest.mark.slow
def test_non_finite_loss_stops_and_keeps_the_last_good_checkpoint(fixture_data, model_dir):
    """Resumed from ckpt-10 with a learning rate of 1e30: the loss blows up within a few steps."""
    data, vocab = fixture_data
    error, output = _refused_keeping(
        model_dir, cli_args(data, vocab, model_dir, 20, "--override",
                            "optimizer.learning_rate=1e30"))
    assert "resuming from" in output
    assert "non-finite" in error and "ckpt-10" in error, error
    assert not (model_dir / "export").exists()


def test_accumulation_steps_that_do_not_divide_the_batch(fixture_data, tmp_path):
    data, vocab = fixture_data
    model_dir = tmp_path / "model"
    error, _ = _run_refused(cli_args(data, vocab, model_dir, 20, "--override",
                                     "run.gradient_accumulation_steps=3"))
    assert ("run.gradient_accumulation_steps 3 does not divide the batch: "
            "run.train_batch_size 8 must be a multiple of 3") in error, error
    assert not model_dir.exists()


@pytest.mark.parametrize("overrides, expected", [
    (["run.initial_train_batch_size=3", "run.batch_growth_steps=10"],
     "run.initial_train_batch_size 3 must be a multiple of the micro-batch (2: "
     "run.train_batch_size 8 / run.gradient_accumulation_steps 4)"),
    (["run.initial_train_batch_size=2", "run.batch_growth_steps=30"],
     "run.batch_growth_steps 30 is beyond optimizer.train_steps 20"),
    (["objective.mask_prob=1.5"], "objective.mask_prob must be in (0, 1), got 1.5"),
    (["objective.mask_prob=-0.1"], "objective.mask_prob must be in (0, 1), got -0.1"),
    (["optimizer.schedule=one_cycle", "optimizer.warmup_steps=20"],
     "optimizer.schedule one_cycle peaks at optimizer.warmup_steps, which must be between 0 "
     "and optimizer.train_steps (20), got 20"),
])
def test_small_budget_levers_with_bad_values_are_refused_in_one_line(fixture_data, tmp_path,
                                                                     overrides, expected):
    """A growing batch that does not divide into micro-batches (or still grows at the end),
    a masking rate outside (0, 1), a one-cycle schedule that ends before its peak."""
    data, vocab = fixture_data
    model_dir = tmp_path / "model"
    args = cli_args(data, vocab, model_dir, 20, "--override", "run.gradient_accumulation_steps=4")
    for override in overrides:
        args += ["--override", override]
    error, _ = _run_refused(args)
    assert expected in error, error
    assert not model_dir.exists()


def test_cpu_chains_that_do_not_divide_the_batch(fixture_data, tmp_path, monkeypatch):
    # As `--cpu_chains 3` leaves it, without changing this process's intra-op threads.
    from electra_tf.models.replicated import ReplicatedModel

    monkeypatch.setattr(ReplicatedModel, "parallel_chains", 3)
    data, vocab = fixture_data
    model_dir = tmp_path / "model"
    error, _ = _run_refused(cli_args(data, vocab, model_dir, 20))
    assert ("--cpu_chains 3 does not divide each micro-batch: run.train_batch_size 8 "
            "(gradient_accumulation_steps 1) must be a multiple of 3") in error, error
    assert not model_dir.exists()
