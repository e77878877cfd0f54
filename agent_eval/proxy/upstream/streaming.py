"""Pass a worker's server-sent events to the client chunk by chunk, never buffered whole."""

from __future__ import annotations

import logging
import time
from typing import Any, Protocol

import orjson
from aiohttp import web

from agent_eval.proxy.capture.call import Call
from agent_eval.proxy.errors import error_body
from agent_eval.proxy.exchange import Exchange
from agent_eval.proxy.fleet.worker import Worker
from agent_eval.proxy.server.metrics import ProxyMetrics
from agent_eval.proxy.upstream.failures import UPSTREAM_ERRORS, classify_exception
from agent_eval.proxy.upstream.headers import served_by
from agent_eval.proxy.upstream.http1 import UpstreamResponse
from agent_eval.proxy.upstream.sse import MalformedStream, SSEReader

log = logging.getLogger(__name__)

_EVENT_ENDS = (b"\n\n", b"\r\n\r\n", b"\r\r")  # the blank line after an event, as SSE allows


class Relay(Protocol):
    """What becomes of a worker's stream bytes on their way to the client."""

    def feed(self, chunk: bytes) -> bytes:
        """The bytes to send for one chunk from the worker.

        Raises: MalformedStream when the relay follows the stream and cannot read it.
        """

    def end(self) -> bytes:
        """The bytes to send once the worker's stream ended cleanly."""

    def broken(self, message: str) -> bytes:
        """The bytes that tell the client the stream broke, in `message`'s words."""

    def answer(self) -> dict[str, Any] | None:
        """The answer the stream spelled out, when it was followed."""


class Follower(Protocol):
    """Assembles the answer a passed-through stream spells out from its events."""

    def follow(self, event: dict[str, Any]) -> None:
        """Take in one event's JSON. Raises: MalformedStream when it cannot be read."""

    def result(self) -> dict[str, Any] | None:
        """The answer so far."""


class BreakEnding(Protocol):
    """How a passed-through stream of one kind ends when it breaks; it follows the events."""

    def follow(self, event: dict[str, Any]) -> None:
        """Follow one event on its way to the client."""

    def broken(self, message: str) -> bytes:
        """The bytes that end the stream as broken, in `message`'s words."""


class Passthrough:
    """The worker's bytes unchanged; its events followed when the answer is wanted.

    A break ends the stream as `ending` says; without one, with an error `data:` line, the
    way SGLang and vLLM report errors in Chat Completions and completion streams. A stream
    nobody follows is never parsed: its bytes pass as they come and none is kept.
    """

    def __init__(
        self,
        assembler: Follower | None,
        ending: BreakEnding | None,
        max_event_bytes: int,
        max_stream_bytes: int | None = None,
    ) -> None:
        self._assembler = assembler
        self._ending = ending
        followed = assembler is not None or ending is not None
        self._reader = SSEReader(max_event_bytes, max_stream_bytes) if followed else None
        self._before = self._last = b""

    def feed(self, chunk: bytes) -> bytes:
        """`chunk` as it came, once followed.

        Raises: MalformedStream when an event or the stream is too long, or an event the
        assembler reads is malformed; the chunk is then not sent.
        """
        if self._reader is not None:
            self._follow(self._reader.feed(chunk))
        # The last two chunks sent, by reference: where the final usage event is, and whether
        # the stream stops inside an event, at no cost.
        self._before, self._last = self._last, chunk
        return chunk

    def end(self) -> bytes:
        return b""

    def _follow(self, events: list[dict[str, Any]]) -> None:
        # The assembler first: when it refuses an event, the ending has followed none of
        # the chunk, as the client has seen none of it.
        if self._assembler is not None:
            for event in events:
                self._assembler.follow(event)
        if self._ending is not None:
            for event in events:
                self._ending.follow(event)

    def broken(self, message: str) -> bytes:
        """The error event; after a blank line that ends the event the worker cut, if it did,
        so that a client reads the error as an event of its own."""
        if self._ending is not None:
            ending = self._ending.broken(message)
        else:
            ending = b"data: " + error_body(502, "stream_interrupted", message) + b"\n\n"
        return b"\n\n" + ending if ending and self._inside_event() else ending

    def _inside_event(self) -> bool:
        """Whether the bytes sent so far stop before the blank line that ends an event."""
        tail = self._before[-3:] + self._last if len(self._last) < 4 else self._last
        return bool(tail) and not tail.endswith(_EVENT_ENDS)

    def answer(self) -> dict[str, Any] | None:
        return self._assembler.result() if self._assembler else None

    def usage_event(self) -> dict[str, Any] | None:
        """The stream's last event that carries `usage` (the final one, when the client asked
        for `stream_options.include_usage`), found in the last chunks without following."""
        tail = self._before + self._last
        at = tail.rfind(b'"usage"')
        start = tail.rfind(b"data:", 0, at) if at >= 0 else -1
        end = tail.find(b"\n", at)
        if start < 0 or end < 0:
            return None
        try:
            event = orjson.loads(tail[start + 5 : end])  # SGLang and vLLM: one line per event
        except orjson.JSONDecodeError:
            return None
        return event if isinstance(event, dict) else None


async def pipe_stream(
    exchange: Exchange,
    upstream: UpstreamResponse,
    first: bytes,
    worker: Worker,
    metrics: ProxyMetrics,
    relay: Relay,
    retries: int,
) -> web.StreamResponse:
    """Relay the stream, from its `first` bytes on, through `relay`, which then holds the
    answer it spelled out; the head says the worker and the `retries` it took to reach it.

    Once a byte has reached the client the stream is never retried: an upstream
    failure, or bytes a following relay cannot read, end it with an error event, charged
    to the worker. A client that leaves closes the upstream request, so the engine aborts
    the generation.
    """
    response = web.StreamResponse(
        status=upstream.status,
        headers={
            "Content-Type": upstream.headers.get("content-type", "text/event-stream"),
            "Cache-Control": "no-cache",
            **served_by(worker.url, retries, exchange.waited()),
        },
    )
    finished = False
    try:
        await response.prepare(exchange.request)
        finished = await _relay(exchange, upstream, first, response, worker, metrics, relay)
    except OSError:
        # Upstream failures are handled inside; what reaches here is the client going away.
        log.info("client left a stream from %s; closing the upstream request", worker.url)
    finally:
        if not finished:
            upstream.close()
    return response


async def _relay(
    exchange: Exchange,
    upstream: UpstreamResponse,
    chunk: bytes,
    response: web.StreamResponse,
    worker: Worker,
    metrics: ProxyMetrics,
    relay: Relay,
) -> bool:
    """Copy chunks, from `chunk` on, until the end; True when the upstream stream finished
    cleanly."""
    call = exchange.call
    if chunk:
        first_byte = time.monotonic() - exchange.started
        metrics.first_byte.labels(exchange.info.route).observe(first_byte)
        if call is not None:
            call.first_byte = first_byte
    raw = call.raw if call is not None else None
    while chunk:
        try:
            out = relay.feed(chunk)
        except MalformedStream as exc:
            await _end_broken(response, worker, f"worker {worker.url} sent {exc}", relay, call)
            return False
        if raw is not None:
            raw.append(out)  # what the client gets, kept by reference
        if out:
            await response.write(out)
        try:
            chunk = await upstream.readany()
        except UPSTREAM_ERRORS as exc:
            failure = classify_exception(exc, worker.url)
            await _end_broken(response, worker, failure.message, relay, call)
            return False
    await response.write_eof(relay.end())
    return True


async def _end_broken(
    response: web.StreamResponse, worker: Worker, cause: str, relay: Relay, call: Call | None
) -> None:
    """End the stream with `relay`'s error event saying `cause`, charged to `worker` (and, on
    an attempt's call, noted in its record)."""
    worker.record_failure()
    message = f"the stream broke after it started: {cause}; retry the request"
    log.warning(message)
    if call is not None:
        call.broken = message
    await response.write_eof(relay.broken(message))
