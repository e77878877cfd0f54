"""Read server-sent events off a byte stream as the JSON objects their `data:` lines carry."""

from __future__ import annotations

from typing import Any

import orjson

from agent_eval.errors import AgentEvalError


class MalformedStream(AgentEvalError):
    """A worker's stream the proxy follows is not what its route sends; the message names
    what the worker sent ("a malformed chunk (...)")."""


class SSEReader:
    """Feed it raw bytes as they arrive; it returns each complete event's JSON object.

    Each byte is looked at a bounded number of times, whatever the chunking: a chunk is
    split once at event boundaries, and an unfinished event is kept as a list of pieces,
    joined once when it ends. No event may pass `max_event_bytes`, nor the whole stream
    `max_stream_bytes`: what follows the events (an assembled answer) grows with it.
    """

    def __init__(self, max_event_bytes: int, max_stream_bytes: int | None = None) -> None:
        self._max_event_bytes = max_event_bytes
        self._stream_bytes_left = max_stream_bytes
        self._pieces: list[bytes] = []
        self._size = 0
        self._carriage = False  # the last chunk ended in "\r": the next may start with its "\n"

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        """The JSON objects of the events `chunk` completes; `[DONE]` and non-JSON are skipped.

        Raises: MalformedStream when an event grows past `max_event_bytes`, or the stream
        past `max_stream_bytes`.
        """
        if self._stream_bytes_left is not None:
            self._stream_bytes_left -= len(chunk)
            if self._stream_bytes_left < 0:
                raise MalformedStream(
                    "a stream longer than the proxy's --max-response-bytes; raise it if "
                    "answers this long are real"
                )
        if self._carriage or chunk[-1:] == b"\r":
            chunk = self._carried(chunk)
        events = self._events(chunk.replace(b"\r\n", b"\n"))
        return [payload for event in events if (payload := _payload(event)) is not None]

    def _events(self, data: bytes) -> list[bytes]:
        """The events `data` ends, in order; what follows the last one is kept for later."""
        ended: list[bytes] = []
        if self._pieces and data[:1] == b"\n" and self._pieces[-1][-1:] == b"\n":
            # The blank line that ends it began in the last chunk: that "\n" is not the event's.
            self._pieces[-1] = self._pieces[-1][:-1]
            self._size -= 1
            ended.append(self._take(b""))
            data = data[1:]
        *complete, rest = data.split(b"\n\n")
        if complete:
            ended.append(self._take(complete[0]) if self._pieces else complete[0])
            ended += complete[1:]
            if len(data) > self._max_event_bytes:
                for event in complete:
                    self._check(len(event))
        if rest:
            self._size += len(rest)
            # A final "\n" may begin the blank line that ends the event: not counted in it yet.
            self._check(self._size - rest.endswith(b"\n"))
            self._pieces.append(rest)
        return ended

    def _carried(self, chunk: bytes) -> bytes:
        """`chunk` after the last one's final "\r", less its own: it may begin a CRLF."""
        if self._carriage:
            chunk = b"\r" + chunk
        self._carriage = chunk[-1:] == b"\r"
        return chunk[:-1] if self._carriage else chunk

    def _take(self, last: bytes) -> bytes:
        """The event the pieces kept so far and `last` make up; no piece is kept after it."""
        self._check(self._size + len(last))
        event = b"".join([*self._pieces, last])
        self._pieces.clear()
        self._size = 0
        return event

    def _check(self, size: int) -> None:
        if size > self._max_event_bytes:
            raise MalformedStream(
                f"an event longer than {self._max_event_bytes:,} bytes (the proxy's "
                "--max-event-bytes)"
            )


def _payload(event: bytes) -> dict[str, Any] | None:
    data = b"".join(line[5:].lstrip() for line in event.split(b"\n") if line.startswith(b"data:"))
    if not data or data == b"[DONE]":
        return None
    try:
        payload = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return payload if isinstance(payload, dict) else None


def encode_event(event: dict[str, Any]) -> bytes:
    """One event as a server-sent event named by its `type`, as the Responses and Messages
    APIs send them."""
    return b"event: " + event["type"].encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n"
