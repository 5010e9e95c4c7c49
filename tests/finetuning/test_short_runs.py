"""A fine-tuning run too short to learn says so, with the epochs that would be enough."""

import logging

import pytest

from electra_tf.finetuning.runner import MIN_LR_STEPS, run_trials, short_run_warning
from tests.finetuning.helpers import pair_task, tiny_config, write_vocab


def test_short_run_warning_names_the_epochs_that_reach_the_threshold():
    # 200 labels, batch 32: 7 steps an epoch; 20 epochs at 1e-4 is 140 steps, 0.014
    warning = short_run_warning(140, 1e-4, 200, 32)
    assert warning and "only 140 steps" in warning and "learning rate 0.0001" in warning
    epochs = int(warning.split("to about ")[1].split()[0])
    assert epochs == 29  # ceil(0.02 / 1e-4 / 7)
    assert epochs * 7 * 1e-4 >= MIN_LR_STEPS > (epochs - 1) * 7 * 1e-4


@pytest.mark.parametrize("steps, lr", [(100, 1e-3), (200, 1e-4), (344, 1e-4), (36000, 1e-4)])
def test_runs_that_learn_are_not_warned(steps, lr):
    assert short_run_warning(steps, lr, 32 * steps, 32) is None


@pytest.mark.slow
def test_finetune_logs_the_warning_once_per_run(tmp_path, caplog):
    vocab = write_vocab(tmp_path / "vocab.txt")
    task = pair_task(n_train=64, n_dev=32)  # 2 steps an epoch, 3 epochs at 1e-4: 6 steps
    with caplog.at_level(logging.WARNING):
        run_trials(task, tiny_config(vocab), str(tmp_path / "run"), num_trials=2, export=False)
    warnings = [r.getMessage() for r in caplog.records if "fine-tuning for only" in r.getMessage()]
    assert len(warnings) == 1 and "only 6 steps" in warnings[0], warnings
