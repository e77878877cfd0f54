"""Turn a stream of server-sent events back into the one answer it spelled out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent_eval.proxy.sse import SSEReader


@dataclass
class _Choice:
    role: str = "assistant"
    content: str = ""
    reasoning: str = ""
    text: str = ""
    tool_calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    finish_reason: str | None = None

    def add_delta(self, delta: dict[str, Any]) -> None:
        self.role = delta.get("role") or self.role
        self.content += delta.get("content") or ""
        self.reasoning += delta.get("reasoning_content") or ""
        for call in delta.get("tool_calls") or []:
            slot = self.tool_calls.setdefault(
                call.get("index", len(self.tool_calls)),
                {"id": None, "type": "function", "function": {"name": "", "arguments": ""}},
            )
            slot["id"] = call.get("id") or slot["id"]
            function = call.get("function") or {}
            slot["function"]["name"] += function.get("name") or ""
            slot["function"]["arguments"] += function.get("arguments") or ""

    def as_message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": self.role, "content": self.content or None}
        if self.reasoning:
            message["reasoning_content"] = self.reasoning
        if self.tool_calls:
            message["tool_calls"] = [self.tool_calls[i] for i in sorted(self.tool_calls)]
        return message


@dataclass
class StreamAssembler:
    """Feeds on raw SSE bytes; `result()` gives the final chat/completion/response object."""

    _reader: SSEReader = field(default_factory=SSEReader)
    _head: dict[str, Any] = field(default_factory=dict)
    _choices: dict[int, _Choice] = field(default_factory=dict)
    _usage: dict[str, Any] | None = None
    _response: dict[str, Any] | None = None

    def feed(self, chunk: bytes) -> None:
        for payload in self._reader.feed(chunk):
            self._on_payload(payload)

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
            body["text"] = choice.text
        return body

    def _on_payload(self, payload: dict[str, Any]) -> None:
        if payload.get("type") == "response.completed":
            self._response = payload.get("response")
            return
        if "choices" not in payload:
            return
        self._head = self._head or {k: payload.get(k) for k in ("id", "created", "model")}
        self._head["object"] = payload.get("object")
        self._usage = payload.get("usage") or self._usage
        for raw in payload["choices"]:
            choice = self._choices.setdefault(raw.get("index", 0), _Choice())
            choice.add_delta(raw.get("delta") or {})
            choice.text += raw.get("text") or ""
            choice.finish_reason = raw.get("finish_reason") or choice.finish_reason
