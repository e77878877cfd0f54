"""Records an Agents SDK run into a Trajectory as it goes: timed model calls with the system prompt
and tools each was given, messages, tool calls.

The record is kept live, not read from the result at the end, so an attempt that stops
anywhere (max turns, an upstream error, a timeout, a crash) keeps everything up to there.
Each model call names the worker that answered it and the retries it took, from the proxy's
response headers, the time to a streamed answer's first bytes, and the cached prompt tokens
the worker reported.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import httpx2
import openai
from agents import Agent, FunctionTool, ItemHelpers, RunContextWrapper, RunHooks, Tool
from agents.exceptions import MaxTurnsExceeded, ModelBehaviorError
from agents.items import ModelResponse, TResponseInputItem
from agents.tool_context import ToolContext
from openai.types.responses import ResponseFunctionToolCall

from agent_eval.agents.call_errors import classify_call_error
from agent_eval.agents.trajectory import (
    ModelCallRecord,
    ModelSetup,
    ToolCallRecord,
    ToolDefinition,
    Trajectory,
    TrajectoryError,
)
from agent_eval.shims.openai_hooks import add_response_hook
from agent_eval.usage import reported_tokens
from agent_eval.wire import RETRIES_HEADER, WORKER_HEADER


@dataclass
class _CallNotes:
    """What the answers to the model call in progress told: retries, a stream's first bytes."""

    answers: int = 0
    retries: int = 0
    first_bytes: float | None = None

    def heard(self, response: httpx2.Response) -> None:
        # An answer after the first is the client sending the request again (a 5xx, a 429).
        told = response.headers.get(RETRIES_HEADER, "")
        self.retries += (int(told) if told.isdigit() else 0) + (self.answers > 0)
        self.answers += 1


class AttemptRecorder(RunHooks[Any]):
    """Keeps a trajectory's messages, model calls and tool calls up to date during a run."""

    def __init__(self, trajectory: Trajectory) -> None:
        self.trajectory = trajectory
        self.worker: str | None = None
        """The worker named by the latest answer to the model call in progress, if any."""
        self._started = 0.0
        self._setup: int | None = None
        self._notes = _CallNotes()
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
        # The tools as the SDK lists them for this call: the agent's, less those disabled now.
        tools = [tool_definition(tool) for tool in await agent.get_all_tools(context)]
        self._setup = self.trajectory.setup_index(ModelSetup(system_prompt, tools))
        self.worker = None
        self._notes = _CallNotes()
        self._started = time.monotonic()

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
    ) -> None:
        usage, notes = response.usage, self._notes
        latency = time.monotonic() - self._started
        ttft = None if notes.first_bytes is None else notes.first_bytes - self._started
        # The SDK fills in a 0 for cached tokens not reported; the raw usage tells them apart.
        reported = reported_tokens(response.raw_usage)
        self.trajectory.model_calls.append(
            ModelCallRecord(
                latency,
                usage.input_tokens,
                usage.output_tokens,
                self.worker,
                ttft_s=ttft,
                retries=notes.retries,
                cached_tokens=reported[1] if reported else None,
                setup=self._setup,
            )
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

    def answered(self, response: httpx2.Response) -> None:
        """Note an answer's head: its worker, its retries, and, when streamed, its first bytes."""
        self.worker = response.headers.get(WORKER_HEADER)
        self._notes.heard(response)
        streamed = response.headers.get("content-type", "").startswith("text/event-stream")
        if streamed and isinstance(response.stream, httpx2.AsyncByteStream):
            response.stream = _FirstBytes(response.stream, self._notes)


class _FirstBytes(httpx2.AsyncByteStream):
    """A streamed answer's body as it comes, noting when its first bytes arrive.

    SGLang and vLLM send a stream's first event with its first token, and the proxy sends
    nothing before the worker's first bytes: this is the time to first token.
    """

    def __init__(self, body: httpx2.AsyncByteStream, notes: _CallNotes) -> None:
        self._body = body
        self._notes = notes

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for part in self._body:
            if part and self._notes.first_bytes is None:
                self._notes.first_bytes = time.monotonic()
            yield part

    async def aclose(self) -> None:
        await self._body.aclose()


# The recorder of the run this task (or its parent) plays. Concurrent attempts share one HTTP
# client, so its response hook finds the attempt an answer belongs to here.
_LISTENING: ContextVar[AttemptRecorder | None] = ContextVar("agent_eval_listening", default=None)


def follow_workers(client: openai.AsyncOpenAI) -> None:
    """Have `client`'s answers tell the recorder that is `listening()` of themselves."""
    add_response_hook(client, _note_answer)


async def _note_answer(response: httpx2.Response) -> None:
    # Runs once the answer's head arrived, before its body: streamed answers are named too.
    recorder = _LISTENING.get()
    if recorder is not None:
        recorder.answered(response)


def _output_item(context: ToolContext[Any], result: Any) -> TResponseInputItem:
    """The tool result as the SDK hands it to the model, built by the SDK's own helper."""
    call = ResponseFunctionToolCall(
        type="function_call",
        call_id=context.tool_call_id,
        name=context.tool_name,
        arguments=context.tool_arguments,
    )
    return ItemHelpers.tool_call_output_item(call, result)


def tool_definition(tool: Tool) -> ToolDefinition:
    """A tool as the model is told of it; a hosted one (web search, ...) its host describes."""
    if isinstance(tool, FunctionTool):
        return ToolDefinition(tool.name, tool.description, tool.params_json_schema)
    return ToolDefinition(tool.name, getattr(tool, "description", None) or "", None)


def as_message(item: Any) -> dict[str, Any]:
    """An input item as a plain JSON-ready dict."""
    return item.model_dump(exclude_unset=True) if hasattr(item, "model_dump") else dict(item)


def classify(exc: BaseException) -> TrajectoryError:
    """An error kind for the results: the Agents SDK's own, else a model call's."""
    if isinstance(exc, MaxTurnsExceeded):
        return TrajectoryError("max_turns", str(exc))
    if isinstance(exc, ModelBehaviorError):
        return TrajectoryError("malformed_tool_call", str(exc))
    return classify_call_error(exc)
