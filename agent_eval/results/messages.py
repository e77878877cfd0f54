"""A trajectory's messages in one shape, whichever shape its runner or the proxy recorded them in.

Four shapes reach samples.jsonl: chat-completions messages (`tool_calls` on an assistant
message, answered by `role: tool` messages), Responses API items, as the Agents SDK records
them (`function_call` and `function_call_output` items beside role messages), those items
dumped without the `type` they hold by default (a call is then a bare {name, arguments}), and
Anthropic Messages (content blocks: `text`, `thinking`, `tool_use` on an assistant message,
`tool_result` on a user message; the system prompt is not a message there).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

_CALL_BLOCKS = {"tool_use", "tool_result", "thinking"}
"""Anthropic content blocks that are not the message's text."""


@dataclass
class ToolCall:
    """A call a message makes: the id its output answers, the tool, its arguments."""

    id: str | None
    name: str | None
    arguments: Any


@dataclass
class Message:
    """A message with its role, content and the tools it calls; a tool's output has role `tool`
    and the id of the call it answers."""

    role: str
    content: Any = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    call_id: str | None = None
    reasoning: str | None = None
    """The model's reasoning before the answer, when the message carries it apart."""


def messages(items: Iterable[Any]) -> list[Message]:
    """Every recorded message or item in the one shape, in order; an Anthropic message with
    several tool results gives one tool message each."""
    return [shaped for item in items for shaped in _shaped(item)]


def _shaped(item: Any) -> list[Message]:
    if not isinstance(item, dict):
        return [Message("message", item)]
    kind = item.get("type")
    if kind == "function_call" or (kind is None and _bare_call(item)):
        call = ToolCall(item.get("call_id"), item.get("name"), item.get("arguments"))
        return [Message("assistant", tool_calls=[call])]
    if kind == "function_call_output":
        return [Message("tool", item.get("output"), call_id=item.get("call_id"))]
    if item.get("role") == "tool":
        return [Message("tool", item.get("content"), call_id=item.get("tool_call_id"))]
    if _has_blocks(item.get("content")):
        return _anthropic(item)
    calls = [_chat_call(call) for call in item.get("tool_calls") or ()]
    role = item.get("role") or kind or "message"
    return [Message(role, item.get("content"), calls, reasoning=item.get("reasoning_content"))]


def _bare_call(item: dict[str, Any]) -> bool:
    """Whether an item without a type is a function call: a name and arguments, no role."""
    return "role" not in item and "name" in item and "arguments" in item


def _chat_call(call: dict[str, Any]) -> ToolCall:
    """A chat-completions tool call: its name and arguments under `function`, or beside its id."""
    named = call.get("function") or call
    return ToolCall(call.get("id"), named.get("name"), named.get("arguments"))


def _has_blocks(content: Any) -> bool:
    """Whether content is Anthropic blocks beyond text, which chat content parts never hold."""
    return isinstance(content, list) and any(_block(part) in _CALL_BLOCKS for part in content)


def _block(part: Any) -> str | None:
    return part.get("type") if isinstance(part, dict) else None


def _anthropic(item: dict[str, Any]) -> list[Message]:
    """An Anthropic message: its tool results first (Anthropic puts them first), then its text
    with the tools it calls and the thinking before them."""
    blocks = item["content"]
    results = [
        Message("tool", block.get("content"), call_id=block.get("tool_use_id"))
        for block in blocks
        if _block(block) == "tool_result"
    ]
    calls = [
        ToolCall(block.get("id"), block.get("name"), block.get("input"))
        for block in blocks
        if _block(block) == "tool_use"
    ]
    thinking = [block.get("thinking") or "" for block in blocks if _block(block) == "thinking"]
    text = [block for block in blocks if _block(block) not in _CALL_BLOCKS]
    reasoning = "\n".join(thinking) if thinking else None
    said = [Message(item.get("role") or "message", text or None, calls, reasoning=reasoning)]
    return results + (said if text or calls or thinking else [])
