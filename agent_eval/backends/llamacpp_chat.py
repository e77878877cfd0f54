"""A ChatML chat format with tool calls for llama.cpp workers: OpenAI tool semantics on any model.

llama-cpp-python's own `chatml-function-calling` drops tool results from the prompt, answers
`tool_choice: auto` with an empty message whenever the model chooses to talk, and ignores the
seed. This format writes the tools into the system message, lets a grammar choose between a
message and a call, constrains the arguments to the tool's JSON schema, and samples with the
request's seed.
"""

from __future__ import annotations

import itertools
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

from llama_cpp import Llama, llama_grammar
from llama_cpp.llama_types import ChatCompletionRequestResponseFormat

from agent_eval.backends.llamacpp_tokens import CURRENT, Piece, Tokens, token_bytes

FORMAT_NAME = "chatml-tools"
END = "<|im_end|>"
MESSAGE = "message:"
CALL = "functions.{name}:"
SAMPLING = (
    "temperature", "top_p", "top_k", "min_p", "typical_p", "presence_penalty",
    "frequency_penalty", "repeat_penalty", "tfs_z", "mirostat_mode", "mirostat_tau",
    "mirostat_eta", "seed", "logit_bias",
)  # fmt: skip
TOOL_GUIDE = """

You have access to the following functions:
{functions}

To call a function, answer with its name and JSON arguments:
functions.<function_name>:
{{"arg1": "value1"}}

To answer the user, begin with:
message:
<your answer>"""

Message = dict[str, Any]
Tool = dict[str, Any]


def chatml_tools(
    llama: Llama,
    messages: list[Message],
    tools: list[Tool] | None = None,
    tool_choice: str | dict[str, Any] | None = None,
    stream: bool = False,
    stop: str | list[str] | None = None,
    max_tokens: int | None = None,
    response_format: ChatCompletionRequestResponseFormat | None = None,
    fresh: bool = False,
    **kwargs: Any,
) -> dict[str, Any] | Iterator[dict[str, Any]]:
    """Answer one chat completion request; the signature llama-cpp-python gives chat handlers.

    `fresh`: read the whole prompt, whatever this worker read before."""
    if fresh:
        # llama-cpp-python finishes a prompt from the previous request's cache, and reads the
        # last token of a prompt it already holds again alone: summed unlike a batch, its logits
        # differ, so the same request and seed would answer by what the worker read before.
        llama.reset()
    model = kwargs.get("model") or llama.model_path
    turn = Turn(llama, model, max_tokens, _stops(stop), _sampling(kwargs), CURRENT.get())
    tools = tools or []
    choice = "auto" if tool_choice is None else tool_choice
    if not tools or choice == "none":
        grammar = _format_grammar(response_format) if response_format else None
        return turn.answer(render(messages, []), prefix="", grammar=grammar, stream=stream)
    prompt = render(messages, tools)
    name = _named_tool(choice) or turn.choose(prompt, tools, required=choice == "required")
    if name is None:
        return turn.answer(prompt, prefix=f"{MESSAGE}\n", grammar=None, stream=stream)
    return turn.call(prompt, _tool(tools, name), stream=stream)


def render(messages: list[Message], tools: list[Tool]) -> str:
    """The ChatML prompt, with the tools described in the system message."""
    guide = _guide(tools)
    if guide and (not messages or messages[0].get("role") != "system"):
        messages = [{"role": "system", "content": ""}, *messages]
    names = _call_names(messages)
    parts = []
    for index, message in enumerate(messages):
        role, body = _line(message, bool(tools), names)
        if index == 0 and role == "system":
            body += guide
        parts.append(f"<|im_start|>{role}\n{body}{END}\n")
    return "".join(parts) + "<|im_start|>assistant\n"


def _call_names(messages: list[Message]) -> dict[str, str]:
    """Function name by call id, so a tool result can say which call it answers."""
    return {
        call.get("id", ""): call["function"]["name"]
        for message in messages
        for call in message.get("tool_calls") or []
    }


def _line(message: Message, with_tools: bool, names: dict[str, str]) -> tuple[str, str]:
    role, content = message.get("role", "user"), _text(message.get("content"))
    if role == "assistant":
        calls = message.get("tool_calls") or []
        lines = [_call_line(call["function"]) for call in calls]
        if content or not calls:
            lines.insert(0, f"{MESSAGE}\n{content}" if with_tools else content)
        return role, "\n".join(lines)
    if role == "tool":
        # Small chat models never saw a "tool" role; a user turn naming the call reads naturally.
        name = names.get(message.get("tool_call_id", "")) or message.get("name", "function")
        return "user", f"functions.{name} returned:\n{content}"
    return role, content


def _call_line(function: dict[str, Any]) -> str:
    return f"{CALL.format(name=function['name'])}\n{function['arguments']}"


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def _guide(tools: list[Tool]) -> str:
    if not tools:
        return ""
    functions = "\n".join(
        CALL.format(name=tool["function"]["name"])
        + "\n"
        + json.dumps(
            {k: tool["function"][k] for k in ("description", "parameters") if k in tool["function"]}
        )
        for tool in tools
    )
    return TOOL_GUIDE.format(functions=functions)


class Turn:
    """The completions one chat turn needs, sharing its sampling settings and usage count."""

    def __init__(
        self,
        llama: Llama,
        model: str,
        max_tokens: int | None,
        stops: list[str],
        sampling: dict[str, Any],
        tokens: Tokens | None = None,
    ) -> None:
        self.llama, self.model, self.max_tokens = llama, model, max_tokens
        self.stops, self.sampling, self.tokens = stops, sampling, tokens
        self.id, self.created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
        self.completion_tokens = 0

    def choose(self, prompt: str, tools: list[Tool], required: bool) -> str | None:
        """The tool the model calls, or None when it answers in words."""
        calls = [json.dumps(CALL.format(name=t["function"]["name"])) for t in tools]
        options = calls if required else [json.dumps(MESSAGE), *calls]
        grammar = llama_grammar.LlamaGrammar.from_string(
            "root ::= " + " | ".join(options), verbose=False
        )
        text = self._complete(prompt, grammar=grammar, max_tokens=32)["choices"][0]["text"]
        if text.startswith("functions."):
            return text.removeprefix("functions.").removesuffix(":")
        return None

    def answer(
        self, prompt: str, prefix: str, grammar: Any, stream: bool
    ) -> dict[str, Any] | Iterator[dict[str, Any]]:
        if stream:
            return self._stream_answer(prompt + prefix, grammar)
        done = self._complete(prompt + prefix, grammar=grammar, max_tokens=self.max_tokens)
        choice = done["choices"][0]
        message = {"role": "assistant", "content": choice["text"].strip()}
        return self._response(message, choice["finish_reason"], done["usage"]["prompt_tokens"])

    def call(
        self, prompt: str, tool: Tool, stream: bool
    ) -> dict[str, Any] | Iterator[dict[str, Any]]:
        name = tool["function"]["name"]
        grammar = _schema_grammar(json.dumps(tool["function"].get("parameters") or {}))
        done = self._complete(
            f"{prompt}{CALL.format(name=name)}\n", grammar=grammar, max_tokens=self.max_tokens
        )
        call = {
            "id": f"call_{uuid.uuid4().hex[:24]}",
            "type": "function",
            "function": {"name": name, "arguments": done["choices"][0]["text"].strip()},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        response = self._response(message, "tool_calls", done["usage"]["prompt_tokens"])
        if not stream:
            return response
        delta = {"role": "assistant", "content": None, "tool_calls": [{"index": 0, **call}]}
        first = self._first(self._chunk(delta, None, self._taken()))
        last = {**self._chunk({}, "tool_calls", self._taken()), "usage": response["usage"]}
        return iter([first, last])

    def _stream_answer(self, prompt: str, grammar: Any) -> Iterator[dict[str, Any]]:
        finish, text = "stop", ""
        pieces = self._complete(prompt, grammar=grammar, max_tokens=self.max_tokens, stream=True)
        if self.tokens is not None and self.tokens.wanted.ids:
            # The first chunk carries the prompt's ids, known once the generation has begun.
            pieces = itertools.chain([next(pieces)], pieces)
        yield self._first(self._chunk({"role": "assistant", "content": ""}, None, None))
        for piece in pieces:
            choice = piece["choices"][0]
            if choice["text"]:
                text += choice["text"]
                yield self._chunk({"content": choice["text"]}, None, self._taken())
            finish = choice.get("finish_reason") or finish
        # llama-cpp-python's server drops `stream_options`, so the usage always rides on the
        # last chunk, where clients that did not ask for it ignore it.
        self.completion_tokens += self._count(text)
        last = self._chunk({}, finish, self._taken())
        yield {**last, "usage": self._usage(self._count(prompt))}

    def _count(self, text: str) -> int:
        return len(self.llama.tokenize(text.encode(), add_bos=False, special=True))

    def _complete(self, prompt: str, **options: Any) -> Any:
        done = self.llama.create_completion(
            prompt=prompt, stop=self.stops, **self.sampling, **options
        )
        if isinstance(done, dict):  # a whole completion; a stream counts its tokens as it goes
            self.completion_tokens += done["usage"]["completion_tokens"]
        return done

    def _response(self, message: Message, finish: str, prompt_tokens: int) -> dict[str, Any]:
        choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
        if self.tokens is not None and self.tokens.wanted.logprobs:
            choice["logprobs"] = chat_logprobs(self.llama, self.tokens.completion)
        usage = self._usage(prompt_tokens)
        return {**self._head("chat.completion"), "choices": [choice], "usage": usage}

    def _usage(self, prompt_tokens: int) -> dict[str, int]:
        return {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": prompt_tokens + self.completion_tokens,
        }

    def _chunk(
        self, delta: dict[str, Any], finish: str | None, piece: Piece | None
    ) -> dict[str, Any]:
        """A stream's chunk; with `piece`, its tokens where the request asked for them."""
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        if self.tokens is not None and piece is not None:
            if self.tokens.wanted.logprobs:
                choice["logprobs"] = chat_logprobs(self.llama, piece)
            if self.tokens.wanted.ids:
                choice["token_ids"] = piece.ids
        return {**self._head("chat.completion.chunk"), "choices": [choice]}

    def _first(self, chunk: dict[str, Any]) -> dict[str, Any]:
        """A stream's first chunk: vLLM's puts the prompt's ids there."""
        if self.tokens is None or not self.tokens.wanted.ids:
            return chunk
        return {**chunk, "prompt_token_ids": self.tokens.prompt_ids}

    def _taken(self) -> Piece | None:
        return None if self.tokens is None else self.tokens.take()

    def _head(self, kind: str) -> dict[str, Any]:
        return {"id": self.id, "object": kind, "created": self.created, "model": self.model}


def _format_grammar(response_format: ChatCompletionRequestResponseFormat) -> Any:
    """llama-cpp-python's rule for `response_format`: JSON, of the schema when one is given."""
    if response_format["type"] != "json_object":
        return None
    if "schema" in response_format:
        return _schema_grammar(json.dumps(response_format["schema"]))
    return _json_grammar()


def _schema_grammar(schema: str) -> Any:
    try:
        return llama_grammar.LlamaGrammar.from_json_schema(schema, verbose=False)
    except Exception:  # schemas the converter cannot express still get valid JSON
        return _json_grammar()


def _json_grammar() -> Any:
    return llama_grammar.LlamaGrammar.from_string(llama_grammar.JSON_GBNF, verbose=False)


def _named_tool(choice: str | dict[str, Any]) -> str | None:
    return choice.get("function", {}).get("name") if isinstance(choice, dict) else None


def _tool(tools: list[Tool], name: str) -> Tool:
    for tool in tools:
        if tool["function"]["name"] == name:
            return tool
    raise ValueError(f"tool_choice names {name!r}, which is not among the request's tools")


def _stops(stop: str | list[str] | None) -> list[str]:
    return [END, *([stop] if isinstance(stop, str) else stop or [])]


def _sampling(options: dict[str, Any]) -> dict[str, Any]:
    return {key: options[key] for key in SAMPLING if options.get(key) is not None}


def chat_logprobs(llama: Llama, piece: Piece) -> dict[str, Any] | None:
    """OpenAI's chat `logprobs` of these tokens, with their bytes and alternatives; None when
    the worker keeps no logits per token (`--logits_all False`)."""
    if None in piece.logprobs:
        return None
    return {
        "content": [
            {
                **_logprob(llama, token, logprob),
                "top_logprobs": [_logprob(llama, other, value) for other, value in alternatives],
            }
            for token, logprob, alternatives in zip(
                piece.ids, piece.logprobs, piece.alternatives, strict=True
            )
        ],
        "refusal": None,
    }


def _logprob(llama: Llama, token: int, logprob: float | None) -> dict[str, Any]:
    text = token_bytes(llama, token)
    return {"token": text.decode(errors="ignore"), "logprob": logprob, "bytes": list(text)}
