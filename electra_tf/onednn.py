"""TensorFlow's oneDNN CPU kernels on every x86 CPU, not only the newest.

TensorFlow's Linux build runs its matmuls, batch matmuls and fused ops on oneDNN's kernels by
default only where the CPU has AVX512_VNNI, AVX512_BF16, AVX_VNNI or AMX; elsewhere, on
AVX2-only CPUs (AMD Zen 2 and Zen 3 EPYCs, Intel before Cascade Lake), it runs Eigen's. On a
two-core Zen 3 EPYC Eigen's batch matmuls ran the attention products of a SQuAD step at 17-40
GFLOP/s, oneDNN's at 35-107, and the step 1.4x as fast with oneDNN's
(docs/performance.md#cpus-without-avx-512-amd-zen-3).

TensorFlow reads `TF_ENABLE_ONEDNN_OPTS` once, when it is imported. `electra_tf.tune_cpu()`
(which every command calls first) sets it to 1 if TensorFlow is not imported yet and the
variable is unset: a value you set wins (`0` gives Eigen's kernels back), and a process that
imported TensorFlow first keeps TensorFlow's choice. TensorFlow Serving's model server is built on the same TensorFlow core: the variable
in its environment asks for the same kernels.
"""

import os
import sys

from electra_tf.cpu_features import cpu_flags

VARIABLE = "TF_ENABLE_ONEDNN_OPTS"


def prefer_onednn(environ=os.environ, modules=sys.modules) -> bool:
    """Sets `environ[VARIABLE]` to "1" unless it is set or TensorFlow is in `modules`; returns
    whether oneDNN's kernels are then asked for (by this call or by the user)."""
    if "tensorflow" not in modules:
        environ.setdefault(VARIABLE, "1")
    return environ.get(VARIABLE, "").lower() in ("1", "true")


def onednn_enabled() -> bool:
    """Whether this process's TensorFlow runs its oneDNN kernels (imports TensorFlow)."""
    from tensorflow.python.util import _pywrap_util_port  # lazy: imports TensorFlow

    return bool(_pywrap_util_port.IsMklEnabled())


def avx2_without_avx512(cpuinfo_path="/proc/cpuinfo") -> bool:
    """Whether the CPU has AVX2 but no AVX-512 (AMD Zen 2 and Zen 3, Intel before Skylake-SP),
    read from the first processor's flags in `cpuinfo_path`: where oneDNN runs its AVX2
    kernels, whose speed on some operand layouts differs from its AVX-512 ones. False where
    the file cannot be read (not Linux) or names no AVX2 (not x86)."""
    flags = cpu_flags(cpuinfo_path)
    return "avx2" in flags and "avx512f" not in flags
