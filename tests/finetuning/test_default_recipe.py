"""The recipe without --config (finetune/default) learns on small models and small label sets:
its learning rate follows the encoder's width and short training sets get at least 100 steps.
The original code's recipe (finetune/small, lr 1e-4, 3 epochs) stays available by name."""

import random

import pytest

from electra_tf.config import FinetuneConfig, learning_rate_for_width, load_config
from electra_tf.task_data.classification_data import Example
from electra_tf.task_data.classification_features import LabelSpace
from electra_tf.finetuning import api
from electra_tf.finetuning.runner import run_trials, steps_for
from electra_tf.finetuning.tasks import TaskData
from tests.finetuning.helpers import TINY_MODEL, TOPIC_A, TOPIC_B, pair_task, write_vocab


def test_learning_rate_for_width_is_the_papers_at_its_sizes():
    assert [learning_rate_for_width(w) for w in (256, 768, 1024)] == [3e-4, 1e-4, 5e-5]
    assert learning_rate_for_width(128) == 6e-4 and learning_rate_for_width(64) == 1.2e-3
    assert learning_rate_for_width(512) == 1.5e-4  # 1 / width between Small and Base
    assert 5e-5 < learning_rate_for_width(900) < 1e-4
    assert learning_rate_for_width(2048) == 2.5e-5


def test_the_default_recipe_takes_the_rate_of_its_width_unless_one_is_named():
    assert api.DEFAULT_CONFIG == "finetune/default"
    small = api.resolve_finetune_config(None, overrides=["model.hidden_size=128", "model.num_heads=2",
                                                "model.intermediate_size=512"])
    assert small.optimizer.learning_rate == 6e-4 and small.finetune.min_train_steps == 100
    assert api.resolve_finetune_config(None).optimizer.learning_rate == 3e-4  # ELECTRA-Small's width
    named = api.resolve_finetune_config(None, overrides=["optimizer.learning_rate=2e-5"])
    assert named.optimizer.learning_rate == 2e-5
    original = api.resolve_finetune_config(None, "finetune/small")
    assert original.optimizer.learning_rate == 1e-4 and original.finetune.min_train_steps == 0
    large = api.resolve_finetune_config(None, "finetune/large")  # recipes that name a rate keep it
    assert large.optimizer.learning_rate == 5e-5


def test_the_default_recipe_takes_layerwise_decay_by_size_as_the_original_switches_it():
    large_sizes = ["model.hidden_size=1024", "model.num_heads=16", "model.num_layers=24",
                   "model.intermediate_size=4096", "model.embedding_size=1024"]
    base_sizes = ["model.hidden_size=768", "model.num_heads=12", "model.num_layers=12",
                  "model.intermediate_size=3072", "model.embedding_size=768"]
    large = api.resolve_finetune_config(None, overrides=large_sizes)
    assert (large.optimizer.learning_rate, large.optimizer.layerwise_lr_decay) == (5e-5, 0.9)
    base = api.resolve_finetune_config(None, overrides=base_sizes)
    assert (base.optimizer.learning_rate, base.optimizer.layerwise_lr_decay) == (1e-4, 0.8)
    small = api.resolve_finetune_config(None)
    assert (small.optimizer.learning_rate, small.optimizer.layerwise_lr_decay) == (3e-4, 0.8)
    named = api.resolve_finetune_config(None, overrides=large_sizes + ["optimizer.layerwise_lr_decay=0.7"])
    assert named.optimizer.layerwise_lr_decay == 0.7  # a value the user names is kept
    assert api.resolve_finetune_config(None, "finetune/small", large_sizes  # as are a recipe's own
                              ).optimizer.layerwise_lr_decay == 0.8


def test_small_training_sets_get_whole_epochs_up_to_the_minimum_steps():
    task = pair_task(n_train=100, n_dev=10)
    job = type("Job", (), {"num_train": 100, "default_epochs": 3.0})()
    config = load_config("finetune/default", base=FinetuneConfig(),
                         overrides=TINY_MODEL + ["finetune.max_seq_length=16"])
    assert steps_for(job, config) == (4, 100, 10)  # 25 epochs of 4 steps, not 3
    job.num_train = 6400
    assert steps_for(job, config)[1] == 600  # enough steps already: the epochs as given
    original = load_config("finetune/small", base=FinetuneConfig(),
                           overrides=TINY_MODEL + ["finetune.max_seq_length=16"])
    job.num_train = len(task.train)
    assert steps_for(job, original)[1] == 12
    explicit = load_config("finetune/default", base=FinetuneConfig(), overrides=TINY_MODEL + [
        "finetune.max_seq_length=16", "finetune.num_train_epochs=2"])
    assert steps_for(job, explicit)[1] == 8  # epochs the user set are kept


def _topic_task(n_train: int, n_dev: int) -> TaskData:
    """Which topic are the words of a text drawn from? One text, two labels."""
    def examples(n, seed):
        rng = random.Random(seed)
        out = []
        for i in range(n):
            label = rng.choice(("a", "b"))
            words = TOPIC_A if label == "a" else TOPIC_B
            out.append(Example(f"t-{i}", " ".join(rng.choice(words) for _ in range(4)), None,
                               label))
        return out
    return TaskData("csv", LabelSpace(("a", "b")), "accuracy", 3.0, False, examples(n_train, 0),
                    {"dev": examples(n_dev, 1)})


@pytest.mark.slow
def test_the_default_learns_from_200_labels_where_the_original_recipe_does_not(tmp_path):
    vocab = write_vocab(tmp_path / "vocab.txt")
    task = _topic_task(200, 200)
    common = TINY_MODEL + [f"finetune.vocab_file={vocab}", "finetune.max_seq_length=16",
                           "finetune.log_every_steps=1000"]
    accuracy = {}
    for name in ("finetune/default", "finetune/small"):
        config = api.resolve_finetune_config(None, name, common)
        report = run_trials(task, config, str(tmp_path / name.split("/")[1]), num_trials=2,
                            export=False)
        accuracy[name] = report["dev"]["dev"]["median"]
    # width 32: lr 2.4e-3 for 105 steps, against 1e-4 for 21 steps
    assert accuracy["finetune/default"] >= 90.0, accuracy
    assert accuracy["finetune/small"] <= 75.0, accuracy
