"""A SavedModel version appears whole or not at all: `export.staging.write_staged`, used by
export_savedmodel, the pretraining run's final export and every fine-tuning trial's."""

import os
import subprocess
import sys

import pytest

from electra_tf.export.staging import write_staged


def _write_files(directory, text="new"):
    os.makedirs(directory)
    with open(os.path.join(directory, "saved_model.pb"), "w") as f:
        f.write(text)


def _dead_pid():
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_the_version_is_written_aside_then_renamed_into_place(tmp_path):
    seen_while_writing = []

    def write(directory):
        _write_files(directory)
        seen_while_writing.append(sorted(os.listdir(tmp_path / "export")))
        assert not os.path.basename(directory).isdigit()  # a name TF Serving skips

    target = str(tmp_path / "export" / "7")
    assert write_staged(target, write) == target
    assert seen_while_writing == [[f".tmp-7-{os.getpid()}"]]  # no "7" before it was complete
    assert os.listdir(tmp_path / "export") == ["7"]
    assert (tmp_path / "export" / "7" / "saved_model.pb").read_text() == "new"


def test_a_failed_write_leaves_neither_the_version_nor_its_staging(tmp_path):
    _write_files(tmp_path / "export" / "7", "old")

    def write(directory):
        _write_files(directory)
        raise RuntimeError("killed mid-write")

    with pytest.raises(RuntimeError):
        write_staged(str(tmp_path / "export" / "8"), write)
    assert os.listdir(tmp_path / "export") == ["7"]
    write_staged(str(tmp_path / "export" / "7"), _write_files)  # replaces a version whole
    assert (tmp_path / "export" / "7" / "saved_model.pb").read_text() == "new"


def test_the_next_export_removes_what_killed_exports_left(tmp_path):
    base = tmp_path / "export"
    dead, alive = _dead_pid(), os.getppid()
    for name in (f".tmp-5-{dead}", f".tmp-9-{alive}", f".tmp-6-{alive}", "3"):
        _write_files(base / name)
    write_staged(str(base / "6"), _write_files)
    # the dead process's and this version's leftovers go; a live export and versions stay
    assert sorted(os.listdir(base)) == sorted(["3", "6", f".tmp-9-{alive}"])


def test_a_full_disk_is_one_error_and_leaves_no_staging(tmp_path):
    import tensorflow as tf

    from electra_tf.errors import DiskFullError

    def write(directory):
        _write_files(directory)
        raise tf.errors.ResourceExhaustedError(
            None, None, f"{directory}/variables/variables.data; No space left on device")

    with pytest.raises(DiskFullError, match=r"the disk is full: cannot write the SavedModel "
                                            r".*export/7 \(on the disk of .*export, [0-9.]+ MiB "
                                            r"free\); removed the partial export"):
        write_staged(str(tmp_path / "export" / "7"), write)
    assert os.listdir(tmp_path / "export") == []
