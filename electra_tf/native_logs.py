"""TensorFlow's C++ log lines: kept out of the console by the commands and by `tune_cpu()`.

Without a GPU TensorFlow logs, from C++, its CUDA probing ("failed call to cuInit"), oneDNN's
notes (and "oneDNN supports DT_INT64 only on platforms with AVX-512", printed on CPUs that
have it, when Keras' `take_along_axis` transposes int64 indices), XLA's start-up and
tf.data's notes: nothing a user can act on. `quiet_native_logs()` sets TF_CPP_MIN_LOG_LEVEL=3
(fatal only) where the environment does not set it, and runs the first `import tensorflow`
with file descriptor 2 silenced: since TensorFlow 2.19 the lines its libraries log while they
load ignore TF_CPP_MIN_LOG_LEVEL (tensorflow/tensorflow#100442). Real failures still reach the
user as Python exceptions. TF_CPP_MIN_LOG_LEVEL=0 in the environment brings every line back.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import os
import sys

VARIABLE = "TF_CPP_MIN_LOG_LEVEL"
# 3 (fatal only), not 2: without a GPU TensorFlow logs its CUDA probing failure and oneDNN's
# int64 fallback at ERROR level.
QUIET_LEVEL = "3"


def quiet_native_logs(environ=os.environ, modules=sys.modules, meta_path=sys.meta_path) -> None:
    """TF_CPP_MIN_LOG_LEVEL=3 in `environ` unless set there, and, while TensorFlow is not
    imported yet (in `modules`) and the level asks for fewer lines than all, its import
    silenced (a finder put first in `meta_path`)."""
    environ.setdefault(VARIABLE, QUIET_LEVEL)
    if native_log_level(environ) > 0:
        silence_tensorflow_import(modules, meta_path)


def native_log_level(environ=os.environ) -> int:
    try:
        return int(environ.get(VARIABLE, "0"))
    except ValueError:
        return 0


def silence_tensorflow_import(modules=sys.modules, meta_path=sys.meta_path) -> None:
    """Runs the first `import tensorflow`, wherever it happens, with fd 2 silenced (once)."""
    if "tensorflow" not in modules and not any(
            isinstance(finder, _QuietTensorFlowImport) for finder in meta_path):
        meta_path.insert(0, _QuietTensorFlowImport(meta_path))


@contextlib.contextmanager
def native_stderr_silenced():
    """Sends what C++ code writes to file descriptor 2 to /dev/null inside the block."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


class _QuietTensorFlowImport(importlib.abc.MetaPathFinder):
    """Runs the first `import tensorflow` with fd 2 silenced. An import that fails still
    raises."""

    def __init__(self, meta_path):
        self._meta_path = meta_path

    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow":
            return None
        self._meta_path.remove(self)  # once; and find_spec below asks the other finders
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            exec_module = spec.loader.exec_module

            def exec_module_quietly(module):
                with native_stderr_silenced():
                    exec_module(module)

            spec.loader.exec_module = exec_module_quietly
        return spec
