"""Run in a fresh process by tests/test_public_api.py: prints, as JSON, what importing
electra_tf and then every one of its modules changed outside the package.

First `import electra_tf` alone, before anything else (it must start no TensorFlow and set no
variable that TensorFlow reads at its import), then one module of a subpackage (which must load
none of its siblings); then the libraries it builds on are imported,
the process's state is taken, every module of the package is imported, and the state is taken
again. The libraries' own import-time effects (keras-hub's lazy kagglehub, for one) are in
the first snapshot, so only the package's show.
"""

import importlib
import json
import logging
import os
import pkgutil
import signal
import sys
import warnings

environ_at_start = dict(os.environ)
import electra_tf  # noqa: E402  (the point: before TensorFlow)

report = {
    "package_import": {
        "started": sorted({"tensorflow", "keras"} & set(sys.modules)),
        "environ": sorted(k for k in set(os.environ) | set(environ_at_start)
                          if os.environ.get(k) != environ_at_start.get(k)),
    },
}

# A package's __init__ imports its names on first use: one module of it loads no sibling.
import electra_tf.finetuning.kinds  # noqa: E402,F401

report["siblings_loaded"] = sorted(name for name in (
    "electra_tf.finetuning.api", "electra_tf.finetuning.runner", "electra_tf.training.pretrain",
    "electra_tf.convert.hf") if name in sys.modules)

import kagglehub  # noqa: E402,F401
import keras  # noqa: E402
import keras_hub  # noqa: E402,F401
import matplotlib  # noqa: E402
import tensorflow as tf  # noqa: E402
from absl import flags  # noqa: E402
from absl import logging as absl_logging  # noqa: E402


def state() -> dict:
    """What a library must not change: environment, logging, warnings, import hooks, signal
    handlers, TensorFlow's and Keras' global settings, matplotlib's backend (as strings)."""
    loggers = {name: logger for name, logger in logging.root.manager.loggerDict.items()
               if isinstance(logger, logging.Logger)}
    loggers["<root>"] = logging.root
    return {
        **{f"environ {key}": value for key, value in os.environ.items()},
        **{f"logger {name}": repr((logger.level, logger.handlers, logger.propagate,
                                   logger.disabled, [h.filters for h in logger.handlers]))
           for name, logger in loggers.items()},
        "absl verbosity": absl_logging.get_verbosity(),
        "absl handler filters": repr(absl_logging.get_absl_handler().filters),
        "warnings filters": repr(warnings.filters),
        "import hooks": repr(sys.meta_path),
        "signal handlers": repr([signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)]),
        "sys hooks": repr((sys.excepthook, sys.stdout, sys.stderr)),
        "tf threads": repr((tf.config.threading.get_intra_op_parallelism_threads(),
                            tf.config.threading.get_inter_op_parallelism_threads())),
        "tf optimizer": repr((tf.config.optimizer.get_jit(),
                              tf.config.optimizer.get_experimental_options())),
        "tf functions": repr((tf.config.functions_run_eagerly(),
                              tf.config.get_soft_device_placement())),
        "tf logger": tf.get_logger().level,
        "keras": repr((keras.mixed_precision.global_policy().name, keras.config.floatx(),
                       keras.config.epsilon(), keras.config.image_data_format(),
                       keras.config.is_traceback_filtering_enabled())),
        "matplotlib backend": matplotlib.rcParams["backend"],
    }


def new_logger_is_inert(value: str) -> bool:
    """A logger a module creates with logging.getLogger(__name__): no level, no handler."""
    return value == repr((logging.NOTSET, [], True, False, []))


before = state()
library_flags = set(flags.FLAGS)
modules = sorted(m.name for m in pkgutil.walk_packages(electra_tf.__path__, "electra_tf."))
for name in modules:
    importlib.import_module(name)
    # Each command defines its flags at import (absl's way), some under the same names: forget
    # them before the next one.
    for flag in set(flags.FLAGS) - library_flags:
        delattr(flags.FLAGS, flag)
after = state()
report["modules"] = len(modules)
report["changed"] = sorted(
    key for key in set(before) | set(after) if before.get(key) != after.get(key)
    and not (key.startswith("logger ") and key not in before and new_logger_is_inert(after[key])))
print(json.dumps(report))
