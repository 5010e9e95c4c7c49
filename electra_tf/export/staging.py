"""Writing a SavedModel version so that no one ever sees it half-written.

TF Serving polls a model's base directory and loads every directory whose name is a number. A
version is written next to its target under a name the server ignores (`.tmp-<version>-<pid>`,
not a number) and renamed into place once complete; a killed export leaves only such a
directory, which the next export into the same base directory removes.
"""

from __future__ import annotations

import os
from typing import Any, Callable

import tensorflow as tf

from electra_tf.errors import disk_full_error, is_disk_full
from electra_tf.run_lock import process_running

STAGING_PREFIX = ".tmp-"


def write_staged(target: str, write: Callable[[str], Any]) -> str:
    """Calls `write(staging_dir)`, then renames the staging directory to `target` (replacing an
    existing `target`); returns `target`. A full disk raises DiskFullError, the partial staging
    directory removed. Staging directories that killed exports left in
    target's base directory (their process gone) are removed first, this version's always."""
    base, version = os.path.split(target.rstrip("/"))
    tf.io.gfile.makedirs(base)
    _remove_leftovers(base, version)
    staging = os.path.join(base, f"{STAGING_PREFIX}{version}-{os.getpid()}")
    try:
        try:
            write(staging)
        except (tf.errors.OpError, OSError) as e:
            if not is_disk_full(e):
                raise
            raise disk_full_error(f"the SavedModel {target}", base,
                                  "removed the partial export; the run's checkpoints are kept: "
                                  "free some space and export again") from None
        if tf.io.gfile.exists(target):
            tf.io.gfile.rmtree(target)
        tf.io.gfile.rename(staging, target)
    finally:
        if tf.io.gfile.exists(staging):
            tf.io.gfile.rmtree(staging)
    return target


def _remove_leftovers(base: str, version: str) -> None:
    for name in tf.io.gfile.listdir(base):
        name = name.rstrip("/")
        if not name.startswith(STAGING_PREFIX):
            continue
        left_version, _, pid = name[len(STAGING_PREFIX):].rpartition("-")
        if left_version == version or not process_running(pid):
            tf.io.gfile.rmtree(os.path.join(base, name))
