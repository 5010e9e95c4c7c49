"""One writer per run directory (`electra_tf.run_lock`): a live holder refuses, a dead local
one is taken over, another host's is refused with what to delete, and a release never removes
another process's lock."""

import json
import os
import socket
import subprocess
import sys

import pytest
from absl import logging

from electra_tf import run_lock
from electra_tf.errors import RunError


def _lock(directory, host, pid):
    os.makedirs(directory, exist_ok=True)
    holder = {"host": host, "pid": pid, "started": "2026-12-06T09:00:00"}
    with open(os.path.join(directory, run_lock.LOCK), "w") as f:
        json.dump(holder, f)
    return holder


@pytest.fixture
def live_process():
    """A process of this host that is running for the test's length."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    yield process.pid
    process.kill()
    process.wait()


@pytest.fixture
def dead_pid():
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_the_lock_names_its_holder_and_goes_with_the_block(tmp_path):
    directory = str(tmp_path / "run")
    with run_lock.hold(directory) as path:
        holder = run_lock.read_holder(path)
        assert (holder["host"], holder["pid"]) == (socket.gethostname(), os.getpid())
        assert os.listdir(directory) == [run_lock.LOCK]  # its draft is gone
        (tmp_path / "run" / "config.yaml").write_text("")
    assert os.listdir(directory) == ["config.yaml"]


def test_a_directory_the_lock_made_goes_with_it_when_nothing_was_written(tmp_path):
    directory = tmp_path / "run"
    with pytest.raises(RuntimeError):
        with run_lock.hold(str(directory)):
            raise RuntimeError("refused before writing")
    assert not directory.exists()
    (tmp_path / "kept").mkdir()
    with run_lock.hold(str(tmp_path / "kept")):
        pass
    assert (tmp_path / "kept").exists()  # it was there before


def test_a_live_holder_refuses_the_second_writer_and_keeps_its_lock(tmp_path, live_process):
    directory = str(tmp_path)
    holder = _lock(directory, socket.gethostname(), live_process)
    with pytest.raises(RunError, match=rf"is in use by process {live_process} on "
                                       rf"{socket.gethostname()}, since 2026-12-06T09:00:00"):
        run_lock.acquire(directory)
    assert run_lock.read_holder(run_lock.lock_file(directory)) == holder
    run_lock.release(directory)  # not ours: left alone
    assert run_lock.read_holder(run_lock.lock_file(directory)) == holder


def test_a_dead_local_holder_is_taken_over_with_a_warning(tmp_path, dead_pid, monkeypatch):
    directory = str(tmp_path)
    _lock(directory, socket.gethostname(), dead_pid)
    warnings = []
    monkeypatch.setattr(logging, "warning", lambda fmt, *args: warnings.append(fmt % args))
    with run_lock.hold(directory) as path:
        assert run_lock.read_holder(path)["pid"] == os.getpid()
    assert warnings == [f"{directory} was locked by process {dead_pid} on "
                        f"{socket.gethostname()}, since 2026-12-06T09:00:00, which is no longer "
                        "running; taking it over"]


def test_another_hosts_lock_is_refused_with_the_file_to_delete(tmp_path, dead_pid):
    """A pid of another machine says nothing about this one's processes: never taken over."""
    directory = str(tmp_path)
    _lock(directory, "another-host", dead_pid)
    lock = run_lock.lock_file(directory)
    with pytest.raises(RunError, match=f"on another-host.*delete {lock}"):
        run_lock.acquire(directory)


def test_this_process_may_take_its_own_lock_again(tmp_path):
    """A notebook that runs twice in a row in one directory (the first run's lock left by an
    interrupted cell) is the same writer."""
    directory = str(tmp_path)
    _lock(directory, socket.gethostname(), os.getpid())
    assert run_lock.acquire(directory) == run_lock.lock_file(directory)
    run_lock.release(directory)
    assert not os.path.exists(run_lock.lock_file(directory))


def test_an_unreadable_lock_is_not_taken_over(tmp_path):
    lock = tmp_path / run_lock.LOCK
    lock.write_text("half a lo")
    with pytest.raises(RunError, match="is in use by process None on \\?"):
        run_lock.acquire(str(tmp_path))
    assert lock.read_text() == "half a lo"


def test_process_running_reads_pids_of_either_type(live_process, dead_pid):
    assert run_lock.process_running(live_process) and run_lock.process_running(str(live_process))
    assert not run_lock.process_running(dead_pid) and not run_lock.process_running(str(dead_pid))
    assert run_lock.process_running("not-a-pid")  # unknown: assumed running, never removed
