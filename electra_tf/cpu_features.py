"""The CPU's instruction-set flags, as Linux reports them, and the cores this process may use, for choices made before TensorFlow
starts (which kernels to ask for, how wide XLA's vectors are) and for advice (whether bfloat16
pays on this CPU)."""

import functools
import os


def first_processor(cpuinfo_path="/proc/cpuinfo") -> dict:
    """{key: value} of the first processor's entry in `cpuinfo_path`; empty where the file
    cannot be read (not Linux)."""
    entry = {}
    try:
        with open(cpuinfo_path) as f:
            for line in f:
                if not line.strip():
                    if entry:
                        break  # the first processor's entry is enough
                    continue
                key, _, value = line.partition(":")
                entry[key.strip()] = value.strip()
    except OSError:
        pass
    return entry


@functools.lru_cache(maxsize=None)  # read where models are traced (onednn.avx2_without_avx512)
def cpu_flags(cpuinfo_path="/proc/cpuinfo") -> frozenset:
    """The first processor's flags in `cpuinfo_path` ("avx2", "avx512f", "amx_bf16", ...); empty
    where the file cannot be read (not Linux) or names no flags (ARM lists "Features")."""
    return frozenset(first_processor(cpuinfo_path).get("flags", "").split())


def available_cores() -> int:
    """The logical CPUs this process may run on (its affinity mask where Linux has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def fast_bfloat16_matmuls(cpuinfo_path="/proc/cpuinfo") -> bool:
    """Whether oneDNN's bfloat16 products outpace its float32 ones on this CPU: with AMX-BF16
    (3.8x the float32 peak on a two-core Sapphire Rapids), or with AVX-512 BF16 on AMD's CPUs
    (Zen 4: 2x, its float32 FMAs being 256 bits wide). With AVX-512 BF16 alone an Intel CPU,
    whose two 512-bit FMA ports match the bfloat16 dot product's rate, ran them at half the
    float32 peak; without either they are emulated (docs/performance.md#bfloat16-without-amx)."""
    entry = first_processor(cpuinfo_path)
    flags = entry.get("flags", "").split()
    return "amx_bf16" in flags or (
        "avx512_bf16" in flags and entry.get("vendor_id") == "AuthenticAMD")
