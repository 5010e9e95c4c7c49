"""The device flags every training entry point shares, and `DeviceOptions`, the value they set
(absl only: --help stays fast)."""

from __future__ import annotations

import dataclasses
from typing import Any

from absl import flags

STRATEGIES = ("auto", "one_device", "mirrored", "multi_worker", "tpu")  # see distribution.make_strategy


def define_device_flags() -> None:
    """--strategy, --tpu, --mixed_precision, --jit_compile, --cpu_devices, --cpu_chains."""
    flags.DEFINE_enum("strategy", "auto", list(STRATEGIES),
                      "tf.distribute strategy; auto picks a TPU, then all GPUs, then the CPU.")
    flags.DEFINE_string("tpu", None, "TPU name or grpc:// address (Cloud TPU, Colab).")
    flags.DEFINE_enum("mixed_precision", "none", ["none", "bf16", "fp16"],
                      "Keras dtype policy: float32, mixed_bfloat16 (TPUs, and CPUs with AMX or "
                      "AMD's AVX-512 BF16; other CPUs run it slower than float32) or "
                      "mixed_float16 with loss scaling (GPU).")
    flags.DEFINE_bool("jit_compile", None, "Compile the train step with XLA (default: on TPU and "
                      "GPU, off on CPU where TensorFlow's kernels measured faster).")
    flags.DEFINE_integer("cpu_devices", 0, "Split the CPU into this many logical devices (to try "
                         "--strategy mirrored on one machine without GPUs).")
    flags.DEFINE_integer("cpu_chains", 0, "Run each training step's batch as this many chains "
                         "of ops side by side, TensorFlow's intra-op threads set to cores / N "
                         "(the same updates; on two-core CPUs, 2 trained ELECTRA-Small about "
                         "1.1-1.2x as fast as 1). The batch (per micro-batch) must be a multiple "
                         "of N. 0 (default) picks 2 when training one replica on a two-core CPU "
                         "(where it was measured) with even micro-batches, else 1. Ignored, with a "
                         "warning, where the model trains on a TPU or GPU.")


@dataclasses.dataclass(frozen=True)
class DeviceOptions:
    """Where and how a run trains: what the device flags above set, as one value.

    `strategy` is a name of `STRATEGIES` or a `tf.distribute.Strategy` the caller made (a
    notebook that already has its TPU); the other fields are the flags of the same names.
    """

    strategy: Any = "auto"
    tpu: str | None = None
    mixed_precision: str = "none"
    jit_compile: bool | None = None
    cpu_devices: int = 0
    cpu_chains: int = 0

    @classmethod
    def from_flags(cls, flag_values=None) -> "DeviceOptions":
        values = flag_values or flags.FLAGS
        return cls(**{field.name: values[field.name].value for field in dataclasses.fields(cls)})
