"""The mock worker's token ids and logprobs, in vLLM's or SGLang's fields.

A toy tokenizer: each UTF-8 byte of the text is one token, its id the byte's value, so a
test turns ids back into the exact text (`decode`). The prompt is the request rendered by a
toy chat template: `<|tools|>N` for N tools offered, each turn `<|role|>text<|end|>` (tool
calls as `<|call|>name arguments`), then `<|assistant|>` for the model to answer; the answer
is its text and `<|end|>`. A conversation that re-sends the answer continues the earlier
prompt token for token, unless the template `drifts`: then a re-sent assistant turn ends
`<|end_of_turn|>` instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from agent_eval.wire import TokenFields

JSON = dict[str, Any]
END = "<|end|>"
DRIFTED_END = "<|end_of_turn|>"
ANSWER_PROMPT = "<|assistant|>"


def encode(text: str) -> list[int]:
    """The toy tokenizer: one token per UTF-8 byte."""
    return list(text.encode())


def decode(ids: list[int]) -> str:
    """The text of toy token ids."""
    return bytes(ids).decode()


def logprob(token: int, position: int) -> float:
    """A token's logprob, fixed by the token and its place (full-precision, as a model's)."""
    return math.log(0.5 + ((token * 31 + position * 7) % 50) / 100)


def chat_prompt_text(body: JSON, drift: bool = False) -> str:
    """A chat request as the toy template renders it, the answer's opening included."""
    messages = [m for m in body.get("messages") or () if isinstance(m, dict)]
    tools = body.get("tools")
    head = f"<|tools|>{len(tools)}" if isinstance(tools, list) and tools else ""
    turns = [_turn(message, drift) for message in messages]
    return head + "".join(turns) + ANSWER_PROMPT


def answer_text(content: str, calls: list[tuple[str, str]]) -> str:
    """What the model produced: its text, its calls, the end of its turn."""
    return content + "".join(f"<|call|>{name} {arguments}" for name, arguments in calls) + END


def _turn(message: JSON, drift: bool) -> str:
    role = message.get("role")
    content = message.get("content")
    text = content if isinstance(content, str) else _parts(content)
    calls = [_call(call) for call in message.get("tool_calls") or () if isinstance(call, dict)]
    if role == "assistant":
        answered = answer_text(text, calls)
        return ANSWER_PROMPT + (answered[: -len(END)] + DRIFTED_END if drift else answered)
    return f"<|{role}|>{text}{END}"


def _parts(content: object) -> str:
    if not isinstance(content, list):
        return ""
    return "".join(p.get("text", "") for p in content if isinstance(p, dict))


def _call(call: JSON) -> tuple[str, str]:
    function = call.get("function") or {}
    return str(function.get("name", "")), str(function.get("arguments", ""))


@dataclass(frozen=True)
class ReplyTokens:
    """What one request asked the mock for in its dialect's fields, and the prompt's ids."""

    fields: TokenFields
    chat: bool
    prompt_ids: list[int]
    ids: bool
    logprobs: bool

    @classmethod
    def of(cls, fields: TokenFields, chat: bool, prompt: str, body: JSON) -> ReplyTokens:
        """What `body`, a chat or a text completion request whose rendered prompt is `prompt`,
        asks for."""
        if fields == "sglang" and chat:
            ids = body.get("return_output_ids_in_sglext") is True
        else:
            ids = body.get("return_token_ids") is True
        logprobs = body.get("logprobs") is True if chat else type(body.get("logprobs")) is int
        return cls(fields, chat, encode(prompt), ids, logprobs)

    def answer_ids(self, content: str, calls: list[tuple[str, str]], end: bool = True) -> list[int]:
        """The ids of an answer of `content` and `calls` (a chat turn's end with `end`); a
        text completion's are its text's alone."""
        return encode(answer_text(content, calls) if self.chat and end else content)

    @property
    def prompt_in_sglext(self) -> bool:
        return self.fields == "sglang" and self.chat

    def choice_fields(self, ids: list[int], start: int, first: bool) -> JSON:
        """The token members of a choice (or a stream chunk's choice) that produced `ids`, the
        `start`-th token on; `first`: the answer's first chunk, or the whole answer."""
        fields: JSON = {"logprobs": self._logprobs(ids, start) if self.logprobs else None}
        if self.prompt_in_sglext:
            return fields
        if self.fields == "vllm":
            if not self.chat:
                fields["prompt_token_ids"] = self.prompt_ids if self.ids and first else None
            fields["token_ids"] = ids if self.ids else None
        elif self.ids:
            fields["token_ids"] = ids
            if first and not self.chat:
                fields["prompt_token_ids"] = self.prompt_ids
        return fields

    def answer_fields(self, completions: list[list[int]], first: bool) -> JSON:
        """The token members at an answer's (or its first chunk's) top level; `completions`:
        each choice's ids, where the answer gives them there (SGLang's chat)."""
        if self.fields == "vllm" and self.chat and first:
            return {"prompt_token_ids": self.prompt_ids if self.ids else None}
        if self.fields == "llamacpp" and self.chat and first and self.ids:
            return {"prompt_token_ids": self.prompt_ids}
        if self.prompt_in_sglext and self.ids and any(completions):
            return {"sglext": {"input_ids": self.prompt_ids, "output_ids": completions}}
        return {}

    def _logprobs(self, ids: list[int], start: int) -> JSON:
        values = [logprob(token, start + i) for i, token in enumerate(ids)]
        tokens = [bytes([token]).decode("latin-1") for token in ids]
        if self.chat:
            content = [
                {"token": t, "logprob": v, "bytes": [i], "top_logprobs": []}
                for t, v, i in zip(tokens, values, ids, strict=True)
            ]
            return {"content": content}
        offsets = list(range(start, start + len(ids)))
        return {
            "text_offset": offsets,
            "token_logprobs": values,
            "tokens": tokens,
            "top_logprobs": [None] * len(ids),
        }
