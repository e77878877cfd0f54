"""Read server-sent events off a byte stream as the JSON objects their `data:` lines carry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson


@dataclass
class SSEReader:
    """Feed it raw bytes as they arrive; it returns each complete event's JSON object."""

    _buffer: bytes = b""

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        """The JSON objects of the events `chunk` completes; `[DONE]` and non-JSON are skipped."""
        self._buffer += chunk.replace(b"\r\n", b"\n")
        *events, self._buffer = self._buffer.split(b"\n\n")
        return [payload for event in events if (payload := _payload(event)) is not None]


def _payload(event: bytes) -> dict[str, Any] | None:
    data = b"".join(line[5:].lstrip() for line in event.split(b"\n") if line.startswith(b"data:"))
    if not data or data == b"[DONE]":
        return None
    try:
        payload = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return payload if isinstance(payload, dict) else None
