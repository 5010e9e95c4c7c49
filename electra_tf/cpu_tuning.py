"""The one call that tunes TensorFlow for this CPU: the commands make it before TensorFlow
starts, and a Python user opts in the same way.

    import electra_tf

    electra_tf.tune_cpu()   # before anything imports TensorFlow
    import tensorflow as tf

Importing electra_tf changes nothing outside it. `tune_cpu()` sets, in this process's
environment (and so in every process it starts), what the commands run with:

- `TF_ENABLE_ONEDNN_OPTS=1`: TensorFlow's oneDNN kernels on every x86 CPU, not only the newest
  (`electra_tf.onednn` says why). Read once, when TensorFlow is imported.
- in `XLA_FLAGS`, `--xla_cpu_prefer_vector_width=512` where the CPU has AVX-512, and
  `--xla_cpu_experimental_ynn_fusion_type=` (XLA's kernels without YNNPACK, whose first run
  crashed when two chains of ops ran a kernel at once; `electra_tf.xla_cpu`). Read at XLA's
  first compilation.

- `TF_CPP_MIN_LOG_LEVEL=3`, and the first `import tensorflow` with its C++ start-up lines
  silenced (`electra_tf.native_logs`): TensorFlow's C++ notes (CUDA probing without a GPU,
  oneDNN, XLA and tf.data notes) stay out of the console, as in the commands. `quiet=False`
  leaves them, and so does `TF_CPP_MIN_LOG_LEVEL=0` set before the call.

A value already in the environment wins, so `TF_ENABLE_ONEDNN_OPTS=0` or a vector width in
`XLA_FLAGS` still decides. Without the call everything works with TensorFlow's defaults; two
chains of ops a step (`--cpu_chains`) are then picked only where `XLA_FLAGS` keeps YNNPACK out.
"""

from __future__ import annotations

import os
import sys
import warnings

from electra_tf import native_logs, onednn, xla_cpu


def tune_cpu(environ=os.environ, modules=sys.modules, *, quiet: bool = True) -> dict[str, str]:
    """Sets the commands' CPU preferences in `environ` where they are unset, and with `quiet`
    their C++ log level.

    Returns {variable: its new value} for each variable it changed (empty where the environment
    already said everything). Warns where TensorFlow is imported already (in `modules`): its
    oneDNN choice is made then, and XLA's flags count only if nothing was compiled yet.
    """
    if "tensorflow" in modules:
        warnings.warn("electra_tf.tune_cpu() runs after TensorFlow was imported: TensorFlow "
                      "keeps its oneDNN choice, and XLA's flags apply only if nothing was "
                      "compiled yet. Call it before importing TensorFlow.", RuntimeWarning,
                      stacklevel=2)
    before = {name: environ.get(name) for name in (onednn.VARIABLE, xla_cpu.VARIABLE,
                                                   native_logs.VARIABLE)}
    onednn.prefer_onednn(environ, modules)
    xla_cpu.prefer_wide_vectors(environ)
    xla_cpu.keep_ynnpack_out(environ)
    if quiet:
        native_logs.quiet_native_logs(
            environ, modules, sys.meta_path if modules is sys.modules else [])
    return {name: environ[name] for name, value in before.items()
            if environ.get(name) != value}
