"""Run checkpoints restore into a model built in a different order (seed-generator names)."""

import numpy as np
import pytest

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
