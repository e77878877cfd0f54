"""Scripted model answers to BFCL entries, right and wrong in known ways, as the proxy returns
them (Chat Completions bodies): for the BFCL tests and the scoring benchmark only."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

Call = tuple[str, str]
"""(function name as the model sees it, arguments JSON)."""


def first_choices(ground_truth: list[dict[str, Any]], as_text: bool) -> list[dict[str, Any]]:
    """The calls a right answer makes: each parameter's first possible value ("" means left out);
    `as_text`: written as strings, as Java and JavaScript values are sent (true, 5, [1, 2])."""
    return [
        {name: {p: _written(_first(v), as_text) for p, v in params.items() if _first(v) != ""}}
        for call in ground_truth
        for name, params in call.items()
    ]


def _written(value: Any, as_text: bool) -> Any:
    return json.dumps(value) if as_text and not isinstance(value, str) else value


def _first(values: Any) -> Any:
    value = values[0] if isinstance(values, list) and values else values
    if isinstance(value, dict):  # nested possible answers: {key: [choices]}
        return {key: _first(inner) for key, inner in value.items() if _first(inner) != ""}
    return value


def as_model_calls(calls: list[dict[str, Any]]) -> list[Call]:
    """Calls as a model writes them: dots in names became underscores, as in the tools it saw."""
    return [(name.replace(".", "_"), json.dumps(args)) for c in calls for name, args in c.items()]


def answer_kinds(
    entry: dict[str, Any], ground_truth: list[dict[str, Any]] | None
) -> Iterator[tuple[str, list[Call] | str | None]]:
    """(kind, answer) pairs: calls to make, text to say, or None for an empty answer."""
    as_text = entry["id"].startswith(("simple_java", "simple_javascript"))
    if ground_truth:
        calls = first_choices(ground_truth, as_text)
    else:
        # An irrelevance entry may offer no function at all: then any call is one too many.
        calls = [_some_call(f) for f in entry["function"][:1]] or [{"any_function": {}}]
    yield "right" if ground_truth else "a_call", as_model_calls(calls)
    yield "wrong_function", as_model_calls([{"no_such_function": {}}])
    yield "extra_call", as_model_calls(calls + calls[:1])
    yield "malformed_arguments", [(as_model_calls(calls)[0][0], '{"unclosed": ')]
    yield "no_call_text", "I cannot do that with the functions I have."
    yield "empty", None
    yield "no_calls_listed", []
    ((name, args),), rest = calls[0].items(), calls[1:]
    for kind, changed in _changed_args(entry, name, args):
        yield kind, as_model_calls([{name: changed}, *rest])


def _changed_args(
    entry: dict[str, Any], name: str, args: dict[str, Any]
) -> Iterator[tuple[str, dict[str, Any]]]:
    if not args:
        return
    key = next(iter(args))
    yield "wrong_value", {**args, key: _other_value(args[key])}
    yield "wrong_type", {**args, key: _other_type(args[key])}
    required = _required(entry, name)
    dropped = next((p for p in args if p in required), None)
    if dropped is not None:
        yield "missing_required", {p: v for p, v in args.items() if p != dropped}


def _required(entry: dict[str, Any], name: str) -> list[str]:
    for function in entry["function"]:
        if function["name"] == name:
            return list(function["parameters"].get("required", []))
    return []


def _other_value(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 7919
    if isinstance(value, list):
        return [*value, value[0]] if value else ["another"]
    if isinstance(value, dict):
        return {**value, "another_key": 1}
    return f"{value}_but_another"


def _other_type(value: Any) -> Any:
    return 12345 if isinstance(value, str) else "a string"


def _some_call(function: dict[str, Any]) -> dict[str, Any]:
    """A call of `function` with a value for each required parameter (irrelevance entries)."""
    properties = function["parameters"].get("properties", {})
    required = function["parameters"].get("required", [])
    return {function["name"]: {p: _value_of(properties.get(p, {})) for p in required}}


def _value_of(schema: dict[str, Any]) -> Any:
    kinds = {"integer": 1, "float": 1.5, "number": 1.5, "boolean": True, "array": [], "dict": {}}
    return kinds.get(schema.get("type", ""), "value")


def python_text(calls: list[Call]) -> str:
    """Calls written as a prompt-mode model writes them: [f(a=1), g(b='x')]."""
    written = []
    for name, arguments in calls:
        args = ", ".join(f"{key}={value!r}" for key, value in json.loads(arguments).items())
        written.append(f"{name}({args})")
    return f"[{', '.join(written)}]"


def completion(answer: list[Call] | str | None) -> dict[str, Any]:
    """A Chat Completions body answering with tool calls, or text, or nothing."""
    message: dict[str, Any] = {"role": "assistant", "content": answer}
    if isinstance(answer, list):
        message = {"role": "assistant", "content": None, "tool_calls": _tool_calls(answer)}
    return {
        "id": "chatcmpl-bfcl", "object": "chat.completion", "created": 0, "model": "scripted",
        "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }  # fmt: skip


def _tool_calls(calls: list[Call]) -> list[dict[str, Any]]:
    return [
        {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
        for i, (n, a) in enumerate(calls)
    ]
