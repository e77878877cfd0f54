"""math_calculator: an Agents SDK agent that solves word problems with calculator tools."""

from __future__ import annotations

from typing import Any, Literal

import openai
from agents import (
    Agent,
    AgentsException,
    ModelSettings,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
)

from agent_eval.agents.base import RunContext
from agent_eval.agents.calculator import calculator_tools
from agent_eval.agents.recording import ModelCallTimer, classify, partial_items, tool_calls
from agent_eval.agents.trajectory import Trajectory

INSTRUCTIONS = (
    "You solve math word problems. Use the calculator tools (add, subtract, multiply, divide) "
    "for every arithmetic step instead of computing in your head. When you have the result, "
    "reply with the final answer as a number on the last line, like: Answer: 42"
)


class MathCalculatorAgent:
    """Chat Completions by default (`api="responses"` for the Responses API); tracing stays off."""

    def __init__(
        self, max_turns: int = 8, api: Literal["chat_completions", "responses"] = "chat_completions"
    ) -> None:
        self.max_turns = max_turns
        self.api = api

    async def run(self, sample: Any, ctx: RunContext) -> Trajectory:
        agent = Agent(
            name="math_calculator",
            instructions=INSTRUCTIONS,
            tools=calculator_tools(),
            model=self._model(ctx),
            model_settings=ModelSettings(
                temperature=ctx.sampling.temperature,
                top_p=ctx.sampling.top_p,
                max_tokens=ctx.sampling.max_tokens,
                extra_body={"seed": ctx.seed},
            ),
        )
        timer = ModelCallTimer()
        trajectory = Trajectory(model_calls=timer.calls)
        try:
            result = await Runner.run(
                agent, _input(sample), max_turns=self.max_turns, hooks=timer,
                run_config=RunConfig(tracing_disabled=True),
            )  # fmt: skip
        except (AgentsException, openai.APIError, TimeoutError) as exc:
            trajectory.error = classify(exc)
            trajectory.tool_calls = tool_calls(partial_items(exc))
            return trajectory
        trajectory.final_output = str(result.final_output)
        trajectory.tool_calls = tool_calls(result.new_items)
        trajectory.messages = [dict(item) for item in result.to_input_list()]
        return trajectory

    def _model(self, ctx: RunContext) -> OpenAIChatCompletionsModel | OpenAIResponsesModel:
        if self.api == "responses":
            return OpenAIResponsesModel(model=ctx.model, openai_client=ctx.client)
        return OpenAIChatCompletionsModel(model=ctx.model, openai_client=ctx.client)


def _input(sample: Any) -> str | list[Any]:
    """The question, or a sample's own chat messages when it has them."""
    messages = getattr(sample, "messages", None)
    return list(messages) if messages else str(sample.question)
