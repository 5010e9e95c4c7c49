"""Where bfloat16 matmuls are slower than float32 ones, bf16 training says so."""

import logging

import pytest
import tensorflow as tf

import electra_tf
from electra_tf.cpu_features import cpu_flags, fast_bfloat16_matmuls
from electra_tf.training import distribution
from tests.run_helpers import cli_args, write_records, write_vocab

CPUS = {  # vendor, flags -> whether bfloat16 products outpace float32 ones
    "Sapphire Rapids with AMX": ("GenuineIntel", "avx512f avx512_bf16 amx_bf16 amx_tile", True),
    "Intel, AMX hidden": ("GenuineIntel", "avx512f avx512_bf16 avx512_fp16", False),
    "AMD Zen 4": ("AuthenticAMD", "avx512f avx512_bf16", True),
    "AMD Zen 3": ("AuthenticAMD", "avx2 fma", False),
}


@pytest.mark.parametrize("name", CPUS)
def test_fast_bfloat16_matmuls_reads_vendor_and_flags(tmp_path, name):
    vendor, flags, expected = CPUS[name]
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nvendor_id\t: {vendor}\nflags\t\t: {flags}\n\n"
                       "processor\t: 1\nvendor_id\t: other\nflags\t\t: amx_bf16\n")
    assert fast_bfloat16_matmuls(str(cpuinfo)) is expected
    assert cpu_flags(str(cpuinfo)) == frozenset(flags.split())


def test_no_cpuinfo_means_no_flags_and_no_advice_of_speed(tmp_path):
    missing = str(tmp_path / "missing")
    assert cpu_flags(missing) == frozenset() and not fast_bfloat16_matmuls(missing)


def test_bf16_on_a_cpu_with_slow_bfloat16_warns(caplog):
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    with caplog.at_level(logging.WARNING):
        assert distribution.warn_if_bfloat16_is_slow(strategy, "bf16", lambda: False)
    assert "no faster than float32" in caplog.text
    caplog.clear()
    assert not distribution.warn_if_bfloat16_is_slow(strategy, "bf16", lambda: True)
    assert not distribution.warn_if_bfloat16_is_slow(strategy, "none", lambda: False)
    assert "float32" not in caplog.text


class _Stop(Exception):
    pass


def stop_at_the_check(monkeypatch):
    """Makes the training entry points stop where they check bf16's speed; returns the calls'
    (strategy, mixed_precision) list."""
    calls = []

    def check(strategy, mixed_precision, fast_on_this_cpu=None):
        calls.append((strategy, mixed_precision))
        raise _Stop

    monkeypatch.setattr(distribution, "warn_if_bfloat16_is_slow", check)
    return calls


def test_pretrain_checks_bf16_before_it_trains(tmp_path, monkeypatch):
    calls = stop_at_the_check(monkeypatch)
    data, vocab = write_records(tmp_path / "records"), write_vocab(tmp_path / "vocab.txt")
    args = cli_args(data, vocab, tmp_path / "run", 2)
    overrides = [args[i + 1] for i, a in enumerate(args) if a == "--override"]
    with pytest.raises(_Stop):
        electra_tf.pretrain(config="pretrain/demo", data=data, vocab_file=vocab,
                            model_dir=str(tmp_path / "run"), train_steps=2, overrides=overrides,
                            export=False, mixed_precision="bf16", strategy="one_device")
    assert [precision for _, precision in calls] == ["bf16"]
    assert not (tmp_path / "run" / "checkpoints").exists()
