"""A consistent-hash ring of workers: a key goes to the first worker clockwise from its hash.

Each worker stands at VIRTUAL_NODES points, so keys spread evenly and a worker that leaves
moves only its own keys. Every proxy process builds the same ring from the same URLs, so
each places a key alike whatever it has seen.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Iterator, Sequence

from agent_eval.proxy.fleet.worker import Worker
from agent_eval.proxy.policies.base import Candidates

VIRTUAL_NODES = 64


def ring_hash(text: str | bytes) -> int:
    raw = text.encode() if isinstance(text, str) else text
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "big")


class HashRing:
    """The workers' points on the ring, rebuilt when the pool changes."""

    def __init__(self) -> None:
        self._ring: list[tuple[int, str]] = []
        self._points: list[int] = []

    def rebuild(self, urls: Sequence[str]) -> None:
        # Only new workers' points are hashed; the kept ones are one sorted run already, so
        # the sort merges two runs: one worker added to 1,000 costs milliseconds.
        wanted = set(urls)
        kept = [entry for entry in self._ring if entry[1] in wanted]
        placed = {url for _, url in kept}
        added = [
            (ring_hash(f"{url}#{i}"), url)
            for url in dict.fromkeys(urls)
            if url not in placed
            for i in range(VIRTUAL_NODES)
        ]
        self._ring = sorted(kept + added)
        self._points = [point for point, _ in self._ring]

    def clockwise(self, key: str | bytes) -> Iterator[str]:
        """Each worker's URL once, in the order met going clockwise from the key's hash."""
        start = bisect.bisect(self._points, ring_hash(key))
        seen: set[str] = set()
        for offset in range(len(self._ring)):
            url = self._ring[(start + offset) % len(self._ring)][1]
            if url not in seen:
                seen.add(url)
                yield url

    def first(self, key: str | bytes, candidates: Candidates) -> Worker:
        """The first of the candidates clockwise from the key's hash."""
        start = bisect.bisect(self._points, ring_hash(key))
        ring = self._ring
        for offset in range(len(ring)):
            worker = candidates.get(ring[(start + offset) % len(ring)][1])
            if worker is not None:
                return worker
        return candidates[0]  # none on the ring: only before the first change
