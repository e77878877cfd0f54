"""What a model call recorded by the proxy says, read per API: the setup it was given, the
conversation it continued and its answer, the tool calls the model made and their results."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from agent_eval.agents.trajectory import ModelSetup, ToolDefinition

Json = dict[str, Any]


@dataclass(frozen=True)
class ToolUse:
    """One tool call as the model made it; `call_id` finds its result in a later request."""

    call_id: str
    name: str
    arguments: str


class CallShape(Protocol):
    """How one API's requests and answers hold a call's parts."""

    def setup(self, request: Json) -> ModelSetup:
        """The system prompt and the tools the call was given."""

    def sent(self, request: Json) -> list[Json]:
        """The conversation the request sends, its system prompt left to `setup`."""

    def answered(self, answer: Json) -> list[Json]:
        """The messages (or items) the answer adds to the conversation."""

    def tool_uses(self, answer: Json) -> Iterator[ToolUse]:
        """The tool calls the answer makes."""

    def tool_results(self, request: Json) -> Iterator[tuple[str, str]]:
        """The (call id, result) pairs the request sends back."""


class ChatShape:
    """Chat Completions: `messages` (a system one first), the answer's first choice."""

    def setup(self, request: Json) -> ModelSetup:
        tools = [_function(tool.get("function")) for tool in _dicts(request.get("tools"))]
        system = [m for m in _dicts(request.get("messages")) if m.get("role") in _SYSTEM]
        prompt = _text(system[0].get("content")) if system else None
        return ModelSetup(prompt, [tool for tool in tools if tool is not None])

    def sent(self, request: Json) -> list[Json]:
        return [m for m in _dicts(request.get("messages")) if m.get("role") not in _SYSTEM]

    def answered(self, answer: Json) -> list[Json]:
        choices = _dicts(answer.get("choices"))
        message = choices[0].get("message") if choices else None
        return [message] if isinstance(message, dict) else []

    def tool_uses(self, answer: Json) -> Iterator[ToolUse]:
        for message in self.answered(answer):
            for call in _dicts(message.get("tool_calls")):
                function = call.get("function") or {}
                yield ToolUse(
                    str(call.get("id")), str(function.get("name")), str(function.get("arguments"))
                )

    def tool_results(self, request: Json) -> Iterator[tuple[str, str]]:
        for message in _dicts(request.get("messages")):
            if message.get("role") == "tool":
                yield str(message.get("tool_call_id")), _text(message.get("content")) or ""


class ResponsesShape:
    """The Responses API: `instructions`, `input` (a string or items), the answer's `output`."""

    def setup(self, request: Json) -> ModelSetup:
        tools = [_responses_tool(tool) for tool in _dicts(request.get("tools"))]
        return ModelSetup(_text(request.get("instructions")), tools)

    def sent(self, request: Json) -> list[Json]:
        given = request.get("input")
        if isinstance(given, str):
            return [{"role": "user", "content": given}]
        return _dicts(given)

    def answered(self, answer: Json) -> list[Json]:
        return _dicts(answer.get("output"))

    def tool_uses(self, answer: Json) -> Iterator[ToolUse]:
        for item in self.answered(answer):
            if item.get("type") == "function_call":
                name, arguments = str(item.get("name")), str(item.get("arguments"))
                yield ToolUse(str(item.get("call_id")), name, arguments)

    def tool_results(self, request: Json) -> Iterator[tuple[str, str]]:
        for item in self.sent(request):
            if item.get("type") == "function_call_output":
                yield str(item.get("call_id")), _text(item.get("output")) or ""


class MessagesShape:
    """Anthropic Messages: `system` beside `messages` of content blocks, the answer's blocks."""

    def setup(self, request: Json) -> ModelSetup:
        tools = [_messages_tool(tool) for tool in _dicts(request.get("tools"))]
        return ModelSetup(_text(request.get("system")), tools)

    def sent(self, request: Json) -> list[Json]:
        return _dicts(request.get("messages"))

    def answered(self, answer: Json) -> list[Json]:
        content = answer.get("content")
        if not isinstance(content, list):
            return []
        return [{"role": str(answer.get("role") or "assistant"), "content": content}]

    def tool_uses(self, answer: Json) -> Iterator[ToolUse]:
        for block in _dicts(answer.get("content")):
            if block.get("type") == "tool_use":
                # Arguments are JSON text in every shape; Messages gives them as an object.
                arguments = json.dumps(block.get("input"))
                yield ToolUse(str(block.get("id")), str(block.get("name")), arguments)

    def tool_results(self, request: Json) -> Iterator[tuple[str, str]]:
        for message in self.sent(request):
            for block in _dicts(message.get("content")):
                if block.get("type") == "tool_result":
                    yield str(block.get("tool_use_id")), _text(block.get("content")) or ""


SHAPES: dict[str, CallShape] = {
    "/v1/chat/completions": ChatShape(),
    "/v1/responses": ResponsesShape(),
    "/v1/messages": MessagesShape(),
}
"""Each generation route's shape; a call on a route not here adds no messages or tool calls."""

_SYSTEM = ("system", "developer")


def _dicts(value: Any) -> list[Json]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _text(content: Any) -> str | None:
    """A message's text: its string, or its text parts joined."""
    if isinstance(content, str):
        return content
    parts = [text for p in _dicts(content) if isinstance(text := p.get("text"), str)]
    return "\n".join(parts) if parts else None


def _function(function: Any) -> ToolDefinition | None:
    if not isinstance(function, dict):
        return None
    parameters = function.get("parameters")
    return ToolDefinition(
        str(function.get("name")),
        str(function.get("description") or ""),
        parameters if isinstance(parameters, dict) else None,
    )


def _responses_tool(tool: Json) -> ToolDefinition:
    """A function tool with its schema; a hosted one (web search, ...) by its type."""
    if tool.get("type") == "function":
        parameters = tool.get("parameters")
        return ToolDefinition(
            str(tool.get("name")),
            str(tool.get("description") or ""),
            parameters if isinstance(parameters, dict) else None,
        )
    return ToolDefinition(str(tool.get("name") or tool.get("type")), "", None)


def _messages_tool(tool: Json) -> ToolDefinition:
    """A client tool with its `input_schema`; a server tool (web search, ...) by name or type."""
    schema = tool.get("input_schema")
    return ToolDefinition(
        str(tool.get("name") or tool.get("type")),
        str(tool.get("description") or ""),
        schema if isinstance(schema, dict) else None,
    )
