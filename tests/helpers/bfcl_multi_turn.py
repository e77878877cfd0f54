"""Scripted model outputs for BFCL's multi-turn entries, and BFCL's own evaluation of them.

A script is the raw result BFCL's OpenAI handler would keep (per turn, per step: tool calls
as {name: arguments} or text) and the mock worker's replies that make a play produce it.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any

from agent_eval.shims.bfcl_checker import bfcl_module
from agent_eval.testing.replies import Reply, ToolCall

KINDS = ("right", "wrong_argument", "missing_call", "extra_call", "malformed", "no_call")


@dataclass
class Script:
    """One scripted play: the raw result BFCL keeps and the replies that produce it."""

    result: list[list[Any]]
    replies: list[Reply]


def script(gold: dict[str, Any], kind: str) -> Script:
    """The ground truth answered turn by turn, spoilt as `kind` says in its first turn of calls."""
    turns = [list(calls) for calls in gold["ground_truth"]]
    first = next(i for i, calls in enumerate(turns) if calls)
    tool_calls = [[_tool_call(c, gold["involved_classes"]) for c in calls] for calls in turns]
    spoilt = _spoil(tool_calls[first], kind)
    tool_calls[first] = spoilt
    result: list[list[Any]] = []
    replies: list[Reply] = []
    for index, calls in enumerate(tool_calls):
        steps, answers = _turn(calls, malformed=kind == "malformed" and index == first)
        result.append(steps)
        replies.extend(answers)
    return Script(result, replies)


def as_prompt(result: list[list[Any]]) -> list[list[Any]]:
    """The same answers written as prompt-mode text: calls as a Python list of calls."""
    return [[_as_text(step) for step in turn] for turn in result]


def _as_text(step: Any) -> Any:
    if isinstance(step, str):
        return step
    calls = []
    for (name, arguments), *_ in (list(call.items()) for call in step):
        try:
            values = json.loads(arguments)
        except json.JSONDecodeError:
            return f"[{name}({arguments}"  # as broken as the JSON was
        calls.append(f"{name}({', '.join(f'{k}={v!r}' for k, v in values.items())})")
    return f"[{', '.join(calls)}]"


def _turn(calls: list[ToolCall], malformed: bool) -> tuple[list[Any], list[Reply]]:
    if not calls:
        return ["Nothing to call for that."], [Reply("Nothing to call for that.")]
    raw = [{c.name: c.arguments} for c in calls]
    if malformed:  # undecodable: the turn ends on this answer
        return [raw], [Reply(tool_calls=calls)]
    return [raw, "Done."], [Reply(tool_calls=calls), Reply("Done.")]


def _spoil(calls: list[ToolCall], kind: str) -> list[ToolCall]:
    if kind == "wrong_argument":
        return [_wrong_argument(calls[0]), *calls[1:]]
    if kind == "missing_call":
        return calls[:-1]
    if kind == "extra_call":
        return [*calls, ToolCall(calls[-1].name, calls[-1].arguments)]
    if kind == "malformed":
        return [ToolCall(calls[0].name, calls[0].arguments[:-1]), *calls[1:]]
    if kind == "no_call":
        return []
    return calls


def _wrong_argument(call: ToolCall) -> ToolCall:
    arguments = json.loads(call.arguments)
    if not arguments:
        return ToolCall(call.name, json.dumps({"unexpected": 1}))
    key = next(iter(arguments))
    value = arguments[key]
    changed = not value if isinstance(value, bool) else _changed(value)
    return ToolCall(call.name, json.dumps({**arguments, key: changed}))


def _changed(value: Any) -> Any:
    if isinstance(value, int | float):
        return value + 7
    if isinstance(value, str):
        return value + "_x"
    return [value] if not isinstance(value, list) else [*value, "x"]


def _tool_call(call: str, classes: list[str]) -> ToolCall:
    """A ground-truth call as a tool call: positional arguments named as the backend names them."""
    node = ast.parse(call, mode="eval").body
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    arguments = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
    names = _parameters(node.func.id, tuple(classes))
    arguments.update({names[i]: ast.literal_eval(a) for i, a in enumerate(node.args)})
    return ToolCall(node.func.id, json.dumps(arguments))


@cache
def _parameters(method: str, classes: tuple[str, ...]) -> list[str]:
    config = bfcl_module("constants.executable_backend_config")
    for name in classes:
        backend = getattr(importlib.import_module(config.CLASS_FILE_PATH_MAPPING[name]), name)
        if hasattr(backend, method):
            return [
                p for p in inspect.signature(getattr(backend, method)).parameters if p != "self"
            ]
    raise AssertionError(f"no backend of {classes} has {method}")


@cache
def bfcl_entries(category: str) -> dict[str, tuple[dict[str, Any], list[list[str]]]]:
    """BFCL's own entries and ground truths by id, loaded as its evaluation loads them."""
    utils = bfcl_module("utils")
    entries = utils.load_dataset_entry(
        category, include_prereq=False, include_language_specific_hint=False
    )
    truths = {gold["id"]: gold["ground_truth"] for gold in utils.load_ground_truth_entry(category)}
    return {entry["id"]: (entry, truths[entry["id"]]) for entry in entries}


def bfcl_verdict(entry_id: str, category: str, result: list[list[Any]], fc: bool = True) -> bool:
    """BFCL's own verdict on a raw result (see bfcl_evaluation)."""
    return bool(bfcl_evaluation(entry_id, category, result, fc)["valid"])


def bfcl_evaluation(
    entry_id: str, category: str, result: list[list[Any]], fc: bool = True
) -> dict[str, Any]:
    """BFCL's own evaluation of a raw result ({"valid", "error_type", ...}): its eval runner's
    per-entry evaluation, its handler's decoder, its checker, under a model name of the call's
    own (its executor keeps backend instances by model name and entry id, so the name keeps
    each evaluation's apart)."""
    runner = bfcl_module("eval_checker.eval_runner")
    entry, truth = bfcl_entries(category)[entry_id]
    with _reference_name() as name:
        verdict: dict[str, Any] = runner._evaluate_single_multi_turn_entry(
            _handler(fc), entry_id, result, truth, dict(entry), name, category
        )
    return verdict


@contextmanager
def _reference_name() -> Iterator[str]:
    _counter[0] += 1
    name = f"bfcl_reference_{_counter[0]}"
    try:
        yield name
    finally:
        instances = vars(bfcl_module("eval_checker.multi_turn_eval.multi_turn_utils"))
        for key in [key for key in instances if key.startswith(name + "_")]:
            del instances[key]


_counter = [0]


@cache
def _handler(fc: bool) -> Any:
    """BFCL's OpenAI Chat Completions handler, for its decoder: it never calls a model here."""
    module = bfcl_module("model_handler.api_inference.openai_completion")
    handler = module.OpenAICompletionsHandler.__new__(module.OpenAICompletionsHandler)
    handler.is_fc_model = fc
    return handler
