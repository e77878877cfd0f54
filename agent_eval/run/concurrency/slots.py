"""Attempts in flight at once, up to a limit that may change while they run."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from types import TracebackType


class Slots:
    """A semaphore whose size `resize` changes, served in arrival order: a lower limit lets
    the attempts in flight finish and starts none until fewer than it run."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.in_use = 0
        self.peak = 0
        """The most in use at once since `take_peak`."""
        self._waiters: deque[asyncio.Future[None]] = deque()

    def resize(self, limit: int) -> None:
        """Let `limit` attempts run at once from now on."""
        self.limit = limit
        self._admit()

    def take_peak(self) -> int:
        """The most in use at once since the last call; counting starts again from now."""
        peak, self.peak = self.peak, self.in_use
        return peak

    async def __aenter__(self) -> None:
        if self.in_use < self.limit and not self._waiters:
            self._take()
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._release()  # granted a slot as it was cancelled: pass it on
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)
            raise

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._release()

    def _take(self) -> None:
        self.in_use += 1
        self.peak = max(self.peak, self.in_use)

    def _release(self) -> None:
        self.in_use -= 1
        self._admit()

    def _admit(self) -> None:
        while self._waiters and self.in_use < self.limit:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self._take()
                waiter.set_result(None)
