"""Stored responses, so a follow-up that names `previous_response_id` sends only new items.

What is stored is kept as JSON bytes and parsed on use: Python objects for many tiny items
cost ten times their JSON, so a bound counted in bytes of JSON holds in resident memory only
while the store holds the JSON itself.
"""

from __future__ import annotations

import mmap
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

# What one stored response costs beyond its JSON (its entry, objects and id: 1,150 bytes
# measured, rounded up for the index's growth), so many small ones are not counted as nothing.
ENTRY_BYTES = 1536
# JSON kept from this size on gets a memory map of its own. Freed, a map goes back to the
# system at once, where a block of the heap leaves a hole that the next requests' buffers fill
# and keep resident: a store that churns would hold well over its bound.
MAPPED_BYTES = 256 * 1024


def kept_json(value: object) -> memoryview:
    """`value` as JSON in memory of its own length, for keeping (orjson returns its output in
    the buffer it wrote, rounded up to a power of two and 4 KB at least)."""
    data = orjson.dumps(value)
    mapped = _mapped(len(data)) if len(data) >= MAPPED_BYTES else None
    if mapped is None:
        return memoryview(bytes(memoryview(data)))
    mapped.write(data)
    return memoryview(mapped)


def _mapped(size: int) -> mmap.mmap | None:
    """An anonymous memory map of `size` bytes; None when the process may map no more."""
    try:
        return mmap.mmap(-1, size)
    except OSError:  # vm.max_map_count reached: the heap will do
        return None


@dataclass(eq=False, slots=True)
class Turn:
    """The items one response added to its conversation; a follow-up's turn points at the one
    it continues, so a chain of N turns holds each item once, not N times."""

    items: memoryview
    """The items as a JSON array."""
    previous: Turn | None
    count: int
    """Items in the conversation up to and including this turn."""
    holders: int = 0
    """Stored responses and held later turns that keep this turn; the store's bookkeeping."""
    row: int | None = None
    """Its id in a store of several processes (shared_store), once stored there."""

    @classmethod
    def after(cls, previous: Turn | None, items: Sequence[dict[str, Any]]) -> Turn:
        """The turn that adds `items` to the conversation `previous` ends."""
        count = len(items) + (previous.count if previous is not None else 0)
        return cls(kept_json(items), previous, count)

    def conversation(self) -> list[dict[str, Any]]:
        """Every item of the conversation, oldest first, parsed afresh."""
        arrays: list[memoryview] = []
        turn: Turn | None = self
        while turn is not None:
            arrays.append(turn.items)
            turn = turn.previous
        if len(arrays) == 1:
            conversation: list[dict[str, Any]] = orjson.loads(self.items)
            return conversation
        # One parse of the arrays' elements joined, rather than one list per turn to chain.
        elements = [array[1:-1] for array in reversed(arrays) if len(array) > 2]
        conversation = orjson.loads(b"[" + b",".join(elements) + b"]")
        return conversation


@dataclass(frozen=True, slots=True)
class StoredResponse:
    """What the proxy knows of one response it served."""

    worker: str
    """URL of the worker that made it; a follow-up goes there first for its prefix cache."""
    conversation: Turn | None = None
    """The last turn of a translated response's conversation (input, then output items); None
    when a worker serving the Responses API natively made it and keeps it itself."""
    response: memoryview | None = None
    """The Responses object of a translated response as JSON, for GET /v1/responses/{id}."""

    @property
    def size(self) -> int:
        """Bytes it holds of its own; its conversation's turns are counted by the store."""
        return ENTRY_BYTES + (len(self.response) if self.response is not None else 0)


@dataclass(frozen=True)
class StoreBounds:
    """At most `capacity` responses and `max_bytes` of what they hold, each forgotten `ttl`
    seconds after its last use."""

    capacity: int
    ttl: float
    max_bytes: int = 256 * 1024**2
    clock: Callable[[], float] = time.monotonic


class ResponseStorage(Protocol):
    """Where /v1/responses keeps what it served: this process's memory, or a group's file."""

    def put(self, response_id: str, stored: StoredResponse) -> None: ...

    def get(self, response_id: str) -> StoredResponse | None: ...

    def pop(self, response_id: str) -> StoredResponse | None: ...


class ResponseStore:
    """Responses by id: at most `capacity` of them and `max_bytes` of what they hold, each
    forgotten `ttl` seconds after its last use; the least recently used go first.

    `bytes` counts each held turn once, however many responses share it, so it is what the
    store really keeps alive.
    """

    def __init__(self, bounds: StoreBounds) -> None:
        self._bounds = bounds
        self._entries: OrderedDict[str, tuple[float, StoredResponse]] = OrderedDict()
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    def put(self, response_id: str, stored: StoredResponse) -> None:
        now = self._bounds.clock()
        self._expire(now)
        self.pop(response_id)
        self._entries[response_id] = (now + self._bounds.ttl, stored)
        self._hold(stored)
        bounds = self._bounds
        while len(self._entries) > bounds.capacity or self.bytes > bounds.max_bytes:
            self._drop_oldest()

    def get(self, response_id: str) -> StoredResponse | None:
        """The stored response, its time to live renewed; None when unknown or expired."""
        now = self._bounds.clock()
        self._expire(now)
        entry = self._entries.get(response_id)
        if entry is None:
            return None
        self._entries[response_id] = (now + self._bounds.ttl, entry[1])
        self._entries.move_to_end(response_id)
        return entry[1]

    def pop(self, response_id: str) -> StoredResponse | None:
        """Forget a response; the stored one, or None when it was not held."""
        entry = self._entries.pop(response_id, None)
        if entry is None:
            return None
        self._release(entry[1])
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
        self._release(stored)

    def _hold(self, stored: StoredResponse) -> None:
        """Count what `stored` keeps: its own bytes, and each turn of its chain not yet held."""
        self.bytes += stored.size
        turn = stored.conversation
        while turn is not None:
            turn.holders += 1
            if turn.holders > 1:
                return  # held already, and so is every turn before it
            self.bytes += len(turn.items)
            turn = turn.previous

    def _release(self, stored: StoredResponse) -> None:
        """Uncount what `stored` kept: its own bytes, and each turn nothing else holds now."""
        self.bytes -= stored.size
        turn = stored.conversation
        while turn is not None:
            turn.holders -= 1
            if turn.holders > 0:
                return
            self.bytes -= len(turn.items)
            turn = turn.previous
