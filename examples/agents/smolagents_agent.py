"""A smolagents ToolCallingAgent with one tool, run as agent-eval's `command` agent.

Reads the sample (JSON with a `question`) from $AGENT_EVAL_SAMPLE_FILE or stdin, talks to
the model behind $OPENAI_BASE_URL, and prints its final answer as the last line of stdout.
"""

from __future__ import annotations

import json
import os
import sys

from smolagents import LogLevel, OpenAIServerModel, ToolCallingAgent, tool


@tool
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


def main() -> None:
    model = OpenAIServerModel(
        model_id=os.environ["AGENT_EVAL_MODEL"],
        api_base=os.environ["OPENAI_BASE_URL"],
        api_key=os.environ["OPENAI_API_KEY"],
    )
    # Quiet: stdout carries the answer, and smolagents logs every step there otherwise.
    agent = ToolCallingAgent(
        tools=[multiply], model=model, max_steps=6, verbosity_level=LogLevel.OFF
    )
    answer = agent.run(str(read_sample()["question"]))
    print(answer)


if __name__ == "__main__":
    main()
