"""An answer's token ids and logprobs read and their members cut out, whole or streamed, so the
client gets the bytes it would get had the proxy not asked for them."""

from __future__ import annotations

import logging
from typing import Any

import orjson

from agent_eval.proxy.capture.json_spans import SpanError, apply
from agent_eval.proxy.capture.token_fields import TokenAsk, TokenReader, answer_edits, forget
from agent_eval.proxy.upstream.sse import MalformedStream
from agent_eval.proxy.upstream.streaming import BreakEnding, Follower, Passthrough

log = logging.getLogger(__name__)

_EVENT_END = b"\n\n"


def whole_answer(
    body: bytes, answer: dict[str, Any] | None, ask: TokenAsk
) -> tuple[bytes, dict[str, Any] | None, dict[str, Any] | None]:
    """The client's bytes and answer for a worker's whole answer `body` (parsed: `answer`),
    and the call's tokens."""
    if answer is None:
        return body, answer, None
    reader = TokenReader()
    reader.take(answer)
    cut = _cut(body, _object_start(body), ask, answer)
    if cut is None or cut is body:
        return body, answer, reader.result()
    forget(answer, ask)
    return cut, answer, reader.result()


class TokenRelay(Passthrough):
    """A passed-through stream whose events have the token members the proxy asked for read
    and cut out; every other byte as the worker sent it. An event is held until it ends."""

    def __init__(
        self,
        ask: TokenAsk,
        assembler: Follower | None,
        ending: BreakEnding | None,
        max_event_bytes: int,
        max_stream_bytes: int | None = None,
    ) -> None:
        super().__init__(assembler, ending, max_event_bytes, max_stream_bytes)
        self.reader = TokenReader()
        self._ask = ask
        self._max_event_bytes = max_event_bytes
        self._held: list[bytes] = []
        self._held_size = 0

    def feed(self, chunk: bytes) -> bytes:
        """The events `chunk` ends, their token members cut. Raises: MalformedStream when an
        event grows past the proxy's --max-event-bytes."""
        end = chunk.rfind(_EVENT_END)
        if end < 0:
            return self._hold(chunk)
        ended = b"".join([*self._held, chunk[: end + 2]])
        self._held, self._held_size = [], 0
        if end + 2 < len(chunk):
            self._hold(chunk[end + 2 :])
        out = b"".join(self._event(e, _EVENT_END) for e in ended.split(_EVENT_END)[:-1])
        return super().feed(out) if out else b""

    def end(self) -> bytes:
        """What was held when the stream ended without a blank line, cut as events are."""
        if not self._held:
            return b""
        *events, last = b"".join(self._held).split(_EVENT_END)
        self._held, self._held_size = [], 0
        out = b"".join([*(self._event(e, _EVENT_END) for e in events), self._event(last, b"")])
        return super().feed(out) if out else b""

    def _hold(self, piece: bytes) -> bytes:
        self._held.append(piece)
        self._held_size += len(piece)
        if self._held_size > self._max_event_bytes:
            raise MalformedStream(
                f"an event longer than {self._max_event_bytes:,} bytes (the proxy's "
                "--max-event-bytes)"
            )
        return b""

    def _event(self, event: bytes, separator: bytes) -> bytes:
        """One event as the client gets it: nothing when the whole event is the proxy's."""
        at = _data_start(event)
        if at is None:
            return event + separator
        line_end = event.find(b"\n", at)
        try:
            payload = orjson.loads(event[at : line_end if line_end >= 0 else len(event)])
        except orjson.JSONDecodeError:
            return event + separator
        if not isinstance(payload, dict):
            return event + separator
        self.reader.take(payload)
        cut = _cut(event, at, self._ask, payload)
        return b"" if cut is None else cut + separator


def _cut(data: bytes, at: int, ask: TokenAsk, parsed: dict[str, Any]) -> bytes | None:
    """`data` without the members `ask` added to the object at `at` (`parsed`: its value);
    None when the object is the proxy's alone. One it cannot read goes as it came."""
    try:
        edits = answer_edits(data, at, ask, parsed)
    except SpanError as exc:
        log.warning("could not take the token members out of an answer: %s", exc)
        return data
    return None if edits is None else apply(data, edits)


def _object_start(body: bytes) -> int:
    return len(body) - len(body.lstrip())


def _data_start(event: bytes) -> int | None:
    """Where the JSON object of an event's `data:` line starts; None when it has none."""
    if event.startswith(b"data:"):
        at = 5
    elif (found := event.find(b"\ndata:")) >= 0:
        at = found + 6
    else:
        return None
    if event[at : at + 1] == b" ":
        at += 1
    return at if event[at : at + 1] == b"{" else None
