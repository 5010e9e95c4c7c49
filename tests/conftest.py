"""Session setup: quiet TensorFlow tuned as the commands tune it, two logical CPU devices for the
MirroredStrategy tests."""

import collections
import importlib
import os
import signal
import socket

import pytest

import electra_tf  # noqa: E402

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# The suite runs TensorFlow as the commands do: tuned for the CPU before it starts.
electra_tf.tune_cpu()

import tensorflow as tf  # noqa: E402  (after the log level and the CPU's settings)

# Must happen before TensorFlow initialises its devices, i.e. before any test runs an op.
tf.config.set_logical_device_configuration(
    tf.config.list_physical_devices("CPU")[0], [tf.config.LogicalDeviceConfiguration()] * 2)
# TensorFlow's runtime started now, whichever test comes first: the entry points' default
# `--cpu_chains 0`, run in this process, then keeps one chain and the session's intra-op threads
# (two chains picked by a first test would last for the rest of the session).
tf.zeros(())


def pytest_configure(config):
    # pytest-xdist's `--dist loadfile` hands out the files with the most tests first, which left
    # the long files of one or two tests (Bazel, the wheel, the soak) to the end, one worker
    # running them while the other idled. It keeps the order below instead.
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


# The file of the longest test (the docs run, about a third of one worker's time): started first,
# so that the other worker's files even out around it rather than wait for it at the end.
LONGEST_FILE = "tests/test_docs_run.py"


def pytest_collection_modifyitems(config, items):
    """LONGEST_FILE first, then the files with tests marked slow, those with the most of them
    first, then the files of fast tests only, whose many short tests even out the two workers'
    last minutes. Within a file the order stays."""
    def file_of(item):
        return item.nodeid.split("::", 1)[0]

    slow = collections.Counter(file_of(item) for item in items if item.get_closest_marker("slow"))
    first_seen = {name: i for i, name in enumerate(dict.fromkeys(map(file_of, items)))}
    items.sort(key=lambda item: (file_of(item) != LONGEST_FILE, -slow[file_of(item)],
                                 first_seen[file_of(item)]))


def require(module_name):
    """Imports a test-only dependency: skipped locally if absent, a failure under CI."""
    try:
        return importlib.import_module(module_name)
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail(f"{module_name} is required in CI (pip install -r requirements-dev.txt)")
        pytest.skip(f"{module_name} is not installed")


@pytest.fixture(scope="session")
def plain_export(tmp_path_factory):
    """plain_export(name) -> the directory of the float32, uncompiled SavedModel of
    tests.test_export_xla.exporter_of(name)'s tiny model, written once a session: the export
    that the compiled, bfloat16 and transposed exports of the same model are compared with."""
    from tests.test_export_xla import exporter_of

    written = {}

    def directory(name):
        if name not in written:
            written[name] = exporter_of(name)(str(tmp_path_factory.mktemp(f"plain_{name}")), False)
        return written[name]
    return directory


@pytest.fixture
def no_network(monkeypatch):
    """Any connection attempt fails (TFDS mock tests must never download)."""
    def refuse(*args, **kwargs):
        raise OSError("tests must not touch the network")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture(autouse=True)
def sigterm_handler_restored():
    """pretrain() and finetune() install a SIGTERM handler (preemption: save and stop) and leave
    it in place: put the session's back after each test, or SIGTERM would no longer stop it."""
    handler = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, handler)
