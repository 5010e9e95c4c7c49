"""A learnable synthetic tagging task (no downloads): spans of 1-3 words from one topic's
vocabulary, typed by that topic, between filler words; and CoNLL files of it."""

import random

from electra_tf.task_data.tagging import TaggedSentence

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
TOPICS = {"A": [f"alpha{i}" for i in range(10)], "B": [f"beta{i}" for i in range(10)]}
FILLER = [f"gamma{i}" for i in range(10)]
VOCAB = SPECIALS + TOPICS["A"] + TOPICS["B"] + FILLER + ["##x"]
MAX_SEQ_LENGTH = 24


def topic_sentences(n, seed):
    """Words from FILLER are O; a run of words from one topic is one span of that topic (a
    filler word always follows a span, so adjacent spans never share a type). One word in four
    carries a suffix "x" and becomes two pieces."""
    rng = random.Random(seed)
    sentences = []
    for _ in range(n):
        words, tags, length = [], [], rng.randint(3, 9)
        while len(words) < length:
            if rng.random() < 0.6:
                topic = rng.choice("AB")
                size = rng.randint(1, 3)
                words += [rng.choice(TOPICS[topic]) for _ in range(size)]
                tags += [f"B-{topic}"] + [f"I-{topic}"] * (size - 1)
            words.append(rng.choice(FILLER))
            tags.append("O")
        words = [w + "x" if rng.random() < 0.25 else w for w in words]
        sentences.append(TaggedSentence(words, tags))
    return sentences


def write_conll(path, sentences, extra_columns=0) -> str:
    """A CoNLL file: `word [X ...] tag` lines (`extra_columns` dummy columns, as CoNLL-2003's
    POS and chunk columns), a blank line between sentences, a -DOCSTART- line first."""
    lines = ["-DOCSTART- " + "X " * extra_columns + "O", ""]
    for sentence in sentences:
        lines += [" ".join([word] + ["X"] * extra_columns + [tag])
                  for word, tag in zip(sentence.words, sentence.tags)] + [""]
    path.write_text("\n".join(lines) + "\n")
    return str(path)
