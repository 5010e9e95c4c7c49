"""--cpu_chains: TensorFlow's intra-op threads and every model's chains, set before TensorFlow
starts; the entry points pass it on."""

import pytest
import tensorflow as tf

from electra_tf.models.replicated import ReplicatedModel
from electra_tf.training import distribution
from electra_tf.training.distribution import StrategyError, use_cpu_chains


@pytest.fixture
def intra_op_calls(monkeypatch):
    """The intra-op thread counts use_cpu_chains asks for, without changing this process's."""
    calls = []
    monkeypatch.setattr(tf.config.threading, "set_intra_op_parallelism_threads", calls.append)
    monkeypatch.setattr(ReplicatedModel, "parallel_chains", 1)
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


def test_chains_refused_below_one_or_after_tensorflow_started(intra_op_calls, monkeypatch):
    with pytest.raises(StrategyError, match="at least 1, got 0"):
        use_cpu_chains(0)

    def started(threads):
        raise RuntimeError("Intra op parallelism cannot be modified after initialization.")

    monkeypatch.setattr(tf.config.threading, "set_intra_op_parallelism_threads", started)
    with pytest.raises(StrategyError, match="before TensorFlow starts"):
        use_cpu_chains(2)
    assert ReplicatedModel.parallel_chains == 1
