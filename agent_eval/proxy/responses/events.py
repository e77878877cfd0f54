"""Turn a Chat Completions chunk stream into the Responses API event stream."""

from __future__ import annotations

import time
from typing import Any

from agent_eval.proxy.responses.response import (
    base_response,
    fallback_call_id,
    function_call_id,
    function_call_item,
    message_id,
    message_item,
    new_response_id,
    output_items,
    output_text_part,
    to_response,
)
from agent_eval.proxy.upstream.chunks import ToolCallDelta, Usage, chat_chunk
from agent_eval.proxy.upstream.streamed_calls import StreamedCall, StreamedCalls


class StreamTranslator:
    """Feed it Chat Completions chunks in order; it returns the Responses events to send.

    Items stay open until `finish`, so text arriving after a tool call still has a
    message to go to; `finish` closes them all and sends the final response, which is
    what `to_response` gives for the assembled answer. A chunk it cannot read raises
    MalformedStream and changes nothing, so `fail` still ends the stream cleanly.
    """

    def __init__(self, request: dict[str, Any], response_id: str | None = None) -> None:
        self.request = request
        self.response_id = response_id or new_response_id()
        self._sequence = 0
        self._started = False
        self._model: str = request.get("model") or ""
        self._created: float = time.time()
        self._text: list[str] = []  # joined once: `+=` copies the whole text every time
        self._message_index: int | None = None
        self._calls = StreamedCalls()  # a call's slot is its output index
        self._output_indexes: dict[str, int] = {}
        self._finish_reason: str | None = None
        self._usage: Usage | None = None
        self._result: dict[str, Any] | None = None

    def feed(self, payload: dict[str, Any]) -> list[dict[str, Any]]:
        """The events for one parsed `chat.completion.chunk`.

        Raises: MalformedStream when a field it reads has the wrong shape.
        """
        chunk = chat_chunk(payload)
        events = [] if self._started else self._start(chunk.get("model"), chunk.get("created"))
        self._usage = chunk.get("usage") or self._usage
        # Responses has no `n`; only the first choice is translated.
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if content := delta.get("content"):
                events += self._text_delta(content)
            for call in delta.get("tool_calls") or []:
                events += self._call_delta(call)
            self._finish_reason = choice.get("finish_reason") or self._finish_reason
        return events

    def finish(self) -> list[dict[str, Any]]:
        """The closing events, once the chat stream has ended: item `.done`s, then the response."""
        events = [] if self._started else self._start(None, None)
        final = to_response(self.assembled(), self.request, self.response_id)
        for item in sorted(final["output"], key=lambda item: self._output_indexes[item["id"]]):
            events += self._close(item)
        kind = "response.completed" if final["status"] == "completed" else "response.incomplete"
        events.append(self._event(kind, response=final))
        self._result = final
        return events

    def fail(self, message: str) -> list[dict[str, Any]]:
        """The event that ends the stream as failed, keeping what was generated before."""
        events = [] if self._started else self._start(None, None)
        response = base_response(self.request, self.response_id, self._model, self._created)
        message_so_far = self.assembled()["choices"][0]["message"]
        response["status"] = "failed"
        response["error"] = {"code": "server_error", "message": message}
        response["output"] = output_items(message_so_far, self.response_id, "incomplete")
        events.append(self._event("response.failed", response=response))
        self._result = response
        return events

    def result(self) -> dict[str, Any] | None:
        """The final response `finish` or `fail` sent; None before."""
        return self._result

    def assembled(self) -> dict[str, Any]:
        """The Chat Completions answer the chunks so far spell out."""
        tool_calls = self._calls.announced()
        text = None if self._message_index is None else "".join(self._text)
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if tool_calls:
            message["tool_calls"] = tool_calls
        choice = {"index": 0, "message": message, "finish_reason": self._finish_reason}
        return {
            "object": "chat.completion",
            "created": self._created,
            "model": self._model,
            "choices": [choice],
            "usage": self._usage,
        }

    def _event(self, kind: str, **fields: Any) -> dict[str, Any]:
        event = {"type": kind, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        return event

    def _start(self, model: str | None, created: float | None) -> list[dict[str, Any]]:
        self._started = True
        self._model = model or self._model
        self._created = created or self._created
        response = base_response(self.request, self.response_id, self._model, self._created)
        return [
            self._event("response.created", response=response),
            self._event("response.in_progress", response=response),
        ]

    def _claim_output_index(self, item_id: str) -> int:
        self._output_indexes[item_id] = len(self._output_indexes)
        return self._output_indexes[item_id]

    def _text_delta(self, text: str) -> list[dict[str, Any]]:
        events = []
        if self._message_index is None:
            self._message_index = self._claim_output_index(message_id(self.response_id))
            item = message_item(self.response_id, None, "in_progress")
            events += [
                self._event(
                    "response.output_item.added", output_index=self._message_index, item=item
                ),
                self._event(
                    "response.content_part.added",
                    **self._text_location(),
                    part=output_text_part(""),
                ),
            ]
        self._text.append(text)
        events.append(
            self._event(
                "response.output_text.delta", **self._text_location(), delta=text, logprobs=[]
            )
        )
        return events

    def _text_location(self) -> dict[str, Any]:
        return {
            "item_id": message_id(self.response_id),
            "output_index": self._message_index,
            "content_index": 0,
        }

    def _call_delta(self, delta: ToolCallDelta) -> list[dict[str, Any]]:
        call, fragment = self._calls.add(delta)
        if call.slot is None:
            # The added event must carry the name; arguments wait for it in `call.arguments`.
            return self._announce(call) if call.name else []
        return self._arguments_delta(call, fragment)

    def _announce(self, call: StreamedCall) -> list[dict[str, Any]]:
        call.call_id = call.call_id or fallback_call_id(self.response_id, call.position)
        call.slot = self._claim_output_index(function_call_id(self.response_id, call.position))
        item = function_call_item(
            self.response_id, call.position, call.call_id, call.name or "", "", "in_progress"
        )
        added = self._event("response.output_item.added", output_index=call.slot, item=item)
        return [added, *self._arguments_delta(call, call.arguments_so_far())]

    def _arguments_delta(self, call: StreamedCall, fragment: str) -> list[dict[str, Any]]:
        if not fragment:
            return []
        return [
            self._event(
                "response.function_call_arguments.delta",
                item_id=function_call_id(self.response_id, call.position),
                output_index=call.slot,
                delta=fragment,
            )
        ]

    def _close(self, item: dict[str, Any]) -> list[dict[str, Any]]:
        """The `.done` events for one finished output item."""
        index = self._output_indexes[item["id"]]
        where = {"item_id": item["id"], "output_index": index}
        if item["type"] == "message":
            part = item["content"][0]
            events = [
                self._event(
                    "response.output_text.done",
                    **where,
                    content_index=0,
                    text=part["text"],
                    logprobs=[],
                ),
                self._event("response.content_part.done", **where, content_index=0, part=part),
            ]
        else:
            events = [
                self._event(
                    "response.function_call_arguments.done",
                    **where,
                    name=item["name"],
                    arguments=item["arguments"],
                )
            ]
        return [*events, self._event("response.output_item.done", output_index=index, item=item)]
