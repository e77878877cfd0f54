"""Records an Agents SDK run into a Trajectory as it goes: timed model calls, messages, tool calls.

The record is kept live, not read from the result at the end, so an attempt that stops
anywhere (max turns, an upstream error, a timeout, a crash) keeps everything up to there.
Each model call names the worker that answered it, from the proxy's response header.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import httpx2
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

# The proxy's header naming the worker that answered (proxy/upstream.py); agents may not
# import the proxy, a unit of the same layer.
WORKER_HEADER = "X-Agent-Eval-Worker"


class AttemptRecorder(RunHooks[Any]):
    """Keeps a trajectory's messages, model calls and tool calls up to date during a run."""

    def __init__(self, trajectory: Trajectory) -> None:
        self.trajectory = trajectory
        self.worker: str | None = None
        """The worker named by the latest answer to the model call in progress, if any."""
        self._started = 0.0
        self._pending: dict[str, ToolCallRecord] = {}

    @contextmanager
    def listening(self) -> Iterator[None]:
        """While inside, clients that `follow_workers` tell this recorder who answered."""
        token = _LISTENING.set(self)
        try:
            yield
        finally:
            _LISTENING.reset(token)

    async def on_llm_start(
        self,
        context: RunContextWrapper[Any],
        agent: Agent[Any],
        system_prompt: str | None,
        input_items: list[TResponseInputItem],
    ) -> None:
        # What the model is sent is the whole conversation so far, tool results included.
        self.trajectory.messages = [as_message(item) for item in input_items]
        self.worker = None
        self._started = time.monotonic()

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
    ) -> None:
        usage = response.usage
        latency = time.monotonic() - self._started
        self.trajectory.model_calls.append(
            ModelCallRecord(latency, usage.input_tokens, usage.output_tokens, self.worker)
        )
        self.worker = None  # what fails after this call is no answer of this worker's
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


# The recorder of the run this task (or its parent) plays. Concurrent attempts share one HTTP
# client, so its response hook finds the attempt an answer belongs to here.
_LISTENING: ContextVar[AttemptRecorder | None] = ContextVar("agent_eval_listening", default=None)


def follow_workers(client: openai.AsyncOpenAI) -> None:
    """Have `client`'s answers name their worker to the recorder that is `listening()`."""
    hooks = client._client.event_hooks["response"]  # shared by every `with_options` copy
    if _note_worker not in hooks:
        hooks.append(_note_worker)


async def _note_worker(response: httpx2.Response) -> None:
    # Runs once the answer's head arrived, before its body: streamed answers are named too.
    recorder = _LISTENING.get()
    if recorder is not None:
        recorder.worker = response.headers.get(WORKER_HEADER)


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
        worker = exc.response.headers.get(WORKER_HEADER)
        return TrajectoryError(_status_kind(exc), str(exc), worker=worker)
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
