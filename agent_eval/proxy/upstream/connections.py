"""Keep-alive connections to the workers: a bounded number per worker, reused, trimmed when idle.

A worker gets at most `max_connections` at once; requests beyond that wait for one to
free up, so a flood of clients never overflows a worker's listen queue. Idle connections
past `max_idle` per worker, or idle for `idle_timeout` seconds, are closed.
"""

from __future__ import annotations

import asyncio
import errno
import ssl
import time
from collections import deque
from dataclasses import dataclass

from agent_eval.proxy.config import LimitsConfig
from agent_eval.proxy.upstream.http1 import (
    Connection,
    Origin,
    ProxyOutOfResources,
    UpstreamConnectError,
    UpstreamDisconnected,
    UpstreamResponse,
    request_head,
)
from agent_eval.system.diagnostics import os_reason

# The proxy's own limits, not a worker's fault: out of descriptors, buffers, memory or ports.
_LOCAL_ERRNOS = frozenset(
    {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM, errno.EADDRNOTAVAIL}
)


class UpstreamBusy(TimeoutError):
    """Every connection to the worker stayed busy past the deadline: the proxy's queue, not a
    fault of the worker."""


_DEFAULTS = LimitsConfig()


@dataclass(frozen=True)
class ConnectionLimits:
    """How many connections a worker gets, and how many idle ones are kept, for how long."""

    connect_timeout: float
    max_connections: int = _DEFAULTS.max_connections_per_worker
    max_idle: int = _DEFAULTS.max_idle_per_worker
    idle_timeout: float = _DEFAULTS.idle_timeout


class _WorkerConnections:
    """One worker's connections: those open, those idle, the requests waiting for one.

    It owns its connections: they come back here when an answer completes or they close.
    """

    def __init__(self, origin: Origin, limits: ConnectionLimits) -> None:
        self._origin = origin
        self._limits = limits
        self.open: set[Connection] = set()
        self.opening = 0  # connections being opened: they count against the cap too
        self.idle: deque[Connection] = deque()  # oldest first
        self._waiters: deque[asyncio.Future[Connection | None]] = deque()

    def idle_connection(self) -> Connection | None:
        """The most recently used idle connection (old ones age out), if one is open."""
        while self.idle:
            connection = self.idle.pop()
            if connection.open:
                return connection
        return None

    async def fresh_connection(self, timeout: float) -> Connection:
        """A new connection, or a freed one when the worker has its share open."""
        if len(self.open) + self.opening < self._limits.max_connections:
            return await self._connect()
        return await self._wait(timeout)

    def release(self, connection: Connection) -> None:
        """An answer completed: the connection goes to a waiter, the idle list, or is closed."""
        if not (connection.reusable and connection.open):
            connection.abort()
        elif not self._hand_over(connection):
            if len(self.idle) >= self._limits.max_idle:
                connection.abort()
                return
            connection.idle_since = time.monotonic()
            self.idle.append(connection)

    def forget(self, connection: Connection) -> None:
        """A connection closed: its place may go to a waiter."""
        if connection in self.open:
            self.open.discard(connection)
            if connection in self.idle:
                self.idle.remove(connection)
            self._hand_over(None)

    def close_stale(self, cutoff: float) -> None:
        while self.idle and self.idle[0].idle_since <= cutoff:
            self.idle.popleft().abort()

    def close(self) -> None:
        for connection in list(self.open):
            connection.abort()
        self.idle.clear()
        while self._hand_over(None):
            pass

    def _hand_over(self, connection: Connection | None) -> bool:
        """Give a freed connection (or, with None, leave to open one) to the first waiter."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(connection)
                return True
        return False

    async def _wait(self, timeout: float) -> Connection:
        waiter: asyncio.Future[Connection | None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(max(timeout, 0)):
                connection = await waiter
        except TimeoutError:
            raise UpstreamBusy(
                f"all {self._limits.max_connections} connections to {self._origin.netloc} "
                "stayed busy"
            ) from None
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled() and (handed := waiter.result()) is not None:
                self.release(handed)  # handed over as we were cancelled: pass it on
            raise
        return connection if connection is not None else await self._connect()

    async def _connect(self) -> Connection:
        origin = self._origin
        loop = asyncio.get_running_loop()
        context = ssl.create_default_context() if origin.tls else None
        self.opening += 1
        try:
            _, connection = await asyncio.wait_for(
                loop.create_connection(
                    lambda: Connection(self, origin), origin.host, origin.port, ssl=context
                ),
                self._limits.connect_timeout,
            )
        except OSError as exc:
            self._hand_over(None)
            if exc.errno in _LOCAL_ERRNOS:
                raise ProxyOutOfResources(
                    f"the proxy cannot open a connection to {origin.netloc}: {os_reason(exc)}"
                ) from None
            raise UpstreamConnectError(
                f"cannot connect to {origin.netloc} ({os_reason(exc)})"
            ) from None
        finally:
            self.opening -= 1
        self.open.add(connection)
        return connection


class UpstreamPool:
    """Connections per worker, opened on demand up to a cap and reused when an answer completes."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self._limits = limits
        self._workers: dict[Origin, _WorkerConnections] = {}
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
        deadline = time.monotonic() + timeout
        worker = self._worker(origin)
        connection = worker.idle_connection()
        if connection is not None:
            try:
                return await connection.exchange(head, body, deadline - time.monotonic(), idle)
            except UpstreamDisconnected:
                if connection.got_bytes:
                    raise
                # The worker closed a kept-alive connection as we reused it; try a fresh one.
        connection = await worker.fresh_connection(deadline - time.monotonic())
        return await connection.exchange(head, body, deadline - time.monotonic(), idle)

    def connections(self, origin: Origin) -> tuple[int, int]:
        """(open, idle) connections to one worker."""
        worker = self._workers.get(origin)
        return (len(worker.open), len(worker.idle)) if worker else (0, 0)

    def close(self) -> None:
        if self._sweep is not None:
            self._sweep.cancel()
        for worker in self._workers.values():
            worker.close()

    def _worker(self, origin: Origin) -> _WorkerConnections:
        worker = self._workers.get(origin)
        if worker is None:
            worker = self._workers[origin] = _WorkerConnections(origin, self._limits)
        if self._sweep is None:
            loop = asyncio.get_running_loop()
            self._sweep = loop.call_later(self._limits.idle_timeout / 2, self._close_stale)
        return worker

    def _close_stale(self) -> None:
        """Close connections idle past the timeout, every half timeout while the pool is used."""
        self._sweep = None
        cutoff = time.monotonic() - self._limits.idle_timeout
        for worker in self._workers.values():
            worker.close_stale(cutoff)
        if any(worker.open for worker in self._workers.values()):
            self._sweep = asyncio.get_running_loop().call_later(
                self._limits.idle_timeout / 2, self._close_stale
            )
