"""`electra_tf.tune_cpu()` asks XLA for 512-bit vectors on CPUs with AVX-512 and for no YNNPACK
fusions, unless told otherwise."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

from electra_tf.cpu_features import cpu_flags
from electra_tf.xla_cpu import (OPTION, VARIABLE, WIDE, WITHOUT_YNNPACK, YNNPACK_OPTION,
                                keep_ynnpack_out, prefer_wide_vectors, ynnpack_kept_out)

AVX512 = frozenset({"avx2", "avx512f", "avx512bw"})
AVX2 = frozenset({"avx2", "fma"})

# Compiles one elementwise kernel with XLA after `electra_tf.tune_cpu()`, dumping its LLVM IR.
KERNEL = ("f = tf.function(lambda x: tf.math.tanh(x) * 3.0 + x, jit_compile=True)\n"
          "f(tf.ones([4096]))\n")
TUNE = "import warnings, electra_tf\nwarnings.simplefilter('ignore')\nelectra_tf.tune_cpu()\n"
PROBE = TUNE + "import tensorflow as tf\n" + KERNEL
# XLA reads its flags at the first compilation, not when TensorFlow is imported or runs ops.
PROBE_TENSORFLOW_FIRST = "import tensorflow as tf\ntf.ones([3]) + 1.0\n" + TUNE + KERNEL


@pytest.mark.parametrize("before, after", [
    ({}, {VARIABLE: WIDE}),
    ({VARIABLE: "--xla_dump_to=/tmp/x"}, {VARIABLE: f"--xla_dump_to=/tmp/x {WIDE}"}),
])
def test_appends_the_width_on_avx512_cpus(before, after):
    environ = dict(before)
    assert prefer_wide_vectors(environ, flags=AVX512) and environ == after


@pytest.mark.parametrize("environ, flags", [
    ({VARIABLE: f"{OPTION}=256"}, AVX512),  # the user's width wins
    ({}, AVX2),  # AMD Zen 3: no 512-bit vectors to ask for
    ({}, frozenset()),  # not x86, or no /proc/cpuinfo
])
def test_leaves_the_variable_alone_otherwise(environ, flags):
    before = dict(environ)
    assert not prefer_wide_vectors(environ, flags=flags) and environ == before


def _widest_float_vector(tmp_path: pathlib.Path, xla_flags: str, probe=PROBE) -> int:
    """Lanes of the widest `<N x float>` vector in the probe's optimized LLVM IR."""
    dump = tmp_path / "dump"
    environ = dict(os.environ, **{VARIABLE: f"--xla_dump_to={dump} {xla_flags}".strip()})
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            env=environ, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    ir = "".join(path.read_text() for path in dump.glob("*ir-with-opt.ll"))
    assert ir, sorted(path.name for path in dump.iterdir())
    return max(int(lanes) for lanes in re.findall(r"<(\d+) x float>", ir))


@pytest.mark.slow
@pytest.mark.parametrize("probe", [PROBE, PROBE_TENSORFLOW_FIRST])
def test_xla_kernels_use_512_bit_vectors_after_tuning_on_avx512_cpus(tmp_path, probe):
    # 16 float lanes where the CPU has AVX-512, XLA's default of 8 elsewhere.
    expected = 16 if "avx512f" in cpu_flags() else 8
    assert _widest_float_vector(tmp_path, "", probe) == expected


@pytest.mark.slow
def test_a_width_the_user_sets_wins(tmp_path):
    assert _widest_float_vector(tmp_path, f"{OPTION}=256") == 8


@pytest.mark.parametrize("before, after", [
    ({}, {VARIABLE: WITHOUT_YNNPACK}),
    ({VARIABLE: WIDE}, {VARIABLE: f"{WIDE} {WITHOUT_YNNPACK}"}),
    ({VARIABLE: f"{YNNPACK_OPTION}=dot"}, {VARIABLE: f"{YNNPACK_OPTION}=dot"}),  # the user's
])
def test_keeps_ynnpack_out_unless_told_otherwise(before, after):
    environ = dict(before)
    assert keep_ynnpack_out(environ) == (before != after) and environ == after


def test_ynnpack_is_kept_out_only_where_the_flag_names_no_fusion_type():
    assert ynnpack_kept_out({VARIABLE: f"{WIDE} {WITHOUT_YNNPACK}"})
    assert not ynnpack_kept_out({}) and not ynnpack_kept_out({VARIABLE: f"{YNNPACK_OPTION}=dot"})


# An XLA kernel with a product, as the transformer's feed-forward gradient has, with YNNPACK's
# thunk logging on: XLA logs from ynn_fusion_thunk.cc for each kernel it hands to YNNPACK.
DOT_KERNEL = ("f = tf.function(lambda a, b: tf.matmul(a, b, transpose_b=True), jit_compile=True)\n"
              "f(tf.ones([256, 256]), tf.ones([256, 256]))\n")


def _ynnpack_log_lines(prelude: str) -> int:
    environ = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="0", TF_CPP_VMODULE="ynn_fusion_thunk=3")
    environ.pop(VARIABLE, None)
    result = subprocess.run([sys.executable, "-c", prelude + DOT_KERNEL], capture_output=True,
                            text=True, env=environ, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stderr.count("ynn_fusion_thunk.cc")


@pytest.mark.slow
def test_xla_kernels_run_without_ynnpack_after_tuning():
    # Two threads running one kernel for the first time crashed in YNNPACK's executable
    # builder (electra_tf/xla_cpu.py): after tune_cpu() no kernel goes there; the same kernel
    # without it does, so the probe sees YNNPACK where it is used.
    if _ynnpack_log_lines("import tensorflow as tf\n") == 0:
        pytest.skip("XLA hands this CPU's product kernel to no YNNPACK fusion: nothing to keep out")
    assert _ynnpack_log_lines(TUNE + "import tensorflow as tf\n") == 0
