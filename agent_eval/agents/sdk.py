"""The OpenAI Agents SDK set up alike for every runner: proxy client, sampling, no tracing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import openai
from agents import (
    Agent,
    AgentsException,
    ItemHelpers,
    ModelSettings,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    RunResult,
    Tool,
)

from agent_eval.agents.base import RunContext
from agent_eval.agents.recording import AttemptRecorder, as_message, classify, follow_workers
from agent_eval.agents.trajectory import Trajectory

Api = Literal["chat_completions", "responses"]
ToolUse = Literal["run_llm_again", "stop_on_first_tool"]
"""After a tool call: ask the model again (the default), or answer with the tool's result."""


def sdk_agent(
    name: str,
    instructions: str,
    tools: Sequence[Tool],
    ctx: RunContext,
    api: Api,
    tool_use: ToolUse = "run_llm_again",
) -> Agent[Any]:
    """An agent on the proxy's client; Chat Completions unless `api` says responses."""
    model_class = OpenAIResponsesModel if api == "responses" else OpenAIChatCompletionsModel
    follow_workers(ctx.client)
    settings = ModelSettings(
        temperature=ctx.sampling.temperature,
        top_p=ctx.sampling.top_p,
        max_tokens=ctx.sampling.max_tokens,
        extra_body={"seed": ctx.seed},
        # Streams end with their usage; the usage keeps whether cached tokens were reported.
        include_usage=True,
        preserve_raw_usage=True,
    )
    return Agent(
        name=name,
        instructions=instructions,
        tools=list(tools),
        model=model_class(model=ctx.model, openai_client=ctx.client),
        model_settings=settings,
        tool_use_behavior=tool_use,
    )


async def play(
    agent: Agent[Any], given: str | list[Any], max_turns: int, trajectory: Trajectory
) -> RunResult | None:
    """Run the agent once, recorded into `trajectory` as it goes; None (and the error) if it failed.

    Whatever stops the run, `trajectory` holds every message and call made up to there.
    """
    trajectory.messages = [as_message(item) for item in ItemHelpers.input_to_new_input_list(given)]
    recorder = AttemptRecorder(trajectory)
    try:
        with recorder.listening():
            result = await Runner.run(
                agent, given, max_turns=max_turns, hooks=recorder,
                run_config=RunConfig(tracing_disabled=True),
            )  # fmt: skip
    except (AgentsException, openai.APIError, TimeoutError) as exc:
        trajectory.error = classify(exc)
        # A call that broke after its answer began (a stream cut short) names that answer's worker.
        trajectory.error.worker = trajectory.error.worker or recorder.worker
        return None
    trajectory.messages = [as_message(item) for item in result.to_input_list()]
    return result
