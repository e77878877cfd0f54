"""One attempt's key state and the record of its calls, kept as the JSON bytes of each."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Protocol

import orjson


class Resolvable(Protocol):
    """An entry finished when the record is read (a stream assembled then)."""

    def resolved(self) -> bytes: ...


@dataclass(frozen=True)
class AttemptLimits:
    """What one attempt may use; None: no limit."""

    max_calls: int | None = None
    max_tokens: int | None = None


@dataclass(eq=False)
class Attempt:
    """One attempt's key state and record: its calls, entries kept as bytes in call order."""

    label: str
    name: str
    """A short, non-secret label of the key, for logs."""
    session: str | None
    expires: float
    expires_at: float
    limits: AttemptLimits
    entries: list[tuple[int, bytes | Resolvable]] = field(default_factory=list)
    size: int = 0
    """Bytes of the entries kept."""
    calls: int = 0
    tokens: int = 0
    in_flight: int = 0
    refused: int = 0
    limit_exceeded: str | None = None
    ended: bool = False
    closed: bool = False
    idle: asyncio.Event = field(default_factory=asyncio.Event)

    def state(self, now: float) -> str:
        if self.ended:
            return "ended"
        return "expired" if now >= self.expires else "open"

    def record(self, unfinished: int = 0) -> bytes:
        """The record as JSON: the attempt, its state, its calls in the order they started."""
        head = {
            "attempt": self.label,
            "state": self.state(time.monotonic()),
            "limit_exceeded": self.limit_exceeded,
            "refused_calls": self.refused,
            "in_flight": self.in_flight,
            "unfinished": unfinished,
        }
        ordered = sorted(self.entries, key=lambda e: e[0])
        calls = b",".join(e if isinstance(e, bytes) else e.resolved() for _, e in ordered)
        return orjson.dumps(head)[:-1] + b',"calls":[' + calls + b"]}"
