"""agentdojo: plays an AgentDojo user task through the proxy as AgentDojo's OpenAI pipeline
does: its system prompt, the suite's tools, each call run in the task's (injected) environment
and its result formatted as AgentDojo formats it, until the model answers without calls or the
step limit; the final output is the calls and the final text, for the checker to replay."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import openai
from openai.types.chat import ChatCompletionMessage

from agent_eval.agents.base import RunContext
from agent_eval.agents.call_errors import classify_call_error
from agent_eval.agents.chat_call import ask
from agent_eval.agents.trajectory import ToolCallRecord, Trajectory
from agent_eval.benchmarks.agentdojo.defences import Defence, check_defence, defence
from agent_eval.benchmarks.agentdojo.episode import Episode
from agent_eval.benchmarks.agentdojo.wire import Call, Gold, Prediction
from agent_eval.shims.agentdojo_tools import openai_tool

Message = dict[str, Any]


@dataclass
class _Play:
    """One attempt under way: the environment, the defence, what the model was given and did."""

    episode: Episode
    defence: Defence
    tools: list[dict[str, Any]]
    calls: list[Call] = field(default_factory=list)
    kept: list[str] | None = None

    @classmethod
    def start(cls, gold: Gold, name: str | None) -> _Play:
        episode = Episode.start(gold)
        return cls(episode, defence(name), _tools(episode))


class AgentDojoAgent:
    """`defence`: one of AgentDojo's prompt or tool-filter defences; `max_steps`: rounds of tool
    calls after the first answer (AgentDojo's tool loop runs 15)."""

    def __init__(self, defence: str | None = None, max_steps: int = 15) -> None:
        check_defence(defence)
        self.defence = defence
        self.max_steps = max_steps

    async def run(self, sample: Any, ctx: RunContext) -> Trajectory:
        trajectory = ctx.trajectory
        # Parsing a suite's environment is CPU work (up to 0.3 s): off the event loop.
        gold = Gold.model_validate(sample.metadata)
        play = await asyncio.to_thread(_Play.start, gold, self.defence)
        try:
            output = await self._play(play, str(sample.question), ctx)
        except (openai.APIError, TimeoutError) as exc:
            trajectory.error = classify_call_error(exc)
            return trajectory
        prediction = Prediction(
            calls=play.calls, output=output, defence=self.defence, tools=play.kept
        )
        trajectory.final_output = prediction.model_dump_json()
        return trajectory

    async def _play(self, play: _Play, prompt: str, ctx: RunContext) -> str:
        """The final text; every message and call is recorded as it happens."""
        messages = ctx.trajectory.messages
        messages += [_said("system", play.defence.system_prompt), _said("user", prompt)]
        if play.defence.tool_filter_prompt is not None:
            await _filter(play, ctx)
        answer = await _answer(play, ctx)
        for _ in range(self.max_steps):
            if not answer.tool_calls:
                return answer.content or ""
            await _run_calls(play, answer, ctx)
            if play.defence.repeats_prompt:
                messages.append(_said("user", prompt))
            answer = await _answer(play, ctx)
        # Past the limit the answer's calls are not run, but they are the model's: traced.
        play.calls += [Call(function=f, args=a, executed=False) for f, a, _, _ in _calls(answer)]
        return answer.content or ""


async def _answer(play: _Play, ctx: RunContext) -> ChatCompletionMessage:
    answer = await ask(ctx, ctx.trajectory.messages, play.tools, tool_choice="auto")
    ctx.trajectory.messages.append(answer.model_dump(exclude_none=True))
    return answer


async def _filter(play: _Play, ctx: RunContext) -> None:
    """AgentDojo's tool filter: the model names the tools the task needs; only those stay."""
    prompt = play.defence.tool_filter_prompt or ""
    ctx.trajectory.messages.append(_said("user", prompt))
    answer = await ask(ctx, ctx.trajectory.messages, play.tools, tool_choice="none")
    ctx.trajectory.messages.append(answer.model_dump(exclude_none=True))
    named = answer.content or ""
    play.kept = [name for name in play.episode.runtime.functions if name in named]
    play.episode.keep_tools(play.kept)
    play.tools = _tools(play.episode)


async def _run_calls(play: _Play, answer: ChatCompletionMessage, ctx: RunContext) -> None:
    """Run the answer's calls in the environment; their results go to the model as tool messages."""
    made = _calls(answer)
    ran = [(f, args, i) for f, args, i, _ in made]
    results = await asyncio.to_thread(play.episode.run, ran, play.defence.format_result)
    for (function, args, call_id, arguments), result in zip(made, results, strict=True):
        told = result.error or result.text
        ctx.trajectory.messages.append({"role": "tool", "tool_call_id": call_id, "content": told})
        ctx.trajectory.tool_calls.append(ToolCallRecord(function, arguments, told))
        play.calls.append(Call(function=function, args=args))


def _calls(answer: ChatCompletionMessage) -> list[tuple[str, dict[str, Any] | None, str, str]]:
    """(function, args or None when not a JSON object, call id, arguments as sent) per call."""
    return [
        (call.function.name, _args(call.function.arguments), call.id, call.function.arguments)
        for call in answer.tool_calls or ()
        if call.type == "function"
    ]


def _args(arguments: str) -> dict[str, Any] | None:
    try:
        parsed = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _tools(episode: Episode) -> list[dict[str, Any]]:
    return [openai_tool(function) for function in episode.runtime.functions.values()]


def _said(role: str, content: str) -> Message:
    return {"role": role, "content": content}
