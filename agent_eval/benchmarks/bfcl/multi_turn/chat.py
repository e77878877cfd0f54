"""One Chat Completions call of a play through the proxy, recorded as the trajectory's."""

from __future__ import annotations

import time
from typing import Any

from openai.types.chat import ChatCompletionMessage

from agent_eval.agents.base import RunContext
from agent_eval.agents.trajectory import ModelCallRecord, ModelSetup, ToolDefinition, Trajectory
from agent_eval.usage import reported_tokens
from agent_eval.wire import RETRIES_HEADER, WORKER_HEADER

Json = dict[str, Any]


async def ask(
    ctx: RunContext, messages: list[Json], tools: list[Json], setup: int
) -> ChatCompletionMessage:
    """The model's answer to the conversation so far; the call goes into `ctx.trajectory`."""
    options: Json = {"tools": tools} if tools else {}
    started = time.monotonic()
    raw = await ctx.client.chat.completions.with_raw_response.create(
        model=ctx.model,
        messages=messages,  # type: ignore[arg-type]
        temperature=ctx.sampling.temperature,
        top_p=ctx.sampling.top_p,
        max_tokens=ctx.sampling.max_tokens,
        seed=ctx.seed,
        **options,
    )
    completion = raw.parse()
    usage = completion.usage
    cached = reported_tokens(usage.model_dump()) if usage is not None else None
    retries = raw.headers.get(RETRIES_HEADER, "")
    ctx.trajectory.model_calls.append(
        ModelCallRecord(
            time.monotonic() - started,
            usage.prompt_tokens if usage is not None else 0,
            usage.completion_tokens if usage is not None else 0,
            raw.headers.get(WORKER_HEADER),
            retries=int(retries) if retries.isdigit() else 0,
            cached_tokens=cached[1] if cached else None,
            setup=setup,
        )
    )
    return completion.choices[0].message


def setup_of(trajectory: Trajectory, system_prompt: str | None, tools: list[Json]) -> int:
    """The index in `trajectory.setups` of a call given this system prompt and these tools."""
    definitions = [
        ToolDefinition(
            t["function"]["name"],
            t["function"].get("description", ""),
            t["function"].get("parameters"),
        )
        for t in tools
    ]
    return trajectory.setup_index(ModelSetup(system_prompt, definitions))
