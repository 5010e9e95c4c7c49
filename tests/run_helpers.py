"""Fixtures for the entry-point tests: synthetic TFRecord shards, a vocabulary, and two ways to
run a command: `run_cli` in a process of its own, `run_in_process` in this one (no TensorFlow
import per run) for the tests whose subject is not the process boundary."""

import contextlib
import importlib
import io
import logging
import os
import re
import signal
import subprocess
import sys
import traceback

import numpy as np
import tensorflow as tf

from electra_tf.cpu_features import available_cores
from electra_tf.pretraining_data import pretraining_records as records

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
VOCAB_SIZE = 120
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_vocab(path, tokens=None):
    tokens = tokens if tokens is not None else SPECIALS + [f"w{i}" for i in range(VOCAB_SIZE - 5)]
    with open(path, "w") as f:
        f.write("".join(t + "\n" for t in tokens))
    return str(path)


def write_records(directory, num_files=3, per_file=64, seq_len=32, seed=0):
    """Shards of [CLS] topic-structured tokens [SEP] (ids 2 and 3), padded to seq_len."""
    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(seed)
    for shard in range(num_files):
        path = os.path.join(directory, f"pretrain_data.tfrecord-{shard}-of-{num_files}")
        with tf.io.TFRecordWriter(path) as writer:
            for _ in range(per_file):
                length = int(rng.integers(8, seq_len + 1))
                topic = int(rng.integers(0, 10))
                ids = np.zeros(seq_len, np.int64)
                ids[:length] = 5 + 11 * topic + rng.integers(0, 11, size=length)
                ids[0], ids[length - 1] = 2, 3
                mask = (np.arange(seq_len) < length).astype(np.int64)
                writer.write(records.serialize_example(ids, np.zeros(seq_len), seq_len,
                                                       input_mask=mask))
    return os.path.join(directory, "*.tfrecord*")


# A one-layer encoder for runs whose subject is not the model's depth: most of such a test's
# time is the trace of its train step, whose size grows with the depth.
ONE_LAYER = ("num_layers=1", "hidden_size=32", "embedding_size=16", "intermediate_size=64")


def one_layer_overrides() -> list:
    """ONE_LAYER as `--override model.KEY=VALUE` flag pairs."""
    return [token for size in ONE_LAYER for token in ("--override", f"model.{size}")]


def one_layer_yaml() -> str:
    """ONE_LAYER as the inside of a YAML flow mapping: `num_layers: 1, hidden_size: 32, ...`."""
    return ", ".join(size.replace("=", ": ") for size in ONE_LAYER)


def cli_args(data, vocab, model_dir, steps, *extra, one_layer=True):
    """run_pretraining flags for a tiny, fast run on the fixture data: the demonstration's
    recipe, on a one-layer encoder unless `one_layer` is False (a run's time here is mostly the
    trace of its train step)."""
    return ["--config", "pretrain/demo", "--data", data, "--vocab_file", vocab,
            "--model_dir", str(model_dir), "--train_steps", str(steps),
            "--override", "run.max_seq_length=32", "--override", "run.train_batch_size=8",
            "--override", "run.log_every_steps=5", "--override", "run.save_checkpoints_steps=10",
            "--override", "model.max_position_embeddings=64",
            *(one_layer_overrides() if one_layer else ()), *extra]


def two_chains_by_default() -> bool:
    """Whether a fresh process of an entry point trains an even micro-batch on one replica as
    two chains of ops without --cpu_chains (`distribution.use_cpu_chains`' pick: two cores)."""
    return available_cores() == 2


def run_cli(args, timeout=300, env=None, module="electra_tf.run_pretraining"):
    """Runs `python -m module args`; returns the CompletedProcess (text mode). The stderr of a
    process killed by a signal keeps the crash report's tracebacks and loses its list of
    extension modules (`without_extension_module_list`)."""
    full_env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", **(env or {}))
    result = subprocess.run([sys.executable, "-m", module, *args], capture_output=True,
                            text=True, timeout=timeout, cwd=REPO, env=full_env)
    if result.returncode < 0:
        result.stderr = without_extension_module_list(result.stderr)
    return result


# Python's fault handler ends a crash report with one line naming every extension module loaded,
# thousands of characters with TensorFlow: the tail of stderr that a failing test prints would
# show that line and not the tracebacks above it.
# What TensorFlow 2.21 prints when it loads on a machine without a GPU.
TENSORFLOW_START_UP = ("cudart_stub", "cpu_feature_guard", "oneDNN",
                       "This TensorFlow binary is optimized",
                       "All log messages before absl::InitializeLog")
# One replaced token of the demo's showcase: [original→sample p]
MARKED_REPLACEMENT = re.compile(r"\[\S+→\S+ [01]\.\d\d\]")


def run_command(module, *args, cwd=REPO, timeout=600):
    """`python -m module args` as a user runs it: no TF_CPP_MIN_LOG_LEVEL in the environment."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    return subprocess.run([sys.executable, "-m", module, *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd, env=env)


def start_up_lines(result):
    """The lines of TensorFlow's start-up in a command's output."""
    return [line for line in (result.stdout + result.stderr).splitlines()
            if any(marker in line for marker in TENSORFLOW_START_UP)]


_EXTENSION_MODULES = re.compile(r"^Extension modules: .*\(total: \d+\)$\n?", re.MULTILINE)


def without_extension_module_list(stderr: str) -> str:
    """stderr with the fault handler's "Extension modules: ... (total: N)" line taken out."""
    return _EXTENSION_MODULES.sub("", stderr)


# Flags that change what a process can do for the rest of its life (op determinism, logical
# devices) or that only absl.app handles: such runs need run_cli's fresh process.
_NEEDS_A_PROCESS = ("--deterministic", "--cpu_devices", "--cpu_chains", "--help", "--helpfull",
                    "--helpshort")


def needs_a_process(args) -> list[str]:
    """The flags of `args` that run_in_process cannot run (empty where it can)."""
    return [a for a in map(str, args) if a.split("=", 1)[0] in _NEEDS_A_PROCESS]


def run_in_process(args, module="electra_tf.run_pretraining", cwd=REPO):
    """Runs what `python -m module args` runs, in this process; returns a CompletedProcess like
    run_cli's: returncode, stdout, and stderr with the absl log lines (absl's format).

    For tests of what an entry point does, prints and returns where the process boundary is not
    the subject: no TensorFlow import per call (several seconds each). The module is imported
    afresh with its own absl flags (the entry points define flags of the same names, so they
    cannot share FLAGS), parsed as app.run parses them; its main's SystemExit becomes the
    returncode, an exception a traceback on stderr and returncode 1. What a run changes in the
    process is put back after: absl's flags, environment variables, the SIGTERM handler, the
    Keras dtype policy, the global random states, the working directory. Runs that change what
    cannot be put back (--deterministic, --cpu_devices, --cpu_chains) or that test absl.app
    itself (--help) need run_cli.
    """
    args = [str(a) for a in args]
    refused = needs_a_process(args)
    if refused:
        raise ValueError(f"{refused}: run this in its own process (run_cli)")
    stdout, stderr = io.StringIO(), io.StringIO()
    with _process_state_restored(cwd), _own_flags(module) as entry, \
            _absl_log_to(stderr), contextlib.redirect_stdout(stdout), \
            contextlib.redirect_stderr(stderr):
        returncode = _run_main(entry, [module, *args], stderr)
    return subprocess.CompletedProcess([sys.executable, "-m", module, *args], returncode,
                                       stdout.getvalue(), stderr.getvalue())


def _run_main(entry, argv, stderr):
    """app.run's flag parsing and exit status, around entry.main."""
    from absl import flags

    try:
        argv = flags.FLAGS(argv)
    except flags.Error as e:
        stderr.write(f"FATAL Flags parsing error: {e}\n"
                     "Pass --helpshort or --helpfull to see help on flags.\n")
        return 1
    try:
        code = entry.main(argv)
    except SystemExit as e:
        code = e.code
    except Exception:  # what the interpreter prints for an uncaught exception
        traceback.print_exc(file=stderr)
        return 1
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    stderr.write(f"{code}\n")
    return 1


@contextlib.contextmanager
def _own_flags(module):
    """Imports `module` afresh with only its own flags defined; puts the flags and any
    earlier import of the module back after."""
    from absl import flags

    state = flags.FLAGS.__dict__
    saved = {key: _copied(value) for key, value in state.items()}
    package, _, name = module.rpartition(".")
    earlier = sys.modules.pop(module, None)
    try:
        for module_name, defined in list(flags.FLAGS.flags_by_module_dict().items()):
            # the entry points, their shared flags, and the probes under tools/
            if module_name.startswith(("electra_tf.", "tools.")):
                for flag in list(defined):
                    for flag_name in {flag.name, flag.short_name} - {None}:
                        if flags.FLAGS._flags().get(flag_name) is flag:
                            delattr(flags.FLAGS, flag_name)
        yield importlib.import_module(module)
    finally:
        state.update(saved)
        sys.modules.pop(module, None)
        if earlier is not None:
            sys.modules[module] = earlier
        parent = sys.modules.get(package)
        if parent is not None:
            if earlier is not None:
                setattr(parent, name, earlier)
            elif name in vars(parent):
                delattr(parent, name)


def _copied(value):
    """A copy of a FlagValues attribute deep enough that removing flags leaves it unchanged."""
    if isinstance(value, dict):
        return {k: list(v) if isinstance(v, list) else v for k, v in value.items()}
    if isinstance(value, (set, list)):
        return type(value)(value)
    return value


@contextlib.contextmanager
def _absl_log_to(stream):
    """absl's INFO and above go to `stream` in absl's format, as app.run's handler prints them."""
    from absl import logging as absl_logging

    logger = absl_logging.get_absl_logger()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(absl_logging.PythonFormatter())
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate


@contextlib.contextmanager
def _process_state_restored(cwd):
    """Puts back what a run changes in the process: working directory, environment variables,
    SIGTERM handler, the Keras dtype policy, Python's, NumPy's and TensorFlow's global seeds."""
    import random

    import keras
    from tensorflow.python.eager import context

    saved_cwd, sigterm = os.getcwd(), signal.getsignal(signal.SIGTERM)
    environ = dict(os.environ)
    policy = keras.config.dtype_policy()
    python_random, numpy_random = random.getstate(), np.random.get_state()
    tf_seed = context.global_seed()
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        if dict(os.environ) != environ:
            os.environ.clear()
            os.environ.update(environ)
        signal.signal(signal.SIGTERM, sigterm)
        keras.config.set_dtype_policy(policy)
        random.setstate(python_random)
        np.random.set_state(numpy_random)
        tf.random.set_seed(tf_seed)
