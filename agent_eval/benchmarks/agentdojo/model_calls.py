"""One Chat Completions call through the proxy, recorded into the trajectory: tokens, latency,
the worker that answered and its retries, the system prompt and tools it was given."""

from __future__ import annotations

import time
from typing import Any

from openai import omit
from openai.types.chat import ChatCompletionMessage

from agent_eval.agents.base import RunContext
from agent_eval.agents.trajectory import ModelCallRecord, ModelSetup, ToolDefinition
from agent_eval.usage import reported_tokens
from agent_eval.wire import RETRIES_HEADER, WORKER_HEADER


async def ask(
    ctx: RunContext,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    tool_choice: str = "auto",
) -> ChatCompletionMessage:
    """The model's answer to the conversation, offered `tools`; the call is recorded."""
    started = time.monotonic()
    sampling = ctx.sampling
    raw = await ctx.client.chat.completions.with_raw_response.create(
        model=ctx.model,
        messages=messages,  # type: ignore[arg-type]
        tools=tools or omit,  # type: ignore[arg-type]
        tool_choice=tool_choice if tools else omit,  # type: ignore[arg-type]
        temperature=sampling.temperature,
        top_p=sampling.top_p,
        max_tokens=sampling.max_tokens,
        seed=ctx.seed,
    )
    completion = raw.parse()
    record = _record(ctx, raw.headers, completion, started, messages, tools)
    ctx.trajectory.model_calls.append(record)
    return completion.choices[0].message


def _record(
    ctx: RunContext,
    headers: Any,
    completion: Any,
    started: float,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
) -> ModelCallRecord:
    usage = completion.usage.model_dump() if completion.usage is not None else None
    prompt, cached = reported_tokens(usage) or (0, None)
    told = headers.get(RETRIES_HEADER, "")
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else None
    setup = ModelSetup(system, [_definition(tool) for tool in tools])
    return ModelCallRecord(
        latency_s=time.monotonic() - started,
        prompt_tokens=prompt,
        completion_tokens=(usage or {}).get("completion_tokens") or 0,
        worker=headers.get(WORKER_HEADER),
        retries=int(told) if told.isdigit() else 0,
        cached_tokens=cached,
        setup=ctx.trajectory.setup_index(setup),
    )


def _definition(tool: dict[str, Any]) -> ToolDefinition:
    function = tool["function"]
    description = function.get("description") or ""
    return ToolDefinition(function["name"], description, function["parameters"])
