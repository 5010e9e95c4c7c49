"""A pretraining run whose batch grows: it trains the growing batches, and a run stopped while
the batch grows resumes to the weights of an uninterrupted one."""

import io

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.training.pretrain import pretrain
from tests.run_helpers import ONE_LAYER, _absl_log_to, write_records, write_vocab

GROWTH = ["run.max_seq_length=32", "model.max_position_embeddings=64",
          "run.train_batch_size=8", "run.gradient_accumulation_steps=4",
          "run.initial_train_batch_size=2", "run.batch_growth_steps=8",
          "run.save_checkpoints_steps=4", "run.log_every_steps=2",
          *(f"model.{size}" for size in ONE_LAYER)]  # each run's trace is the test's time


def _weights(run_dir):
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(run_dir / "checkpoints")))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if name.startswith("weights/")}


@pytest.mark.slow
def test_a_run_stopped_while_its_batch_grows_resumes_exactly(tmp_path):
    data = write_records(tmp_path / "records")
    vocab = write_vocab(tmp_path / "vocab.txt")

    def run(name, stop_at_step=None):
        log = io.StringIO()  # absl's lines, whatever an earlier test did to logging's handlers
        with _absl_log_to(log):
            result = pretrain(config="pretrain/demo", data=data, vocab_file=vocab,
                              model_dir=str(tmp_path / name), train_steps=10,
                              stop_at_step=stop_at_step, overrides=GROWTH, export=False)
        return result, log.getvalue()

    straight, log = run("straight")
    assert straight.status == "finished"
    assert "growing from 2 (now 2) to step 8" in log, log[-3000:]
    run("resumed", stop_at_step=5)
    resumed, log = run("resumed")
    assert resumed.status == "finished" and "growing from 2 (now 6) to step 8" in log, log[-3000:]
    expected, actual = _weights(tmp_path / "straight"), _weights(tmp_path / "resumed")
    assert expected.keys() == actual.keys() and expected
    for name, value in expected.items():
        np.testing.assert_allclose(actual[name], value, rtol=1e-5, atol=1e-6, err_msg=name)
