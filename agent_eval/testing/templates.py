"""The text a chat template would make of a request, for the mock's simulated prefix cache.

Everything the model reads counts, in order: the system prompt, tools, then each turn with its
role, tool calls and tool results. A conversation that grows by appending turns keeps its
earlier text as prefix.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from agent_eval.testing.replies import JSON, content_text

Template = Callable[[JSON], str]


def _tools(body: JSON) -> str:
    tools = body.get("tools")
    return f"<|tools|>{orjson.dumps(tools).decode()}" if tools else ""


def _turn(role: Any, text: str, calls: Any = None) -> str:
    called = f"<|calls|>{orjson.dumps(calls).decode()}" if calls else ""
    return f"<|{role}|>{text}{called}"


def _chat_turn(message: JSON) -> str:
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        calls = [call.get("function") for call in calls if isinstance(call, dict)]
    return _turn(message.get("role"), content_text(message.get("content")), calls)


def chat_text(body: JSON) -> str:
    """A chat completion request as the model reads it: a leading system turn, tools, the rest."""
    turns = [_chat_turn(m) for m in body.get("messages") or []]
    # As Qwen's and Hermes' templates do, tools follow the system prompt.
    lead = 1 if turns and turns[0].startswith("<|system|>") else 0
    return "".join(turns[:lead]) + _tools(body) + "".join(turns[lead:])


def completion_text(body: JSON) -> str:
    """A text completion's prompt: a string, or a list of strings or token ids."""
    prompt = body.get("prompt", "")
    return prompt if isinstance(prompt, str) else " ".join(map(str, prompt))


def _item_turn(item: JSON) -> str:
    kind = item.get("type")
    if kind == "function_call":
        return _turn(
            "assistant", "", [{"name": item.get("name"), "arguments": item.get("arguments")}]
        )
    if kind == "function_call_output":
        return _turn("tool", str(item.get("output", "")))
    return _turn(item.get("role"), content_text(item.get("content")))


def response_text(body: JSON) -> str:
    """A Responses API request as the model reads it: instructions, tools, then the input."""
    items = body.get("input") or []
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    instructions = body.get("instructions")
    system = _turn("system", instructions) if isinstance(instructions, str) else ""
    return system + _tools(body) + "".join(_item_turn(item) for item in items)


TEMPLATES: dict[str, Template] = {
    "/v1/chat/completions": chat_text,
    "/v1/completions": completion_text,
    "/v1/responses": response_text,
}
