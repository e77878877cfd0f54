"""Relay a worker's Chat Completions stream to the client as Responses API events."""

from __future__ import annotations

from typing import Any

from agent_eval.proxy.responses.events import StreamTranslator, encode_event
from agent_eval.proxy.upstream.sse import MalformedStream, SSEReader


class ResponsesRelay:
    """Chat Completions SSE bytes in, Responses event bytes out; see `upstream.streaming.Relay`."""

    def __init__(
        self,
        translator: StreamTranslator,
        max_event_bytes: int,
        max_stream_bytes: int | None = None,
    ) -> None:
        self._translator = translator
        self._reader = SSEReader(max_event_bytes, max_stream_bytes)
        self._final: dict[str, Any] | None = None
        self._unsent: list[dict[str, Any]] = []

    def feed(self, chunk: bytes) -> bytes:
        """The Responses events for `chunk`.

        Raises: MalformedStream when the chunk is not of a Chat Completions stream; the
        events of its chat chunks before the malformed one go out with `broken`'s ending.
        """
        if self._final is not None:
            return b""
        events: list[dict[str, Any]] = []
        try:
            for payload in self._reader.feed(chunk):
                if "error" in payload:
                    # SGLang and vLLM report a failure inside a started stream this way.
                    ending = self._close(self._translator.fail(_message(payload)))
                    return _encode(events + ending)
                events += self._translator.feed(payload)
        except MalformedStream:
            self._unsent = events
            raise
        return _encode(events)

    def end(self) -> bytes:
        if self._final is not None:
            return b""
        return _encode(self._close(self._translator.finish()))

    def broken(self, message: str) -> bytes:
        if self._final is not None:
            return b""
        return _encode(self._unsent + self._close(self._translator.fail(message)))

    def answer(self) -> dict[str, Any] | None:
        """The final Responses object, once the stream has ended."""
        return self._final

    def _close(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        self._final = events[-1]["response"]
        return events


def _message(payload: dict[str, Any]) -> str:
    error = payload["error"]
    text = error.get("message") if isinstance(error, dict) else error
    return f"the worker reported an error mid-stream: {text}"


def _encode(events: list[dict[str, Any]]) -> bytes:
    return b"".join(encode_event(event) for event in events)
