"""`electra_tf.errors`: which failures are a full disk, and the one line that says so."""

import errno

import pytest
import tensorflow as tf

from electra_tf.errors import DiskFullError, disk_full_error, is_disk_full


@pytest.mark.parametrize("error", [
    OSError(errno.ENOSPC, "No space left on device"),
    OSError(errno.EDQUOT, "Disk quota exceeded"),
    tf.errors.ResourceExhaustedError(None, None, "x.data; No space left on device"),
    tf.errors.UnknownError(None, None, "Failed to flush: Disk quota exceeded"),
])
def test_full_disks_and_quotas_are_recognised(error):
    assert is_disk_full(error)


@pytest.mark.parametrize("error", [
    OSError(errno.EACCES, "Permission denied"),
    tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor"),
    ValueError("no space"),
])
def test_other_failures_are_not_a_full_disk(error):
    assert not is_disk_full(error)


def test_the_error_names_what_where_and_the_space_left(tmp_path):
    error = disk_full_error("checkpoint x/ckpt-3", str(tmp_path), "removed its files")
    assert isinstance(error, DiskFullError)
    assert str(error).startswith(f"the disk is full: cannot write checkpoint x/ckpt-3 (on the "
                                 f"disk of {tmp_path}, ")
    assert str(error).endswith(" MiB free); removed its files")
    gone = disk_full_error("y", str(tmp_path / "gone"), "z")  # no such path: no space figure
    assert str(gone) == f"the disk is full: cannot write y (on the disk of {tmp_path / 'gone'}); z"
