"""A seeded random subset of a dataset: the same samples for the same seed, in dataset order."""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Iterable, Iterator

from agent_eval.data.records import Item


def seeded_subset(items: Iterable[Item], size: int, seed: int) -> Iterator[Item]:
    """The `size` items whose ids hash lowest under `seed`, in the order the dataset has them.

    Hashing ids, not positions, keeps a sample in or out of the subset wherever it sits in the
    file, and a smaller subset lies inside a larger one of the same seed. Holds `size` items.
    """
    kept: list[tuple[int, int, Item]] = []  # (-rank, position, item): a max-heap by rank
    for position, item in enumerate(items):
        entry = (-_rank(seed, item.id), position, item)
        if len(kept) < size:
            heapq.heappush(kept, entry)
        elif entry > kept[0]:
            heapq.heapreplace(kept, entry)
    return (item for _, _, item in sorted(kept, key=lambda entry: entry[1]))


def _rank(seed: int, sample_id: str) -> int:
    digest = hashlib.blake2b(f"{seed}:{sample_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")
