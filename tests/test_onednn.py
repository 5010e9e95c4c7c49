"""`electra_tf.tune_cpu()` asks TensorFlow for its oneDNN kernels on every CPU, unless told not to."""

import os
import subprocess
import sys

import pytest

from electra_tf.onednn import VARIABLE, avx2_without_avx512, prefer_onednn

PROBE = ("import electra_tf\nelectra_tf.tune_cpu()\nimport tensorflow\n"
         "from electra_tf.onednn import onednn_enabled\n"
         "print('oneDNN', onednn_enabled())\n")


def _probe(**variables):
    environ = {key: value for key, value in os.environ.items() if key != VARIABLE}
    environ.update(variables)
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                            env=environ, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.split()[-1]


def test_sets_the_variable_only_before_tensorflow_and_only_if_unset():
    environ = {}
    assert prefer_onednn(environ, modules={}) and environ == {VARIABLE: "1"}
    environ = {VARIABLE: "0"}
    assert not prefer_onednn(environ, modules={}) and environ == {VARIABLE: "0"}
    environ = {}
    assert not prefer_onednn(environ, modules={"tensorflow": None}) and environ == {}


@pytest.mark.slow
def test_tuning_before_tensorflow_turns_onednn_on_on_any_cpu():
    # TensorFlow's own default is off on AVX2-only CPUs (AMD Zen 3): there this fails without
    # electra_tf's setting; on CPUs with AVX512_VNNI, AVX512_BF16 or AMX it is on either way.
    assert _probe() == "True"


@pytest.mark.slow
def test_the_users_setting_wins():
    assert _probe(**{VARIABLE: "0"}) == "False"


@pytest.mark.parametrize("flags, expected", [
    ("fpu sse2 avx fma avx2 bmi2 sha_ni", True),  # AMD Zen 3
    ("fpu sse2 avx fma avx2 avx512f avx512bw avx512_bf16", False),  # Zen 4
    ("fpu sse2 avx fma avx2 avx512f avx512_vnni amx_bf16 amx_tile", False),  # Sapphire Rapids
    ("fpu sse2 avx", False),  # no AVX2
])
def test_avx2_without_avx512_reads_the_first_processors_flags(tmp_path, flags, expected):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nmodel name\t: x\nflags\t\t: {flags}\n\n"
                       "processor\t: 1\nflags\t\t: avx2\n")
    assert avx2_without_avx512(str(cpuinfo)) is expected


def test_avx2_without_avx512_is_false_without_cpuinfo_or_on_arm(tmp_path):
    assert avx2_without_avx512(str(tmp_path / "missing")) is False
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd sve\n")
    assert avx2_without_avx512(str(arm)) is False
