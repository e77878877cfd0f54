"""A multi-turn entry played turn by turn through the proxy, as BFCL's OpenAI handler plays it.

Each turn's user message joins the conversation; the model answers; its calls are decoded and
run on the attempt's own backends, and their results go back to it; the turn ends when an
answer has no call BFCL can decode, and the whole play when a turn passes BFCL's step limit
(the entry then fails as force-terminated). `final_output` is BFCL's result for the entry:
each turn's answers, step by step, as its handler keeps them, with the mode that decodes them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import openai
from openai.types.chat import ChatCompletionMessage

from agent_eval.agents.base import RunContext
from agent_eval.agents.call_errors import classify_call_error
from agent_eval.agents.chat_call import ask
from agent_eval.agents.trajectory import ToolCallRecord, Trajectory
from agent_eval.benchmarks.bfcl.multi_turn.backends import Backends, own_instances
from agent_eval.benchmarks.bfcl.multi_turn.decode import MODES, Mode, decode_step
from agent_eval.benchmarks.bfcl.multi_turn.entry import PlayableEntry, playable
from agent_eval.benchmarks.bfcl.multi_turn.package import constants, handler_utils, is_long_context
from agent_eval.data.records import Sample
from agent_eval.errors import ConfigError

Json = dict[str, Any]


async def play_multi_turn(sample: Sample, ctx: RunContext, options: Any) -> Trajectory:
    """Play `sample` (a multi-turn item); `options.mode` is "fc" or "prompt", and
    `options.max_steps` the executed answers a turn may have before the play stops."""
    mode: Mode = getattr(options, "mode", "fc")
    if mode not in MODES:
        raise ConfigError(
            f"BFCL's mode {mode!r} is not one of {', '.join(MODES)}: set fc or prompt"
        )
    limit = getattr(options, "max_steps", None) or constants("default_prompts").MAXIMUM_STEP_LIMIT
    raw = sample.metadata["bfcl_entry"]
    long_context = is_long_context(sample.metadata["bfcl_category"])
    with own_instances() as owner:
        play = _Play(ctx, mode, playable(raw, mode), Backends(owner, raw, long_context))
        try:
            await play.run(limit)
        except (openai.APIError, TimeoutError) as exc:
            ctx.trajectory.error = classify_call_error(exc)
    return ctx.trajectory


@dataclass
class _Play:
    ctx: RunContext
    mode: Mode
    entry: PlayableEntry
    backends: Backends
    result: list[list[Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.messages: list[Json] = self.ctx.trajectory.messages

    async def run(self, limit: int) -> None:
        for index in range(len(self.entry.turns)):
            self.messages.extend(self.entry.opening(index, self.mode))
            finished = await self._turn(limit)
            if not finished:
                break
        self.ctx.trajectory.final_output = json.dumps({"mode": self.mode, "result": self.result})

    async def _turn(self, limit: int) -> bool:
        """Play one turn; False when it passed the step limit, which ends the play."""
        answers: list[Any] = []
        self.result.append(answers)
        tools = self.entry.tools() if self.mode == "fc" else []
        for _ in range(limit + 1):
            message = await ask(self.ctx, self.messages, tools)
            answers.append(self._answer(message))
            self.messages.append(_assistant(message))
            calls = decode_step(answers[-1], self.mode)
            if calls is None:
                self.ctx.trajectory.turn_outputs.append(message.content)
                return True
            self._give_results(message, calls, self.backends.execute(calls))
        self.ctx.trajectory.turn_outputs.append(message.content)
        return False

    def _answer(self, message: ChatCompletionMessage) -> Any:
        """The answer as BFCL's handler keeps it: tool calls as {name: arguments}, or text."""
        if self.mode == "fc" and message.tool_calls is not None:
            return [{c.function.name: c.function.arguments} for c in _functions(message)]
        return message.content

    def _give_results(
        self, message: ChatCompletionMessage, calls: list[str], results: list[str]
    ) -> None:
        records = self.ctx.trajectory.tool_calls
        if self.mode == "fc":
            for call, result in zip(_functions(message), results, strict=False):
                records.append(ToolCallRecord(call.function.name, call.function.arguments, result))
                self.messages.append({"role": "tool", "content": result, "tool_call_id": call.id})
            return
        records.extend(
            ToolCallRecord(c.split("(")[0], c, r) for c, r in zip(calls, results, strict=False)
        )
        text = handler_utils().format_execution_results_prompting(
            {}, results, {"model_responses_decoded": calls}
        )
        self.messages.append({"role": "user", "content": text})


def _functions(message: ChatCompletionMessage) -> list[Any]:
    return [c for c in message.tool_calls or () if c.type == "function"]


def _assistant(message: ChatCompletionMessage) -> Json:
    """The answer as it goes back into the conversation: text and tool calls, nothing else
    (BFCL's OpenAI-compatible handlers drop a reasoning field the same way)."""
    kept: Json = {"role": "assistant", "content": message.content}
    if message.tool_calls:
        kept["tool_calls"] = [call.model_dump(exclude_none=True) for call in message.tool_calls]
    return kept
