"""Turns an Agents SDK run into a Trajectory: timed model calls, paired tool calls, error kinds."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import openai
from agents import Agent, RunContextWrapper, RunHooks
from agents.exceptions import MaxTurnsExceeded, ModelBehaviorError
from agents.items import ModelResponse, RunItem, ToolCallItem, ToolCallOutputItem

from agent_eval.agents.trajectory import ModelCallRecord, ToolCallRecord, TrajectoryError


class ModelCallTimer(RunHooks[Any]):
    """Times every model call of a run and keeps its token usage."""

    def __init__(self, calls: list[ModelCallRecord]) -> None:
        self.calls = calls
        self._started = 0.0

    async def on_llm_start(
        self, context: RunContextWrapper[Any], agent: Agent[Any], *_: Any
    ) -> None:
        self._started = time.monotonic()

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
    ) -> None:
        usage = response.usage
        self.calls.append(
            ModelCallRecord(
                time.monotonic() - self._started, usage.input_tokens, usage.output_tokens
            )
        )


def tool_calls(items: list[RunItem]) -> list[ToolCallRecord]:
    """Each tool call with its arguments and the result the model saw, paired by call id."""
    outputs = {
        _call_id(item.raw_item): str(item.output)
        for item in items
        if isinstance(item, ToolCallOutputItem)
    }
    return [
        ToolCallRecord(
            item.raw_item.name, item.raw_item.arguments, outputs.get(item.raw_item.call_id, "")
        )
        for item in items
        if isinstance(item, ToolCallItem) and hasattr(item.raw_item, "arguments")
    ]


def classify(exc: BaseException) -> TrajectoryError:
    """An error kind for the results: what went wrong, in a word the metrics can count."""
    if isinstance(exc, MaxTurnsExceeded):
        return TrajectoryError("max_turns", str(exc))
    if isinstance(exc, ModelBehaviorError):
        return TrajectoryError("malformed_tool_call", str(exc))
    if isinstance(exc, asyncio.TimeoutError | openai.APITimeoutError):
        return TrajectoryError("timeout", str(exc) or "the attempt timed out")
    if isinstance(exc, openai.APIError):
        return TrajectoryError("upstream", str(exc))
    return TrajectoryError("runner_error", f"{type(exc).__name__}: {exc}")


def partial_items(exc: BaseException) -> list[RunItem]:
    """The items a failed run got to, where the SDK kept them."""
    run_data = getattr(exc, "run_data", None)
    return list(getattr(run_data, "new_items", []) or [])


def _call_id(raw: Any) -> str | None:
    return raw.get("call_id") if isinstance(raw, dict) else getattr(raw, "call_id", None)
