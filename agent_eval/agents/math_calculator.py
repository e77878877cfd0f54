"""math_calculator: an Agents SDK agent that solves word problems with calculator tools."""

from __future__ import annotations

from typing import Any

from agent_eval.agents.base import RunContext
from agent_eval.agents.calculator import calculator_tools
from agent_eval.agents.sdk import Api, ToolUse, play, sdk_agent
from agent_eval.agents.trajectory import Trajectory

INSTRUCTIONS = (
    "You solve math word problems. Use the calculator tools (add, subtract, multiply, divide) "
    "for every arithmetic step instead of computing in your head. When you have the result, "
    "reply with the final answer as a number on the last line, like: Answer: 42"
)


class MathCalculatorAgent:
    """Chat Completions by default (`api="responses"` for the Responses API); tracing stays off."""

    def __init__(
        self, max_turns: int = 8, api: Api = "chat_completions", tool_use: ToolUse = "run_llm_again"
    ) -> None:
        """`tool_use="stop_on_first_tool"`: the first tool's result is the answer, for
        problems one calculator call settles (a small model rarely stops calling)."""
        self.max_turns = max_turns
        self.api = api
        self.tool_use = tool_use

    async def run(self, sample: Any, ctx: RunContext) -> Trajectory:
        tools = calculator_tools()
        agent = sdk_agent("math_calculator", INSTRUCTIONS, tools, ctx, self.api, self.tool_use)
        trajectory = ctx.trajectory
        result = await play(agent, _input(sample), self.max_turns, trajectory)
        if result is not None:
            trajectory.final_output = str(result.final_output)
        return trajectory


def _input(sample: Any) -> str | list[Any]:
    """The question, or a sample's own chat messages when it has them."""
    messages = getattr(sample, "messages", None)
    return list(messages) if messages else str(sample.question)
