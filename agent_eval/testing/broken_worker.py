"""A worker that misbehaves on purpose, byte for byte: the proxy's tests and soak bench use it.

It answers its health and model routes as a healthy OpenAI-compatible server does, so the
proxy routes to it, and every POST with the raw bytes of its `Script`: any status line,
headers that lie about the body, bodies cut short or without end, events without a
boundary. It is a plain asyncio server, not aiohttp, so nothing tidies those bytes up.

In a test: `async with BrokenWorker(script) as worker:` then `worker.url`, `worker.script = ...`.
As a process: `python -m agent_eval.testing.broken_worker --port N --case NAME` (see CASES).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType

import orjson

log = logging.getLogger(__name__)

MODEL = "broken-model"  # the one model it lists, and names in its answers
_HEAD_LIMIT = 64 * 1024


@dataclass(frozen=True)
class Script:
    """The bytes of one answer: a head, then body pieces, then `forever` until the client leaves.

    The pieces are sent as they are: framing (Content-Length, chunked) is the script's.
    """

    head: bytes
    pieces: tuple[bytes, ...] = ()
    forever: bytes = b""
    """Written again and again after the pieces, as fast as the client reads, until it leaves."""
    delay: float = 0.0
    """Seconds between two writes."""

    @classmethod
    def answer(
        cls,
        status: int,
        body: bytes,
        content_type: str = "application/json",
        content_length: int | None = None,
    ) -> Script:
        """A whole body; `content_length` may claim another length than the body has."""
        length = len(body) if content_length is None else content_length
        head = _head(status, content_type, f"Content-Length: {length}")
        return cls(head, (body,) if body else ())

    @classmethod
    def chunked(
        cls,
        status: int,
        pieces: list[bytes],
        content_type: str = "application/json",
        forever: bytes = b"",
        end: bool = True,
        delay: float = 0.0,
    ) -> Script:
        """A chunked body of `pieces`, then `forever` chunk after chunk; the last chunk when
        `end` and not forever."""
        framed = [chunk(piece) for piece in pieces]
        if end and not forever:
            framed.append(b"0\r\n\r\n")
        head = _head(status, content_type, "Transfer-Encoding: chunked")
        return cls(head, tuple(framed), chunk(forever) if forever else b"", delay)

    @classmethod
    def unframed(
        cls, status: int, pieces: list[bytes], content_type: str = "application/json"
    ) -> Script:
        """A body without Content-Length or chunks: only the connection's close ends it."""
        return cls(_head(status, content_type), tuple(pieces))

    @classmethod
    def sse(
        cls,
        events: list[bytes],
        forever: bytes = b"",
        end: bool = True,
        delay: float = 0.0,
    ) -> Script:
        """A 200 event stream of raw `events` (each framed by the caller, boundary or not)."""
        return cls.chunked(200, events, "text/event-stream", forever, end, delay)


def chunk(data: bytes) -> bytes:
    """`data` as one chunk of a chunked body."""
    return b"%x\r\n" % len(data) + data + b"\r\n"


def sse_event(payload: object) -> bytes:
    """One complete server-sent event carrying `payload` as JSON."""
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def _head(status: int, content_type: str, *framing: str) -> bytes:
    lines = [f"HTTP/1.1 {status} Broken", f"Content-Type: {content_type}", *framing]
    return ("\r\n".join([*lines, "Connection: close"]) + "\r\n\r\n").encode("latin-1")


def chat_answer(content: str = "ok") -> bytes:
    """A well-formed chat completion body."""
    return orjson.dumps(
        {
            "id": "chatcmpl-broken",
            "object": "chat.completion",
            "created": 0,
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    )


def chat_chunk(delta: object, finish_reason: str | None = None) -> dict[str, object]:
    """One chat.completion.chunk whose first choice carries `delta` as it is."""
    choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
    return {
        "id": "chatcmpl-broken",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": MODEL,
        "choices": [choice],
    }


_MIB = 1024 * 1024

CASES: dict[str, Callable[[], Script]] = {
    "huge_length": lambda: Script.answer(200, b"{", content_length=1024 * _MIB),
    "huge_body": lambda: Script(
        Script.answer(200, b"", content_length=1024 * _MIB).head, (b"x" * _MIB,) * 1024
    ),
    "endless_chunked": lambda: Script.chunked(200, [b'{"choices": ['], forever=b"0," * 32768),
    "sse_no_boundary": lambda: Script.sse([b"data: {"], forever=b"x" * 65536),
    "odd_error_bytes": lambda: Script.answer(500, b"\x1c"),
    "string_delta": lambda: Script.sse(
        [sse_event(chat_chunk("not an object")), b"data: [DONE]\n\n"]
    ),
    "truncated_body": lambda: Script.answer(200, chat_answer()[:20], content_length=4096),
    "healthy": lambda: Script.answer(200, chat_answer()),
}
"""Named misbehaviours, for the soak bench and the command line."""


@dataclass
class Received:
    """One request the worker read: its method, path and body."""

    method: str
    path: str
    body: bytes


@dataclass
class BrokenWorker:
    """Serves `script` to every POST; health and model routes answer as a healthy worker's,
    unless `gets` scripts them."""

    script: Script
    host: str = "127.0.0.1"
    port: int = 0
    gets: dict[str, Script] = field(default_factory=dict)
    """Answers to GET paths (a health route that redirects, an endless model list) in place
    of a healthy server's."""
    responses_api: bool = False
    """Whether GET /v1/responses answers 405, as on a server with the POST route (the proxy
    then forwards Responses requests as they are), rather than 404 (it translates them)."""
    messages_api: bool = False
    """The same for /v1/messages and /v1/messages/count_tokens."""
    received: list[Received] = field(default_factory=list)
    bytes_sent: int = 0
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def __aenter__(self) -> BrokenWorker:
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            request = await _read_request(reader)
            if request is not None:
                await self._answer(request, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass  # the client left, or sent what a broken worker need not understand
        except asyncio.CancelledError:
            pass  # the worker stops: Python 3.11's asyncio logs a cancelled handler as an error
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def _answer(self, request: Received, writer: asyncio.StreamWriter) -> None:
        if request.method != "POST":
            if (scripted := self.gets.get(request.path)) is not None:
                await self._play(scripted, writer)
            else:
                native = {"/v1/responses": self.responses_api, "/v1/messages": self.messages_api}
                await self._write(writer, _healthy_get(request.path, native))
            return
        self.received.append(request)
        await self._play(self.script, writer)

    async def _play(self, script: Script, writer: asyncio.StreamWriter) -> None:
        await self._write(writer, script.head)
        for piece in script.pieces:
            await self._write(writer, piece, script.delay)
        while script.forever:
            await self._write(writer, script.forever, script.delay)

    async def _write(self, writer: asyncio.StreamWriter, data: bytes, delay: float = 0.0) -> None:
        # Even without a delay: drain() returns at once while the peer keeps up, and a body
        # without end would then hold the loop, and every server and client sharing it.
        await asyncio.sleep(delay)
        writer.write(data)
        await writer.drain()
        self.bytes_sent += len(data)


async def _read_request(reader: asyncio.StreamReader) -> Received | None:
    head = await reader.readuntil(b"\r\n\r\n")
    if len(head) > _HEAD_LIMIT:
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    body = await reader.readexactly(length) if length else b""
    return Received(method, path, body)


def _healthy_get(path: str, native: dict[str, bool]) -> bytes:
    """A healthy server's answer to a GET; on a POST route (`native`, by prefix), 405 where the
    worker serves it and 404 where it does not."""
    if path.rstrip("/") in ("/v1/models", "/models"):
        body = orjson.dumps({"object": "list", "data": [{"id": MODEL, "object": "model"}]})
        return Script.answer(200, body).head + body
    for prefix, serves in native.items():
        if path.startswith(prefix):
            return Script.answer(405 if serves else 404, b"{}").head + b"{}"
    return Script.answer(200, b"{}").head + b"{}"


async def _serve_case(case: str, host: str, port: int) -> None:
    async with BrokenWorker(CASES[case](), host, port) as worker:
        log.info("broken worker (%s) at %s", case, worker.url)
        await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--case", choices=sorted(CASES), required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve_case(args.case, args.host, args.port))


if __name__ == "__main__":
    main()
