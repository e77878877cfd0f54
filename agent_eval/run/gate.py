"""A resizable, pausable limit on the attempts an engine has in flight."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class GateState:
    """What the live view and `agent-eval ctl status` show of a gate."""

    in_flight: int
    limit: int
    paused: bool


class GateView(Protocol):
    """What the live view reads of a limit: one engine's gate, or the shards of a run together."""

    @property
    def state(self) -> GateState: ...

    @property
    def limit(self) -> int: ...


class GateClosed(Exception):
    """slot() on a gate closed before it gave one."""


class Gate:
    """At most `limit` slots held at once, none given while paused; both can change at run time.

    Lowering the limit or pausing starts no new attempt; those in flight finish. A closed gate
    gives no slot again: its waiters are told so.
    """

    def __init__(self, limit: int) -> None:
        self._limit = _checked(limit)
        self._in_flight = 0
        self._paused = False
        self.closed = False
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def state(self) -> GateState:
        """A read-only view of the gate now."""
        return GateState(self._in_flight, self._limit, self._paused)

    @property
    def limit(self) -> int:
        return self._limit

    @property
    def paused(self) -> bool:
        return self._paused

    def resize(self, limit: int, least: int = 1) -> None:
        """Allow `limit` slots at once from now on; raises ValueError below `least` (0: a shard
        whose part of a run's limit is none for now)."""
        self._limit = _checked(limit, least)
        self._wake()

    def pause(self) -> None:
        """Give no slot until resume(); the held ones stay held."""
        self._paused = True

    def resume(self) -> None:
        """Give slots again, up to the limit."""
        self._paused = False
        self._wake()

    def close(self) -> None:
        """Give no slot again; every waiter, now and later, gets False."""
        self.closed = True
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def acquire(self) -> bool:
        """Wait for a free slot and hold it (release() gives it back): True; False once closed."""
        while not self.closed and (self._paused or self._in_flight >= self._limit):
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._wake()  # woken but leaving: the slot it was woken for goes on
                raise
            finally:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
        if self.closed:
            return False
        self._in_flight += 1
        return True

    def release(self) -> None:
        """Give back a slot acquire() gave."""
        self._in_flight -= 1
        self._wake()

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold a slot for the body; raises GateClosed when the gate closes first."""
        if not await self.acquire():
            raise GateClosed("the gate closed before a slot was free")
        try:
            yield
        finally:
            self.release()

    def _wake(self) -> None:
        """Wake as many waiters as there are free slots; each checks again when it runs."""
        if self._paused:
            return
        free = self._limit - self._in_flight
        for waiter in self._waiters:
            if free <= 0:
                break
            if not waiter.done():
                waiter.set_result(None)
                free -= 1


def _checked(limit: int, least: int = 1) -> int:
    if limit < least:
        raise ValueError(f"a gate's limit must be at least {least}, not {limit}")
    return limit
