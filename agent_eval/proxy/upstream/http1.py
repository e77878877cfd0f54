"""A lean keep-alive HTTP/1.1 client for the proxy's request path.

aiohttp's client spends about 250 µs of CPU per request on machinery the proxy
does not use (cookies, redirects, tracing, per-request timeout objects); on a
two-core node that made the proxy the bottleneck. This client writes one
pre-built request head and parses the answer with httptools (llhttp, the parser
uvicorn uses); connections.py keeps them per worker. Health probes still use aiohttp.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

import httptools

_PAUSE_AT = 1 << 20  # bytes buffered from a worker before reading from it pauses


class UpstreamDisconnected(ConnectionError):
    """The worker closed the connection or sent something that is not HTTP."""


class UpstreamTimeout(TimeoutError):
    """The worker went silent past a deadline."""


class UpstreamConnectError(ConnectionError):
    """No connection could be opened to the worker."""


class UpstreamTooLarge(ConnectionError):
    """The worker's answer has, or declares, more bytes than the proxy reads of one answer."""


class ProxyOutOfResources(Exception):
    """The proxy itself ran out of file descriptors, ports or memory: no fault of a worker."""


@dataclass(frozen=True, eq=False)
class Origin:
    """Where one worker listens, parsed once; the pool keys connections by the very object."""

    host: str
    port: int
    tls: bool
    netloc: str
    prefix: str

    @classmethod
    def parse(cls, url: str) -> Origin:
        parts = urlsplit(url)
        tls = parts.scheme == "https"
        port = parts.port or (443 if tls else 80)
        return cls(parts.hostname or "", port, tls, parts.netloc, parts.path.rstrip("/"))


class UpstreamResponse:
    """Status and headers of a worker's answer; the body arrives through `readany` or `read`."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self.status = 0
        self.headers: dict[str, str] = {}
        self._chunks: deque[bytes] = deque()
        self._buffered = 0
        self._complete = False
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").partition(";")[0].strip().lower()

    async def readany(self) -> bytes:
        """Whatever body bytes have arrived, waiting for some; b"" at the end."""
        while not self._chunks:
            if self._error is not None:
                raise self._error
            if self._complete:
                return b""
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        data = b"".join(self._chunks) if len(self._chunks) > 1 else self._chunks[0]
        self._chunks.clear()
        if self._buffered >= _PAUSE_AT:
            self._connection.resume()
        self._buffered = 0
        return data

    async def read(self, limit: int) -> bytes:
        """The whole body. Raises UpstreamTooLarge past `limit` bytes."""
        declared = self.headers.get("content-length", "")
        return await read_whole(
            self.readany, int(declared) if declared.isdecimal() else None, limit
        )

    async def read_start(self, limit: int) -> bytes:
        """The body's first `limit` bytes at most; the rest is never read, and `close` drops it."""
        parts: list[bytes] = []
        size = 0
        while size < limit and (chunk := await self.readany()):
            parts.append(chunk)
            size += len(chunk)
        return b"".join(parts)[:limit]

    def close(self) -> None:
        """Drop an unfinished answer's connection: the worker sees its client leave and aborts.

        A complete answer's connection went back to the pool and may carry another
        request by now, so closing it is a no-op.
        """
        if not self._complete:
            self._connection.abort()

    def extend(self, timeout: float) -> None:
        """Give the rest of the answer `timeout` seconds from now."""
        if not self._complete:
            self._connection.extend(timeout)

    def _feed(self, data: bytes) -> None:
        self._chunks.append(data)
        self._buffered += len(data)
        if self._buffered >= _PAUSE_AT:
            self._connection.pause()
        self._wake()

    def _finish(self, error: BaseException | None) -> None:
        if error is None:
            self._complete = True
        elif not self._complete:
            self._error = error
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        self._waiter = None


async def read_whole(
    readany: Callable[[], Awaitable[bytes]], declared: int | None, limit: int
) -> bytes:
    """A body read piece by piece until `readany` gives b"". Raises UpstreamTooLarge past
    `limit` bytes, or before reading when its Content-Length, `declared`, is more."""
    if declared is not None and declared > limit:
        raise UpstreamTooLarge(f"declared an answer of {declared} bytes, over the bound of {limit}")
    parts = []
    size = 0
    while chunk := await readany():
        size += len(chunk)
        if size > limit:
            raise UpstreamTooLarge(f"sent an answer past the bound of {limit} bytes")
        parts.append(chunk)
    return b"".join(parts)


class ConnectionOwner(Protocol):
    """Where a connection goes when its answer is complete, and says it closed."""

    def release(self, connection: Connection) -> None: ...

    def forget(self, connection: Connection) -> None: ...


class Connection(asyncio.Protocol):
    """One keep-alive connection: at most one request at a time, with its own deadline timer."""

    def __init__(self, owner: ConnectionOwner, origin: Origin) -> None:
        self._pool = owner
        self._origin = origin
        self._loop = asyncio.get_running_loop()
        self._parser = httptools.HttpResponseParser(self)
        self._transport: asyncio.Transport | None = None
        self._response: UpstreamResponse | None = None
        self._headers_ready: asyncio.Future[UpstreamResponse] | None = None
        self._header_items: list[tuple[bytes, bytes]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._deadline = 0.0
        self._idle: float | None = None
        self._last_data = 0.0
        self.reusable = False
        self.got_bytes = False
        self.idle_since = 0.0

    @property
    def origin(self) -> Origin:
        return self._origin

    @property
    def open(self) -> bool:
        return self._transport is not None and not self._transport.is_closing()

    async def exchange(
        self, head: bytes, body: bytes, timeout: float, idle: float | None
    ) -> UpstreamResponse:
        """Send one request; the answer's status and headers once they are in."""
        self._response = UpstreamResponse(self)
        self._headers_ready = self._loop.create_future()
        self._header_items = []
        self.reusable = False
        self.got_bytes = False
        self._last_data = self._loop.time()
        self._deadline, self._idle = self._last_data + timeout, idle
        self._arm()
        transport = self._transport
        assert transport is not None, "the pool hands out only connections already made"
        transport.writelines((head, body))
        try:
            return await self._headers_ready
        except BaseException:
            self.abort()  # a caller that gives up must not leave the request running
            raise

    def extend(self, timeout: float) -> None:
        self._deadline = self._loop.time() + timeout
        self._arm()

    def pause(self) -> None:
        transport = self._transport
        assert transport is not None, "pausing comes from an answer, so after connection_made"
        transport.pause_reading()

    def resume(self) -> None:
        transport = self._transport
        if transport is not None and not transport.is_closing():
            transport.resume_reading()

    def abort(self) -> None:
        # An answer dropped unfinished is never complete, even one that only the close ends.
        self._fail(UpstreamDisconnected("the proxy dropped the connection"))
        if self._transport is not None:
            self._transport.abort()

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # asyncio's signature says BaseTransport; a TCP connection's is a full Transport.
        self._transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.got_bytes = True
        self._last_data = self._loop.time()
        try:
            self._parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as exc:
            self._fail(UpstreamDisconnected(f"worker sent a malformed answer ({exc})"))
            self.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timer()
        self._pool.forget(self)
        response = self._response
        if exc is None and response is not None and _ends_at_close(response):
            # Valid HTTP/1.1 (RFC 9112, 6.3): a body with neither length nor chunks ends
            # with the connection. An answer the proxy dropped itself was failed before.
            self._response = None
            response._finish(None)
            return
        self._fail(UpstreamDisconnected("worker closed the connection"))

    # httptools callbacks

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_items.append((name, value))

    def on_headers_complete(self) -> None:
        response = self._response
        if response is None:
            # Raised inside a parser callback, this reaches data_received as a parser error,
            # which drops the connection.
            raise UpstreamDisconnected("worker sent an answer to no request")
        status = self._parser.get_status_code()
        if status < 200:
            self._interim(status)
            return
        response.status = status
        response.headers = {
            k.decode("latin-1").lower(): v.decode("latin-1") for k, v in self._header_items
        }
        ready = self._headers_ready
        assert ready is not None, "exchange() sets it with the response"
        if not ready.done():
            ready.set_result(response)

    # Body and end come after their message's on_headers_complete, which checked the response;
    # it is cleared only at that message's end, or by _fail, after which nothing more is parsed.

    def on_body(self, body: bytes) -> None:
        response = self._response
        assert response is not None
        response._feed(body)

    def on_message_complete(self) -> None:
        response = self._response
        assert response is not None
        if not response.status:
            return  # an interim answer ended; the final one follows
        self._cancel_timer()
        self.reusable = self._parser.should_keep_alive()
        self._response = None
        response._finish(None)
        self._pool.release(self)

    def _interim(self, status: int) -> None:
        """Skip an interim answer (100 Continue, 103 Early Hints); the final one follows.

        Raises: UpstreamDisconnected for a 101: no worker may switch a POST's protocol.
        """
        if status == 101:
            raise UpstreamDisconnected("worker answered 101 Switching Protocols to a POST")
        self._header_items = []

    # failure and time

    def _fail(self, error: BaseException) -> None:
        self.reusable = False
        if self._headers_ready is not None and not self._headers_ready.done():
            self._headers_ready.set_exception(error)
            self._headers_ready.exception()  # retrieved here; the caller re-raises it
        if self._response is not None:
            self._response._finish(error)
            self._response = None

    def _arm(self) -> None:
        self._cancel_timer()
        due = self._deadline
        if self._idle is not None:
            due = min(due, self._last_data + self._idle)
        self._timer = self._loop.call_at(due, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        now = self._loop.time()
        idle_due = self._last_data + self._idle if self._idle is not None else self._deadline
        if now < min(self._deadline, idle_due):
            self._arm()  # data arrived since the timer was set
            return
        self._fail(UpstreamTimeout("worker did not answer in time"))
        self.abort()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def _ends_at_close(response: UpstreamResponse) -> bool:
    """Whether the answer's head is in and frames its body by nothing but the close."""
    headers = response.headers
    chunked = "chunked" in headers.get("transfer-encoding", "").lower()
    return response.status != 0 and "content-length" not in headers and not chunked


def request_head(origin: Origin, path: str, headers: list[tuple[str, str]], length: int) -> bytes:
    lines = [
        f"POST {origin.prefix}{path} HTTP/1.1",
        f"Host: {origin.netloc}",
        f"Content-Length: {length}",
    ]
    lines += [f"{name}: {value}" for name, value in headers]
    # aiohttp decoded the client's header bytes as UTF-8 with surrogateescape; undo it exactly.
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8", "surrogateescape")
