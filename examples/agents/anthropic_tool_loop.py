"""The anthropic SDK's tool loop with a calculator, run as agent-eval's `command` agent.

Reads the sample (JSON with a `question`) from $AGENT_EVAL_SAMPLE_FILE or stdin, talks to
the Messages API behind $ANTHROPIC_BASE_URL, and prints its final answer as the last line
of stdout. The calculator parses arithmetic itself: model output is never eval'd.
"""

from __future__ import annotations

import ast
import json
import operator
import os
import sys
from collections.abc import Callable
from typing import Any

import anthropic

MAX_TURNS = 10
CALCULATOR = {
    "name": "calculator",
    "description": "Evaluate an arithmetic expression with + - * / ** and parentheses.",
    "input_schema": {
        "type": "object",
        "properties": {"expression": {"type": "string", "description": "e.g. (16 * 3) + 2"}},
        "required": ["expression"],
    },
}
OPERATORS: dict[type[ast.AST], Callable[..., float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def calculate(expression: str) -> float:
    """The value of an arithmetic expression. Raises: ValueError on anything else."""
    return _value(ast.parse(expression, mode="eval").body)


def _value(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        if isinstance(node.op, ast.Pow) and abs(_value(node.right)) > 100:
            raise ValueError("exponent too large")
        return OPERATORS[type(node.op)](_value(node.left), _value(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in OPERATORS:
        return OPERATORS[type(node.op)](_value(node.operand))
    raise ValueError(f"not arithmetic: {ast.dump(node)[:60]}")


def tool_result(block: Any) -> dict[str, Any]:
    """The tool_result answering one tool_use block; a bad expression is an error result."""
    try:
        value = calculate(str(block.input["expression"]))
    except (KeyError, ValueError, SyntaxError, ZeroDivisionError, OverflowError) as exc:
        return {
            "type": "tool_result",
            "tool_use_id": block.id,
            "content": str(exc),
            "is_error": True,
        }
    text = str(int(value)) if float(value).is_integer() else str(value)
    return {"type": "tool_result", "tool_use_id": block.id, "content": text}


def read_sample() -> dict[str, object]:
    """The sample: the file agent-eval names, or else stdin."""
    path = os.environ.get("AGENT_EVAL_SAMPLE_FILE")
    if path:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    return json.load(sys.stdin)


def solve(client: anthropic.Anthropic, question: str) -> str:
    """Call the model, run the tools it asks for, until it ends its turn; its last text."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    for _ in range(MAX_TURNS):
        response = client.messages.create(
            model=os.environ["AGENT_EVAL_MODEL"],
            max_tokens=1024,
            tools=[CALCULATOR],
            messages=messages,
        )
        messages.append({"role": "assistant", "content": response.content})
        if response.stop_reason != "tool_use":
            return "".join(block.text for block in response.content if block.type == "text")
        results = [tool_result(block) for block in response.content if block.type == "tool_use"]
        messages.append({"role": "user", "content": results})
    raise SystemExit(f"no final answer after {MAX_TURNS} turns")


def main() -> None:
    # Anthropic() reads ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY.
    answer = solve(anthropic.Anthropic(), str(read_sample()["question"]))
    print(answer.strip())


if __name__ == "__main__":
    main()
