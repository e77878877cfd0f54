"""Calculator tools: plain arithmetic, never eval; mistakes go back to the model as text."""

from __future__ import annotations

import functools

from agents import FunctionTool, function_tool


def add(a: float, b: float) -> float:
    """Add two numbers: a + b."""
    return a + b


def subtract(a: float, b: float) -> float:
    """Subtract the second number from the first: a - b."""
    return a - b


def multiply(a: float, b: float) -> float:
    """Multiply two numbers: a * b."""
    return a * b


def divide(a: float, b: float) -> float | str:
    """Divide the first number by the second: a / b."""
    if b == 0:
        return "error: division by zero; the divisor b must not be 0"
    return a / b


def calculator_tools() -> list[FunctionTool]:
    """The four tools, described to the model from the functions' signatures and docstrings."""
    return list(_built_tools())


@functools.cache
def _built_tools() -> tuple[FunctionTool, ...]:
    # Building a tool derives a pydantic model from its signature: ~30% of an attempt's CPU
    # when done per attempt. The tools hold no state, so every agent can share them.
    return tuple(function_tool(tool) for tool in (add, subtract, multiply, divide))
