"""End a worker's own Responses stream that broke mid-way as OpenAI ends one: `response.failed`."""

from __future__ import annotations

import time
from typing import Any

import orjson

from agent_eval.proxy.responses.response import base_response, new_response_id
from agent_eval.proxy.upstream.sse import encode_event

# Events after which the stream has said its last word; a break after one needs no event.
FINAL_EVENTS = {"response.completed", "response.incomplete", "response.failed"}
# Beyond it the next sequence number would not fit the 64 bits JSON numbers are written in.
_LAST_SEQUENCE = 2**63


class NativeFailure:
    """Follows a native Responses event stream; `broken` gives the event that ends it failed.

    What the stream said of its response (id, model, settings) and the output items it
    finished are kept, so the failed response continues the one the client was shown.
    """

    def __init__(self, request: dict[str, Any]) -> None:
        self._request = request
        self._response: dict[str, Any] = {}
        self._output: list[dict[str, Any]] = []
        self._sequence = 0
        self._ended = False

    def follow(self, event: dict[str, Any]) -> None:
        """Follow one event of the worker's on its way to the client."""
        sequence = event.get("sequence_number")
        if isinstance(sequence, int) and 0 <= sequence < _LAST_SEQUENCE:
            self._sequence = sequence + 1
        if isinstance(event.get("response"), dict):
            self._response = event["response"]
        kind, item = event.get("type"), event.get("item")
        if kind == "response.output_item.done" and isinstance(item, dict):
            self._output.append(item)
        self._ended = self._ended or (isinstance(kind, str) and kind in FINAL_EVENTS)

    def broken(self, message: str) -> bytes:
        """The `response.failed` event saying `message`; nothing once the stream had ended."""
        if self._ended:
            return b""
        try:
            return self._failed(message, self._response, self._output)
        except orjson.JSONEncodeError:
            # The worker's response nests deeper than JSON is written here: fail without it.
            return self._failed(message, {}, [])

    def _failed(self, message: str, said: dict[str, Any], output: list[dict[str, Any]]) -> bytes:
        model = self._request.get("model")
        shell = base_response(
            self._request,
            new_response_id(),
            model if isinstance(model, str) else "",
            time.time(),
        )
        response = {**shell, **said, "output": output, "status": "failed"}
        response["error"] = {"code": "server_error", "message": message}
        event = {"type": "response.failed", "sequence_number": self._sequence, "response": response}
        return encode_event(event)
