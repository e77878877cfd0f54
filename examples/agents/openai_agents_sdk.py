"""An OpenAI Agents SDK agent with one function tool, run as agent-eval's `command` agent.

Reads the sample (JSON with a `question`) from $AGENT_EVAL_SAMPLE_FILE or stdin and prints
its final answer as the last line of stdout. It speaks Chat Completions to the model behind
$OPENAI_BASE_URL (the SDK's default is the Responses API) with tracing off, which would
otherwise post to api.openai.com.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from openai import AsyncOpenAI


@function_tool
def multiply(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


def read_sample() -> dict[str, object]:
    """The sample: the file agent-eval names, or else stdin."""
    path = os.environ.get("AGENT_EVAL_SAMPLE_FILE")
    if path:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    return json.load(sys.stdin)


async def main() -> None:
    question = str(read_sample()["question"])
    # AsyncOpenAI reads OPENAI_BASE_URL and OPENAI_API_KEY.
    async with AsyncOpenAI() as client:
        model = OpenAIChatCompletionsModel(os.environ["AGENT_EVAL_MODEL"], client)
        agent = Agent(
            name="calculator",
            instructions="Use the multiply tool, then answer with the number alone.",
            tools=[multiply],
            model=model,
        )
        result = await Runner.run(agent, question, run_config=RunConfig(tracing_disabled=True))
    print(result.final_output)


if __name__ == "__main__":
    asyncio.run(main())
