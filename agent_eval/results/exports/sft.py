"""An attempt as one chat-format SFT example: `{"messages": [...], "tools": [...]}`, the OpenAI
chat messages the model was given and gave (system prompt, user turns, its answers with their
tool calls, the tools' outputs) and the tools it was told of, as TRL's conversational datasets,
axolotl's `chat_template` type and OpenAI's fine-tuning files read them.

The messages go through ATIF (atif.py) and back, which reads every shape a runner records
(chat, Responses items, Anthropic Messages) into the chat-completions one.
"""

from __future__ import annotations

from typing import Any

from agent_eval.results.exports.atif import from_atif, record_attempt, to_atif
from agent_eval.results.exports.lines import Converted
from agent_eval.results.record import AttemptRecord

NO_ANSWER = "with no answer of the model's to learn from"


def sft_line(record: AttemptRecord, runner: str, model: str | None) -> Converted:
    """The attempt's conversation up to the model's last answer, and its tools."""
    attempt = record_attempt(record, runner, model)
    said = from_atif(to_atif(attempt)).trajectory["messages"]
    said = said[: _after_last_answer(said)]
    if not said:
        return Converted.left_out(NO_ANSWER)
    line: dict[str, Any] = {"messages": [_plain(message) for message in said]}
    if attempt.agent.tool_definitions:
        line["tools"] = attempt.agent.tool_definitions
    return Converted([line])


def _after_last_answer(said: list[dict[str, Any]]) -> int:
    """Where the model's last message ends: what follows it (a tool's output the attempt
    stopped after) teaches nothing; 0 when the model said nothing."""
    answers = [place for place, message in enumerate(said) if message["role"] == "assistant"]
    return answers[-1] + 1 if answers else 0


def _plain(message: dict[str, Any]) -> dict[str, Any]:
    """A message with its text parts joined into one string: a dataset's column holds one type,
    and chat templates read content as text."""
    content = message.get("content")
    if isinstance(content, list):
        return {**message, "content": "\n".join(part["text"] for part in content)}
    return message
