"""Records an Agents SDK run into a Trajectory as it goes: timed model calls, messages, tool calls.

The record is kept live, not read from the result at the end, so an attempt that stops
anywhere (max turns, an upstream error, a timeout, a crash) keeps everything up to there.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import openai
from agents import Agent, FunctionTool, ItemHelpers, RunContextWrapper, RunHooks
from agents.exceptions import MaxTurnsExceeded, ModelBehaviorError
from agents.items import ModelResponse, TResponseInputItem
from agents.tool_context import ToolContext
from openai.types.responses import ResponseFunctionToolCall

from agent_eval.agents.trajectory import (
    ModelCallRecord,
    ToolCallRecord,
    Trajectory,
    TrajectoryError,
)


class AttemptRecorder(RunHooks[Any]):
    """Keeps a trajectory's messages, model calls and tool calls up to date during a run."""

    def __init__(self, trajectory: Trajectory) -> None:
        self.trajectory = trajectory
        self._started = 0.0
        self._pending: dict[str, ToolCallRecord] = {}

    async def on_llm_start(
        self,
        context: RunContextWrapper[Any],
        agent: Agent[Any],
        system_prompt: str | None,
        input_items: list[TResponseInputItem],
    ) -> None:
        # What the model is sent is the whole conversation so far, tool results included.
        self.trajectory.messages = [as_message(item) for item in input_items]
        self._started = time.monotonic()

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
    ) -> None:
        usage = response.usage
        latency = time.monotonic() - self._started
        self.trajectory.model_calls.append(
            ModelCallRecord(latency, usage.input_tokens, usage.output_tokens)
        )
        self.trajectory.messages += [as_message(item) for item in response.to_input_items()]

    async def on_tool_start(
        self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Any
    ) -> None:
        if isinstance(context, ToolContext):
            record = ToolCallRecord(context.tool_name, context.tool_arguments, "")
            self._pending[context.tool_call_id] = record
            self.trajectory.tool_calls.append(record)

    async def on_tool_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Any, result: Any
    ) -> None:
        if not (isinstance(context, ToolContext) and isinstance(tool, FunctionTool)):
            return
        record = self._pending.pop(context.tool_call_id, None)
        if record is not None:
            record.result = str(result)
        self.trajectory.messages.append(as_message(_output_item(context, result)))


def _output_item(context: ToolContext[Any], result: Any) -> TResponseInputItem:
    """The tool result as the SDK hands it to the model, built by the SDK's own helper."""
    call = ResponseFunctionToolCall(
        type="function_call",
        call_id=context.tool_call_id,
        name=context.tool_name,
        arguments=context.tool_arguments,
    )
    return ItemHelpers.tool_call_output_item(call, result)


def as_message(item: Any) -> dict[str, Any]:
    """An input item as a plain JSON-ready dict."""
    return item.model_dump(exclude_unset=True) if hasattr(item, "model_dump") else dict(item)


def classify(exc: BaseException) -> TrajectoryError:
    """An error kind for the results: what went wrong, in a word the metrics can count."""
    if isinstance(exc, MaxTurnsExceeded):
        return TrajectoryError("max_turns", str(exc))
    if isinstance(exc, ModelBehaviorError):
        return TrajectoryError("malformed_tool_call", str(exc))
    if isinstance(exc, asyncio.TimeoutError | openai.APITimeoutError):
        return TrajectoryError("timeout", str(exc) or "the attempt timed out")
    if isinstance(exc, openai.APIConnectionError):
        return TrajectoryError("connection_error", str(exc))
    if isinstance(exc, openai.APIStatusError):
        return TrajectoryError(_status_kind(exc), str(exc))
    return TrajectoryError("runner_error", f"{type(exc).__name__}: {exc}")


# How llama.cpp, vLLM and SGLang word a request longer than the model's context.
_CONTEXT_OVERFLOW = re.compile(r"context (length|window)|maximum context|exceeds? .*context", re.I)


def _status_kind(exc: openai.APIStatusError) -> str:
    """The error kind of an HTTP error answer, from its status and the proxy's error code."""
    if exc.code == "no_healthy_worker":
        return "no_healthy_worker"
    if exc.status_code >= 500 or exc.status_code == 429:
        return "upstream_error"
    if exc.status_code == 400 and _CONTEXT_OVERFLOW.search(str(exc)):
        return "context_overflow"
    return "request_rejected"
