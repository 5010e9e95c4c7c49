"""The CPU's instruction-set flags, as Linux reports them, for choices made before TensorFlow
starts (which kernels to ask for, how wide XLA's vectors are)."""

import functools


@functools.lru_cache(maxsize=None)
def cpu_flags(cpuinfo_path="/proc/cpuinfo") -> frozenset:
    """The first processor's flags in `cpuinfo_path` ("avx2", "avx512f", "amx_bf16", ...); empty
    where the file cannot be read (not Linux) or names no flags (ARM lists "Features")."""
    try:
        with open(cpuinfo_path) as f:
            return frozenset(next((line.partition(":")[2].split() for line in f
                                   if line.startswith("flags")), []))
    except OSError:
        return frozenset()
