"""Synthetic tasks and tiny configs for fine-tuning tests (no downloads)."""

import random

from electra_tf.config import FinetuneConfig, load_config
from electra_tf.task_data.classification_data import Example
from electra_tf.task_data.classification_features import LabelSpace
from electra_tf.finetuning.tasks import TaskData

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
TOPIC_A = [f"alpha{i}" for i in range(20)]
TOPIC_B = [f"beta{i}" for i in range(20)]


def write_vocab(path) -> str:
    path.write_text("\n".join(SPECIALS + TOPIC_A + TOPIC_B) + "\n")
    return str(path)


def topic_pairs(n, seed):
    """Pair task: do text a and text b draw their words from the same topic?"""
    rng = random.Random(seed)
    examples = []
    for i in range(n):
        topic_a, topic_b = rng.choice((TOPIC_A, TOPIC_B)), rng.choice((TOPIC_A, TOPIC_B))
        a = " ".join(rng.choice(topic_a) for _ in range(rng.randint(2, 6)))
        b = " ".join(rng.choice(topic_b) for _ in range(rng.randint(2, 6)))
        examples.append(Example(f"x-{i}", a, b, "same" if topic_a is topic_b else "different"))
    return examples


def topic_share(n, seed):
    """Regression: the share of topic-A words in a text, on a 0-5 scale."""
    rng = random.Random(seed)
    examples = []
    for i in range(n):
        length = rng.randint(2, 8)
        words = [rng.choice(TOPIC_A if rng.random() < 0.5 else TOPIC_B) for _ in range(length)]
        share = sum(w in TOPIC_A for w in words) / length
        examples.append(Example(f"x-{i}", " ".join(words), None, 5.0 * share))
    return examples


def pair_task(n_train=640, n_dev=200):
    return TaskData("csv", LabelSpace(("different", "same")), "f1_accuracy", 3.0, False,
                    topic_pairs(n_train, 0), {"dev": topic_pairs(n_dev, 1)})


def regression_task(n_train=640, n_dev=200):
    return TaskData("csv", LabelSpace(None, (0.0, 5.0)), "pearson_spearman", 3.0, False,
                    topic_share(n_train, 0), {"dev": topic_share(n_dev, 1)})


TINY_MODEL = ["model.vocab_size=48", "model.embedding_size=16", "model.hidden_size=32",
              "model.num_layers=2", "model.num_heads=2", "model.intermediate_size=64",
              "model.max_position_embeddings=32"]


def tiny_config(vocab_file, *overrides) -> FinetuneConfig:
    return load_config("finetune/small", base=FinetuneConfig(), overrides=TINY_MODEL + [
        f"finetune.vocab_file={vocab_file}", "finetune.max_seq_length=16",
        "finetune.log_every_steps=1000", *overrides])
