"""Classification examples -> fixed-length int features, as the original's `_featurize`.

`[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`, segment ids 0 up to and including the first [SEP] and
1 after it, padded with 0 to max_seq_length. Pairs are truncated longest-first (one token at a
time from the longer side, from `b` on a tie) to max_seq_length - 3; single texts to
max_seq_length - 2. Regression targets are scaled to [0, 1] by the label range (STS-B: / 5).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

import numpy as np
import tensorflow as tf

TOKENIZE_BATCH = 2048


@dataclasses.dataclass(frozen=True)
class LabelSpace:
    """What a label means: class names in order, or a regression range."""

    labels: tuple[str, ...] | None = None  # None: regression
    label_range: tuple[float, float] = (0.0, 1.0)

    @property
    def regression(self) -> bool:
        return self.labels is None

    @property
    def num_labels(self) -> int:
        return 1 if self.labels is None else len(self.labels)

    def encode(self, label) -> float | int:
        """A label as a class id, or a regression label as a target in [0, 1]."""
        if self.labels is None:
            low, high = self.label_range
            return (float(label) - low) / (high - low)
        return self.labels.index(str(label))

    def decode_regression(self, targets: np.ndarray) -> np.ndarray:
        """Model outputs on the [0, 1] scale -> the original label scale."""
        low, high = self.label_range
        return np.asarray(targets, np.float64) * (high - low) + low


def truncate_pair(tokens_a: list, tokens_b: list, max_length: int) -> None:
    """The original's `_truncate_seq_pair`: pops from the longer list (b on a tie), in place."""
    while len(tokens_a) + len(tokens_b) > max_length:
        (tokens_a if len(tokens_a) > len(tokens_b) else tokens_b).pop()


def wordpiece_ids(tokenizer: Callable, texts: Sequence[str]) -> list[list[int]]:
    """Token ids of every text, tokenized in batches by an in-graph tokenizer."""
    ids = []
    for start in range(0, len(texts), TOKENIZE_BATCH):
        tokens = tokenizer(tf.constant(list(texts[start:start + TOKENIZE_BATCH]), tf.string))
        ids.extend(tokens if isinstance(tokens, list) else tokens.to_list())  # eager keras-hub: lists
    return ids


def featurize(examples, tokenizer: Callable, special_ids, max_seq_length: int,
              label_space: LabelSpace) -> dict[str, np.ndarray]:
    """Examples -> {input_ids, input_mask, segment_ids: int32 [n, max_seq_length],
    labels: int32 class ids or float32 scaled targets [n] (0 for examples without a label)}."""
    ids_a = wordpiece_ids(tokenizer, [e.text_a for e in examples])
    pairs = [e.text_b is not None for e in examples]
    ids_b_iter = iter(wordpiece_ids(tokenizer, [e.text_b for e in examples if e.text_b is not None]))
    n = len(examples)
    features = {name: np.zeros([n, max_seq_length], np.int32)
                for name in ("input_ids", "input_mask", "segment_ids")}
    for i, (tokens_a, is_pair) in enumerate(zip(ids_a, pairs)):
        tokens_b = next(ids_b_iter) if is_pair else []
        if is_pair:
            truncate_pair(tokens_a, tokens_b, max_seq_length - 3)
        else:
            del tokens_a[max_seq_length - 2:]
        ids = [special_ids.cls, *tokens_a, special_ids.sep]
        segments = [0] * len(ids)
        if is_pair:
            ids += [*tokens_b, special_ids.sep]
            segments += [1] * (len(tokens_b) + 1)
        features["input_ids"][i, :len(ids)] = ids
        features["input_mask"][i, :len(ids)] = 1
        features["segment_ids"][i, :len(ids)] = segments
    dtype = np.float32 if label_space.regression else np.int32
    features["labels"] = np.array(
        [0 if e.label is None else label_space.encode(e.label) for e in examples], dtype)
    return features


def swap_pairs(examples) -> list:
    """The original's `double_unordered` addition: every pair again with a and b swapped."""
    return [dataclasses.replace(e, guid=f"{e.guid}-swapped", text_a=e.text_b, text_b=e.text_a)
            for e in examples]
