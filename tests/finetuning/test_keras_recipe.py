"""`fit` on raw strings with compile_for_finetuning gets what run_finetuning gets."""

import keras
import numpy as np
import pytest

import electra_tf  # noqa: F401  registers compile_for_finetuning's recipe
from electra_tf.config import ModelConfig
from electra_tf.finetuning.runner import run_trials
from electra_tf.models import ElectraClassifier
from electra_tf.preprocessing.text_classifier import ElectraTextClassifierPreprocessor
from tests.finetuning.helpers import pair_task, tiny_config, write_vocab

pytestmark = pytest.mark.slow  # trains the same task both ways, two seeds each

LEARN = ["optimizer.learning_rate=1e-3", "finetune.num_train_epochs=25"]


def test_fit_on_strings_matches_run_finetuning_on_the_same_task(tmp_path):
    vocab = write_vocab(tmp_path / "vocab.txt")
    task, config = pair_task(), tiny_config(vocab, *LEARN)
    report = run_trials(task, config, str(tmp_path / "run"), num_trials=2, export=False)
    by_runner = report["dev"]["dev"]["values"]

    labels = task.label_space.labels
    texts = ([e.text_a for e in task.train], [e.text_b for e in task.train])
    y = np.array([labels.index(e.label) for e in task.train])
    dev = task.eval_splits["dev"]
    dev_texts = ([e.text_a for e in dev], [e.text_b for e in dev])
    dev_y = np.array([labels.index(e.label) for e in dev])
    steps = report["trial_results"][0]["steps"]
    by_fit = []
    for seed in (0, 1):
        keras.utils.set_random_seed(seed)
        preprocessor = ElectraTextClassifierPreprocessor.from_vocabulary(
            vocab, sequence_length=config.finetune.max_seq_length)
        model = ElectraClassifier(ModelConfig(**vars(config.model)), num_labels=2,
                                  preprocessor=preprocessor)
        resolved = model.compile_for_finetuning(steps, "finetune/small",
                                                ["optimizer.learning_rate=1e-3"])
        assert resolved.optimizer.layerwise_lr_decay == config.optimizer.layerwise_lr_decay
        model.fit(x=texts, y=y, batch_size=config.finetune.train_batch_size, epochs=25, verbose=0)
        result = model.evaluate(x=dev_texts, y=dev_y, return_dict=True, verbose=0)
        by_fit.append(100.0 * result["accuracy"])
    # the runner's own bar for this task (test_training.py), and the two paths agree
    assert min(by_runner) >= 95.0 and min(by_fit) >= 95.0, (by_runner, by_fit)
    assert abs(np.median(by_fit) - np.median(by_runner)) <= 3.0, (by_runner, by_fit)
