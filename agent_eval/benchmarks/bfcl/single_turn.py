"""One single-turn BFCL entry played through the proxy: one model call, no tool executed (BFCL
executes none in these categories); the answer kept as BFCL's OpenAI handler keeps it."""

from __future__ import annotations

import json
from typing import Any, Literal

import openai
from openai.types.chat import ChatCompletionMessage

from agent_eval.agents.base import RunContext
from agent_eval.agents.call_errors import classify_call_error
from agent_eval.agents.chat_call import ask
from agent_eval.agents.trajectory import ToolCallRecord, Trajectory
from agent_eval.benchmarks.bfcl.prompts import openai_tools, prompt_messages
from agent_eval.data.records import Sample

Mode = Literal["fc", "prompt"]
"""fc: the functions as tools, the model's tool calls; prompt: the functions in the system
prompt, calls written in the answer's text (for models without native tool calling)."""

ModelResult = list[dict[str, str]] | str | None
"""The model's answer as BFCL records it: one {name: arguments JSON} per tool call, or the text."""


async def play_single_turn(sample: Sample, ctx: RunContext, mode: Mode) -> Trajectory:
    """Ask once; `final_output` is the prediction document `score_bfcl` reads."""
    category = sample.metadata["bfcl_category"]
    messages, tools = _request(sample, category, mode)
    trajectory = ctx.trajectory
    trajectory.messages = list(messages)
    try:
        message = await ask(ctx, messages, tools)
    except (openai.APIError, TimeoutError) as exc:
        trajectory.error = classify_call_error(exc)
        return trajectory
    trajectory.messages.append(message.model_dump(exclude_none=True))
    result = model_result(message, mode)
    if isinstance(result, list):
        trajectory.tool_calls = [_call_record(call) for call in result]
    trajectory.final_output = prediction(category, mode, result)
    return trajectory


def model_result(message: ChatCompletionMessage, mode: Mode) -> ModelResult:
    """What BFCL's OpenAI handler keeps of an answer: its tool calls in fc mode when it made
    any (an empty list counts), else its text."""
    calls = message.tool_calls
    if mode == "fc" and calls is not None:
        return [
            {call.function.name: call.function.arguments}
            for call in calls
            if call.type == "function"
        ]
    return message.content


def prediction(category: str, mode: Mode, result: ModelResult) -> str:
    """The document `score_bfcl` scores: the category, the mode, and the answer as kept."""
    return json.dumps({"bfcl_category": category, "mode": mode, "result": result})


def _request(
    sample: Sample, category: str, mode: Mode
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The messages and tools to send, as BFCL's OpenAI handlers build them in each mode."""
    functions = sample.metadata["functions"]
    messages = list(sample.messages or [{"role": "user", "content": sample.question}])
    if mode == "prompt":
        return prompt_messages(messages, functions, category), []
    return messages, openai_tools(functions, category)


def _call_record(call: dict[str, str]) -> ToolCallRecord:
    ((name, arguments),) = call.items()
    return ToolCallRecord(name, arguments, "")
