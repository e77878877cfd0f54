"""One attempt's key state and the record of its calls, kept as the JSON bytes of each."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Protocol

import orjson


class Waiting(Protocol):
    """A call in flight, as its attempt sees it: how long it has waited for a worker."""

    def waited(self, now: float) -> float: ...


class Resolvable(Protocol):
    """An entry finished when the record is read (a stream assembled then)."""

    def resolved(self) -> bytes: ...


@dataclass(frozen=True)
class Price:
    """What a million tokens cost: prompt ones and completion ones."""

    prompt: float
    completion: float

    def of(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.prompt + completion_tokens * self.completion) / 1e6


@dataclass(frozen=True)
class AttemptLimits:
    """What one attempt may use; None: no limit. `max_cost` prices tokens at `price`."""

    max_calls: int | None = None
    max_tokens: int | None = None
    max_cost: float | None = None
    price: Price | None = None


@dataclass(frozen=True, slots=True)
class CallUsage:
    """What one finished call used: its tokens, and the seconds it waited for a free worker."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    waited_s: float = 0.0


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
    prompt_tokens: int = 0
    completion_tokens: int = 0
    waited_s: float = 0.0
    """Seconds its finished calls waited in the proxy for a free worker, summed."""
    flying: dict[int, Waiting] = field(default_factory=dict)
    """Its calls in flight, by index: those still waiting for a worker count their wait so far."""
    in_flight: int = 0
    refused: int = 0
    limit_exceeded: str | None = None
    ended: bool = False
    closed: bool = False
    idle: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, usage: CallUsage) -> None:
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        self.waited_s += usage.waited_s

    def waited(self) -> float:
        """Seconds its calls waited for a free worker: the finished ones', and so far the
        waits of those in flight."""
        now = time.monotonic()
        return self.waited_s + sum(call.waited(now) for call in self.flying.values())

    def cost(self) -> float | None:
        """What its tokens cost, when its limits give a price."""
        price = self.limits.price
        return None if price is None else price.of(self.prompt_tokens, self.completion_tokens)

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
            "waited_s": round(self.waited(), 6),
            "in_flight": self.in_flight,
            "unfinished": unfinished,
        }
        ordered = sorted(self.entries, key=lambda e: e[0])
        calls = b",".join(e if isinstance(e, bytes) else e.resolved() for _, e in ordered)
        return orjson.dumps(head)[:-1] + b',"calls":[' + calls + b"]}"
