"""Why an attempt on a worker failed, in words a client can act on; a worker's errors reshaped."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from agent_eval.proxy.errors import error_body
from agent_eval.proxy.upstream.connections import UpstreamBusy
from agent_eval.proxy.upstream.http1 import UpstreamConnectError, UpstreamTooLarge

# Statuses that speak of the worker's state (overloaded, restarting, behind a gateway), not of
# the request; any other 5xx may come from the request itself.
WORKER_STATE_STATUSES = frozenset({429, 502, 503, 504})
MESSAGE_CHARS = 300
"""Characters of a worker's error message kept in the proxy's own messages."""
ERROR_BODY_BYTES = 1024 * 1024
"""The most of a worker's error body read: its message is at its start, and parsing a huge
one would hold the event loop."""
_TEXT_SCAN = 64 * 1024  # bytes of a body searched for its first line of text

# Every upstream failure is an OSError: connect errors, disconnects and timeouts alike.
UPSTREAM_ERRORS = (OSError,)


def retryable(status: int) -> bool:
    """A worker's status that another worker may answer better: backpressure or a 5xx."""
    return status == 429 or status >= 500


@dataclass(frozen=True)
class Failure:
    """Why one attempt on one worker failed, in words a client can act on."""

    reason: str
    message: str
    status: int | None = None
    retry_after: float | None = None
    worker: str | None = None
    """The worker that answered `status`; None when no worker answered."""

    @property
    def counts_against_worker(self) -> bool:
        """A 429 is backpressure and `busy` the proxy's own queue: neither is the worker's fault."""
        return self.status != 429 and self.reason != "busy"

    @property
    def may_be_the_request(self) -> bool:
        """Whether the request itself may have caused it: a 5xx other than the worker-state
        ones, a dropped connection (the worker died on it), silence past the deadline, or an
        answer past the bound (a request may ask for that much: many choices, logprobs)."""
        if self.reason in ("disconnect", "timeout", "too_large"):
            return True
        return self.status is not None and self.status not in WORKER_STATE_STATUSES

    def repeats(self, earlier: Failure) -> bool:
        """Whether this failure repeats an earlier one of the same request, which then is
        poison: the request itself, not a worker, is the likely cause."""
        same = (self.reason, self.status) == (earlier.reason, earlier.status)
        return same and self.may_be_the_request


def classify_exception(exc: OSError, worker_url: str) -> Failure:
    """Name what went wrong with a worker, for the client and the retry decision."""
    if isinstance(exc, UpstreamConnectError):
        return Failure("connect", f"worker {worker_url}: {exc}")
    if isinstance(exc, UpstreamBusy):
        return Failure("busy", f"{exc}; the proxy's queue for worker {worker_url} is full")
    if isinstance(exc, UpstreamTooLarge):
        return Failure(
            "too_large",
            f"worker {worker_url} {exc}; the proxy dropped it (raise --max-response-bytes "
            "if answers this large are real)",
        )
    if isinstance(exc, TimeoutError):
        return Failure("timeout", f"worker {worker_url} did not answer in time")
    return Failure("disconnect", f"worker {worker_url} dropped the connection ({exc})")


def status_failure(status: int, body: bytes, headers: dict[str, str], url: str) -> Failure:
    return Failure(
        "status",
        f"worker {url} answered {status}: {upstream_message(body)}",
        status=status,
        retry_after=_seconds(headers.get("retry-after")),
        worker=url,
    )


def upstream_message(body: bytes) -> str:
    """The message inside an OpenAI or SGLang error body, else the body's first line of text.

    Total over any bytes a worker may send: at most MESSAGE_CHARS characters, never empty.
    """
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        data = None
    message = _json_message(data) if isinstance(data, dict) else None
    if message is None:
        message = _first_line(body[:_TEXT_SCAN].decode(errors="replace"))
    return message[:MESSAGE_CHARS] if message else _no_text(body)


def _json_message(data: dict[str, Any]) -> str | None:
    """`error.message`, `message` or a plain-text `error`: the shapes servers answer in."""
    inner = data.get("error")
    if isinstance(inner, dict):
        inner = inner.get("message")
    for message in (inner, data.get("message")):
        if isinstance(message, str) and message.strip():
            return message
    return None


def _first_line(text: str) -> str:
    # str.splitlines and str.strip take more than newlines and spaces (\x1c, \x85, ...):
    # every line is checked, none assumed to be there.
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _no_text(body: bytes) -> str:
    return f"{len(body)} bytes without text: {body[:16]!r}" if body else "no body"


def openai_error_body(status: int, body: bytes) -> bytes:
    """A worker's error in OpenAI's shape; a body already in it is kept as it is."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return body
    return error_body(status, "upstream_error", upstream_message(body))


def _seconds(value: str | None) -> float | None:
    try:
        return float(value) if value else None
    except ValueError:
        return None
