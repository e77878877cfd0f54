"""Translate an Anthropic Messages request body into a Chat Completions request body."""

from __future__ import annotations

from typing import Any

import orjson

from agent_eval.proxy.fields import Fields, typed
from agent_eval.proxy.routes import MESSAGES_ROUTE

FIELDS = Fields(MESSAGES_ROUTE)
# Fields read by the translation below, each with the JSON types it may have.
HANDLED: dict[str, tuple[str, ...]] = {
    "model": ("string",),
    "messages": ("array",),
    "system": ("string", "array"),
    "max_tokens": ("integer",),
    "tools": ("array",),
    "tool_choice": ("object",),
    "temperature": ("number",),
    "top_p": ("number",),
    "top_k": ("integer",),
    "stop_sequences": ("array",),
    "metadata": ("object",),
    "output_config": ("object",),
    "stream": ("boolean",),
}
# Fields safe to drop: `metadata.user_id` is the proxy's session key, not the worker's;
# `service_tier`, `speed`, `inference_geo`, `workspace_id` and `user_profile_id` are hosting
# options and bookkeeping; `thinking` (and `output_config.effort`) are hints chat templates
# handle (or not) per model, as the Responses route treats `reasoning`; `cache_control` asks
# for prompt caching, which a worker's prefix cache does unasked.
IGNORED = {
    "service_tier",
    "speed",
    "inference_geo",
    "workspace_id",
    "user_profile_id",
    "thinking",
    "cache_control",
}
# Fields refused even though a client may send them, with the reason the client sees.
REFUSED = {
    "container": "containers run code on Anthropic's servers; leave the field out",
    "mcp_servers": "MCP servers are called by Anthropic's servers; give their tools as `tools`",
    "context_management": "context editing happens on Anthropic's servers; leave it out",
    "diagnostics": "prompt-cache diagnostics come from Anthropic's servers; leave it out",
}
# Content blocks of past turns that carry nothing a Chat Completions model reads again: chat
# templates drop earlier reasoning, and the worker reasons afresh.
DROPPED_BLOCKS = {"thinking", "redacted_thinking"}
TOOL_CHOICES = {"auto": "auto", "any": "required", "none": "none"}


def to_chat_request(body: dict[str, Any], counting: bool = False) -> dict[str, Any]:
    """The Chat Completions body for `body`; raises RequestRefused for what it cannot serve.

    `counting` is for count_tokens, whose requests carry no `max_tokens`.
    """
    _check_fields(body, counting)
    chat: dict[str, Any] = {"model": body.get("model"), "messages": _messages(body)}
    if body.get("tools"):
        chat["tools"] = [_tool(tool, f"tools[{i}]") for i, tool in enumerate(body["tools"])]
    if body.get("tool_choice") is not None:
        chat.update(_tool_choice(body["tool_choice"]))
    for name in ("temperature", "top_p", "top_k", "max_tokens"):
        if body.get(name) is not None:
            chat[name] = body[name]
    if (output := body.get("output_config")) and output.get("format") is not None:
        chat["response_format"] = _response_format(output["format"])
    if body.get("stop_sequences"):
        chat["stop"] = [
            typed(stop, f"stop_sequences[{i}]", "string")
            for i, stop in enumerate(body["stop_sequences"])
        ]
    if body.get("stream"):
        # Without usage in the stream, `message_delta` could not report token counts.
        chat["stream"] = True
        chat["stream_options"] = {"include_usage": True}
    return chat


def metadata_user(body: dict[str, Any]) -> str | None:
    """`metadata.user_id`, the client's session key, when it is a string."""
    metadata = body.get("metadata")
    user = metadata.get("user_id") if isinstance(metadata, dict) else None
    return user if isinstance(user, str) and user else None


def _check_fields(body: dict[str, Any], counting: bool) -> None:
    """Refuse fields with no translation, and a request without what Anthropic requires."""
    FIELDS.check_top_level(body, HANDLED, IGNORED, REFUSED)
    if not counting and body.get("max_tokens") is None:
        # Anthropic's API requires it; a request without it would not run there either.
        raise FIELDS.unsupported("max_tokens", "it is missing, and is required")
    if body.get("messages") is None:
        raise FIELDS.unsupported("messages", "it is missing, and is required")


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The chat messages: the system prompt, then each turn's."""
    messages: list[dict[str, Any]] = []
    if body.get("system") is not None:
        messages.append({"role": "system", "content": _system(body["system"])})
    for i, message in enumerate(body["messages"]):
        where = f"messages[{i}]"
        message = typed(message, where, "object")
        role = FIELDS.required(message, "role", where, "string")
        content = FIELDS.required(message, "content", where, "string", "array")
        if role == "user":
            messages += _user_turn(content, f"{where}.content")
        elif role == "assistant":
            messages.append(_assistant_turn(content, f"{where}.content"))
        else:
            raise FIELDS.unsupported(f"{where}.role", f"role '{role}' is not user or assistant")
    return messages


def _system(system: str | list[Any]) -> str:
    """The system prompt as one string: text blocks joined, their cache hints dropped."""
    if isinstance(system, str):
        return system
    return "\n".join(_text_block(block, f"system[{i}]") for i, block in enumerate(system))


def _text_block(value: object, where: str) -> str:
    block = typed(value, where, "object")
    kind = FIELDS.required(block, "type", where, "string")
    if kind != "text":
        raise FIELDS.unsupported(f"{where}.type", f"a '{kind}' block here; send text blocks")
    text: str = FIELDS.required(block, "text", where, "string")
    return text


def _blocks(content: str | list[Any], where: str) -> list[dict[str, Any]]:
    """Content as a list of blocks: a string is one text block."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    blocks = [typed(block, f"{where}[{i}]", "object") for i, block in enumerate(content)]
    for i, block in enumerate(blocks):
        FIELDS.required(block, "type", f"{where}[{i}]", "string")
    return blocks


def _user_turn(content: str | list[Any], where: str) -> list[dict[str, Any]]:
    """A user turn: its tool results as `tool` messages first (they answer the turn before),
    then its text and images as one user message."""
    results, parts = [], []
    for i, block in enumerate(_blocks(content, where)):
        at = f"{where}[{i}]"
        if block["type"] == "tool_result":
            results.append(_tool_result(block, at))
        else:
            parts.append(_part(block, at))
    if not parts:
        return results
    return [*results, {"role": "user", "content": _content(parts)}]


def _content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """Message content: text parts joined into a string, or a part list when images appear."""
    if all(part["type"] == "text" for part in parts):
        # A plain string is what every server accepts; vLLM also joins text parts with "\n".
        return "\n".join(part["text"] for part in parts)
    return parts


def _part(block: dict[str, Any], where: str) -> dict[str, Any]:
    """The chat content part for a text or image block of a user turn."""
    kind = block["type"]
    if kind == "text":
        return {"type": "text", "text": FIELDS.required(block, "text", where, "string")}
    if kind == "image":
        return {"type": "image_url", "image_url": {"url": _image_url(block, where)}}
    raise FIELDS.unsupported(
        f"{where}.type", f"content blocks of type '{kind}' are not supported; send text or images"
    )


def _image_url(block: dict[str, Any], where: str) -> str:
    """The URL a chat `image_url` part takes: the source's, or a data URL of its bytes."""
    source = FIELDS.required(block, "source", where, "object")
    kind = FIELDS.required(source, "type", f"{where}.source", "string")
    if kind == "url":
        url: str = FIELDS.required(source, "url", f"{where}.source", "string")
        return url
    if kind == "base64":
        media = FIELDS.required(source, "media_type", f"{where}.source", "string")
        data = FIELDS.required(source, "data", f"{where}.source", "string")
        return f"data:{media};base64,{data}"
    raise FIELDS.unsupported(
        f"{where}.source.type", f"'{kind}' sources need Anthropic's file store; send base64 or url"
    )


def _tool_result(block: dict[str, Any], where: str) -> dict[str, Any]:
    """A `tool` message for a tool_result block. Chat Completions has no error flag: an error
    result says so in its text."""
    call_id = FIELDS.required(block, "tool_use_id", where, "string")
    content = FIELDS.optional(block, "content", where, "string", "array") or ""
    if isinstance(content, list):
        blocks = _blocks(content, f"{where}.content")
        parts = [_part(part, f"{where}.content[{i}]") for i, part in enumerate(blocks)]
        if any(part["type"] != "text" for part in parts):
            raise FIELDS.unsupported(f"{where}.content", "tool results can only carry text")
        content = "\n".join(part["text"] for part in parts)
    if FIELDS.optional(block, "is_error", where, "boolean"):
        content = f"Error: {content}"
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def _assistant_turn(content: str | list[Any], where: str) -> dict[str, Any]:
    """One assistant message: its text joined, its tool_use blocks as tool calls."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for i, block in enumerate(_blocks(content, where)):
        at, kind = f"{where}[{i}]", block["type"]
        if kind == "text":
            texts.append(FIELDS.required(block, "text", at, "string"))
        elif kind == "tool_use":
            calls.append(_tool_call(block, at))
        elif kind not in DROPPED_BLOCKS:
            raise FIELDS.unsupported(
                f"{at}.type", f"assistant blocks of type '{kind}' are not supported"
            )
    message: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts) if texts else None}
    if calls:
        message["tool_calls"] = calls
    return message


def _tool_call(block: dict[str, Any], where: str) -> dict[str, Any]:
    arguments = FIELDS.required(block, "input", where, "object")
    return {
        "id": FIELDS.required(block, "id", where, "string"),
        "type": "function",
        "function": {
            "name": FIELDS.required(block, "name", where, "string"),
            "arguments": orjson.dumps(arguments).decode(),
        },
    }


def _tool(value: object, where: str) -> dict[str, Any]:
    """The Chat Completions function tool for an Anthropic custom tool."""
    tool = typed(value, where, "object")
    kind = FIELDS.optional(tool, "type", where, "string")
    if kind not in (None, "custom"):
        raise FIELDS.unsupported(
            f"{where}.type",
            f"server tools such as '{kind}' run on Anthropic's servers; "
            "only custom tools (name, description, input_schema) can be served",
        )
    function = {
        "name": FIELDS.required(tool, "name", where, "string"),
        "parameters": FIELDS.required(tool, "input_schema", where, "object"),
    }
    if (description := FIELDS.optional(tool, "description", where, "string")) is not None:
        function["description"] = description
    return {"type": "function", "function": function}


def _tool_choice(choice: dict[str, Any]) -> dict[str, Any]:
    """The chat `tool_choice`, and `parallel_tool_calls` when the client turned them off."""
    kind = FIELDS.required(choice, "type", "tool_choice", "string")
    fields: dict[str, Any] = {}
    if kind == "tool":
        name = FIELDS.required(choice, "name", "tool_choice", "string")
        fields["tool_choice"] = {"type": "function", "function": {"name": name}}
    elif kind in TOOL_CHOICES:
        fields["tool_choice"] = TOOL_CHOICES[kind]
    else:
        raise FIELDS.unsupported(
            "tool_choice.type", f"'{kind}' is not one of auto, any, tool and none"
        )
    if FIELDS.optional(choice, "disable_parallel_tool_use", "tool_choice", "boolean"):
        fields["parallel_tool_calls"] = False
    return fields


def _response_format(value: object) -> dict[str, Any]:
    """The chat `response_format` for `output_config.format`, a JSON schema."""
    fmt = typed(value, "output_config.format", "object")
    kind = FIELDS.required(fmt, "type", "output_config.format", "string")
    if kind != "json_schema":
        raise FIELDS.unsupported("output_config.format.type", f"format '{kind}' is not supported")
    schema = FIELDS.required(fmt, "schema", "output_config.format", "object")
    return {"type": "json_schema", "json_schema": {"name": "output", "schema": schema}}
