"""Pass a worker's server-sent events to the client chunk by chunk, never buffered whole."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from aiohttp import web

from agent_eval.proxy.assemble import StreamAssembler
from agent_eval.proxy.errors import error_body
from agent_eval.proxy.http1 import UpstreamResponse
from agent_eval.proxy.metrics import ProxyMetrics
from agent_eval.proxy.upstream import UPSTREAM_ERRORS, WORKER_HEADER, classify_exception
from agent_eval.proxy.worker import Worker

if TYPE_CHECKING:
    from agent_eval.proxy.forward import Exchange

log = logging.getLogger(__name__)


async def pipe_stream(
    exchange: Exchange,
    upstream: UpstreamResponse,
    worker: Worker,
    metrics: ProxyMetrics,
    assemble: bool,
) -> tuple[web.StreamResponse, dict[str, Any] | None]:
    """Relay the stream; returns the response and, when asked, the answer it spelled out.

    Once a byte has reached the client the stream is never replayed: an upstream
    failure ends it with an error event. A client that leaves closes the upstream
    request, so the engine aborts the generation.
    """
    response = web.StreamResponse(
        status=upstream.status,
        headers={
            "Content-Type": upstream.headers.get("content-type", "text/event-stream"),
            "Cache-Control": "no-cache",
            WORKER_HEADER: worker.url,
        },
    )
    assembler = StreamAssembler() if assemble else None
    finished = False
    try:
        await response.prepare(exchange.request)
        finished = await _relay(exchange, upstream, response, worker, metrics, assembler)
    except OSError:
        # Upstream failures are handled inside; what reaches here is the client going away.
        log.info("client left a stream from %s; closing the upstream request", worker.url)
    finally:
        if not finished:
            upstream.close()
    return response, assembler.result() if assembler else None


async def _relay(
    exchange: Exchange,
    upstream: UpstreamResponse,
    response: web.StreamResponse,
    worker: Worker,
    metrics: ProxyMetrics,
    assembler: StreamAssembler | None,
) -> bool:
    """Copy chunks until the end; True when the upstream stream finished cleanly."""
    first = True
    while True:
        try:
            chunk = await upstream.readany()
        except UPSTREAM_ERRORS as exc:
            await _end_with_error(response, worker, exc)
            return False
        if not chunk:
            await response.write_eof()
            return True
        if first:
            metrics.first_byte.labels(exchange.info.route).observe(
                time.monotonic() - exchange.started
            )
            first = False
        if assembler is not None:
            assembler.feed(chunk)
        await response.write(chunk)


async def _end_with_error(response: web.StreamResponse, worker: Worker, exc: OSError) -> None:
    failure = classify_exception(exc, worker.url)
    worker.failures += 1
    worker.breaker.record_failure(time.monotonic())
    message = f"the stream broke after it started: {failure.message}; retry the request"
    log.warning(message)
    await response.write(b"data: " + error_body(502, "stream_interrupted", message) + b"\n\n")
    await response.write_eof()
