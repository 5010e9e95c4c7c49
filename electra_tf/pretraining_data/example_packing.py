"""The original's rules for packing a corpus's token ids into pretraining examples.

From google-research/electra `build_pretraining_dataset.py` (reference notes section 4.1):

- every line is a "sentence"; its WordPiece ids accumulate until their count reaches the target
  length, or the document ends; examples never cross documents, and tokens past the maximum
  are discarded, not carried over;
- segment split: with probability 0.1 segment A takes everything (a single-segment example);
  otherwise A's target is (target_length - 3) // 2 and a line goes to A if A is empty, or if it
  still fits under the target, or (while B is empty and A is under its target) on a coin flip;
  the rest goes to B. A is cut to max_len - 2 tokens, then B to max_len - len(A) - 3;
- after each example, with probability 0.05 the next target length is randint(5, max_len);
- layout `[CLS] A [SEP]` (segment 0), then `B [SEP]` (segment 1) when B is non-empty.
"""

from __future__ import annotations

import dataclasses
import math
import random
from typing import Iterable, Sequence

MIN_SEQ_LENGTH, MAX_SEQ_LENGTH = 5, 512  # [CLS] A [SEP] B [SEP] needs 5; positions stop at 512
SINGLE_SEGMENT_PROB = 0.1
SHORT_TARGET_PROB = 0.05


@dataclasses.dataclass
class PackingStats:
    documents: int = 0
    examples: int = 0
    tokens: int = 0  # WordPiece tokens of the corpus lines
    example_tokens: int = 0  # real positions written, [CLS] and [SEP] included
    discarded_tokens: int = 0
    single_segment_examples: int = 0
    short_target_examples: int = 0  # examples built towards a random short target length
    invalid_utf8_lines: int = 0  # corpus lines with bytes that are not UTF-8 (replaced)

    def add(self, other: "PackingStats") -> None:
        for field in dataclasses.fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))

    def minus(self, other: "PackingStats") -> "PackingStats":
        return PackingStats(*(getattr(self, f.name) - getattr(other, f.name)
                              for f in dataclasses.fields(self)))


class ExamplePacker:
    """Packs the token ids of one stream of documents into examples (module docstring rules).

    Args:
      max_seq_length: length of every example, [CLS] and [SEP]s included.
      cls_id, sep_id: ids of [CLS] and [SEP].
      rng: the stream's random.Random (segment split, coin flips, target lengths).
    """

    def __init__(self, max_seq_length: int, cls_id: int, sep_id: int, rng: random.Random):
        if not MIN_SEQ_LENGTH <= max_seq_length <= MAX_SEQ_LENGTH:
            raise ValueError(f"max_seq_length must be in [{MIN_SEQ_LENGTH}, "
                             f"{MAX_SEQ_LENGTH}], got {max_seq_length}")
        self.max_seq_length = max_seq_length
        self.cls_id, self.sep_id = cls_id, sep_id
        self.rng = rng
        self.target_length = max_seq_length
        self.stats = PackingStats()
        self._lines: list[list[int]] = []
        self._length = 0

    def add_document(self, lines: Iterable[Sequence[int]]) -> list[tuple[list[int], list[int]]]:
        """Adds one document (token ids per line); returns the finished (ids, segment ids)."""
        examples = []
        self.stats.documents += 1
        for ids in lines:
            if not ids:
                continue
            self._lines.append(list(ids))
            self._length += len(ids)
            self.stats.tokens += len(ids)
            if self._length >= self.target_length:
                examples.append(self._make_example())
        if self._length:
            examples.append(self._make_example())
        return examples

    def _make_example(self) -> tuple[list[int], list[int]]:
        rng, max_len = self.rng, self.max_seq_length
        if self.target_length < max_len:
            self.stats.short_target_examples += 1
        if rng.random() < SINGLE_SEGMENT_PROB:
            target_a = math.inf
        else:
            target_a = (self.target_length - 3) // 2
        a: list[int] = []
        b: list[int] = []
        for line in self._lines:
            # The short-circuit matters: the coin is only flipped when the first two tests fail.
            if (not a or len(a) + len(line) < target_a
                    or (not b and len(a) < target_a and rng.random() < 0.5)):
                a += line
            else:
                b += line
        total = len(a) + len(b)
        a = a[:max_len - 2]
        b = b[:max(0, max_len - len(a) - 3)]
        input_ids = [self.cls_id] + a + [self.sep_id]
        segment_ids = [0] * len(input_ids)
        if b:
            input_ids += b + [self.sep_id]
            segment_ids += [1] * (len(b) + 1)
        else:
            self.stats.single_segment_examples += 1
        self.stats.examples += 1
        self.stats.example_tokens += len(input_ids)
        self.stats.discarded_tokens += total - len(a) - len(b)

        self._lines, self._length = [], 0
        if rng.random() < SHORT_TARGET_PROB:
            self.target_length = rng.randint(MIN_SEQ_LENGTH, max_len)
        else:
            self.target_length = max_len
        return input_ids, segment_ids
