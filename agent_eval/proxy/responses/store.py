"""Stored responses, so a follow-up that names `previous_response_id` sends only new items."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StoredResponse:
    """What the proxy knows of one response it served."""

    worker: str
    """URL of the worker that made it; a follow-up goes there first for its prefix cache."""
    items: tuple[dict[str, Any], ...] | None
    """The whole conversation (input, then output items) of a translated response; None when
    a worker serving the Responses API natively made it and keeps it itself."""
    response: dict[str, Any] | None = None
    """The Responses object of a translated response, for GET /v1/responses/{id}."""
    size: int = 0
    """Bytes it holds, about: its whole conversation as JSON, counted in full even where a
    chain shares items, so the store's byte bound is never too low."""


class ResponseStore:
    """Responses by id: at most `capacity` of them and `max_bytes` of conversations, each
    forgotten `ttl` seconds after its last use; the least recently used go first.

    A conversation's items are shared between its responses (tuples of the same dicts), so
    a chain of N turns costs N pointers per response, not N copies of the history.
    """

    def __init__(
        self,
        capacity: int,
        ttl: float,
        max_bytes: int = 256 * 1024**2,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._capacity = capacity
        self._ttl = ttl
        self._max_bytes = max_bytes
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, StoredResponse]] = OrderedDict()
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    def put(self, response_id: str, stored: StoredResponse) -> None:
        now = self._clock()
        self._expire(now)
        self.pop(response_id)
        self._entries[response_id] = (now + self._ttl, stored)
        self.bytes += stored.size
        while len(self._entries) > self._capacity or self.bytes > self._max_bytes:
            self._drop_oldest()

    def get(self, response_id: str) -> StoredResponse | None:
        """The stored response, its time to live renewed; None when unknown or expired."""
        now = self._clock()
        self._expire(now)
        entry = self._entries.get(response_id)
        if entry is None:
            return None
        self._entries[response_id] = (now + self._ttl, entry[1])
        self._entries.move_to_end(response_id)
        return entry[1]

    def pop(self, response_id: str) -> StoredResponse | None:
        """Forget a response; the stored one, or None when it was not held."""
        entry = self._entries.pop(response_id, None)
        if entry is None:
            return None
        self.bytes -= entry[1].size
        return entry[1]

    def _expire(self, now: float) -> None:
        # Entries are kept in order of last use, and every use adds the same ttl, so the
        # expired ones are all at the front.
        while self._entries:
            expires, _ = next(iter(self._entries.values()))
            if expires > now:
                return
            self._drop_oldest()

    def _drop_oldest(self) -> None:
        _, (_, stored) = self._entries.popitem(last=False)
        self.bytes -= stored.size
