"""Errors the user caused, and the one way the entry points report them.

Every error raised for a flag, a file, a config or data the user gave derives from `UserError`.
The command-line entry points print it as a single `error: <message>` line on stderr and exit
with status 1, without a traceback; Python callers (`electra_tf.pretrain`, notebooks) catch it
like any exception. It stays a `ValueError`, which is what these errors were before.
"""

from __future__ import annotations

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


def exit_on_user_error(run: Callable[[], int]) -> int:
    """Returns `run()`; a `UserError` ends the process with `error: <message>` instead."""
    try:
        return run()
    except UserError as e:
        sys.exit(f"error: {e}")
