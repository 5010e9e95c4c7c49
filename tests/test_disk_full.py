"""A full disk is one clear error: on a real small disk (a tmpfs mounted for the test), a
pretraining run, the dataset builder and an export each stop with one `error:` line that says
the disk is full, remove their own partial files and keep what was complete; a pretraining
rerun after space is freed resumes from the last complete checkpoint to the same variables as
a run that never failed.

Mounting needs root (as on this project's CI machines); elsewhere these tests are skipped,
saying why. The checks that need no mount (which errors are a full disk, the line's wording,
the export's staging) are in tests/test_errors.py and tests/test_export_staging.py."""

import contextlib
import os
import subprocess

import numpy as np
import pytest
import tensorflow as tf

from tests.run_helpers import cli_args, run_cli, run_in_process, write_records, write_vocab

pytestmark = pytest.mark.slow


@contextlib.contextmanager
def small_disk(path, size_kib):
    """A tmpfs of `size_kib` KiB mounted at `path`; yields a function that resizes it."""
    os.makedirs(path)

    def mount(*options):
        return subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(options), "tmpfs",
                               str(path)], capture_output=True, text=True)

    if os.geteuid() != 0 or mount(f"size={size_kib}k").returncode != 0:
        pytest.skip("mounting a small tmpfs needs root (a real full disk is the subject)")
    try:
        yield lambda kib: subprocess.run(["mount", "-o", f"remount,size={kib}k", str(path)],
                                         check=True)
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _error_lines(result):
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output[-4000:]
    return [line for line in output.splitlines() if line.startswith("error:")]


def _all_variables(checkpoint):
    reader = tf.train.load_checkpoint(checkpoint)
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if not name.startswith("_CHECKPOINTABLE_OBJECT_GRAPH")}


def test_a_pretraining_run_on_a_full_disk_stops_cleanly_and_resumes_exactly(tmp_path):
    data = write_records(tmp_path / "records")
    vocab = write_vocab(tmp_path / "vocab.txt")
    steps, flags = 40, ("--deterministic", "--noexport")
    straight = run_cli(cli_args(data, vocab, tmp_path / "straight", steps, *flags))
    assert straight.returncode == 0, straight.stderr[-3000:]
    one_checkpoint = sum(os.path.getsize(tmp_path / "straight" / "checkpoints" / name)
                         for name in os.listdir(tmp_path / "straight" / "checkpoints")
                         if name.startswith("ckpt-10."))
    # Room for two checkpoints (steps 10 and 20) and the events, not for the third.
    with small_disk(tmp_path / "disk", int(2.5 * one_checkpoint / 1024) + 64) as resize:
        run_dir = tmp_path / "disk" / "run"
        checkpoints = run_dir / "checkpoints"
        full = run_cli(cli_args(data, vocab, run_dir, steps, *flags))
        assert full.returncode == 1, full.stderr[-3000:]
        [error] = _error_lines(full)
        assert error.startswith(f"error: the disk is full: cannot write checkpoint "
                                f"{checkpoints / 'ckpt-30'} (on the disk of {checkpoints}, "), error
        assert (f"removed its partial files. The last complete checkpoint is "
                f"{checkpoints / 'ckpt-20'}: free some space and run again") in error, error
        assert sorted(os.listdir(checkpoints)) == [
            "checkpoint", "ckpt-10.data-00000-of-00001", "ckpt-10.index",
            "ckpt-20.data-00000-of-00001", "ckpt-20.index"]  # nothing of ckpt-30, no _temp
        assert not (run_dir / "run.lock").exists()

        resize(64 * 1024)
        resumed = run_cli(cli_args(data, vocab, run_dir, steps, *flags))
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert f"resuming from {checkpoints / 'ckpt-20'} at step 20" in resumed.stderr
        actual = _all_variables(str(checkpoints / f"ckpt-{steps}"))
    expected = _all_variables(str(tmp_path / "straight" / "checkpoints" / f"ckpt-{steps}"))
    assert sorted(actual) == sorted(expected)
    assert any(name.startswith("optimizer/") for name in expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(actual[name], value, err_msg=name)


def test_the_dataset_builder_on_a_full_disk_removes_its_shards(tmp_path):
    corpus = tmp_path / "corpus.txt"
    rng = np.random.default_rng(0)
    with open(corpus, "w") as f:  # about 2 MB of records at length 128: far over the disk
        for document in range(400):
            for _ in range(10):
                f.write(" ".join(f"w{i}" for i in rng.integers(0, 100, 40)) + "\n")
            f.write("\n")
    vocab = write_vocab(tmp_path / "vocab.txt")
    with small_disk(tmp_path / "disk", 256):
        output = tmp_path / "disk" / "records"
        result = run_in_process(["--corpus", corpus, "--vocab_file", vocab, "--output_dir", output,
                                 "--max_seq_length", "128", "--num_processes", "1"],
                                module="electra_tf.build_pretraining_dataset")
        assert result.returncode == 1, result.stderr[-3000:]
        [error] = _error_lines(result)
        assert error.startswith(f"error: the disk is full: cannot write the shards in {output}"), \
            error
        assert "removed the shards this build wrote; free some space and run it again" in error
        assert not output.exists() or os.listdir(output) == []


def test_an_export_on_a_full_disk_leaves_no_version_and_no_staging(tmp_path):
    from electra_tf.errors import DiskFullError
    from electra_tf.export import export_discriminator
    from electra_tf.export.staging import write_staged
    from electra_tf.models import build_pretrainer
    from tests.models.helpers import objective, tiny_model_config

    model = build_pretrainer(tiny_model_config(), objective())
    model.discriminator_logits(np.ones((1, 8), np.int32), np.ones((1, 8), np.int32),
                               np.zeros((1, 8), np.int32))
    with small_disk(tmp_path / "disk", 64):
        base = tmp_path / "disk" / "export"
        os.makedirs(base / "3")  # an earlier version, kept
        with pytest.raises(DiskFullError, match=rf"the disk is full: cannot write the "
                                                rf"SavedModel {base / '7'} .*removed the partial "
                                                "export"):
            write_staged(str(base / "7"), lambda staging: export_discriminator(model, staging))
        assert os.listdir(base) == ["3"]
