"""What a benchmark line says about the CPU it ran on: model, cores and the flags that decide
which kernels run (AVX-512, AVX-512 BF16, AMX), so numbers from different machines can be told
apart."""

import platform

from electra_tf.cpu_features import available_cores, first_processor

# /proc/cpuinfo flag -> the name a reader knows it by
FLAGS_OF_NOTE = {"avx512f": "AVX-512", "avx512_bf16": "AVX-512 BF16", "amx_bf16": "AMX-BF16",
                 "amx_tile": "AMX"}


def cpu_description(cpuinfo_path="/proc/cpuinfo") -> dict:
    """{"cpu": model name with its family and model numbers, "cores": logical CPUs this process
    may use, "cpu_flags": the FLAGS_OF_NOTE present, in that order}; the model is
    platform.processor() where there is no /proc/cpuinfo."""
    entry = first_processor(cpuinfo_path)
    model = entry.get("model name") or platform.processor() or "unknown"
    flags = set(entry.get("flags", "").split())
    family = {key: entry[key] for key in ("cpu family", "model") if key in entry}
    if family:  # a VM's model name can be bare ("AMD EPYC"); family and model tell generations
        model += " (" + ", ".join(f"{key} {value}" for key, value in family.items()) + ")"
    return {"cpu": model, "cores": available_cores(),
            "cpu_flags": [name for flag, name in FLAGS_OF_NOTE.items() if flag in flags]}


def has_bfloat16_instructions(description) -> bool:
    """Whether a `cpu_description` names AVX-512 BF16 or AMX-BF16. Without them (an AVX2-only
    CPU such as AMD's Zen 3) bfloat16 matmuls are emulated and slower than float32."""
    return bool({"AVX-512 BF16", "AMX-BF16"} & set(description["cpu_flags"]))
