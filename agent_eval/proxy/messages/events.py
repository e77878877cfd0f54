"""Turn a Chat Completions chunk stream into the Anthropic Messages event stream."""

from __future__ import annotations

from typing import Any

from agent_eval.proxy.messages.native import stream_error
from agent_eval.proxy.messages.response import (
    base_message,
    content_blocks,
    fallback_tool_id,
    stop_of,
    text_block,
    to_usage,
    tool_use_block,
)
from agent_eval.proxy.upstream.chunks import ChoiceChunk, ToolCallDelta, Usage, chat_chunk
from agent_eval.proxy.upstream.sse import MalformedStream
from agent_eval.proxy.upstream.streamed_calls import StreamedCall, StreamedCalls


class StreamTranslator:
    """Feed it Chat Completions chunks in order; it returns the Messages events to send.

    Anthropic's blocks come one after another, each stopped before the next starts: text
    opens a text block, a tool call a tool_use block, and a change from one to the other
    stops the open one. A chunk it cannot read raises MalformedStream and changes nothing
    the client saw, so `fail` still ends the stream cleanly.
    """

    def __init__(self, request: dict[str, Any], message_id: str) -> None:
        self.request = request
        self.message_id = message_id
        self._started = False
        self._model: str = request.get("model") or ""
        self._text: list[str] = []
        self._calls = StreamedCalls()  # a call's slot is its block's index
        self._blocks = 0
        self._open: StreamedCall | str | None = None  # "text", a call, or nothing
        self._choice: ChoiceChunk = {}
        self._usage: Usage | None = None
        self._result: dict[str, Any] | None = None

    def feed(self, payload: dict[str, Any]) -> list[dict[str, Any]]:
        """The events for one parsed `chat.completion.chunk`.

        Raises: MalformedStream when a field it reads has the wrong shape.
        """
        chunk = chat_chunk(payload)
        choices = [c for c in chunk.get("choices") or [] if c.get("index", 0) == 0]
        for choice in choices:  # checked before anything changes
            for call in (choice.get("delta") or {}).get("tool_calls") or []:
                self._check_order(call)
        events = [] if self._started else self._start(chunk.get("model"))
        self._usage = chunk.get("usage") or self._usage
        # Anthropic has no `n`; only the first choice is translated.
        for choice in choices:
            delta = choice.get("delta") or {}
            if content := delta.get("content"):
                events += self._text_delta(content)
            for call in delta.get("tool_calls") or []:
                events += self._call_delta(call)
            if choice.get("finish_reason"):
                self._choice = choice
        return events

    def finish(self) -> list[dict[str, Any]]:
        """The closing events once the chat stream has ended: the open block's stop, then
        `message_delta` with the stop reason and usage, then `message_stop`."""
        events = [] if self._started else self._start(None)
        events += self._stop_open()
        reason, sequence = stop_of({"finish_reason": "stop", **self._choice}, self.request)
        usage = to_usage(self._usage)
        events.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": reason, "stop_sequence": sequence},
                "usage": usage,
            }
        )
        events.append({"type": "message_stop"})
        self._result = self._message(reason, sequence, usage)
        return events

    def fail(self, message: str) -> list[dict[str, Any]]:
        """The `error` event that ends a broken stream, as Anthropic ends one."""
        self._result = self._message(None, None, to_usage(self._usage))
        return [stream_error(message)]

    def result(self) -> dict[str, Any] | None:
        """The message the stream spelled out, once `finish` or `fail` ended it."""
        return self._result

    def _message(
        self, reason: str | None, sequence: str | None, usage: dict[str, Any]
    ) -> dict[str, Any]:
        message = base_message(self.message_id, self._model)
        text = "".join(self._text) or None
        message["content"] = content_blocks(text, self._calls.announced(), self.message_id)
        message.update(stop_reason=reason, stop_sequence=sequence, usage=usage)
        return message

    def _start(self, model: str | None) -> list[dict[str, Any]]:
        self._started = True
        self._model = model or self._model
        return [{"type": "message_start", "message": base_message(self.message_id, self._model)}]

    def _check_order(self, delta: ToolCallDelta) -> None:
        """Refuse arguments for a call whose block has stopped: Anthropic cannot reopen it."""
        call = self._calls.get(delta)
        arguments = (delta.get("function") or {}).get("arguments")
        if call is not None and call.slot is not None and call is not self._open and arguments:
            raise MalformedStream(
                "tool call arguments interleaved with another call's, which the Messages "
                "API cannot stream"
            )

    def _stop_open(self) -> list[dict[str, Any]]:
        if self._open is None:
            return []
        self._open = None
        return [{"type": "content_block_stop", "index": self._blocks - 1}]

    def _open_block(self, owner: StreamedCall | str, block: dict[str, Any]) -> list[dict[str, Any]]:
        events = self._stop_open()
        self._open = owner
        events.append(
            {"type": "content_block_start", "index": self._blocks, "content_block": block}
        )
        self._blocks += 1
        return events

    def _text_delta(self, text: str) -> list[dict[str, Any]]:
        events = [] if self._open == "text" else self._open_block("text", text_block(""))
        self._text.append(text)
        delta = {"type": "text_delta", "text": text}
        return [*events, {"type": "content_block_delta", "index": self._blocks - 1, "delta": delta}]

    def _call_delta(self, delta: ToolCallDelta) -> list[dict[str, Any]]:
        call, fragment = self._calls.add(delta)
        if call.slot is None:
            # The block's start must carry the name; arguments wait for it in `call.arguments`.
            return self._announce(call) if call.name else []
        return self._arguments_delta(fragment)

    def _announce(self, call: StreamedCall) -> list[dict[str, Any]]:
        call.call_id = call.call_id or fallback_tool_id(self.message_id, call.position)
        block = tool_use_block(call.call_id, call.name or "", None)
        events = self._open_block(call, block)
        call.slot = self._blocks - 1
        return [*events, *self._arguments_delta(call.arguments_so_far())]

    def _arguments_delta(self, fragment: str) -> list[dict[str, Any]]:
        if not fragment:
            return []
        delta = {"type": "input_json_delta", "partial_json": fragment}
        return [{"type": "content_block_delta", "index": self._blocks - 1, "delta": delta}]
