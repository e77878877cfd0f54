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
    searched once for event boundaries, and an unfinished event is kept as a list of
    pieces, joined once when it ends. No event may pass `max_event_bytes`.
    """

    def __init__(self, max_event_bytes: int) -> None:
        self._max_event_bytes = max_event_bytes
        self._pieces: list[bytes] = []
        self._size = 0
        self._carriage = False  # the last chunk ended in "\r": the next may start with its "\n"

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        """The JSON objects of the events `chunk` completes; `[DONE]` and non-JSON are skipped.

        Raises: MalformedStream when an event grows past `max_event_bytes`.
        """
        data = self._newlines(chunk)
        payloads: list[dict[str, Any]] = []
        start = 0
        if data[:1] == b"\n" and self._pieces and self._pieces[-1][-1:] == b"\n":
            start = 1  # the blank line that ends the event began in the last chunk
            self._end_event(b"", payloads)
        while (at := data.find(b"\n\n", start)) >= 0:
            self._end_event(data[start:at], payloads)
            start = at + 2
        if start < len(data):
            self._keep(data[start:])
        return payloads

    def _newlines(self, chunk: bytes) -> bytes:
        """`chunk` with CRLF as LF; a "\r" that ends it waits for the next chunk's "\n"."""
        if self._carriage:
            chunk = b"\r" + chunk
        self._carriage = chunk[-1:] == b"\r"
        if self._carriage:
            chunk = chunk[:-1]
        return chunk.replace(b"\r\n", b"\n")

    def _keep(self, piece: bytes) -> None:
        self._size += len(piece)
        self._check(self._size)
        self._pieces.append(piece)

    def _end_event(self, last: bytes, payloads: list[dict[str, Any]]) -> None:
        if self._pieces:
            self._check(self._size + len(last))
            last = b"".join([*self._pieces, last])
            self._pieces.clear()
            self._size = 0
        else:
            self._check(len(last))
        if (payload := _payload(last)) is not None:
            payloads.append(payload)

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
