"""Keep-alive connections to the workers: a bounded number per worker, reused, trimmed when idle.

A worker gets at most `max_connections` at once; requests beyond that wait for one to
free up, so a flood of clients never overflows a worker's listen queue. Idle connections
past `max_idle` per worker, or idle for `idle_timeout` seconds, are closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ssl
from collections import deque
from dataclasses import dataclass, field

from agent_eval.proxy.http1 import (
    Connection,
    Origin,
    ProxyOutOfResources,
    UpstreamConnectError,
    UpstreamDisconnected,
    UpstreamResponse,
    os_reason,
    request_head,
)

# The proxy's own limits, not a worker's fault: out of descriptors, buffers, memory or ports.
_LOCAL_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
_LOCAL_ERRNOS |= {errno.EADDRNOTAVAIL}


class UpstreamBusy(TimeoutError):
    """Every connection to the worker stayed busy past the deadline: the proxy's queue, not a
    fault of the worker."""


@dataclass
class _WorkerConnections:
    """One worker's connections: how many are open, which are idle, who waits for one."""

    open: int = 0
    idle: list[Connection] = field(default_factory=list)
    waiters: deque[asyncio.Future[Connection | None]] = field(default_factory=deque)

    def hand_over(self, connection: Connection | None) -> bool:
        """Give a freed connection (or, with None, leave to open one) to the first waiter."""
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_result(connection)
                return True
        return False


class UpstreamPool:
    """Connections per worker, opened on demand up to a cap and reused when an answer completes."""

    def __init__(
        self,
        connect_timeout: float,
        max_connections: int = 1024,
        max_idle: int = 128,
        idle_timeout: float = 30.0,
    ) -> None:
        self._connect_timeout = connect_timeout
        self._max_connections = max_connections
        self._max_idle = max_idle
        self._idle_timeout = idle_timeout
        self._workers: dict[Origin, _WorkerConnections] = {}
        self._all: set[Connection] = set()
        self._sweep: asyncio.TimerHandle | None = None

    async def post(
        self,
        origin: Origin,
        path: str,
        headers: list[tuple[str, str]],
        body: bytes,
        timeout: float,
        idle: float | None = None,
    ) -> UpstreamResponse:
        """Send a POST; returns once the status and headers are in.

        Raises: UpstreamConnectError, UpstreamDisconnected, UpstreamTimeout (past
        `timeout` seconds in all, or `idle` seconds without a byte), UpstreamBusy (no
        connection freed up in time), ProxyOutOfResources.
        """
        head = request_head(origin, path, headers, len(body))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        connection, reused = await self._acquire(origin, timeout)
        try:
            return await connection.exchange(head, body, deadline - loop.time(), idle)
        except UpstreamDisconnected:
            if not reused or connection.got_bytes:
                raise
        # The worker closed a kept-alive connection as we reused it; try a fresh one.
        connection = await self._open_or_wait(origin, deadline - loop.time())
        return await connection.exchange(head, body, deadline - loop.time(), idle)

    def connections(self, origin: Origin) -> tuple[int, int]:
        """(open, idle) connections to one worker."""
        state = self._workers.get(origin, _WorkerConnections())
        return state.open, len(state.idle)

    def release(self, connection: Connection) -> None:
        """An answer completed: the connection goes to a waiter, the idle list, or is closed."""
        state = self._workers[connection.origin]
        if not (connection.reusable and connection.open):
            connection.abort()
        elif not state.hand_over(connection):
            if len(state.idle) >= self._max_idle:
                connection.abort()
                return
            connection.idle_since = asyncio.get_running_loop().time()
            state.idle.append(connection)
            self._schedule_sweep()

    def forget(self, connection: Connection) -> None:
        """A connection closed: its place may go to a waiter."""
        if connection not in self._all:
            return
        self._all.discard(connection)
        state = self._workers[connection.origin]
        state.open -= 1
        with contextlib.suppress(ValueError):
            state.idle.remove(connection)
        state.hand_over(None)

    def close(self) -> None:
        if self._sweep is not None:
            self._sweep.cancel()
        for connection in list(self._all):
            connection.abort()
        for state in self._workers.values():
            state.idle.clear()
            while state.hand_over(None):
                pass

    async def _acquire(self, origin: Origin, timeout: float) -> tuple[Connection, bool]:
        """An idle connection (True), else a new or freed one (False)."""
        state = self._state(origin)
        while state.idle:
            connection = state.idle.pop()  # the most recent: old ones age out
            if connection.open:
                return connection, True
        return await self._open_or_wait(origin, timeout), False

    def _state(self, origin: Origin) -> _WorkerConnections:
        state = self._workers.get(origin)
        if state is None:
            state = self._workers[origin] = _WorkerConnections()
        return state

    async def _open_or_wait(self, origin: Origin, timeout: float) -> Connection:
        state = self._state(origin)
        if state.open < self._max_connections:
            return await self._connect(origin, state)
        waiter: asyncio.Future[Connection | None] = asyncio.get_running_loop().create_future()
        state.waiters.append(waiter)
        try:
            async with asyncio.timeout(max(timeout, 0)):
                connection = await waiter
        except TimeoutError:
            raise UpstreamBusy(
                f"all {self._max_connections} connections to {origin.netloc} stayed busy"
            ) from None
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled() and waiter.result() is not None:
                self.release(waiter.result())  # handed over as we were cancelled: pass it on
            raise
        return connection if connection is not None else await self._connect(origin, state)

    async def _connect(self, origin: Origin, state: _WorkerConnections) -> Connection:
        loop = asyncio.get_running_loop()
        context = ssl.create_default_context() if origin.tls else None
        state.open += 1
        try:
            _, connection = await asyncio.wait_for(
                loop.create_connection(
                    lambda: Connection(self, origin), origin.host, origin.port, ssl=context
                ),
                self._connect_timeout,
            )
        except BaseException as exc:
            state.open -= 1
            state.hand_over(None)
            if isinstance(exc, OSError) and exc.errno in _LOCAL_ERRNOS:
                raise ProxyOutOfResources(
                    f"the proxy cannot open a connection to {origin.netloc}: {os_reason(exc)}"
                ) from None
            if isinstance(exc, OSError):
                raise UpstreamConnectError(
                    f"cannot connect to {origin.netloc} ({os_reason(exc)})"
                ) from None
            raise
        self._all.add(connection)
        return connection

    def _schedule_sweep(self) -> None:
        if self._sweep is None:
            loop = asyncio.get_running_loop()
            self._sweep = loop.call_later(self._idle_timeout / 2, self._close_stale)

    def _close_stale(self) -> None:
        """Close connections idle past the timeout; idle lists run oldest first."""
        self._sweep = None
        cutoff = asyncio.get_running_loop().time() - self._idle_timeout
        for state in self._workers.values():
            while state.idle and state.idle[0].idle_since <= cutoff:
                state.idle.pop(0).abort()
        if any(state.idle for state in self._workers.values()):
            self._schedule_sweep()
