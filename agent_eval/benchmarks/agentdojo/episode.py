"""A task's environment as AgentDojo sets it up, and tool calls run in it by AgentDojo's own
ToolsExecutor; the runner plays in one, the checker replays an attempt's calls in a fresh one."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentdojo.agent_pipeline.tool_execution import ToolsExecutor
from agentdojo.functions_runtime import FunctionCall, FunctionsRuntime

from agent_eval.benchmarks.agentdojo.suites import environment, suite
from agent_eval.benchmarks.agentdojo.wire import Gold


@dataclass(frozen=True)
class Result:
    """A tool call's outcome as the model is told it: the error, else the formatted result."""

    text: str
    error: str | None


@dataclass
class Episode:
    """The environment before the task (`pre`), as it is now (`env`), and the calls so far."""

    pre: Any
    env: Any
    runtime: Any
    trace: list[Any] = field(default_factory=list)

    @classmethod
    def start(cls, gold: Gold) -> Episode:
        """The environment with the gold's injections, set up for its user task (CPU: parses
        the suite's environment, up to 0.3 s in workspace)."""
        found = suite(gold.suite)
        user_task = found.get_user_task_by_id(gold.user_task)
        env = user_task.init_environment(environment(gold.suite, gold.injections))
        return cls(env.model_copy(deep=True), env, FunctionsRuntime(found.tools))

    def keep_tools(self, names: Sequence[str]) -> None:
        """Leave only the tools named, as AgentDojo's tool filter does."""
        functions = self.runtime.functions
        self.runtime.update_functions({n: f for n, f in functions.items() if n in names})

    def run(
        self,
        calls: Sequence[tuple[str, dict[str, Any] | None, str | None]],
        format_result: Callable[[Any], str],
    ) -> list[Result]:
        """Run (function, args, call id) in order as AgentDojo runs one answer's calls; args
        None (not a JSON object) are traced but not run."""
        traced = self.note(calls)
        runnable = [c for c, (_, args, _) in zip(traced, calls, strict=True) if args is not None]
        answer = {"role": "assistant", "content": None, "tool_calls": runnable}
        executor = ToolsExecutor(format_result)
        done = executor.query("", self.runtime, self.env, [answer])[3][1:]
        results = iter(Result(_text(m["content"]), m["error"]) for m in done)
        return [next(results) if args is not None else _not_json() for _, args, _ in calls]

    def note(self, calls: Sequence[tuple[str, dict[str, Any] | None, str | None]]) -> list[Any]:
        """Add calls to the trace without running them (an answer past the step limit)."""
        traced = [FunctionCall(function=f, args=dict(args or {}), id=i) for f, args, i in calls]
        self.trace += traced
        return traced


def _text(content: list[dict[str, Any]] | None) -> str:
    return "\n".join(block["content"] or "" for block in content or ())


def _not_json() -> Result:
    return Result("", "ValueError: the arguments are not a JSON object; send them as one")
