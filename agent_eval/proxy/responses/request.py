"""Translate a Responses API request body into a Chat Completions request body."""

from __future__ import annotations

from typing import Any

from agent_eval.proxy.fields import Fields, typed
from agent_eval.proxy.routes import RESPONSES_ROUTE

# Fields read by the translation below, each with the JSON types it may have.
HANDLED: dict[str, tuple[str, ...]] = {
    "model": ("string",),
    "input": ("string", "array"),
    "instructions": ("string",),
    "tools": ("array",),
    "tool_choice": ("string", "object"),
    "temperature": ("number",),
    "top_p": ("number",),
    "max_output_tokens": ("integer",),
    "parallel_tool_calls": ("boolean",),
    "text": ("object",),
    "stream": ("boolean",),
    "background": ("boolean",),
}
# Sampling fields the Responses API lacks but Chat Completions servers (SGLang, vLLM,
# llama.cpp) accept; clients send them as extra body fields, and they pass as they are.
SAMPLING_EXTRAS = (
    "seed",
    "stop",
    "top_k",
    "min_p",
    "presence_penalty",
    "frequency_penalty",
    "repetition_penalty",
    "logit_bias",
)
# Fields that are safe to drop: bookkeeping or hints whose absence cannot change what the
# worker generates in a way the client relies on. `store` is honoured by the proxy's own
# store, not the worker; `reasoning` and `text.verbosity` are hints that chat templates
# handle (or not) per model; `truncation: auto` only matters on context overflow, where the
# worker's own error reaches the client; `max_tool_calls` limits built-in tools, which are
# refused; `include` asks for extras we do not produce; `client_metadata` is the Codex CLI's
# bookkeeping (its session, turn and window ids), sent on every request.
IGNORED = {
    "store",
    "metadata",
    "client_metadata",
    "user",
    "safety_identifier",
    "prompt_cache_key",
    "prompt_cache_retention",
    "prompt_cache_options",
    "service_tier",
    "include",
    "reasoning",
    "truncation",
    "stream_options",
    "max_tool_calls",
}
# Fields refused even though a client may send them, with the reason the client sees.
REFUSED = {
    # The proxy puts a stored conversation in `input` before translating; an id still here
    # names a response it does not hold.
    "previous_response_id": "the proxy holds no response with this id; send the whole "
    "conversation in `input` instead",
    "conversation": "conversations are not stored; send the whole conversation in `input`",
    "prompt": "stored prompt templates live on OpenAI's servers; send `instructions` instead",
    "top_logprobs": "log probabilities are not translated; leave the field out",
}
PASSED = IGNORED | set(SAMPLING_EXTRAS)
FIELDS = Fields(RESPONSES_ROUTE)
TEXT_PARTS = {"input_text", "output_text", "text", "refusal"}
# Optional fields of a function tool and of a json_schema format, passed on when typed right.
TOOL_FIELDS = {"description": ("string",), "parameters": ("object",), "strict": ("boolean",)}
SCHEMA_FIELDS = {
    "name": ("string",),
    "schema": ("object",),
    "description": ("string",),
    "strict": ("boolean",),
}


def to_chat_request(body: dict[str, Any]) -> dict[str, Any]:
    """The Chat Completions body for `body`; raises RequestRefused for what it cannot serve."""
    _check_fields(body)
    chat: dict[str, Any] = {"model": body.get("model"), "messages": _messages(body)}
    if body.get("tools"):
        chat["tools"] = [_tool(tool, f"tools[{i}]") for i, tool in enumerate(body["tools"])]
    if body.get("tool_choice") is not None:
        chat["tool_choice"] = _tool_choice(body["tool_choice"])
    for name in ("temperature", "top_p", "parallel_tool_calls", *SAMPLING_EXTRAS):
        if body.get(name) is not None:
            chat[name] = body[name]
    if body.get("max_output_tokens") is not None:
        # `max_tokens`, not `max_completion_tokens`: llama.cpp and older vLLM know only it.
        chat["max_tokens"] = body["max_output_tokens"]
    response_format = _response_format(body.get("text") or {})
    if response_format is not None:
        chat["response_format"] = response_format
    if body.get("stream"):
        # Without usage in the stream, `response.completed` could not report token counts.
        chat["stream"] = True
        chat["stream_options"] = {"include_usage": True}
    return chat


def _check_fields(body: dict[str, Any]) -> None:
    """Refuse fields with no translation, and a background response (nothing would poll it)."""
    FIELDS.check_top_level(body, HANDLED, PASSED, REFUSED)
    if body.get("background"):
        raise FIELDS.unsupported(
            "background", "background responses need a store to poll; send the request without it"
        )


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The chat messages: instructions as a system message, then the input items."""
    messages: list[dict[str, Any]] = []
    if body.get("instructions") is not None:
        messages.append({"role": "system", "content": body["instructions"]})
    if body.get("input") is None:
        raise FIELDS.unsupported("input", "the request needs an `input`")
    for i, item in enumerate(input_items(body["input"])):
        _add_item(messages, item, f"input[{i}]")
    return messages


def input_items(value: object) -> list[dict[str, Any]]:
    """A request's `input` as an item list: a string is one user message."""
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    items = typed(value, "input", "string", "array")
    for i, item in enumerate(items):
        typed(item, f"input[{i}]", "object")
    return items


def _add_item(messages: list[dict[str, Any]], item: dict[str, Any], where: str) -> None:
    """Append the chat form of one input item to `messages`."""
    kind = FIELDS.optional(item, "type", where, "string") or "message"
    if kind == "message":
        messages.append(_message(item, where))
    elif kind == "function_call":
        _add_tool_call(messages, item, where)
    elif kind == "function_call_output":
        content = _output_text(
            FIELDS.required(item, "output", where, "string", "array"), f"{where}.output"
        )
        call_id = FIELDS.required(item, "call_id", where, "string")
        messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
    elif kind == "reasoning":
        # Chat Completions has no field for earlier reasoning, and chat templates drop past
        # reasoning anyway; the worker reasons afresh.
        return
    else:
        raise FIELDS.unsupported(
            f"{where}.type",
            f"input items of type '{kind}' are not supported; "
            "use message, function_call, function_call_output or reasoning items",
        )


def _message(item: dict[str, Any], where: str) -> dict[str, Any]:
    """A chat message from a Responses message item."""
    role = FIELDS.required(item, "role", where, "string")
    if role not in {"user", "assistant", "system", "developer"}:
        raise FIELDS.unsupported(f"{where}.role", f"role '{role}' is not supported")
    # Many Chat Completions servers reject the `developer` role; `system` means the same.
    role = "system" if role == "developer" else role
    content = FIELDS.required(item, "content", where, "string", "array")
    return {"role": role, "content": _content(content, f"{where}.content")}


def _content(content: str | list[Any], where: str) -> str | list[dict[str, Any]]:
    """Message content: text parts joined into a string, or a part list when images appear."""
    if isinstance(content, str):
        return content
    parts = [_part(part, f"{where}[{i}]") for i, part in enumerate(content)]
    if all(part["type"] == "text" for part in parts):
        # A plain string is what every server accepts; vLLM also joins text parts with "\n".
        return "\n".join(part["text"] for part in parts)
    return parts


def _part(value: object, where: str) -> dict[str, Any]:
    """The chat content part for a Responses content part."""
    part = typed(value, where, "object")
    kind = FIELDS.optional(part, "type", where, "string")
    if kind in TEXT_PARTS:
        # A refusal part carries its words under `refusal`, every other text part under `text`.
        key = "refusal" if kind == "refusal" else "text"
        return {"type": "text", "text": FIELDS.optional(part, key, where, "string") or ""}
    if kind == "input_image" and part.get("image_url") is not None:
        image_url = {"url": FIELDS.required(part, "image_url", where, "string")}
        if detail := FIELDS.optional(part, "detail", where, "string"):
            image_url["detail"] = detail
        return {"type": "image_url", "image_url": image_url}
    if kind == "input_image":
        raise FIELDS.unsupported(
            f"{where}.file_id", "uploaded files are not available; send the image as `image_url`"
        )
    raise FIELDS.unsupported(
        f"{where}.type", f"content parts of type '{kind}' are not supported; send text or images"
    )


def _output_text(output: str | list[Any], where: str) -> str:
    """A tool result as the string chat `tool` messages carry."""
    content = _content(output, where)
    if not isinstance(content, str):
        raise FIELDS.unsupported(where, "tool results can only carry text")
    return content


def _add_tool_call(messages: list[dict[str, Any]], item: dict[str, Any], where: str) -> None:
    """Attach a function call to the assistant turn it belongs to, opening one if needed."""
    name = FIELDS.required(item, "name", where, "string")
    arguments = FIELDS.required(item, "arguments", where, "string")
    call = {
        "id": FIELDS.required(item, "call_id", where, "string"),
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }
    last = messages[-1] if messages else None
    # Responses lists a turn's text and each of its calls as separate items; Chat
    # Completions holds them in one assistant message.
    if last is not None and last["role"] == "assistant":
        last.setdefault("tool_calls", []).append(call)
    else:
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})


def _tool(value: object, where: str) -> dict[str, Any]:
    """The nested Chat Completions shape of a flat Responses function tool."""
    tool = typed(value, where, "object")
    kind = FIELDS.required(tool, "type", where, "string")
    if kind == "namespace":
        # The Codex CLI groups its sub-agent tools so; they are functions, not built-in tools.
        raise FIELDS.unsupported(
            where,
            "a namespace of tools has no Chat Completions form; "
            "offer its functions as tools of type 'function'",
        )
    if kind != "function":
        raise FIELDS.unsupported(
            where,
            f"built-in tools such as '{kind}' run on OpenAI's servers; "
            "only tools of type 'function' can be served",
        )
    function = {"name": FIELDS.required(tool, "name", where, "string")}
    for key, kinds in TOOL_FIELDS.items():
        if (value := FIELDS.optional(tool, key, where, *kinds)) is not None:
            function[key] = value
    return {"type": "function", "function": function}


def _tool_choice(choice: str | dict[str, Any]) -> str | dict[str, Any]:
    """The Chat Completions tool_choice: the same strings, a nested form for one function."""
    if isinstance(choice, str):
        return choice
    kind = FIELDS.required(choice, "type", "tool_choice", "string")
    if kind == "function":
        name = FIELDS.required(choice, "name", "tool_choice", "string")
        return {"type": "function", "function": {"name": name}}
    raise FIELDS.unsupported(
        "tool_choice",
        f"a tool_choice of type '{kind}' is not supported; "
        "use 'auto', 'none', 'required' or a function",
    )


def _response_format(text: dict[str, Any]) -> dict[str, Any] | None:
    """The chat response_format for `text.format`, or None for plain text."""
    fmt = FIELDS.optional(text, "format", "text", "object") or {"type": "text"}
    kind = FIELDS.required(fmt, "type", "text.format", "string")
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "json_object"}
    if kind == "json_schema":
        schema = {}
        for key, kinds in SCHEMA_FIELDS.items():
            if (value := FIELDS.optional(fmt, key, "text.format", *kinds)) is not None:
                schema[key] = value
        return {"type": "json_schema", "json_schema": schema}
    raise FIELDS.unsupported("text.format.type", f"format '{kind}' is not supported")
