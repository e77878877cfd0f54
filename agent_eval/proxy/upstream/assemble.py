"""Turn a stream's events back into the one answer they spelled out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent_eval.proxy.upstream.chunks import (
    ChoiceChunk,
    Delta,
    Usage,
    chat_chunk,
    completed_response,
)


@dataclass
class _Call:
    id: str | None = None
    name: list[str] = field(default_factory=list)
    arguments: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        function = {"name": "".join(self.name), "arguments": "".join(self.arguments)}
        return {"id": self.id, "type": "function", "function": function}


@dataclass
class _Choice:
    """One choice's deltas, kept as pieces: a string grown by `+=` is copied at every piece."""

    role: str = "assistant"
    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    tool_calls: dict[int, _Call] = field(default_factory=dict)
    finish_reason: str | None = None

    def add(self, raw: ChoiceChunk) -> None:
        self.finish_reason = raw.get("finish_reason") or self.finish_reason
        _append(self.text, raw.get("text"))
        delta: Delta = raw.get("delta") or {}
        self.role = delta.get("role") or self.role
        _append(self.content, delta.get("content"))
        _append(self.reasoning, delta.get("reasoning_content"))
        for call in delta.get("tool_calls") or []:
            slot = self.tool_calls.setdefault(call.get("index", len(self.tool_calls)), _Call())
            slot.id = call.get("id") or slot.id
            function = call.get("function") or {}
            _append(slot.name, function.get("name"))
            _append(slot.arguments, function.get("arguments"))

    def as_message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": self.role, "content": "".join(self.content) or None}
        if self.reasoning:
            message["reasoning_content"] = "".join(self.reasoning)
        if self.tool_calls:
            message["tool_calls"] = [self.tool_calls[i].as_dict() for i in sorted(self.tool_calls)]
        return message


def _append(pieces: list[str], piece: str | None) -> None:
    if piece:
        pieces.append(piece)


@dataclass
class StreamAssembler:
    """Follows a stream's events; `result()` gives the final chat/completion/response object."""

    _head: dict[str, Any] = field(default_factory=dict)
    _choices: dict[int, _Choice] = field(default_factory=dict)
    _usage: Usage | None = None
    _response: dict[str, Any] | None = None

    def follow(self, payload: dict[str, Any]) -> None:
        """Take in one event's JSON; one it cannot read leaves the answer as it was.

        Raises: MalformedStream when a field it reads has the wrong shape.
        """
        if payload.get("type") == "response.completed":
            self._response = completed_response(payload.get("response"))
        elif "choices" in payload:
            self._add_chunk(payload)

    def result(self) -> dict[str, Any] | None:
        if self._response is not None:
            return self._response
        if not self._head:
            return None
        chat = self._head.get("object") == "chat.completion.chunk"
        choices = [self._choice_body(i, c, chat) for i, c in sorted(self._choices.items())]
        kind = "chat.completion" if chat else "text_completion"
        return {**self._head, "object": kind, "choices": choices, "usage": self._usage}

    @staticmethod
    def _choice_body(index: int, choice: _Choice, chat: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"index": index, "finish_reason": choice.finish_reason}
        if chat:
            body["message"] = choice.as_message()
        else:
            body["text"] = "".join(choice.text)
        return body

    def _add_chunk(self, payload: dict[str, Any]) -> None:
        chunk = chat_chunk(payload)  # checked whole before anything is taken from it
        self._head = self._head or {k: chunk.get(k) for k in ("id", "created", "model")}
        self._head["object"] = chunk.get("object")
        self._usage = chunk.get("usage") or self._usage
        for raw in chunk.get("choices") or []:
            self._choices.setdefault(raw.get("index", 0), _Choice()).add(raw)
