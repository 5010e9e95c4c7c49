"""A learnable synthetic SQuAD task written in the official JSON layout (no downloads).

Contexts are runs of topic-A words ("alpha3 alpha17 ...") with one run of 1-2 topic-B words
somewhere inside; the question asks for the topic-B run, which is the answer. In the v2.0
variant half of the questions are about contexts without any topic-B word: unanswerable.
"""

import json
import random

from tests.finetuning.helpers import TOPIC_A, TOPIC_B, tiny_config

QUESTION_WORDS = TOPIC_A[:3]  # the question carries no information: the answer is the B run


def synthetic_squad(n: int, seed: int, version: str = "1.1", min_words=12, max_words=70) -> dict:
    rng = random.Random(seed)
    paragraphs = []
    for i in range(n):
        words = [rng.choice(TOPIC_A) for _ in range(rng.randint(min_words, max_words))]
        impossible = version == "v2.0" and rng.random() < 0.5
        qa = {"id": f"q{seed}-{i}", "question": " ".join(rng.sample(QUESTION_WORDS, 2))}
        if impossible:
            qa.update(answers=[], is_impossible=True)
        else:
            answer = [rng.choice(TOPIC_B) for _ in range(rng.randint(1, 2))]
            at = rng.randint(0, len(words))
            words[at:at] = answer
            start = len(" ".join(words[:at])) + (1 if at else 0)
            qa["answers"] = [{"text": " ".join(answer), "answer_start": start}]
            if version == "v2.0":
                qa["is_impossible"] = False
        paragraphs.append({"context": " ".join(words), "qas": [qa]})
    return {"version": version, "data": [{"title": "synthetic", "paragraphs": paragraphs}]}


def write_squad(directory, n_train, n_dev, version="1.1"):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "train.json").write_text(json.dumps(synthetic_squad(n_train, 0, version)))
    (directory / "dev.json").write_text(json.dumps(synthetic_squad(n_dev, 1, version)))
    return str(directory)


QA_OVERRIDES = ["model.max_position_embeddings=64", "finetune.max_seq_length=48",
                "qa.doc_stride=16", "qa.max_query_length=4", "qa.beam_size=8",
                "optimizer.learning_rate=3e-3", "optimizer.layerwise_lr_decay=0",
                "finetune.num_train_epochs=10", "finetune.train_batch_size=16",
                "finetune.eval_batch_size=64"]


def qa_config(vocab_file, *overrides):
    return tiny_config(vocab_file, *QA_OVERRIDES, *overrides)
