"""Run as `python -m tests.finetuning.mirrored_equivalence <sum|mean>` (its own process: a second
MirroredStrategy over the same devices in one process reuses collective keys of the first).

Prints JSON: the largest weight difference between one device and MirroredStrategy over two
logical CPUs after the same fine-tuning steps, and how far one device moved from the start."""

import dataclasses
import json
import sys
import tempfile

import tensorflow as tf

tf.config.set_logical_device_configuration(
    tf.config.list_physical_devices("CPU")[0], [tf.config.LogicalDeviceConfiguration()] * 2)

import keras  # noqa: E402
import numpy as np  # noqa: E402

from electra_tf.finetuning.classification import train_dataset  # noqa: E402
from electra_tf.finetuning.runner import featurize_task  # noqa: E402
from electra_tf.models.classifier import ElectraClassifier  # noqa: E402
from electra_tf.training.optimizer import create_optimizer  # noqa: E402
from tests.finetuning.helpers import pair_task, tiny_config, write_vocab  # noqa: E402


def weights_after_steps(strategy, config, features, steps):
    keras.utils.set_random_seed(0)
    with strategy.scope():
        model = ElectraClassifier(config.model, 2, dropout=0.0,
                                  loss_reduction=config.finetune.loss_reduction)
        optimizer_config = dataclasses.replace(config.optimizer, train_steps=10, warmup_steps=2)
        model.compile(optimizer=create_optimizer(optimizer_config, config.model.num_layers))
    if steps:
        dataset = train_dataset(features.train, config.finetune.train_batch_size, seed=0)
        model.fit(dataset, steps_per_epoch=steps, epochs=1, verbose=0)
    return [v.numpy() for v in model.trainable_variables]


def main(reduction):
    import pathlib

    with tempfile.TemporaryDirectory() as directory:
        vocab = write_vocab(pathlib.Path(directory) / "vocab.txt")
        config = tiny_config(vocab, "model.hidden_dropout=0.0", "model.attention_dropout=0.0",
                             "optimizer.learning_rate=1e-2", f"finetune.loss_reduction={reduction}")
        features = featurize_task(pair_task(64, 8), config, vocab)
    one = weights_after_steps(tf.distribute.OneDeviceStrategy("/cpu:0"), config, features, 3)
    two = weights_after_steps(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]), config,
                              features, 3)
    initial = weights_after_steps(tf.distribute.OneDeviceStrategy("/cpu:0"), config, features, 0)
    print(json.dumps({
        "max_difference": float(max(np.max(np.abs(a - b)) for a, b in zip(one, two))),
        "moved": float(max(np.max(np.abs(a - b)) for a, b in zip(one, initial)))}))


if __name__ == "__main__":
    main(sys.argv[1])
