"""The proxy's upstream HTTP/1.1 client against raw servers that misbehave on purpose."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from agent_eval.proxy.upstream.connections import ConnectionLimits, UpstreamPool
from agent_eval.proxy.upstream.http1 import (
    Origin,
    UpstreamConnectError,
    UpstreamDisconnected,
    UpstreamResponse,
    UpstreamTimeout,
    UpstreamTooLarge,
)
from tests.helpers.waits import eventually

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
SSE_HEAD += b"\r\n"
OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
LIMIT = 1 << 20  # bytes of one answer read at most, unless a test says otherwise


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length")
    )
    return head + await reader.readexactly(length)


def reading(response: UpstreamResponse) -> bool:
    """Whether the answer's connection still reads from its socket (False once paused)."""
    return response._connection._transport.is_reading()


def queued(pool: UpstreamPool, origin: Origin) -> int:
    """Requests waiting in the pool for a connection to `origin` to free up."""
    return len(pool._workers[origin]._waiters)


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Handler], Awaitable[Origin]]]:
    servers: list[asyncio.Server] = []

    async def start(handler: Handler) -> Origin:
        server = await asyncio.start_server(handler, "127.0.0.1", 0)
        servers.append(server)
        return Origin.parse(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}")

    yield start
    for server in servers:
        server.close()


async def test_keeps_one_connection_alive_across_requests(serve) -> None:
    connections = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        while True:
            try:
                await read_request(reader)
            except asyncio.IncompleteReadError:
                return
            writer.write(OK)

    origin = await serve(handler)
    pool = UpstreamPool(ConnectionLimits(connect_timeout=2))
    for _ in range(5):
        response = await pool.post(
            origin, "/v1/x", [("Content-Type", "application/json")], b"{}", 5
        )
        assert (response.status, await response.read(LIMIT)) == (200, b"{}")
    assert connections == 1
    pool.close()


async def test_stale_kept_alive_connection_is_replaced_silently(serve) -> None:
    connections = 0

    async def one_answer_per_connection(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        nonlocal connections
        connections += 1
        await read_request(reader)
        writer.write(OK)  # keep-alive promised...
        await read_request(reader)
        writer.close()  # ...but the next request on it is dropped unanswered

    origin = await serve(one_answer_per_connection)
    pool = UpstreamPool(ConnectionLimits(connect_timeout=2))
    for _ in range(3):
        response = await pool.post(origin, "/", [], b"{}", 5)
        assert await response.read(LIMIT) == b"{}"
    assert connections == 3, "a dropped kept-alive connection was not replaced"
    pool.close()


async def test_chunked_body_and_request_head(serve) -> None:
    seen: list[bytes] = []

    async def chunked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await read_request(reader))
        writer.write(SSE_HEAD)
        for piece in (b"data: 1\n\n", b"data: [DONE]\n\n"):
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
        writer.write(b"0\r\n\r\n")

    served = await serve(chunked)
    origin = Origin.parse(f"http://{served.netloc}/prefix")
    pool = UpstreamPool(ConnectionLimits(connect_timeout=2))
    response = await pool.post(
        origin, "/v1/chat/completions", [("X-Session-ID", "s1")], b'{"a": 1}', 5
    )
    assert response.content_type == "text/event-stream"
    assert await response.read(LIMIT) == b"data: 1\n\ndata: [DONE]\n\n"
    head = seen[0].decode()
    assert head.startswith("POST /prefix/v1/chat/completions HTTP/1.1\r\n")
    assert "X-Session-ID: s1\r\n" in head and "Content-Length: 8\r\n" in head
    pool.close()


async def test_refused_connection_is_a_connect_error() -> None:
    origin = Origin.parse("http://127.0.0.1:9")
    with pytest.raises(UpstreamConnectError, match=r"cannot connect to 127\.0\.0\.1:9"):
        await UpstreamPool(ConnectionLimits(connect_timeout=2)).post(origin, "/", [], b"", 5)


async def test_malformed_answer_and_early_close_are_disconnects(serve) -> None:
    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"SMTP ready\r\n\r\n")

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
        await writer.drain()
        writer.close()

    pool = UpstreamPool(ConnectionLimits(connect_timeout=2))
    with pytest.raises(UpstreamDisconnected, match="malformed"):
        await pool.post(await serve(garbage), "/", [], b"{}", 5)
    response = await pool.post(await serve(hang_up), "/", [], b"{}", 5)
    with pytest.raises(UpstreamDisconnected, match="closed"):
        await response.read(LIMIT)


async def test_silence_hits_the_deadline_and_the_idle_limit(serve) -> None:
    async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
        await asyncio.sleep(30)

    origin = await serve(trickle)
    pool = UpstreamPool(ConnectionLimits(connect_timeout=2))
    response = await pool.post(origin, "/", [], b"{}", timeout=30, idle=0.2)
    assert await response.readany() == b"hello"
    with pytest.raises(UpstreamTimeout):
        await response.readany()
    with pytest.raises(UpstreamTimeout):
        response = await pool.post(origin, "/", [], b"{}", timeout=0.2)
        await response.read(LIMIT)
    pool.close()


async def test_large_body_pauses_and_resumes_reading(serve) -> None:
    big = b"x" * (5 << 20)

    async def bulk(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(big) + big)
        await writer.drain()

    pool = UpstreamPool(ConnectionLimits(connect_timeout=2))
    response = await pool.post(await serve(bulk), "/", [], b"{}", 10)
    # A slow reader: it reads nothing until the buffer has filled past the pause mark.
    await eventually(lambda: not reading(response), why=lambda: "reading never paused")
    sizes = []
    while chunk := await response.readany():
        sizes.append(len(chunk))
    assert sum(sizes) == len(big)
    assert max(sizes) >= 1 << 20, "reading never paused"
    pool.close()


@pytest.mark.parametrize(
    ("framing", "piece"),
    [
        (b"Content-Length: %d\r\n" % (1 << 30), b""),  # declared: refused before any byte
        (b"Transfer-Encoding: chunked\r\n", b"10000\r\n" + b"x" * 65536 + b"\r\n"),
        (b"Connection: close\r\n", b"x" * 65536),  # the body ends when the connection does
    ],
    ids=["declared", "chunked", "close-delimited"],
)
async def test_an_answer_past_the_bound_is_cut_and_its_connection_dropped(
    serve, framing: bytes, piece: bytes
) -> None:
    sent = 0
    gone = asyncio.Event()

    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal sent
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\n" + framing + b"\r\n")
        with contextlib.suppress(ConnectionError):
            while not reader.at_eof():
                writer.write(piece)
                await writer.drain()
                sent += len(piece)
                await asyncio.sleep(0 if piece else 0.01)
        gone.set()

    pool = UpstreamPool(ConnectionLimits(connect_timeout=2))
    response = await pool.post(await serve(endless), "/", [], b"{}", 10)
    with pytest.raises(UpstreamTooLarge):
        await asyncio.wait_for(response.read(LIMIT), 10)
    response.close()
    await asyncio.wait_for(gone.wait(), 5)  # the worker saw the proxy leave
    assert sent < 4 * LIMIT, f"{sent} bytes sent for a bound of {LIMIT}"
    pool.close()


async def test_closing_a_complete_answer_leaves_its_reused_connection_alone(serve) -> None:
    """A client that leaves while the last bytes of an answer are relayed closes that answer
    after its connection went back to the pool and carries the next request."""
    finish_second = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(OK)
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n{}")
        await finish_second.wait()
        writer.write(b"{}")
        await writer.drain()

    origin = await serve(handler)
    pool = UpstreamPool(ConnectionLimits(connect_timeout=2))
    first = await pool.post(origin, "/", [], b"{}", 5)
    assert await first.read(LIMIT) == b"{}"
    second = await pool.post(origin, "/", [], b"{}", 5)  # on the same connection
    assert await second.readany() == b"{}"
    first.close()
    finish_second.set()
    assert await second.read(LIMIT) == b"{}"
    pool.close()


async def test_idle_connections_are_capped_and_trimmed(serve) -> None:
    arrived = 0
    all_six_in = asyncio.Event()

    async def keep_alive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal arrived
        while True:
            try:
                await read_request(reader)
            except asyncio.IncompleteReadError:
                return
            arrived += 1
            if arrived == 6:
                all_six_in.set()
            # No answer before all six are in: six requests at once need six connections.
            await all_six_in.wait()
            writer.write(OK)

    origin = await serve(keep_alive)
    pool = UpstreamPool(ConnectionLimits(connect_timeout=2, max_idle=2, idle_timeout=0.3))

    async def one() -> bytes:
        return await (await pool.post(origin, "/", [], b"{}", 5)).read(LIMIT)

    assert await asyncio.gather(*(one() for _ in range(6))) == [b"{}"] * 6
    # Closed connections report their loss on a later loop pass; then 2 stay, both idle.
    await eventually(
        lambda: pool.connections(origin) == (2, 2),
        why=lambda: f"(open, idle) stayed {pool.connections(origin)}, not (2, 2)",
    )
    # Well under the 30 s default: the configured 0.3 s idle timeout is the one applied.
    await eventually(
        lambda: pool.connections(origin) == (0, 0),
        why=lambda: f"idle connections never trimmed: (open, idle) {pool.connections(origin)}",
    )
    pool.close()


async def test_requests_past_the_connection_cap_wait_for_a_free_one(serve) -> None:
    concurrent = peak = 0
    answer = asyncio.Event()

    async def counting(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal concurrent, peak
        while True:
            try:
                await read_request(reader)
            except asyncio.IncompleteReadError:
                return
            concurrent += 1
            peak = max(peak, concurrent)
            await answer.wait()  # held until the test has seen who got in and who waits
            concurrent -= 1
            writer.write(OK)

    origin = await serve(counting)
    pool = UpstreamPool(ConnectionLimits(connect_timeout=2, max_connections=2))

    async def one() -> bytes:
        return await (await pool.post(origin, "/", [], b"{}", 5)).read(LIMIT)

    answers = asyncio.gather(*(one() for _ in range(10)))
    await eventually(
        lambda: concurrent == 2 and queued(pool, origin) == 8,
        why=lambda: (
            f"{concurrent} requests at the worker and {queued(pool, origin)} queued, not 2 and 8"
        ),
    )
    assert pool.connections(origin) == (2, 0)
    answer.set()
    assert await answers == [b"{}"] * 10
    assert peak == 2
    assert pool.connections(origin)[0] == 2
    pool.close()
