"""Fine-tuning learns, splits across replicas exactly, and resumes where it stopped."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.finetuning.runner import featurize_task, run_trial, run_trials
from electra_tf.training.callbacks import Preemption
from tests.finetuning.helpers import pair_task, regression_task, tiny_config, write_vocab
from tests.run_helpers import REPO

pytestmark = pytest.mark.slow  # each test trains a task to a score (or in a subprocess)

LEARN = ["optimizer.learning_rate=1e-3", "finetune.num_train_epochs=25"]


@pytest.fixture(scope="module")
def vocab(tmp_path_factory):
    return write_vocab(tmp_path_factory.mktemp("vocab") / "vocab.txt")


def test_pair_task_reaches_95_percent_dev_accuracy(vocab, tmp_path):
    report = run_trials(pair_task(), tiny_config(vocab, *LEARN), str(tmp_path), num_trials=2,
                        export=False)
    accuracies = report["dev"]["dev"]["values"]
    assert len(accuracies) == 2 and min(accuracies) >= 95.0, accuracies
    first = report["trial_results"][0]["history"]
    assert first[0]["dev"]["accuracy"] < 80.0  # it learned during the run, not before
    assert report["trial_results"][0]["seed"] != report["trial_results"][1]["seed"]


def test_regression_task_correlates(vocab, tmp_path):
    report = run_trials(regression_task(), tiny_config(vocab, "optimizer.learning_rate=1e-3",
                                                       "finetune.num_train_epochs=5"),
                        str(tmp_path), num_trials=2, export=False)
    for trial in report["trial_results"]:
        last = trial["dev"]["dev"]["last"]
        assert last["pearson"] > 80.0 and last["spearman"] > 80.0, last
    assert report["headline"] == "spearman"


@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_mirrored_strategy_equals_one_device(reduction):
    result = subprocess.run([sys.executable, "-m", "tests.finetuning.mirrored_equivalence", reduction],
                            capture_output=True, text=True, timeout=300, cwd=REPO,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert result.returncode == 0, result.stderr[-3000:]
    record = json.loads(result.stdout.strip().splitlines()[-1])
    assert record["moved"] > 1e-3  # it trained
    assert record["max_difference"] < 1e-5, record


class PreemptAfter(Preemption):
    """A SIGTERM that arrives after `steps` training steps."""

    def __init__(self, steps):
        super().__init__()
        self.checks = steps

    @property
    def requested(self):
        self.checks -= 1
        return self.checks < 0

    @requested.setter
    def requested(self, value):
        pass


def test_preempted_trial_resumes_to_the_same_weights(vocab, tmp_path):
    config = tiny_config(vocab, "finetune.num_train_epochs=2", "finetune.save_checkpoints_steps=1000")
    task = pair_task(160, 32)
    features = featurize_task(task, config, vocab)
    common = dict(source=None, strategy=tf.distribute.get_strategy(), jit_compile=False,
                  export=False)
    whole = run_trial(features, config, str(tmp_path / "whole"), 7,
                      preemption=PreemptAfter(10 ** 6), **common)
    first = run_trial(features, config, str(tmp_path / "split"), 7,
                      preemption=PreemptAfter(4), **common)
    assert first["status"] == "preempted"
    assert tf.train.latest_checkpoint(str(tmp_path / "split" / "checkpoints")).endswith("-5")
    second = run_trial(features, config, str(tmp_path / "split"), 7,
                       preemption=PreemptAfter(10 ** 6), **common)
    assert whole["status"] == second["status"] == "finished"
    a = tf.train.load_checkpoint(str(tmp_path / "whole" / "checkpoints"))
    b = tf.train.load_checkpoint(str(tmp_path / "split" / "checkpoints"))
    names = [n for n, _ in tf.train.list_variables(str(tmp_path / "whole" / "checkpoints"))
             if n.startswith("weights/")]
    assert len(names) > 20
    for name in names:
        np.testing.assert_allclose(a.get_tensor(name), b.get_tensor(name), atol=1e-5, err_msg=name)
    assert second["dev"]["dev"]["last"] == pytest.approx(whole["dev"]["dev"]["last"], abs=1e-6)
