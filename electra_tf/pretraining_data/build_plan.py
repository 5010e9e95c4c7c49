"""Planning a pretraining-data build: how many shards, and which work units feed which shards.

Every shard is a sample of the whole corpus, as in the original (its input files shuffled, its
examples written round-robin over 1,000 shards), and the output depends on the seed and the
corpus only, never on the number of processes:

- the corpus is cut into work units (`corpus.TextBlock`: 1 MiB of a text file;
  `corpus.TfdsBlock`: an even slice of a TFDS split), each packed with its own random stream;
- the units are shuffled with the seed and dealt to G shard groups (the k-th unit of the
  shuffled list to group k % G);
- group g owns shards g, g + G, g + 2G, ...: it packs its units in their shuffled order and
  writes the j-th example of that stream to its (j mod n)-th shard (n: its shard count).

So consecutive records of a shard are n examples apart in a stream that visits the corpus in
random order, and a reader interleaving a few shards sees the whole corpus at every stretch of
training. A group is written by one process, so G bounds the build's parallelism; G depends
on the shard count and the number of units only.
"""

from __future__ import annotations

import dataclasses
import math
import random
from typing import Sequence

MAX_SHARDS = 1000  # the original's fixed count
MIN_DEFAULT_SHARDS = 64  # read 4-16 at a time, shuffled per epoch: enough orders to mix
SHARD_TEXT_BYTES = 16 << 20  # default: one shard per 16 MiB of text above 64 shards
MIN_EXAMPLES_PER_SHARD = 100  # a small corpus gets fewer shards rather than near-empty ones
BYTES_PER_TOKEN = 5  # for the estimate above: English text, spaces included
MIN_SHARDS_PER_GROUP = 16  # consecutive records of a shard: 16+ examples apart in its stream
MAX_GROUPS = 64


@dataclasses.dataclass(frozen=True)
class ShardGroup:
    """Shards written together from the same stream of units.

    Attributes:
      index: the group's number g.
      shards: its shard indices g, g + G, ... (ascending).
      units: its work units, in the order they are packed.
    """

    index: int
    shards: tuple[int, ...]
    units: tuple


def choose_num_shards(corpus_bytes: int, max_seq_length: int, requested: int | None = None
                      ) -> int:
    """The shard count: `requested`, or 64 to 1,000 by corpus size (one per 16 MiB of text).

    A corpus too small to give each of 64 shards about 100 examples gets fewer shards.
    """
    if requested is not None:
        if requested < 1:
            raise ValueError(f"num_shards must be positive, got {requested}")
        return requested
    by_size = max(MIN_DEFAULT_SHARDS, math.ceil(corpus_bytes / SHARD_TEXT_BYTES))
    estimated_examples = corpus_bytes // (BYTES_PER_TOKEN * max_seq_length)
    return max(1, min(by_size, estimated_examples // MIN_EXAMPLES_PER_SHARD, MAX_SHARDS))


def num_groups(num_shards: int, num_units: int) -> int:
    """G: at most 64, at least 16 shards per group, no group without a unit."""
    return max(1, min(num_units, num_shards // MIN_SHARDS_PER_GROUP, MAX_GROUPS))


def plan_shard_groups(units: Sequence, num_shards: int, seed: int) -> list[ShardGroup]:
    """Deals the units, shuffled with `seed`, to the shard groups (module docstring)."""
    order = list(range(len(units)))
    random.Random(f"electra_tf:{seed}:unit order").shuffle(order)
    count = num_groups(num_shards, len(units))
    return [ShardGroup(g, tuple(range(g, num_shards, count)),
                       tuple(units[u] for u in order[g::count]))
            for g in range(count)]
