"""What the entry points print: the project's own lines by default, the libraries' with -v 1.

TensorFlow prints start-up lines from C++ when it loads (oneDNN notices, CUDA probing,
cpu_feature_guard) and notes through Python logging and warnings (SavedModel and checkpoint
housekeeping, Keras' "`shuffle=True` was passed, but will be ignored") that are about this
project's code, not about the user's run. Each entry point calls `setup(__name__)` before
anything imports TensorFlow (which also tunes TensorFlow for the CPU, `electra_tf.tune_cpu`):

    from electra_tf import console

    console.setup(__name__)

absl's --verbosity (-v) decides:
  0 (default): the project's lines (progress with ETA, held-out metrics, checkpoints) and every
     warning or error of ours; from TensorFlow and Keras, their errors and tracebacks only.
  1 and up: also everything TensorFlow and Keras print, as if this module were not there.
  -1: warnings and errors only.
A TF_CPP_MIN_LOG_LEVEL in the environment still decides TensorFlow's C++ lines.
"""

from __future__ import annotations

import functools
import logging as python_logging
import os
import re
import sys
import warnings

from absl import app, flags, logging

from electra_tf import cpu_tuning, native_logs

VERBOSE = 1  # --verbosity from which the libraries' own lines are shown
# Their Python log records below ERROR and their warnings are dropped below VERBOSE. (Not
# tensorflow_datasets: its download and preparation lines are progress the user waits for.)
LIBRARIES = ("tensorflow", "keras", "keras_hub", "tensorflow_text", "tf_keras", "h5py")
_LIBRARY_NAMES = "|".join(LIBRARIES)
_LIBRARY_FILE = re.compile(rf"[/\\](?:site|dist)-packages[/\\](?:{_LIBRARY_NAMES})[/\\]")
_LIBRARY_MODULE = rf"(?:{_LIBRARY_NAMES})(?:\.|$)"  # for warnings' module= (re.match)
VERBOSITY_HELP = ("What is printed. 0: this project's own lines (progress with ETA, metrics, "
                  "warnings, errors); 1 and up: also TensorFlow's and Keras' start-up lines, "
                  "notes and warnings; -1: warnings and errors only. A TF_CPP_MIN_LOG_LEVEL in "
                  "the environment still decides TensorFlow's C++ lines.")

flags.disclaim_key_flags()  # `setup` declares --verbosity key to the entry point that calls it


def setup(module_name: str, default_verbosity: int = logging.INFO) -> None:
    """Quiets TensorFlow's start-up unless -v 1, and after flag parsing its Python lines.

    Call at the top of an entry module, before anything imports TensorFlow (the C++ log level is
    read when it loads). Also lists --verbosity in the module's --help.

    Args:
      module_name: the caller's `__name__`. Only the program's main module ("__main__", or
        "__mp_main__" as spawned worker processes run it again) sets anything up: importing an
        entry module (tests, notebooks) changes nothing.
      default_verbosity: absl verbosity when the command line gives none (the benchmarks,
        whose output is their JSON lines, pass logging.WARNING).
    """
    if module_name not in ("__main__", "__mp_main__"):
        return
    # Not printing, but due at the same moment: before TensorFlow starts (the commands own the
    # process; a library user calls electra_tf.tune_cpu() themselves).
    cpu_tuning.tune_cpu(quiet=False)  # the C++ log level follows --verbosity, below
    verbosity = requested_verbosity(sys.argv[1:])  # spawned workers get the parent's argv
    if verbosity is None:
        verbosity = default_verbosity
    set_native_log_level(verbosity)
    if module_name == "__main__":
        flags.FLAGS["verbosity"].help = VERBOSITY_HELP
        flags.FLAGS.set_default("verbosity", default_verbosity)  # what --help shows
        flags.declare_key_flag("verbosity")
        app.call_after_init(functools.partial(_after_flags, default_verbosity))


def requested_verbosity(argv: list[str]) -> int | None:
    """The last --verbosity / -v value of a command line (`--verbosity=1`, `--verbosity 1`,
    `-v=1`, `-v 1`), or None without one or with one that is not an integer."""
    value = None
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        name, has_value, text = arg.partition("=")
        if name not in ("--verbosity", "-verbosity", "-v", "--v"):
            continue
        if not has_value:
            text = argv[i + 1] if i + 1 < len(argv) else ""
        try:
            value = int(text)
        except ValueError:
            pass  # absl refuses it with its own message
    return value


def set_native_log_level(verbosity: int) -> None:
    """TF_CPP_MIN_LOG_LEVEL for this process and its children, unless the user set it, and
    TensorFlow's import silenced unless every line is asked for.

    Spelled out for -v 1 too (as 0, TensorFlow's default): worker processes inherit it and so
    keep the level of the command. No effect on a TensorFlow already loaded.
    """
    if verbosity >= VERBOSE:
        os.environ.setdefault(native_logs.VARIABLE, "0")
    native_logs.quiet_native_logs()


class _DropLibraryNotes(python_logging.Filter):
    """Drops log records below ERROR logged from the libraries' files (TensorFlow logs through
    absl, like this project, so the logger's name does not tell them apart)."""

    def filter(self, record):
        return record.levelno >= python_logging.ERROR or not _LIBRARY_FILE.search(
            record.pathname or "")


def quiet_libraries() -> None:
    """The Python side: the libraries' log records below ERROR and their warnings are dropped."""
    logging.get_absl_handler().addFilter(_DropLibraryNotes())
    warnings.filterwarnings("ignore", module=_LIBRARY_MODULE)


def _after_flags(default_verbosity: int) -> None:
    if not flags.FLAGS["verbosity"].present:
        logging.set_verbosity(default_verbosity)
    if logging.get_verbosity() < VERBOSE:
        quiet_libraries()


def exit_at_once(code: int = 0) -> None:
    """Ends the process now, its output flushed, without tearing TensorFlow down.

    For a command that was preempted (SIGTERM) and has saved its checkpoint: an orderly exit
    first waits for the input pipeline's threads to stop and collects the model's objects,
    which takes seconds of a preemption notice that may be 30 s in all. Nothing is left to
    write: the checkpoint, the config and the TensorBoard events are flushed already."""
    logging.flush()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)


HELP_FLAGS = ("--help", "-h", "-?", "--helpshort", "--helpfull", "--helpxml")


def run(main) -> None:
    """absl's `app.run(main)`, except that asking for help exits 0 (absl exits 1 after printing
    it, which scripts and `make` read as a failure)."""
    try:
        app.run(main)
    except SystemExit as e:
        if e.code == 1 and any(arg.split("=", 1)[0] in HELP_FLAGS for arg in sys.argv[1:]):
            sys.exit(0)
        raise
