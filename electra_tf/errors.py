"""Errors the user caused, and the one way the entry points report them.

Every error raised for a flag, a file, a config or data the user gave derives from `UserError`.
The command-line entry points print it as a single `error: <message>` line on stderr and exit
with status 1, without a traceback; Python callers (`electra_tf.pretrain`, notebooks) catch it
like any exception. It stays a `ValueError`, which is what these errors were before.
"""

from __future__ import annotations

import errno
import shutil
import sys
from typing import Callable


class UserError(ValueError):
    """An input that cannot work as given; the message says what to change."""


class CheckpointError(UserError):
    """A checkpoint that does not fit the model being trained, or a path that holds no model
    (defined here, below `electra_tf.run_directory` and `electra_tf.training.checkpointing`,
    which both raise it; import it from either)."""


class RunError(UserError):
    """A run (pretraining or fine-tuning) that cannot start as asked."""


class DiskFullError(UserError):
    """A write that ran out of space; the message says what was removed and what is kept."""


# errno 28, as TensorFlow's file systems spell it in their OpErrors, and the quota's (122).
_DISK_FULL_TEXTS = ("No space left on device", "Disk quota exceeded")


def is_disk_full(error: BaseException) -> bool:
    """Whether `error` (an OSError, or a TensorFlow OpError that carries the OS's message) says
    the disk or the quota is full."""
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return any(text in str(error) for text in _DISK_FULL_TEXTS)


def disk_full_error(what: str, where: str, done: str) -> DiskFullError:
    """The one error of a write that ran out of space: `what` could not be written, on `where`'s
    disk (with the space left there), and `done` (what was removed, what is kept)."""
    try:
        free = f", {shutil.disk_usage(where).free / 2**20:.1f} MiB free"
    except OSError:  # a remote path, or one that is gone
        free = ""
    return DiskFullError(f"the disk is full: cannot write {what} (on the disk of {where}{free}); "
                         f"{done}")


def exit_on_user_error(run: Callable[[], int]) -> int:
    """Returns `run()`; a `UserError` ends the process with `error: <message>` instead."""
    try:
        return run()
    except UserError as e:
        sys.exit(f"error: {e}")
