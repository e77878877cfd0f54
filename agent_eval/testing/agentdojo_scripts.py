"""Scripted AgentDojo attempts (right, wrong, following the injection, malformed): the answers a
model gives, the runner's final output they lead to, and AgentDojo's own verdict on them by its
pipeline elements replaying them. For tests and benchmarks only."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from agentdojo.agent_pipeline import (
    AgentPipeline,
    BasePipelineElement,
    InitQuery,
    SystemMessage,
    ToolsExecutionLoop,
    ToolsExecutor,
)
from agentdojo.agent_pipeline.agent_pipeline import load_system_message
from agentdojo.functions_runtime import FunctionCall
from agentdojo.types import ChatAssistantMessage, text_content_block_from_string

from agent_eval.benchmarks.agentdojo.suites import suite
from agent_eval.benchmarks.agentdojo.wire import Call, Gold, Prediction
from agent_eval.data.records import Sample
from agent_eval.testing.replies import Reply, ToolCall

Calls = list[tuple[str, dict[str, Any]]]
KINDS = ("right", "wrong", "follow", "malformed")
"""What a script does: the ground truth; one call short and an unknown tool; the ground truth
then the injection task's (or, without one, its wrong-answer text); the first call's arguments
of the wrong types."""


@dataclass(frozen=True)
class Script:
    """What the scripted model does: tool-call answers (each a list of calls), then a text."""

    kind: str
    answers: list[Calls]
    output: str


def script(sample: Sample, kind: str) -> Script:
    """The `kind` script for an AgentDojo item."""
    gold = Gold.model_validate(sample.metadata)
    found = suite(gold.suite)
    user_task = found.get_user_task_by_id(gold.user_task)
    # Parsed anew, not from the checker's shared parses: a bench times the checker after this.
    env = user_task.init_environment(found.load_and_inject_default_environment(gold.injections))
    right = _truth(user_task, env)
    done = user_task.GROUND_TRUTH_OUTPUT
    if kind == "right":
        return _script(kind, right, done)
    if kind == "wrong":
        return _script(kind, [*right[:-1], ("no_such_tool", {})], "I could not do it.")
    if kind == "malformed":
        return _script(kind, [_malformed(right[0]), *right[1:]] if right else [], done)
    if gold.injection_task is None:
        return _script(kind, right, "Done, as the note in the data asked.")
    injection_task = found.get_injection_task_by_id(gold.injection_task)
    return _script(kind, [*right, *_truth(injection_task, env)], done)


def _truth(task: Any, env: Any) -> Calls:
    calls = task.ground_truth(env.model_copy(deep=True))
    return [(call.function, dict(call.args)) for call in calls]


def _malformed(call: tuple[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    function, args = call
    return function, {key: {"not": ["a", "value"]} for key in args} or {"unexpected": 1}


def _script(kind: str, calls: Calls, output: str) -> Script:
    """Calls in answers of one, or of a few when AgentDojo's 15-round loop would cut them."""
    size = max(1, math.ceil(len(calls) / 15))
    answers = [calls[i : i + size] for i in range(0, len(calls), size)]
    return Script(kind, answers, output)


def replies(played: Script) -> Iterator[Reply]:
    """The answers the proxy would return for the script."""
    for answer in played.answers:
        yield Reply(tool_calls=[ToolCall(f, json.dumps(args)) for f, args in answer])
    yield Reply(content=played.output)


def prediction(played: Script) -> str:
    """The agentdojo runner's final output after the script's answers."""
    calls = [Call(function=f, args=args) for answer in played.answers for f, args in answer]
    return Prediction(calls=calls, output=played.output).model_dump_json()


def official(sample: Sample, played: Script) -> tuple[bool, bool | None]:
    """(utility, security or None without an injection) by AgentDojo's own pipeline elements
    replaying the script and its TaskSuite.run_task_with_pipeline."""
    gold = Gold.model_validate(sample.metadata)
    found = suite(gold.suite)
    llm = _scripted_llm(played)
    pipeline = AgentPipeline(
        [
            SystemMessage(load_system_message(None)),
            InitQuery(),
            llm,
            ToolsExecutionLoop([ToolsExecutor(), llm]),
        ]
    )
    injection_task = (
        found.get_injection_task_by_id(gold.injection_task) if gold.injection_task else None
    )
    utility, security = found.run_task_with_pipeline(
        pipeline, found.get_user_task_by_id(gold.user_task), injection_task, gold.injections
    )
    return utility, security if injection_task is not None else None


def _scripted_llm(played: Script) -> Any:
    """An AgentDojo pipeline element answering with the script, one answer per query."""
    answers = [
        ChatAssistantMessage(
            role="assistant",
            content=None,
            tool_calls=[
                FunctionCall(function=f, args=copy.deepcopy(args), id=f"call_{n}_{i}")
                for i, (f, args) in enumerate(calls)
            ],
        )
        for n, calls in enumerate(played.answers)
    ]
    final = [text_content_block_from_string(played.output)]
    answers.append(ChatAssistantMessage(role="assistant", content=final, tool_calls=None))

    return _ScriptedLLM(answers)


class _ScriptedLLM(BasePipelineElement):
    """Answers each query with the script's next answer."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers

    def query(  # type: ignore[override]
        self, query: str, runtime: Any, env: Any, messages: Any = (), extra_args: Any = None
    ) -> tuple[str, Any, Any, list[Any], dict[str, Any]]:
        return query, runtime, env, [*messages, self.answers.pop(0)], extra_args or {}
