"""A simulated prefix KV cache: token blocks keyed by hash chains in an LRU, and their prefill.

Tokens are approximated as 4 bytes of UTF-8 each, everywhere (prompt tokens, cached tokens,
capacity). A block is `block_tokens` tokens; its key hashes its bytes with the key of the block
before it, so one key stands for the whole prefix up to its end, as in vLLM's paged cache.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

BYTES_PER_TOKEN = 4
Sleep = Callable[[float], Awaitable[None]]


def approx_tokens(text: str) -> int:
    """Tokens of `text` by the cache's rule: one per 4 bytes of UTF-8, rounded up."""
    return -(-len(_utf8(text)) // BYTES_PER_TOKEN)


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


@dataclass(frozen=True)
class CacheConfig:
    """The simulated cache's size and the cost of what it misses."""

    capacity_tokens: int = 262_144
    block_tokens: int = 16
    prefill_per_token: float = 0.0002  # seconds of prefill per uncached prompt token
    prefill_slots: int = 1  # requests prefilling at once: one GPU's compute is shared, not free

    def __post_init__(self) -> None:
        if self.block_tokens < 1 or self.capacity_tokens < self.block_tokens:
            raise ValueError("the cache needs block_tokens >= 1 and room for one block")
        if self.prefill_per_token < 0 or self.prefill_slots < 1:
            raise ValueError("prefill_per_token must be >= 0 and prefill_slots >= 1")

    def prefill_seconds(self, uncached_tokens: int) -> float:
        return uncached_tokens * self.prefill_per_token


@dataclass(frozen=True)
class Lookup:
    """One prompt against the cache: its block keys and how much of it was already there."""

    keys: tuple[int, ...]  # chain keys of the prompt's cacheable blocks, first block first
    prompt_tokens: int
    cached_tokens: int

    @property
    def uncached_tokens(self) -> int:
        return self.prompt_tokens - self.cached_tokens


class PrefixCache:
    """Blocks of token prefixes, least recently used evicted first."""

    def __init__(self, capacity_tokens: int, block_tokens: int) -> None:
        self.block_tokens = block_tokens
        self._block_bytes = block_tokens * BYTES_PER_TOKEN
        self._capacity = capacity_tokens // block_tokens  # in blocks
        self._blocks: OrderedDict[int, None] = OrderedDict()

    def __len__(self) -> int:
        """Blocks held."""
        return len(self._blocks)

    def lookup(self, text: str) -> Lookup:
        """The prompt's block keys and its cached tokens: the longest chain of held blocks."""
        data = _utf8(text)
        prompt_tokens = -(-len(data) // BYTES_PER_TOKEN)
        # The last token is always computed (the next token's logits need it), as in vLLM.
        count = max(0, prompt_tokens - 1) // self.block_tokens
        keys, key, matched = [], 0, 0
        for start in range(0, count * self._block_bytes, self._block_bytes):
            key = hash((key, data[start : start + self._block_bytes]))
            keys.append(key)
            if matched == len(keys) - 1 and key in self._blocks:
                matched += 1
        return Lookup(tuple(keys), prompt_tokens, matched * self.block_tokens)

    def insert(self, lookup: Lookup) -> None:
        """Hold the prompt's blocks as most recent, evicting the least recent beyond capacity."""
        # Deepest first, so a chain's first blocks are the last of it to go: a block is useless
        # once a block before it is gone.
        for key in reversed(lookup.keys):
            self._blocks[key] = None
            self._blocks.move_to_end(key)
        while len(self._blocks) > self._capacity:
            self._blocks.popitem(last=False)

    def clear(self) -> None:
        self._blocks.clear()


@dataclass
class Prefill:
    """One worker's prefill: a slot, a cache lookup, a delay per uncached token, an insert."""

    config: CacheConfig
    sleep: Sleep = asyncio.sleep
    cache: PrefixCache = field(init=False)
    _slots: asyncio.Semaphore = field(init=False)

    def __post_init__(self) -> None:
        self.cache = PrefixCache(self.config.capacity_tokens, self.config.block_tokens)
        self._slots = asyncio.Semaphore(self.config.prefill_slots)

    async def run(self, text: str) -> Lookup:
        """Prefill `text`: wait for a slot, then pay for what the cache misses."""
        async with self._slots:
            # Matched when its turn comes, as a scheduler does: requests ahead may have filled it.
            lookup = self.cache.lookup(text)
            await self.sleep(self.config.prefill_seconds(lookup.uncached_tokens))
            self.cache.insert(lookup)
        return lookup
