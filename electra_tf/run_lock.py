"""One writer per run directory: a lock file naming the process that holds it.

    with run_lock.hold(model_dir):
        ...  # train, checkpoint, export

`run.lock` in the directory holds the holder's host, pid and start time. It is created whole
(written to a file of its own, then hard-linked into place, which fails if one is there), so a
second process never sees a half-written lock and two starting together cannot both win. A
second process on a directory in use stops with a `RunError` naming the holder. A lock left by
a process that is gone (killed: no `finally` ran) is taken over with a log line, when that
process was on this host; a lock of another host cannot be checked from here, and the error
says to delete it once that run is known to be over.

On object stores (gs://, s3://) there is no atomic create: the lock is checked, then written,
which keeps out a second run started later, not one started in the same instant.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import socket

import tensorflow as tf
from absl import logging

from electra_tf import run_directory
from electra_tf.errors import RunError

LOCK = run_directory.RUN_LOCK
lock_file = run_directory.lock_file


@contextlib.contextmanager
def hold(directory: str):
    """Holds `directory`'s lock for the block; RunError if another live process holds it. A
    directory the lock created is removed after if nothing else was written to it (a run
    refused before it wrote leaves no trace)."""
    created = not tf.io.gfile.isdir(directory)
    path = acquire(directory)
    try:
        yield path
    finally:
        release(directory)
        if created and not tf.io.gfile.listdir(directory):
            tf.io.gfile.rmtree(directory)


def acquire(directory: str) -> str:
    """Takes the lock (taking over a dead local holder's); returns the lock file's path."""
    tf.io.gfile.makedirs(directory)
    path = lock_file(directory)
    me = {"host": socket.gethostname(), "pid": os.getpid(),
          "started": datetime.datetime.now().isoformat(timespec="seconds")}
    for _ in range(3):  # a takeover raced by another process: look again
        if _create(path, me):
            return path
        holder = read_holder(path)
        if holder is None:
            continue  # released between our try and our read
        if _is_me(holder):
            return path  # this process, again (a second run in a row from one notebook)
        if holder.get("host") != me["host"] or process_running(holder.get("pid")):
            raise RunError(f"{directory} is in use by {describe(holder)} (its lock: {path}). "
                           "One run at a time writes a run directory: wait for that one to end, "
                           "or use another --model_dir; if it is over (its machine gone), "
                           f"delete {path}. Nothing was changed.")
        logging.warning("%s was locked by %s, which is no longer running; taking it over",
                        directory, describe(holder))
        _remove_if_unchanged(path, holder)
    raise RunError(f"cannot take the lock {path}: other processes keep taking it")


def release(directory: str) -> None:
    """Removes the lock if this process holds it (a takeover by another one is left alone)."""
    path = lock_file(directory)
    holder = read_holder(path)
    if holder is not None and _is_me(holder):
        _remove_if_unchanged(path, holder)


def read_holder(path: str) -> dict | None:
    """The lock's holder ({"host", "pid", "started"}); None when there is no lock."""
    try:
        with tf.io.gfile.GFile(path) as f:
            text = f.read()
    except tf.errors.NotFoundError:
        return None
    try:
        holder = json.loads(text)
    except json.JSONDecodeError:
        holder = None
    if not isinstance(holder, dict):
        return {"host": "?", "pid": None, "started": "?", "unreadable": text[:80]}
    return holder


def describe(holder: dict) -> str:
    return f"process {holder.get('pid')} on {holder.get('host')}, since {holder.get('started')}"


def _is_local(path: str) -> bool:
    return "://" not in path


def _create(path: str, holder: dict) -> bool:
    """Writes the lock if there is none; whether this call wrote it."""
    text = json.dumps(holder) + "\n"
    if not _is_local(path):
        if tf.io.gfile.exists(path):
            return False
        with tf.io.gfile.GFile(path, "w") as f:
            f.write(text)
        return True
    draft = f"{path}.{holder['pid']}"
    with open(draft, "w") as f:
        f.write(text)
    try:
        os.link(draft, path)  # atomic: fails when a lock is there
        return True
    except FileExistsError:
        return False
    finally:
        os.remove(draft)


def _remove_if_unchanged(path: str, holder: dict) -> None:
    if read_holder(path) == holder:
        with contextlib.suppress(tf.errors.NotFoundError):
            tf.io.gfile.remove(path)


def _is_me(holder: dict) -> bool:
    return holder.get("host") == socket.gethostname() and holder.get("pid") == os.getpid()


def process_running(pid: int | str | None) -> bool:
    """Whether a process of this id runs on this host (an unreadable id: assumed so)."""
    if isinstance(pid, str) and pid.isdigit():
        pid = int(pid)
    if not isinstance(pid, int):
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
