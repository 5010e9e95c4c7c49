"""--cpu_chains: TensorFlow's intra-op threads and every model's chains, set before TensorFlow
starts; the entry points pass it on."""

import pytest
import tensorflow as tf

from electra_tf import xla_cpu
from electra_tf.models.replicated import ReplicatedModel
from electra_tf.training import distribution
from electra_tf.training.distribution import StrategyError, use_cpu_chains
from electra_tf.training.pretrain_job import resolve_pretrain_job


@pytest.fixture
def intra_op_calls(monkeypatch):
    """The intra-op thread counts use_cpu_chains asks for, without changing this process's;
    XLA without YNNPACK, as tune_cpu leaves it, whatever the environment says."""
    calls = []
    monkeypatch.setattr(tf.config.threading, "set_intra_op_parallelism_threads", calls.append)
    monkeypatch.setattr(ReplicatedModel, "parallel_chains", 1)
    monkeypatch.setenv("XLA_FLAGS", xla_cpu.WITHOUT_YNNPACK)
    return calls


@pytest.mark.parametrize("cores, chains, threads", [(2, 2, 1), (8, 2, 4), (3, 2, 1), (2, 4, 1)])
def test_chains_get_cores_over_chains_intra_op_threads(intra_op_calls, monkeypatch, cores,
                                                       chains, threads):
    monkeypatch.setattr(distribution.os, "sched_getaffinity", lambda _: set(range(cores)),
                        raising=False)
    use_cpu_chains(chains)
    assert intra_op_calls == [threads] and ReplicatedModel.parallel_chains == chains


def test_one_chain_leaves_threads_and_models_alone(intra_op_calls):
    use_cpu_chains(1)
    assert intra_op_calls == [] and ReplicatedModel.parallel_chains == 1


def test_chains_refused_below_zero_or_after_tensorflow_started(intra_op_calls, monkeypatch):
    with pytest.raises(StrategyError, match="0 \\(pick\\) or at least 1, got -1"):
        use_cpu_chains(-1)

    def started(threads):
        raise RuntimeError("Intra op parallelism cannot be modified after initialization.")

    monkeypatch.setattr(tf.config.threading, "set_intra_op_parallelism_threads", started)
    with pytest.raises(StrategyError, match="before TensorFlow starts"):
        use_cpu_chains(2)
    assert ReplicatedModel.parallel_chains == 1


class _Device:
    def __init__(self, name):
        self.name = name


@pytest.mark.parametrize("strategy, tpu, gpus", [
    ("auto", None, ["/physical_device:GPU:0"]), ("mirrored", None, ["/physical_device:GPU:0"]),
    ("tpu", "grpc://10.0.0.2:8470", []), ("auto", "grpc://10.0.0.2:8470", [])])
def test_chains_on_a_tpu_or_gpu_only_warn(intra_op_calls, monkeypatch, caplog, strategy, tpu,
                                          gpus):
    monkeypatch.setattr(tf.config, "list_physical_devices",
                        lambda kind=None: [_Device(name) for name in gpus] if kind == "GPU" else [])
    assert use_cpu_chains(2, strategy, tpu) == 1
    assert intra_op_calls == [] and ReplicatedModel.parallel_chains == 1
    assert "--cpu_chains 2 is for training on a CPU" in caplog.text


def test_chains_with_a_made_strategy_look_at_its_devices(intra_op_calls, monkeypatch):
    monkeypatch.setattr(distribution.os, "sched_getaffinity", lambda _: {0, 1}, raising=False)
    on_cpu = tf.distribute.OneDeviceStrategy("/cpu:0")
    assert distribution._on_an_accelerator(on_cpu, None) is False
    assert use_cpu_chains(2, on_cpu) == 2 and intra_op_calls == [1]


def test_chains_on_the_cpu_when_no_accelerator_is_there(intra_op_calls, monkeypatch):
    monkeypatch.setattr(distribution.os, "sched_getaffinity", lambda _: {0, 1}, raising=False)
    monkeypatch.delenv("COLAB_TPU_ADDR", raising=False)
    monkeypatch.delenv("TPU_NAME", raising=False)
    monkeypatch.setattr(distribution, "_tpu_address", lambda tpu: tpu)
    assert use_cpu_chains(2, "auto") == 2 and intra_op_calls == [1]


def _cores(monkeypatch, cores):
    monkeypatch.setattr(distribution.os, "sched_getaffinity", lambda _: set(range(cores)),
                        raising=False)
    monkeypatch.setattr(distribution, "_on_an_accelerator", lambda strategy, tpu: False)


def test_picking_takes_two_chains_for_one_replica_on_two_cores(intra_op_calls, monkeypatch):
    _cores(monkeypatch, 2)
    assert use_cpu_chains(0, "auto", micro_batches=[32, 16]) == 2
    assert intra_op_calls == [1] and ReplicatedModel.parallel_chains == 2


@pytest.mark.parametrize("cores, strategy, micro_batches", [
    (1, "auto", [32]), (4, "auto", [32]),  # no core to spare, or cores where it is unmeasured
    (2, "auto", [32, 15]), (2, "auto", []),  # a micro-batch that does not split, or unknown
    (2, "mirrored", [32]), (2, "multi_worker", [32])])  # replicas: each is a chain already
def test_picking_keeps_one_chain_elsewhere(intra_op_calls, monkeypatch, cores, strategy,
                                           micro_batches):
    _cores(monkeypatch, cores)
    assert use_cpu_chains(0, strategy, micro_batches=micro_batches) == 1
    assert intra_op_calls == [] and ReplicatedModel.parallel_chains == 1


def test_picking_keeps_one_chain_where_xla_may_use_ynnpack(intra_op_calls, monkeypatch):
    # Two chains crashed in YNNPACK's first run (electra_tf/xla_cpu.py): without
    # electra_tf.tune_cpu() (a library user's process) a pick keeps one chain and says why.
    _cores(monkeypatch, 2)
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    logged = []
    monkeypatch.setattr(distribution.logging, "info", lambda message, *args: logged.append(
        message % args))
    assert use_cpu_chains(0, "auto", micro_batches=[32]) == 1
    assert intra_op_calls == [] and ReplicatedModel.parallel_chains == 1
    assert any("electra_tf.tune_cpu()" in line for line in logged)
    warned = []
    monkeypatch.setattr(distribution.logging, "warning", lambda message, *args: warned.append(
        message % args))
    assert use_cpu_chains(2, "auto") == 2 and intra_op_calls == [1]  # asked for: warned
    assert any("YNNPACK" in line and "tune_cpu" in line for line in warned)


def test_picking_keeps_one_chain_on_an_accelerator(intra_op_calls, monkeypatch):
    warned = []
    monkeypatch.setattr(distribution.logging, "warning", lambda *args: warned.append(args))
    monkeypatch.setattr(distribution.os, "sched_getaffinity", lambda _: {0, 1}, raising=False)
    monkeypatch.setattr(tf.config, "list_physical_devices",
                        lambda kind=None: [_Device("/physical_device:GPU:0")] if kind == "GPU"
                        else [])
    assert use_cpu_chains(0, "auto", micro_batches=[32]) == 1
    assert intra_op_calls == [] and warned == []  # no warning: nobody asked for chains
    made = tf.distribute.MirroredStrategy(["/cpu:0"])  # one replica, but made by the caller
    monkeypatch.setattr(distribution, "_on_an_accelerator", lambda strategy, tpu: False)
    assert use_cpu_chains(0, made, micro_batches=[32]) == 2 and intra_op_calls == [1]


def test_picking_after_tensorflow_started_keeps_one_chain_without_an_error(
        intra_op_calls, monkeypatch):
    _cores(monkeypatch, 2)
    logged = []  # absl's info lines, whatever verbosity earlier tests left absl at
    monkeypatch.setattr(distribution.logging, "info", lambda message, *args: logged.append(
        message % args))

    def started(threads):
        raise RuntimeError("Intra op parallelism cannot be modified after initialization.")

    monkeypatch.setattr(tf.config.threading, "set_intra_op_parallelism_threads", started)
    assert use_cpu_chains(0, "auto", micro_batches=[32]) == 1
    assert ReplicatedModel.parallel_chains == 1
    assert any("TensorFlow started before the chains could be set" in line for line in logged)
    # a second run in a process whose first run took two chains keeps them, and says nothing
    logged.clear()
    monkeypatch.setattr(ReplicatedModel, "parallel_chains", 2)
    assert use_cpu_chains(0, "auto", micro_batches=[32]) == 2 and logged == []


def test_pretraining_picks_its_chains_from_every_phases_micro_batch(tmp_path, monkeypatch):
    from electra_tf.training import pretrain

    class Stop(Exception):
        pass

    calls = []

    def use_cpu_chains(chains, strategy, tpu, micro_batches):
        calls.append((chains, micro_batches))
        raise Stop

    monkeypatch.setattr(pretrain.distribution, "use_cpu_chains", use_cpu_chains)
    with pytest.raises(Stop):
        pretrain.pretrain(config="pretrain/demo", model_dir=str(tmp_path), overrides=[
            "run.train_batch_size=12", "run.gradient_accumulation_steps=4"])
    assert calls == [(0, [3])] and not any(tmp_path.iterdir())  # before anything is written
    # NVIDIA's two phases: 67,584 in 48 micro-batches, then 27,648 in 144
    two_phase = "pretrain/electra_base_two_phase"
    job = resolve_pretrain_job(config=two_phase, data="records_128/*", model_dir=str(tmp_path))
    assert [stage.micro_batch for stage in job.stages] == [1408, 192]
