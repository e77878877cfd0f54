"""End a worker's own Messages stream that broke mid-way as Anthropic ends one: an `error` event."""

from __future__ import annotations

from typing import Any

from agent_eval.proxy.upstream.sse import encode_event

# Events after which the stream has said its last word; a break after one needs no event.
FINAL_EVENTS = {"message_stop", "error"}


class MessagesNativeFailure:
    """Follows a native Messages event stream; `broken` gives the event that ends it."""

    def __init__(self, request: dict[str, Any]) -> None:
        # Built from the request as every dialect's ending is; Anthropic's error needs none of it.
        self._ended = False

    def follow(self, event: dict[str, Any]) -> None:
        """Follow one event of the worker's on its way to the client."""
        self._ended = self._ended or event.get("type") in FINAL_EVENTS

    def broken(self, message: str) -> bytes:
        """The `error` event saying `message`; nothing once the stream had ended."""
        if self._ended:
            return b""
        return encode_event(stream_error(message))


def stream_error(message: str) -> dict[str, Any]:
    """The `error` event Anthropic ends a stream with when it fails on its side."""
    return {"type": "error", "error": {"type": "api_error", "message": message}}
