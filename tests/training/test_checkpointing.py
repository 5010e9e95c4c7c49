"""Run checkpoints restore into a model built in a different order (seed-generator names), and a
torn newest checkpoint is passed over for the one before it."""

import dataclasses
import logging
import shutil

import numpy as np
import pytest

from electra_tf.errors import CheckpointError
from electra_tf.models import ElectraPretrainer
from electra_tf.training.checkpointing import RunCheckpoint
from electra_tf.training.optimizer import create_optimizer
from tests.models.helpers import fast_optimizer_config, masked_batch, objective, random_ids, tiny_model_config


def _model():
    model = ElectraPretrainer(tiny_model_config(), objective())
    model.compile(optimizer=create_optimizer(fast_optimizer_config()), jit_compile=False)
    return model


@pytest.mark.slow
def test_restore_matches_weights_optimizer_and_dropout_state(tmp_path):
    ids, mask = random_ids(4, 24)
    saved = _model()
    saved.train_on_batch(masked_batch(ids, mask))
    RunCheckpoint(saved, str(tmp_path)).save(7)
    _model()  # another model in between: Keras' seed-generator counters move on
    restored = _model()
    assert {v.path for v in restored.variables} != {v.path for v in saved.variables}
    assert RunCheckpoint(restored, str(tmp_path)).restore_latest() == 7
    for a, b in zip(saved.variables, restored.variables):  # weights and dropout seed states
        np.testing.assert_array_equal(b.numpy(), a.numpy(), err_msg=a.path)
    for a, b in zip(saved.optimizer.variables, restored.optimizer.variables):
        np.testing.assert_array_equal(b.numpy(), a.numpy())


# ---- a torn newest checkpoint ------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_checkpoints(tmp_path_factory):
    """A directory with ckpt-10 and ckpt-20 of one model, and each one's weights."""
    directory = tmp_path_factory.mktemp("two_checkpoints")
    ids, mask = random_ids(4, 24)
    model = _model()
    run = RunCheckpoint(model, str(directory))
    weights = {}
    for step in (10, 20):
        model.train_on_batch(masked_batch(ids, mask))
        run.save(step)
        weights[step] = [v.numpy().copy() for v in model.weights]
    return directory, weights


def _copy(two_checkpoints, tmp_path):
    directory, weights = two_checkpoints
    copy = tmp_path / "checkpoints"
    shutil.copytree(directory, copy)
    return copy, weights


def _cut_in_half(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _files(directory):
    return {p.name: p.read_bytes() for p in directory.iterdir()}


@pytest.mark.parametrize("torn", ["ckpt-20.data-00000-of-00001", "ckpt-20.index"])
def test_a_torn_newest_checkpoint_falls_back_to_the_one_before(two_checkpoints, tmp_path, torn,
                                                                caplog):
    directory, weights = _copy(two_checkpoints, tmp_path)
    _cut_in_half(directory / torn)
    before = _files(directory)
    model = _model()
    run = RunCheckpoint(model, str(directory))
    with caplog.at_level(logging.WARNING):
        assert run.restore_latest() == 10
    assert run.latest == str(directory / "ckpt-10")
    for value, expected in zip(model.weights, weights[10]):
        np.testing.assert_array_equal(value.numpy(), expected, err_msg=value.path)
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.startswith(f"{directory / 'ckpt-20'} cannot be read (")
    assert warning.endswith(f"resuming from {directory / 'ckpt-10'}, the newest checkpoint "
                            "that reads")
    assert _files(directory) == before  # nothing deleted or rewritten
    run.save(15)  # the next save is the newest again
    assert run.latest == str(directory / "ckpt-15")


def test_no_readable_checkpoint_is_one_error_naming_each_and_nothing_is_deleted(
        two_checkpoints, tmp_path):
    directory, _ = _copy(two_checkpoints, tmp_path)
    _cut_in_half(directory / "ckpt-20.data-00000-of-00001")
    _cut_in_half(directory / "ckpt-10.index")
    before = _files(directory)
    with pytest.raises(CheckpointError) as raised:
        RunCheckpoint(_model(), str(directory)).restore_latest()
    message = str(raised.value)
    assert message.startswith(f"no checkpoint in {directory} can be read: ckpt-20: ")
    assert "; ckpt-10: " in message and "Nothing was deleted" in message
    assert "\n" not in message
    assert _files(directory) == before


def test_a_checkpoint_of_another_model_is_refused_not_passed_over(two_checkpoints, tmp_path):
    directory, _ = _copy(two_checkpoints, tmp_path)
    other = ElectraPretrainer(dataclasses.replace(tiny_model_config(), hidden_size=64,
                                                  num_heads=2), objective())
    other.compile(optimizer=create_optimizer(fast_optimizer_config()), jit_compile=False)
    with pytest.raises(CheckpointError, match=r"ckpt-20 does not fit this model"):
        RunCheckpoint(other, str(directory)).restore_latest()
