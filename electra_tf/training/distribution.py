"""Choosing a tf.distribute strategy: TPU, then GPUs, then the CPU."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

import tensorflow as tf
from absl import logging

from electra_tf import xla_cpu
from electra_tf.cpu_features import available_cores, fast_bfloat16_matmuls
from electra_tf.errors import UserError
from electra_tf.models.replicated import ReplicatedModel
from electra_tf.training.device_flags import STRATEGIES


class StrategyError(UserError):
    """A strategy that cannot be created on this machine."""


def _tpu_strategy(tpu: str):
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)


def _tpu_address(tpu: str | None) -> str | None:
    """The TPU to use for `auto`: the flag, Colab's or a Cloud TPU VM's (never probes a network)."""
    if tpu:
        return tpu
    if os.environ.get("COLAB_TPU_ADDR"):
        return "grpc://" + os.environ["COLAB_TPU_ADDR"]
    if os.environ.get("TPU_NAME"):
        return os.environ["TPU_NAME"]
    if tf.io.gfile.glob("/dev/accel*") or tf.io.gfile.glob("/dev/vfio/[0-9]*"):
        return "local"
    return None


def make_strategy(name: str = "auto", tpu: str | None = None) -> tf.distribute.Strategy:
    """A strategy by name; `auto` picks a TPU, then all GPUs, then the CPU."""
    if name not in STRATEGIES:
        raise StrategyError(f"unknown strategy {name!r} (choose from {', '.join(STRATEGIES)})")
    if name == "tpu" or (name == "auto" and _tpu_address(tpu)):
        address = _tpu_address(tpu)
        if address is None:
            raise StrategyError("--strategy=tpu needs --tpu (a TPU name or grpc:// address)")
        return _tpu_strategy(address)
    if name == "multi_worker":
        if "TF_CONFIG" not in os.environ:
            raise StrategyError("--strategy=multi_worker needs TF_CONFIG describing the cluster")
        task = json.loads(os.environ["TF_CONFIG"]).get("task", {})
        logging.info("multi-worker task %s", task)
        return tf.distribute.MultiWorkerMirroredStrategy()
    gpus = tf.config.list_logical_devices("GPU")
    if name == "mirrored" or (name == "auto" and len(gpus) > 1):
        devices = [d.name for d in gpus] or [d.name for d in tf.config.list_logical_devices("CPU")]
        return tf.distribute.MirroredStrategy(devices)
    return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")


DTYPE_POLICIES = {"none": "float32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}


def warn_if_bfloat16_is_slow(strategy: tf.distribute.Strategy, mixed_precision: str,
                             fast_on_this_cpu=None) -> bool:
    """Logs a warning, and returns True, where `mixed_precision` is "bf16", `strategy` trains
    on the CPU (no TPU, no GPU) and `fast_on_this_cpu()` (default
    `cpu_features.fast_bfloat16_matmuls`) says its bfloat16 matmuls are not faster than float32
    ones: there every bf16 step ran slower than fp32 (0.67x on an Intel
    Xeon with AVX-512 BF16 but no AMX)."""
    on_cpu = not (isinstance(strategy, tf.distribute.TPUStrategy)
                  or tf.config.list_logical_devices("GPU"))
    if mixed_precision != "bf16" or not on_cpu or (fast_on_this_cpu or fast_bfloat16_matmuls)():
        return False
    logging.warning(
        "--mixed_precision bf16 on a CPU without AMX or AMD's AVX-512 BF16: its bfloat16 "
        "matmuls are no faster than float32 ones (on an Intel Xeon with AVX-512 BF16 alone, "
        "half as fast), so fp32 trains faster here (docs/performance.md#bfloat16-without-amx).")
    return True


def split_cpu(num_devices: int) -> None:
    """Splits the CPU into logical devices (MirroredStrategy on a machine without GPUs).
    Must run before TensorFlow initialises its devices; 0 leaves it alone."""
    if num_devices:
        tf.config.set_logical_device_configuration(
            tf.config.list_physical_devices("CPU")[0],
            [tf.config.LogicalDeviceConfiguration()] * num_devices)


AUTO_CHAINS = 0  # --cpu_chains 0: `use_cpu_chains` picks


def use_cpu_chains(chains: int, strategy: str | tf.distribute.Strategy = "auto",
                   tpu: str | None = None, micro_batches: Sequence[int] = ()) -> int:
    """Trains every ELECTRA model of this process with its batches run as `chains` chains of ops
    side by side (`ReplicatedModel.parallel_chains`), and gives TensorFlow's intra-op pool cores
    / `chains` threads, so that each chain's ops run on cores of their own. On two-core CPUs,
    two chains made ELECTRA-Small's pretraining and fine-tuning steps about 1.1-1.2x as fast
    (docs/performance.md, "Two chains on two cores"). Must run before TensorFlow starts; 1
    leaves both alone. Where the model trains on a TPU or GPU (`strategy`, a name or a made
    strategy, and `tpu` as for `make_strategy`) it only logs a warning.

    `chains` 0 (`AUTO_CHAINS`, the entry points' default) picks: two chains where a process
    trains one replica on a CPU of two cores (where two chains were measured), every training
    micro-batch (`micro_batches`, per step) splits in two, XLA's kernels run without YNNPACK
    (`electra_tf.tune_cpu()`, which the commands call: with it, two chains crashed) and
    TensorFlow has not started running ops (the thread count is fixed then); one chain
    otherwise. Returns the chains in use."""
    if chains < 0:
        raise StrategyError(f"--cpu_chains must be 0 (pick) or at least 1, got {chains}")
    if chains == AUTO_CHAINS:
        return _pick_cpu_chains(strategy, tpu, micro_batches)
    if chains == 1:
        return ReplicatedModel.parallel_chains
    if _on_an_accelerator(strategy, tpu):
        logging.warning("--cpu_chains %d is for training on a CPU; this run trains on a TPU or "
                        "GPU, so its batches run as one chain", chains)
        return ReplicatedModel.parallel_chains
    if not xla_cpu.ynnpack_kept_out():
        logging.warning("--cpu_chains %d with YNNPACK in XLA's kernels, which crashed when two "
                        "chains first ran a kernel at once: call electra_tf.tune_cpu() before "
                        "TensorFlow starts (the commands do)", chains)
    try:
        tf.config.threading.set_intra_op_parallelism_threads(max(1, available_cores() // chains))
    except RuntimeError as error:
        raise StrategyError(f"--cpu_chains {chains} must be set before TensorFlow starts "
                            f"running ops ({error})") from error
    ReplicatedModel.parallel_chains = chains
    return chains


def _pick_cpu_chains(strategy, tpu, micro_batches: Sequence[int]) -> int:
    """`use_cpu_chains(AUTO_CHAINS, ...)`: 2 where two chains measured faster, else 1 (and
    nothing changed)."""
    one_replica = (strategy in ("auto", "one_device") if isinstance(strategy, str)
                   else strategy.num_replicas_in_sync == 1)
    cores = available_cores()
    if (not one_replica or cores != 2 or not micro_batches
            or any(batch % 2 for batch in micro_batches) or _on_an_accelerator(strategy, tpu)):
        return ReplicatedModel.parallel_chains
    if not xla_cpu.ynnpack_kept_out():
        if ReplicatedModel.parallel_chains == 1:
            logging.info("one chain of ops a step: two need XLA's kernels without YNNPACK "
                         "(electra_tf.tune_cpu() before TensorFlow starts, as the commands do)")
        return ReplicatedModel.parallel_chains
    try:
        tf.config.threading.set_intra_op_parallelism_threads(1)
    except RuntimeError:  # TensorFlow runs already (a notebook, a test): its threads stay
        if ReplicatedModel.parallel_chains == 1:  # not picked or set earlier in this process
            logging.info("one chain of ops a step: TensorFlow started before the chains could "
                         "be set (--cpu_chains 2 in a fresh process runs two)")
        return ReplicatedModel.parallel_chains
    logging.info("two chains of ops a step, side by side, one intra-op thread each "
                 "(--cpu_chains 1 runs one)")
    ReplicatedModel.parallel_chains = 2
    return 2


def _on_an_accelerator(strategy: str | tf.distribute.Strategy, tpu: str | None) -> bool:
    """Whether `make_strategy(strategy, tpu)` (or the made `strategy`) trains on a TPU or GPU;
    lists devices without starting TensorFlow's runtime."""
    if isinstance(strategy, tf.distribute.Strategy):
        return isinstance(strategy, tf.distribute.TPUStrategy) or any(
            "GPU" in device.upper() for device in strategy.extended.worker_devices)
    if strategy == "tpu" or (strategy == "auto" and _tpu_address(tpu)):
        return True
    return bool(tf.config.list_physical_devices("GPU"))


def use_xla(strategy: tf.distribute.Strategy, requested: bool | None) -> bool:
    """`requested`, or by default XLA on TPUs and GPUs (on CPU TensorFlow's kernels measured faster)."""
    if requested is not None:
        return requested
    return bool(tf.config.list_logical_devices("GPU")) or isinstance(strategy, tf.distribute.TPUStrategy)
