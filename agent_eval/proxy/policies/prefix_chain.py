"""Prefixes as chains of chunk hashes, and each worker's least-recently-used set of them.

Text is cut into fixed-size chunks; a chunk's key hashes its bytes with the key before it,
so one key stands for the whole text up to the chunk's end and two texts share keys exactly
as long as they share a start. Whether a worker holds a prefix is one lookup per chunk.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence


def chunk_chain(text: bytes, chunk_bytes: int) -> list[int]:
    """Keys of every whole chunk of `text`, each standing for the text up to its end."""
    keys: list[int] = []
    key = 0
    for start in range(0, len(text) - chunk_bytes + 1, chunk_bytes):
        # Python's own hash: fast, and salted per process, which is all an in-memory index needs.
        key = hash((key, text[start : start + chunk_bytes]))
        keys.append(key)
    return keys


class PrefixSet:
    """The prefixes routed to one worker, bounded in chunks; the least recently used go first."""

    def __init__(self, capacity: int) -> None:
        self._keys: OrderedDict[int, None] = OrderedDict()
        self._capacity = capacity

    def __len__(self) -> int:
        return len(self._keys)

    def match(self, chain: Sequence[int]) -> int:
        """How many chunks of this chain, from its start, the worker holds."""
        keys = self._keys
        held = 0
        for key in chain:
            if key not in keys:
                break
            held += 1
        return held

    def add(self, chain: Sequence[int]) -> None:
        """Remember the chain as just used; evict the oldest chunks past the capacity."""
        keys = self._keys
        # From the end back, so a chain's start is its most recent chunk and eviction trims
        # conversations from their tails, as a worker's own prefix cache does.
        for key in reversed(chain):
            keys[key] = None
            keys.move_to_end(key)
        self.resize(self._capacity)

    def resize(self, capacity: int) -> None:
        """Hold at most `capacity` chunks from now on."""
        self._capacity = capacity
        keys = self._keys
        while len(keys) > capacity:
            keys.popitem(last=False)
