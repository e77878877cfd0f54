"""OpenAI-shaped bodies and SSE streams for the mock worker: chat, completions, responses."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from uuid import uuid4

import orjson

if TYPE_CHECKING:
    from agent_eval.testing.toy_tokens import ReplyTokens

JSON = dict[str, Any]
NUMBER = re.compile(r"\d+(?:\.\d+)?")
SSE_DONE = b"data: [DONE]\n\n"


def _call_id() -> str:
    return f"call_{uuid4().hex[:24]}"


@dataclass(frozen=True)
class ToolCall:
    """One function call the mock model makes; `arguments` is a JSON string."""

    name: str
    arguments: str = "{}"
    id: str = field(default_factory=_call_id)


@dataclass
class Reply:
    """What the mock model answers to one generation request."""

    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        """Completion tokens, counted as words like the prompt."""
        return count_tokens(self.content) + sum(count_tokens(c.arguments) for c in self.tool_calls)

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.tool_calls else "stop"

    @property
    def has_message(self) -> bool:
        """Whether the answer carries a text message: always, unless it is only tool calls."""
        return bool(self.content or not self.tool_calls)


@dataclass(frozen=True)
class Prompt:
    """What the mock needs from a request: the last user text and the prompt size."""

    last_user: str
    tokens: int
    tools: bool = False  # the request offers tools
    tool_result: str | None = None  # the tool result the request ends with, if it does
    temperature: float = 1.0  # the request's; OpenAI's default when it names none
    max_tokens: int | None = None  # the request's completion budget, if it sets one


@dataclass(frozen=True)
class ReplyMeta:
    """Everything an answer carries besides the reply itself."""

    id: str
    model: str
    created: int
    fingerprint: str
    prompt_tokens: int
    pieces: int  # content pieces per streamed message or argument string
    include_usage: bool
    cached_tokens: int | None = None  # prompt tokens the simulated prefix cache held, when on
    tokens: ReplyTokens | None = None  # the token members of a worker that speaks a dialect
    n: int = 1  # the choices the request asked for


def count_tokens(text: str) -> int:
    """Word count: the mock has no tokenizer, and tests only need stable numbers."""
    return len(text.split())


def split_text(text: str, pieces: int) -> list[str]:
    """`text` cut into at most `pieces` non-empty slices of near-equal length."""
    if not text:
        return []
    size = -(-len(text) // max(1, pieces))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _sse(payload: JSON) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def content_text(content: Any) -> str:
    """Text of an OpenAI message content: a string, a list of parts, or None."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _temperature(body: JSON) -> float:
    value = body.get("temperature")
    return 1.0 if value is None else float(value)


def _budget(body: JSON, *keys: str) -> int | None:
    """The first of `keys` the request sets: its completion token budget."""
    return next((int(body[key]) for key in keys if body.get(key) is not None), None)


def _prompt(turns: list[tuple[Any, str]], body: JSON, *budget_keys: str) -> Prompt:
    """A prompt from (role, text) turns; a last turn of role "tool" is a tool result."""
    users = [text for role, text in turns if role == "user"]
    result = turns[-1][1] if turns and turns[-1][0] == "tool" else None
    tokens = sum(count_tokens(text) for _, text in turns)
    tools = bool(body.get("tools"))
    budget = _budget(body, *budget_keys)
    return Prompt(users[-1] if users else "", tokens, tools, result, _temperature(body), budget)


def chat_prompt(body: JSON) -> Prompt:
    """The prompt of a chat completion request."""
    turns = [(m.get("role"), content_text(m.get("content"))) for m in body.get("messages") or []]
    return _prompt(turns, body, "max_completion_tokens", "max_tokens")


def completion_prompt(body: JSON) -> Prompt:
    """The prompt of a text completion request (a string, or a list of strings or token ids)."""
    prompt = body.get("prompt", "")
    text = prompt if isinstance(prompt, str) else " ".join(map(str, prompt))
    return _prompt([("user", text)], body, "max_tokens")


def response_prompt(body: JSON) -> Prompt:
    """The prompt of a Responses API request: `input` as a string or a list of items."""
    items = body.get("input") or []
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    turns = [_item_turn(item) for item in items]
    instructions = body.get("instructions")
    if isinstance(instructions, str):
        turns.insert(0, ("system", instructions))
    return _prompt(turns, body, "max_output_tokens")


def _item_turn(item: JSON) -> tuple[Any, str]:
    """(role, text) of a Responses input item; a function call's output is a "tool" turn."""
    if item.get("type") == "function_call_output":
        return "tool", str(item.get("output", ""))
    return item.get("role"), content_text(item.get("content"))


def two_step_reply(
    prompt: Prompt, wrong_above_temperature: float | None = None, needs_tokens: int | None = None
) -> Reply:
    """A calculator trajectory in two model calls: `add` the question's numbers, then answer.

    The answer is wrong on purpose above `wrong_above_temperature`, or when the request's
    token budget is below `needs_tokens`; with `needs_tokens` set it fills the budget (a request
    without one gets the plain answer, right).
    """
    if not prompt.tools:
        return Reply("No tools offered, so no call.\nAnswer: 42")
    result = prompt.tool_result
    if result is None:
        a, b, *_ = [*NUMBER.findall(prompt.last_user), "1", "1"]
        return Reply(
            tool_calls=[ToolCall("add", orjson.dumps({"a": float(a), "b": float(b)}).decode())]
        )
    budget = prompt.max_tokens
    too_hot = wrong_above_temperature is not None and prompt.temperature > wrong_above_temperature
    too_short = needs_tokens is not None and budget is not None and budget < needs_tokens
    answer = _wrong(result) if too_hot or too_short else result
    text = f"The calculator says {result}.\nAnswer: {answer}"
    return Reply(_think(text, budget) if needs_tokens is not None and budget is not None else text)


def _wrong(result: str) -> str:
    """The tool's number plus one; a result that is no number (a tool error) is wrong already."""
    try:
        return str(float(result) + 1)
    except ValueError:
        return result


def _think(text: str, budget: int) -> str:
    """`text` after a line of filler words that brings it to `budget` words, when it is shorter."""
    filler = budget - count_tokens(text)
    return " ".join(["hmm"] * filler) + "\n" + text if filler > 0 else text


def _chat_usage(replies: list[Reply], meta: ReplyMeta) -> JSON:
    prompt, completion = meta.prompt_tokens, sum(reply.tokens for reply in replies)
    usage: JSON = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if meta.cached_tokens is not None:
        # vLLM's and SGLang's field (--enable-prompt-tokens-details, --enable-cache-report).
        usage["prompt_tokens_details"] = {"cached_tokens": meta.cached_tokens}
    return usage


def _envelope(meta: ReplyMeta, obj: str, choices: list[JSON]) -> JSON:
    return {
        "id": meta.id,
        "object": obj,
        "created": meta.created,
        "model": meta.model,
        "system_fingerprint": meta.fingerprint,
        "choices": choices,
    }


def sampled(reply: Reply, n: int) -> list[Reply]:
    """The `n` choices of an answer of `reply`: the reply itself, then ones that say it
    otherwise, as samples of one prompt differ."""
    return [reply] + [Reply(f"{reply.content} (take {k})", reply.tool_calls) for k in range(1, n)]


def chat_body(reply: Reply, meta: ReplyMeta) -> JSON:
    """A `chat.completion` object, with `meta.n` choices."""
    replies = sampled(reply, meta.n)
    choices = [_message_choice(choice, index) for index, choice in enumerate(replies)]
    body = {**_envelope(meta, "chat.completion", choices), "usage": _chat_usage(replies, meta)}
    return _with_tokens(body, meta, [_answer_ids(choice, meta) for choice in replies])


def _message_choice(reply: Reply, index: int) -> JSON:
    message: JSON = {"role": "assistant", "content": reply.content if reply.has_message else None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in reply.tool_calls
        ]
    return {
        "index": index,
        "message": message,
        "logprobs": None,
        "finish_reason": reply.finish_reason,
    }


def _answer_ids(reply: Reply, meta: ReplyMeta) -> list[int]:
    """The toy token ids of the whole reply, when the worker speaks a token dialect."""
    if meta.tokens is None:
        return []
    return meta.tokens.answer_ids(reply.content, [(c.name, c.arguments) for c in reply.tool_calls])


def _with_tokens(body: JSON, meta: ReplyMeta, ids: list[list[int]]) -> JSON:
    """A whole answer with its dialect's token members for each choice's `ids`."""
    if meta.tokens is None:
        return body
    for choice, produced in zip(body["choices"], ids, strict=True):
        choice.update(meta.tokens.choice_fields(produced, 0, first=True))
    return {**body, **meta.tokens.answer_fields(ids, first=True)}


def _chunk_tokens(chunk: JSON, meta: ReplyMeta, ids: list[int], start: int, first: bool) -> JSON:
    """A stream chunk with its dialect's token members for the `ids` it streams."""
    if meta.tokens is None:
        return chunk
    for choice in chunk["choices"]:
        choice.update(meta.tokens.choice_fields(ids, start, first))
    return {**chunk, **meta.tokens.answer_fields([], first)}


def _chat_chunk(
    meta: ReplyMeta,
    delta: JSON,
    finish_reason: str | None = None,
    at: tuple[list[int], int, bool] = ([], 0, False),
    index: int = 0,
) -> bytes:
    """One chunk of choice `index`; `at`: the token ids it streams, the place of the first,
    whether it is the choice's first chunk."""
    choice = {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
    return _sse(_chunk_tokens(_envelope(meta, "chat.completion.chunk", [choice]), meta, *at))


def _tool_call_chunks(
    meta: ReplyMeta, index: int, call: ToolCall, at: int, choice: int
) -> Iterator[bytes]:
    """OpenAI-style: id and name in the first delta, then the arguments in pieces."""
    head = {"index": index, "id": call.id, "type": "function"}
    yield _chat_chunk(
        meta,
        {"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]},
        at=([], at, False),
        index=choice,
    )
    for piece in split_text(call.arguments, meta.pieces):
        yield _chat_chunk(
            meta,
            {"tool_calls": [{"index": index, "function": {"arguments": piece}}]},
            at=([], at, False),
            index=choice,
        )


def _usage_chunk(meta: ReplyMeta, obj: str, replies: list[Reply]) -> bytes:
    return _sse({**_envelope(meta, obj, []), "usage": _chat_usage(replies, meta)})


def _ids_chunk(meta: ReplyMeta, obj: str, replies: list[Reply]) -> Iterator[bytes]:
    """SGLang's last chunk with the whole answer's ids (`sglext`), when it was asked for."""
    tokens = meta.tokens
    ids = [_answer_ids(reply, meta) for reply in replies]
    if tokens is not None and (fields := tokens.answer_fields(ids, False)):
        yield _sse({**_envelope(meta, obj, []), **fields})


def _piece_ids(meta: ReplyMeta, piece: str) -> list[int]:
    return [] if meta.tokens is None else meta.tokens.answer_ids(piece, [], end=False)


def _interleaved(streams: list[Iterator[bytes]]) -> Iterator[bytes]:
    """The choices' chunks taken in turn, as a server streams the choices it samples at once."""
    for chunks in itertools.zip_longest(*streams):
        yield from (chunk for chunk in chunks if chunk is not None)


def chat_stream(reply: Reply, meta: ReplyMeta) -> Iterator[bytes]:
    """The SSE events of a streamed chat completion of `meta.n` choices, `[DONE]` included."""
    replies = sampled(reply, meta.n)
    yield from _interleaved([_choice_chunks(r, meta, k) for k, r in enumerate(replies)])
    yield from _ids_chunk(meta, "chat.completion.chunk", replies)
    if meta.include_usage:
        yield _usage_chunk(meta, "chat.completion.chunk", replies)
    yield SSE_DONE


def _choice_chunks(reply: Reply, meta: ReplyMeta, choice: int) -> Iterator[bytes]:
    """The chunks of one choice of a streamed chat completion."""
    content = "" if reply.has_message else None
    delta = {"role": "assistant", "content": content}
    yield _chat_chunk(meta, delta, at=([], 0, True), index=choice)
    at = 0
    for piece in split_text(reply.content, meta.pieces):
        ids = _piece_ids(meta, piece)
        yield _chat_chunk(meta, {"content": piece}, at=(ids, at, False), index=choice)
        at += len(ids)
    for index, call in enumerate(reply.tool_calls):
        yield from _tool_call_chunks(meta, index, call, at, choice)
    rest = _answer_ids(reply, meta)[at:]
    yield _chat_chunk(meta, {}, reply.finish_reason, at=(rest, at, False), index=choice)


def _text_choice(text: str, finish_reason: str | None, index: int = 0) -> JSON:
    return {"index": index, "text": text, "logprobs": None, "finish_reason": finish_reason}


def completion_body(reply: Reply, meta: ReplyMeta) -> JSON:
    """A `text_completion` object of `meta.n` choices; scripted tool calls have no place in it
    and are dropped."""
    replies = sampled(reply, meta.n)
    choices = [_text_choice(choice.content, "stop", k) for k, choice in enumerate(replies)]
    body = {**_envelope(meta, "text_completion", choices), "usage": _chat_usage(replies, meta)}
    return _with_tokens(body, meta, [_piece_ids(meta, choice.content) for choice in replies])


def completion_stream(reply: Reply, meta: ReplyMeta) -> Iterator[bytes]:
    """The SSE events of a streamed text completion of `meta.n` choices, `[DONE]` included."""
    replies = sampled(reply, meta.n)
    yield from _interleaved([_text_chunks(r, meta, k) for k, r in enumerate(replies)])
    if meta.include_usage:
        yield _usage_chunk(meta, "text_completion", replies)
    yield SSE_DONE


def _text_chunks(reply: Reply, meta: ReplyMeta, choice: int) -> Iterator[bytes]:
    """The chunks of one choice of a streamed text completion."""
    at, first = 0, True
    for piece in split_text(reply.content, meta.pieces):
        ids = _piece_ids(meta, piece)
        chunk = _envelope(meta, "text_completion", [_text_choice(piece, None, choice)])
        yield _sse(_chunk_tokens(chunk, meta, ids, at, first))
        at, first = at + len(ids), False
    last = _envelope(meta, "text_completion", [_text_choice("", "stop", choice)])
    yield _sse(_chunk_tokens(last, meta, [], at, first))


def _message_item(meta: ReplyMeta, text: str, status: str) -> JSON:
    content = (
        [{"type": "output_text", "text": text, "annotations": []}] if status == "completed" else []
    )
    item_id = f"msg_{meta.id}"
    return {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": status,
        "content": content,
    }


def _call_item(call: ToolCall, arguments: str, status: str) -> JSON:
    return {
        "type": "function_call",
        "id": f"fc_{call.id}",
        "call_id": call.id,
        "name": call.name,
        "arguments": arguments,
        "status": status,
    }


def _output(reply: Reply, meta: ReplyMeta) -> list[JSON]:
    message = [_message_item(meta, reply.content, "completed")] if reply.has_message else []
    return message + [_call_item(c, c.arguments, "completed") for c in reply.tool_calls]


def response_body(reply: Reply, meta: ReplyMeta, *, done: bool = True) -> JSON:
    """A Responses API `response` object; `done=False` gives the in-progress shell."""
    prompt, completion = meta.prompt_tokens, reply.tokens
    usage = {
        "input_tokens": prompt,
        "output_tokens": completion,
        "total_tokens": prompt + completion,
        "input_tokens_details": {"cached_tokens": meta.cached_tokens or 0, "cache_write_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    return {
        "id": meta.id,
        "object": "response",
        "created_at": meta.created,
        "model": meta.model,
        "status": "completed" if done else "in_progress",
        "output": _output(reply, meta) if done else [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage if done else None,
    }


EventMaker = Callable[..., bytes]


def _event_maker() -> EventMaker:
    """Named SSE events with a running `sequence_number`, as the Responses API sends them."""
    sequence = itertools.count()

    def event(kind: str, **fields: Any) -> bytes:
        payload = {"type": kind, "sequence_number": next(sequence), **fields}
        return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"

    return event


def _message_events(
    event: EventMaker, reply: Reply, meta: ReplyMeta, index: int
) -> Iterator[bytes]:
    item = _message_item(meta, reply.content, "completed")
    at = {"item_id": item["id"], "output_index": index, "content_index": 0}
    yield event(
        "response.output_item.added",
        output_index=index,
        item=_message_item(meta, "", "in_progress"),
    )
    yield event("response.content_part.added", **at, part={**item["content"][0], "text": ""})
    for piece in split_text(reply.content, meta.pieces):
        yield event("response.output_text.delta", **at, delta=piece, logprobs=[])
    yield event("response.output_text.done", **at, text=reply.content, logprobs=[])
    yield event("response.content_part.done", **at, part=item["content"][0])
    yield event("response.output_item.done", output_index=index, item=item)


def _call_events(event: EventMaker, call: ToolCall, meta: ReplyMeta, index: int) -> Iterator[bytes]:
    at = {"item_id": f"fc_{call.id}", "output_index": index}
    yield event(
        "response.output_item.added", output_index=index, item=_call_item(call, "", "in_progress")
    )
    for piece in split_text(call.arguments, meta.pieces):
        yield event("response.function_call_arguments.delta", **at, delta=piece)
    yield event("response.function_call_arguments.done", **at, arguments=call.arguments)
    yield event(
        "response.output_item.done",
        output_index=index,
        item=_call_item(call, call.arguments, "completed"),
    )


def response_stream(reply: Reply, meta: ReplyMeta) -> Iterator[bytes]:
    """The SSE events of a streamed response, from `response.created` to `response.completed`."""
    event = _event_maker()
    yield event("response.created", response=response_body(reply, meta, done=False))
    if reply.has_message:
        yield from _message_events(event, reply, meta, 0)
    for index, call in enumerate(reply.tool_calls, start=int(reply.has_message)):
        yield from _call_events(event, call, meta, index)
    yield event("response.completed", response=response_body(reply, meta))


@dataclass(frozen=True)
class Endpoint:
    """One generation route: how to read its prompt and how to shape its answer."""

    id_prefix: str
    prompt: Callable[[JSON], Prompt]
    body: Callable[[Reply, ReplyMeta], JSON]
    stream: Callable[[Reply, ReplyMeta], Iterator[bytes]]


ENDPOINTS: dict[str, Endpoint] = {
    "/v1/chat/completions": Endpoint("chatcmpl-", chat_prompt, chat_body, chat_stream),
    "/v1/completions": Endpoint("cmpl-", completion_prompt, completion_body, completion_stream),
    "/v1/responses": Endpoint("resp_", response_prompt, response_body, response_stream),
}
