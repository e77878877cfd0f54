"""One call of an attempt through the proxy, and the entry its record keeps of it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from agent_eval.proxy.capture.attempt import Attempt, CallUsage
from agent_eval.proxy.upstream.assemble import StreamAssembler
from agent_eval.proxy.upstream.sse import MalformedStream, SSEReader
from agent_eval.usage import reported_tokens
from agent_eval.wire import RETRIES_HEADER, WAITED_HEADER, WORKER_HEADER, waited_seconds

Recording = Callable[["Call", "bytes | PendingStream", int, CallUsage], None]
"""Where a finished call goes: its entry, its size in bytes and what it used (the store's
`record`)."""

# The proxy's codes for failures of a worker's, and of its own; a 4xx is the client's fault.
WORKER_FAULTS = frozenset(
    {
        "upstream_error",
        "worker_unreachable",
        "upstream_disconnected",
        "worker_busy",
        "upstream_timeout",
        "upstream_response_too_large",
    }
)
PROXY_FAULTS = frozenset(
    {"no_healthy_worker", "proxy_overloaded", "proxy_out_of_resources", "proxy_error"}
)
_CLIENT_LEFT = {"code": "client_closed_request", "message": "the client left", "fault": "client"}
CLIENT_CLOSED = 499
"""The status of a call whose client left before its answer ended (nginx's word for it)."""


@dataclass(eq=False, slots=True)
class Call:
    """A request of an attempt in flight; what the forwarder learns of it, until it ends."""

    recording: Recording
    attempt: Attempt
    index: int
    started: float
    route: str = ""
    body: bytes = b"null"
    """The request as the client sent it: a JSON object's bytes, or null when it was not one."""
    stream: bool = False
    first_byte: float | None = None
    """Seconds from the start to a streamed answer's first bytes."""
    broken: str | None = None
    """Why a stream that had started broke off, when it did."""
    raw: list[bytes] | None = None
    """A stream nobody follows: its chunks as sent, assembled when the record is read."""
    usage: dict[str, Any] | None = None
    """Such a stream's last event with usage, which the forwarder found for its metrics."""
    tokens: dict[str, Any] | None = None
    """The answer's token ids and logprobs, when the proxy asked for them (`capture.tokens`)."""
    done: bool = False
    tried_at: float | None = None
    """When the try of a worker under way began; None while it waits for one."""

    def waited(self, now: float) -> float:
        """Seconds it waited for a free worker so far: all of them while it waits."""
        return (self.tried_at if self.tried_at is not None else now) - self.started

    def sent(self, request: dict[str, Any], body: bytes) -> None:
        """Note the request the client sent: `body`, which parsed as the object `request`."""
        self.body = body
        self.stream = request.get("stream") is True

    def finish(
        self,
        response: web.StreamResponse,
        worker: str | None,
        answer: dict[str, Any] | None,
    ) -> None:
        """Record the call with the answer the client got (a stream's, as assembled)."""
        if self.done:
            return
        self.done = True
        pending = answer is None and self.raw is not None
        counted = self.usage if pending else answer
        # A failure passed on after the retries names its worker only in its head.
        worker = worker or response.headers.get(WORKER_HEADER)
        waited = waited_seconds(response.headers.get(WAITED_HEADER))
        head = self._head(response.status, worker, counted, _retries(response), waited)
        head["error"] = self._error(response)
        if self.tokens is not None:
            head["tokens"] = self.tokens
        used = CallUsage(head["prompt_tokens"], head["completion_tokens"], head["waited_s"])
        if not pending or self.raw is None:
            data = self._entry(head, _answer_bytes(response, answer))
            self.recording(self, data, len(data), used)
            return
        # Assembling a stream costs a parse of every event: done when the record is read,
        # off the request path, from the bytes the client got.
        stream = PendingStream(self._before_answer(head), b"".join(self.raw))
        self.recording(self, stream, len(stream.entry) + len(stream.raw), used)

    def abandon(self, response: web.StreamResponse | None) -> None:
        """Record a call that ended before the forwarder did: refused early, or its client left."""
        if self.done:
            return
        self.done = True
        status = response.status if response is not None else CLIENT_CLOSED
        head = self._head(status, None, None, 0)
        head["error"] = self._error(response) if response is not None else _CLIENT_LEFT
        data = self._entry(head, _answer_bytes(response, None) if response is not None else b"null")
        self.recording(self, data, len(data), CallUsage())

    def _head(
        self,
        status: int,
        worker: str | None,
        answer: dict[str, Any] | None,
        retries: int,
        waited: float = 0.0,
    ) -> dict[str, Any]:
        usage = answer.get("usage") if answer is not None else None
        reported = reported_tokens(usage)
        return {
            "index": self.index,
            "route": self.route,
            "stream": self.stream,
            "status": status,
            "worker": worker,
            "latency_s": round(time.monotonic() - self.started, 6),
            "ttft_s": None if self.first_byte is None else round(self.first_byte, 6),
            "retries": retries,
            "waited_s": waited,
            "prompt_tokens": reported[0] if reported else 0,
            "completion_tokens": _completion(usage),
            "cached_tokens": reported[1] if reported else None,
        }

    def _entry(self, head: dict[str, Any], answer: bytes) -> bytes:
        """The entry: its head, then the request and the answer as JSON bytes, spliced in as
        they came rather than written again (a long conversation is sent at every call)."""
        return self._before_answer(head) + answer + b"}"

    def _before_answer(self, head: dict[str, Any]) -> bytes:
        return b"".join((orjson.dumps(head)[:-1], b',"request":', self.body, b',"response":'))

    def _error(self, response: web.StreamResponse) -> dict[str, Any] | None:
        if self.broken is not None:
            return {"code": "stream_interrupted", "message": self.broken, "fault": "worker"}
        if response.status < 400:
            return None
        code, message = _error_fields(getattr(response, "body", None))
        return {"code": code, "message": message, "fault": fault(response.status, code)}


@dataclass(frozen=True, slots=True)
class PendingStream:
    """A recorded call whose streamed answer is assembled when its record is read."""

    entry: bytes
    """The entry up to its answer (`..."response":`)."""
    raw: bytes

    def resolved(self) -> bytes:
        """The entry with the answer the stream spelled out (null when it cannot be read)."""
        return self.entry + _json_bytes(assembled(self.raw)) + b"}"


def assembled(raw: bytes) -> dict[str, Any] | None:
    """The answer a whole Chat Completions or completions stream spells out."""
    reader, assembler = SSEReader(len(raw) + 1), StreamAssembler()
    try:
        for event in reader.feed(raw):
            assembler.follow(event)
    except MalformedStream:
        return None
    return assembler.result()


def fault(status: int, code: str | None) -> str:
    """Whose fault a failed call is: the worker's, the proxy's or the client's."""
    if code in PROXY_FAULTS:
        return "proxy"
    if status >= 500 or (status == 429 and code in WORKER_FAULTS):
        return "worker"
    return "client"  # a 4xx, the worker's passed on too: the request was at fault


def _answer_bytes(response: web.StreamResponse, answer: dict[str, Any] | None) -> bytes:
    """The answer as the client got it: a whole answer's own bytes, when they parsed as
    `answer` or are an error (the proxy's errors are JSON, a worker's made so); a followed
    stream's, assembled; null when it was not JSON."""
    body = getattr(response, "body", None)
    if not isinstance(body, bytes) or not body:
        return _json_bytes(answer) if answer is not None else b"null"
    return body if answer is not None or response.status >= 400 else b"null"


def _json_bytes(answer: dict[str, Any] | None) -> bytes:
    """`answer` as JSON; one nested too deep to write is null (the client had it as it was)."""
    try:
        return orjson.dumps(answer)
    except orjson.JSONEncodeError:
        return b"null"


def _error_fields(body: object) -> tuple[str | None, str]:
    """The code and message of an OpenAI-shaped error body."""
    try:
        error = orjson.loads(body)["error"] if isinstance(body, bytes) else None
    except (orjson.JSONDecodeError, KeyError, TypeError):
        error = None
    if not isinstance(error, dict):
        return None, ""
    code, message = error.get("code"), error.get("message")
    return (code if isinstance(code, str) else None), (message if isinstance(message, str) else "")


def _retries(response: web.StreamResponse) -> int:
    told = response.headers.get(RETRIES_HEADER, "")
    return int(told) if told.isdigit() else 0


def _completion(usage: Any) -> int:
    if not isinstance(usage, dict):
        return 0
    value = usage.get("completion_tokens", usage.get("output_tokens"))
    return value if type(value) is int and value >= 0 else 0
