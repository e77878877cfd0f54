"""Serve another API's request as Chat Completions: the answer translated back, and the
worker's stream relayed as that API's events."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from agent_eval.proxy.routes import CHAT_ROUTE
from agent_eval.proxy.upstream.sse import MalformedStream, SSEReader, encode_event

MALFORMED = (orjson.JSONDecodeError, KeyError, IndexError, TypeError, AttributeError)


class EventTranslator(Protocol):
    """Turns chat chunks into one API's events, in order; see each dialect's events module."""

    def feed(self, payload: dict[str, Any]) -> list[dict[str, Any]]:
        """The events for one parsed chat chunk. Raises: MalformedStream, changing nothing."""

    def finish(self) -> list[dict[str, Any]]:
        """The closing events, once the chat stream has ended."""

    def fail(self, message: str) -> list[dict[str, Any]]:
        """The events that end the stream as failed, in `message`'s words."""

    def result(self) -> dict[str, Any] | None:
        """The answer the stream spelled out, once `finish` or `fail` gave the last events."""


@dataclass(frozen=True)
class ChatTranslation(ABC):
    """The client's `request`, the chat `body` sent for it and the id its answer gets; each
    API says how a chat answer and a chat stream read in its own shape."""

    request: dict[str, Any]
    body: bytes
    answer_id: str
    route: str = CHAT_ROUTE

    def answer(self, chat: bytes) -> dict[str, Any]:
        """The client's answer for the worker's Chat Completions answer.

        Raises: ValueError when `chat` is not a Chat Completions answer.
        """
        try:
            return self.translated(orjson.loads(chat))
        except MALFORMED as exc:
            what = f"{type(exc).__name__}: {exc}"
            raise ValueError(f"not a Chat Completions answer ({what})") from exc

    def relay(self, max_event_bytes: int, max_stream_bytes: int | None = None) -> TranslatedRelay:
        """A relay turning the worker's chat stream into the client's events."""
        return TranslatedRelay(self.translator(), max_event_bytes, max_stream_bytes)

    def refused(self, status: int) -> None:
        """Every worker error is passed on as it is: a chat worker's errors are the client's."""
        return None

    @abstractmethod
    def translated(self, chat: dict[str, Any]) -> dict[str, Any]:
        """`chat`, a Chat Completions answer, in the client's API."""

    @abstractmethod
    def translator(self) -> EventTranslator:
        """A fresh translator of chat chunks into the client's events."""


class TranslatedRelay:
    """Chat Completions SSE bytes in, translated event bytes out; see `upstream.streaming.Relay`."""

    def __init__(
        self,
        translator: EventTranslator,
        max_event_bytes: int,
        max_stream_bytes: int | None = None,
    ) -> None:
        self._translator = translator
        self._reader = SSEReader(max_event_bytes, max_stream_bytes)
        self._ended = False
        self._unsent: list[dict[str, Any]] = []

    def feed(self, chunk: bytes) -> bytes:
        """The translated events for `chunk`.

        Raises: MalformedStream when the chunk is not of a Chat Completions stream; the
        events of its chat chunks before the malformed one go out with `broken`'s ending.
        """
        if self._ended:
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
        if self._ended:
            return b""
        return _encode(self._close(self._translator.finish()))

    def broken(self, message: str) -> bytes:
        if self._ended:
            return b""
        return _encode(self._unsent + self._close(self._translator.fail(message)))

    def answer(self) -> dict[str, Any] | None:
        """The translated answer, once the stream has ended."""
        return self._translator.result() if self._ended else None

    def _close(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        self._ended = True
        return events


def _message(payload: dict[str, Any]) -> str:
    error = payload["error"]
    text = error.get("message") if isinstance(error, dict) else error
    return f"the worker reported an error mid-stream: {text}"


def _encode(events: list[dict[str, Any]]) -> bytes:
    return b"".join(encode_event(event) for event in events)
