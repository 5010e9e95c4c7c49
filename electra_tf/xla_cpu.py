"""XLA's CPU kernels in 512-bit vectors where the CPU has AVX-512, and without YNNPACK.

On CPUs the training steps run their matmuls on oneDNN's kernels and the elementwise work between
them (GELU, dropout with residual and LayerNorm, the attention softmax's gradient, the generator's
cross-entropy and sampling, the optimizer's update) as XLA-compiled kernels
(docs/performance.md#fused-kernels-between-onednns-matmuls). XLA's CPU backend emits 256-bit
vectors unless told otherwise; with 512-bit ones those kernels took 10-15% less time alone on an
AMD Zen 4, and the training steps ran about 5% faster on an Intel Xeon
(docs/performance.md#xlas-cpu-kernels-in-512-bit-vectors).

XLA reads `XLA_FLAGS` once, at the process's first compilation. `electra_tf.tune_cpu()`
(which every command calls first) appends `--xla_cpu_prefer_vector_width=512` to it where the
CPU has AVX-512 and the variable does not already name that option: a width you set wins (`--xla_cpu_prefer_vector_width=256` gives
XLA's default back), and a process that compiled with XLA before keeps the width it started
with.

XLA's CPU backend in TensorFlow 2.21 hands some fusions to YNNPACK, and builds a fusion's
YNNPACK executable the first time it runs; two threads running the same compiled kernel for
the first time at once (the two chains of `--cpu_chains 2`, `electra_tf.models.accumulation`)
build it at once, and the process died with SIGSEGV in `xla::cpu::EmitYnnSubgraph` (gdb's
backtrace; 4 of 23 runs of the fp32 pretraining step with two chains on a two-core Intel Xeon
with AMX, 2026-12-01). `tune_cpu()` appends `--xla_cpu_experimental_ynn_fusion_type=` (no
fusion type: XLA emits those kernels itself) unless the variable names that option; the steps
ran as fast without YNNPACK (docs/performance.md#two-chains-on-two-cores).
"""

import os

from electra_tf.cpu_features import cpu_flags

VARIABLE = "XLA_FLAGS"
OPTION = "--xla_cpu_prefer_vector_width"
WIDE = f"{OPTION}=512"


def prefer_wide_vectors(environ=os.environ, flags=None) -> bool:
    """Appends `WIDE` to `environ[VARIABLE]` where `flags` (default: this CPU's) has AVX-512
    and the variable names no vector width; returns whether it did."""
    flags = cpu_flags() if flags is None else flags
    current = environ.get(VARIABLE, "")
    if "avx512f" not in flags or OPTION in current:
        return False
    environ[VARIABLE] = f"{current} {WIDE}".strip()
    return True


YNNPACK_OPTION = "--xla_cpu_experimental_ynn_fusion_type"
WITHOUT_YNNPACK = f"{YNNPACK_OPTION}="


def keep_ynnpack_out(environ=os.environ) -> bool:
    """Appends `WITHOUT_YNNPACK` to `environ[VARIABLE]` unless it names YNNPACK's fusion types
    already; returns whether it did."""
    current = environ.get(VARIABLE, "")
    if YNNPACK_OPTION in current:
        return False
    environ[VARIABLE] = f"{current} {WITHOUT_YNNPACK}".strip()
    return True


def ynnpack_kept_out(environ=os.environ) -> bool:
    """Whether `environ[VARIABLE]` keeps YNNPACK out of XLA's kernels (`WITHOUT_YNNPACK`)."""
    return WITHOUT_YNNPACK in environ.get(VARIABLE, "").split()
