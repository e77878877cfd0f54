"""Translate a Chat Completions answer into an Anthropic message object."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import orjson

# Chat finish reasons with the Anthropic stop reason for each; a `stop` that matched one of the
# request's stop sequences becomes `stop_sequence` (see `stop_of`).
STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}


def new_message_id() -> str:
    """A fresh `msg_...` id."""
    return f"msg_{uuid.uuid4().hex}"


def fallback_tool_id(message_id: str, position: int) -> str:
    """A tool_use id for a tool call the worker sent without one."""
    return f"toolu_{message_id.removeprefix('msg_')}_{position}"


def base_message(message_id: str, model: str) -> dict[str, Any]:
    """A message with no content yet, as `message_start` carries it."""
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": model,
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }


def to_message(chat: dict[str, Any], request: dict[str, Any], message_id: str) -> dict[str, Any]:
    """The message for a Chat Completions answer `chat` to the Messages `request`."""
    choice = chat["choices"][0]
    message = base_message(message_id, chat.get("model") or request.get("model") or "")
    text, calls = choice["message"].get("content"), choice["message"].get("tool_calls") or []
    message["content"] = content_blocks(text, calls, message_id)
    message["stop_reason"], message["stop_sequence"] = stop_of(choice, request)
    message["usage"] = to_usage(chat.get("usage"))
    return message


def content_blocks(
    text: str | None, calls: list[dict[str, Any]], message_id: str
) -> list[dict[str, Any]]:
    """The content blocks of an answer: its text, then one tool_use block per call."""
    blocks: list[dict[str, Any]] = [text_block(text)] if text else []
    for position, call in enumerate(calls):
        function = call["function"]
        call_id = call.get("id") or fallback_tool_id(message_id, position)
        blocks.append(tool_use_block(call_id, function["name"], function["arguments"]))
    return blocks


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def tool_use_block(call_id: str, name: str, arguments: str | None) -> dict[str, Any]:
    """A tool_use block; `arguments` None gives the empty input `content_block_start` carries."""
    block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    if arguments is not None:
        block["input"] = tool_input(arguments)
    return block


def tool_input(arguments: str) -> dict[str, Any]:
    """A tool call's arguments as the object Anthropic's `input` is. Arguments the model wrote
    that are no JSON object are kept whole under `raw_arguments`: the agent sees the model's
    mistake, as a chat client would."""
    try:
        parsed = orjson.loads(arguments) if arguments.strip() else {}
    except orjson.JSONDecodeError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {"raw_arguments": arguments}


def stop_of(choice: dict[str, Any], request: dict[str, Any]) -> tuple[str | None, str | None]:
    """(stop_reason, stop_sequence) of a chat choice. The matched stop string is read where
    vLLM (`stop_reason`) and SGLang (`matched_stop`) put it."""
    reason = choice.get("finish_reason")
    stops = request.get("stop_sequences") or []
    if reason == "stop":
        for matched in (choice.get("stop_reason"), choice.get("matched_stop")):
            if isinstance(matched, str) and matched in stops:
                return "stop_sequence", matched
    return STOP_REASONS.get(reason or "stop", "end_turn"), None


def to_usage(usage: Mapping[str, Any] | None) -> dict[str, Any]:
    """Anthropic usage from Chat Completions usage: input tokens less the cached ones, which
    are `cache_read_input_tokens` when the worker reported them."""
    usage = usage or {}
    prompt = usage.get("prompt_tokens") or 0
    details = usage.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    anthropic = {"input_tokens": prompt, "output_tokens": usage.get("completion_tokens") or 0}
    if isinstance(cached, int):
        anthropic["input_tokens"] = max(prompt - cached, 0)
        anthropic["cache_read_input_tokens"] = cached
    return anthropic
