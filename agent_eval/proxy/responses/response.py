"""Translate a Chat Completions answer into a Responses API response object."""

from __future__ import annotations

import time
import uuid
from typing import Any

# Chat finish reasons that end a response early, with the Responses reason for each.
INCOMPLETE_REASONS = {"length": "max_output_tokens", "content_filter": "content_filter"}


def new_response_id() -> str:
    """A fresh `resp_...` id."""
    return f"resp_{uuid.uuid4().hex}"


def message_id(response_id: str) -> str:
    """The id of the response's message item, derived so streaming and not agree."""
    return f"msg_{_suffix(response_id)}"


def function_call_id(response_id: str, position: int) -> str:
    """The id of the response's `position`th function call item."""
    return f"fc_{_suffix(response_id)}_{position}"


def fallback_call_id(response_id: str, position: int) -> str:
    """A call id for a tool call the worker sent without one."""
    return f"call_{_suffix(response_id)}_{position}"


def _suffix(response_id: str) -> str:
    return response_id.removeprefix("resp_")


def base_response(
    request: dict[str, Any], response_id: str, model: str, created_at: float
) -> dict[str, Any]:
    """An in-progress response with no output, echoing the request's settings."""
    return {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "model": model,
        "status": "in_progress",
        "error": None,
        "incomplete_details": None,
        "instructions": request.get("instructions"),
        "metadata": request.get("metadata") or {},
        "output": [],
        "parallel_tool_calls": request.get("parallel_tool_calls", True),
        "temperature": request.get("temperature"),
        "top_p": request.get("top_p"),
        "max_output_tokens": request.get("max_output_tokens"),
        "tool_choice": request.get("tool_choice") or "auto",
        "tools": request.get("tools") or [],
        "text": request.get("text") or {"format": {"type": "text"}},
        "previous_response_id": None,
        "background": False,
        "usage": None,
    }


def to_response(
    chat: dict[str, Any], request: dict[str, Any], response_id: str | None = None
) -> dict[str, Any]:
    """The Responses object for a Chat Completions answer `chat` to Responses `request`."""
    response_id = response_id or new_response_id()
    choice = chat["choices"][0]
    model = chat.get("model") or request.get("model") or ""
    response = base_response(request, response_id, model, chat.get("created") or time.time())
    reason = INCOMPLETE_REASONS.get(choice.get("finish_reason"))
    status = "incomplete" if reason else "completed"
    response["status"] = status
    response["incomplete_details"] = {"reason": reason} if reason else None
    if status == "completed":
        response["completed_at"] = time.time()
    response["output"] = output_items(choice["message"], response_id, status)
    response["usage"] = to_usage(chat.get("usage"))
    return response


def output_items(message: dict[str, Any], response_id: str, status: str) -> list[dict[str, Any]]:
    """The output items of an assistant message: its text, then one item per tool call."""
    items = []
    if message.get("content"):
        items.append(message_item(response_id, message["content"], status))
    for position, call in enumerate(message.get("tool_calls") or []):
        function = call["function"]
        call_id = call.get("id") or fallback_call_id(response_id, position)
        items.append(
            function_call_item(
                response_id, position, call_id, function["name"], function["arguments"], status
            )
        )
    return items


def message_item(response_id: str, text: str | None, status: str) -> dict[str, Any]:
    """An assistant message item; no content parts while `text` is None (stream just opened)."""
    content = [] if text is None else [output_text_part(text)]
    return {
        "id": message_id(response_id),
        "type": "message",
        "role": "assistant",
        "status": status,
        "content": content,
    }


def output_text_part(text: str) -> dict[str, Any]:
    """An `output_text` content part."""
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def function_call_item(
    response_id: str, position: int, call_id: str, name: str, arguments: str, status: str
) -> dict[str, Any]:
    """A `function_call` output item."""
    return {
        "id": function_call_id(response_id, position),
        "type": "function_call",
        "status": status,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
    }


def to_usage(usage: dict[str, Any] | None) -> dict[str, Any] | None:
    """Responses usage from Chat Completions usage; None when the worker sent none."""
    if not usage:
        return None
    prompt_details = usage.get("prompt_tokens_details") or {}
    completion_details = usage.get("completion_tokens_details") or {}
    input_tokens = usage.get("prompt_tokens") or 0
    output_tokens = usage.get("completion_tokens") or 0
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {
            "cached_tokens": prompt_details.get("cached_tokens") or 0,
            "cache_write_tokens": 0,
        },
        "output_tokens": output_tokens,
        "output_tokens_details": {
            "reasoning_tokens": completion_details.get("reasoning_tokens") or 0
        },
        "total_tokens": usage.get("total_tokens") or input_tokens + output_tokens,
    }
