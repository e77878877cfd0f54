"""A trajectory's messages in the one shape the sample page draws, whichever shape its runner
recorded them in.

Three shapes reach samples.jsonl: chat-completions messages (`tool_calls` on an assistant
message, answered by `role: tool` messages), Responses API items, as the Agents SDK records
them (`function_call` and `function_call_output` items beside role messages), and those items
dumped without the `type` they hold by default (a call is then a bare {name, arguments}).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


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


def drawable(record: dict[str, Any]) -> dict[str, Any]:
    """A samples.jsonl line's dict with its trajectory's messages in the page's one shape."""
    trajectory = record.get("trajectory") or {}
    messages = [asdict(message(item)) for item in trajectory.get("messages") or ()]
    return {**record, "trajectory": {**trajectory, "messages": messages}}


def message(item: Any) -> Message:
    """One recorded message or item, in the page's shape."""
    if not isinstance(item, dict):
        return Message("message", item)
    kind = item.get("type")
    if kind == "function_call" or (kind is None and _bare_call(item)):
        call = ToolCall(item.get("call_id"), item.get("name"), item.get("arguments"))
        return Message("assistant", tool_calls=[call])
    if kind == "function_call_output":
        return Message("tool", item.get("output"), call_id=item.get("call_id"))
    if item.get("role") == "tool":
        return Message("tool", item.get("content"), call_id=item.get("tool_call_id"))
    calls = [_chat_call(call) for call in item.get("tool_calls") or ()]
    return Message(item.get("role") or kind or "message", item.get("content"), calls)


def _bare_call(item: dict[str, Any]) -> bool:
    """Whether an item without a type is a function call: a name and arguments, no role."""
    return "role" not in item and "name" in item and "arguments" in item


def _chat_call(call: dict[str, Any]) -> ToolCall:
    """A chat-completions tool call: its name and arguments under `function`, or beside its id."""
    named = call.get("function") or call
    return ToolCall(call.get("id"), named.get("name"), named.get("arguments"))
