"""One Chat Completions call through the proxy, recorded as the trajectory keeps model calls:
for runners that hold the conversation themselves (the benchmarks' players)."""

from __future__ import annotations

import time
from typing import Any

from openai.types.chat import ChatCompletionMessage

from agent_eval.agents.base import RunContext
from agent_eval.agents.trajectory import ModelCallRecord, ModelSetup, ToolDefinition
from agent_eval.usage import reported_tokens
from agent_eval.wire import RETRIES_HEADER, WORKER_HEADER


async def ask(
    ctx: RunContext,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    tool_choice: str | None = None,
) -> ChatCompletionMessage:
    """The model's answer to `messages` (with `tools` and `tool_choice` when there are tools);
    the call goes into `ctx.trajectory` with the setup it was given.

    Raises: openai.APIError when the proxy answers with an error or cannot be reached.
    """
    setup = ctx.trajectory.setup_index(setup_of(messages, tools))
    sampling = ctx.sampling
    options: dict[str, Any] = {"tools": tools} if tools else {}
    if tools and tool_choice is not None:
        options["tool_choice"] = tool_choice
    started = time.monotonic()
    raw = await ctx.client.chat.completions.with_raw_response.create(
        model=ctx.model, messages=messages, temperature=sampling.temperature,  # type: ignore[arg-type]
        top_p=sampling.top_p, max_tokens=sampling.max_tokens, seed=ctx.seed, **options,
    )  # fmt: skip
    completion = raw.parse()
    retries = raw.headers.get(RETRIES_HEADER, "")
    usage = completion.usage
    reported = reported_tokens(usage.model_dump()) if usage is not None else None
    record = ModelCallRecord(
        time.monotonic() - started,
        usage.prompt_tokens if usage is not None else 0,
        usage.completion_tokens if usage is not None else 0,
        raw.headers.get(WORKER_HEADER),
        retries=int(retries) if retries.isdigit() else 0,
        cached_tokens=reported[1] if reported else None,
        setup=setup,
    )
    ctx.trajectory.model_calls.append(record)
    return completion.choices[0].message


def setup_of(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelSetup:
    """The system prompt (the first message's, when it is one) and the tools a call was given."""
    first = messages[0] if messages else {}
    system = str(first.get("content")) if first.get("role") == "system" else None
    return ModelSetup(system, [_definition(tool["function"]) for tool in tools])


def _definition(function: dict[str, Any]) -> ToolDefinition:
    return ToolDefinition(
        function["name"], function.get("description", ""), function.get("parameters")
    )
