"""The embedded llama.cpp worker answers vLLM's `return_token_ids` and chat `logprobs` exactly:
the ids are the prompt it read and the text it wrote, ending with the end-of-turn token when that
ended it, as vLLM's do; the logprobs llama-cpp-python's own, streamed as whole, and a request
without them is answered as before."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from llama_cpp import Llama

from agent_eval.agents.trajectory import CallTokens
from agent_eval.backends.llamacpp_chat import render
from agent_eval.backends.llamacpp_fields import CHAT_PATH, COMPLETIONS_PATH
from agent_eval.metrics.continuity import continues
from tests.helpers.llamacpp import (
    CHAT,
    COLOURS,
    MULTIPLY,
    QUESTION,
    TOOL_CALL,
    comparable,
    completion_of,
    post,
)

IDS = {"return_token_ids": True}
END = "<|im_end|>"
CUT_SHORT = {**CHAT, "max_tokens": 5}


async def chunks(url: str, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """A streamed answer's chunks."""
    events = (await post(url, path, {**body, "stream": True})).decode().split("\n\n")
    return [json.loads(e.removeprefix("data: ")) for e in events if e.startswith("data: {")]


def text_of(embedded_vocab: Llama, ids: list[int], special: bool = False) -> str:
    return embedded_vocab.detokenize(ids, special=special).decode()


def streamed_ids(parts: list[dict[str, Any]]) -> list[int]:
    return [i for part in parts for i in part["choices"][0].get("token_ids", [])]


def streamed_logprobs(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        entry
        for part in parts
        if part["choices"][0]["logprobs"] is not None
        for entry in part["choices"][0]["logprobs"]["content"]
    ]


def without_ids(answer: bytes) -> str:
    """An answer with the token fields and what differs between any two answers taken out."""
    text = re.sub(r'"(?:prompt_)?token_ids": ?\[[\d, ]*\](?:, ?)?', "", comparable(answer))
    return re.sub(r", ?\}", "}", text)


async def test_chat_ids_are_the_rendered_prompt_and_the_answers_text(
    embedded_url: str, embedded_vocab: Llama
) -> None:
    answer = json.loads(await post(embedded_url, CHAT_PATH, {**CHAT, **IDS}))
    prompt, (choice,) = answer["prompt_token_ids"], answer["choices"]
    rendered = render(COLOURS, [])
    assert prompt == embedded_vocab.tokenize(rendered.encode(), add_bos=False, special=True)
    assert text_of(embedded_vocab, prompt, special=True) == rendered
    assert text_of(embedded_vocab, choice["token_ids"]) == choice["message"]["content"]
    assert choice["token_ids"][-1] == embedded_vocab.token_eos()
    # llama-cpp-python counts the text's tokens; vLLM would count the end-of-turn token too.
    assert len(choice["token_ids"]) == answer["usage"]["completion_tokens"] + 1


@pytest.mark.parametrize("body", [CHAT, CUT_SHORT], ids=["stopped", "cut short"])
async def test_chat_logprobs_are_the_servers_own(
    embedded_url: str, embedded_vocab: Llama, body: dict[str, Any]
) -> None:
    chat = json.loads(await post(embedded_url, CHAT_PATH, {**body, **IDS, "logprobs": True}))
    limit = {"max_tokens": body["max_tokens"]}
    completion = {**completion_of(COLOURS, []), **IDS, "logprobs": 0, **limit}
    (own,) = json.loads(await post(embedded_url, COMPLETIONS_PATH, completion))["choices"]
    (choice,) = chat["choices"]
    assert chat["prompt_token_ids"] == own["prompt_token_ids"]
    assert choice["token_ids"] == own["token_ids"] and own["token_ids"]
    entries = choice["logprobs"]["content"]
    assert [e["logprob"] for e in entries] == own["logprobs"]["token_logprobs"]
    assert [e["token"] for e in entries] == own["logprobs"]["tokens"]
    assert [bytes(e["bytes"]) for e in entries] == [
        embedded_vocab.detokenize([i], special=True) for i in choice["token_ids"]
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_a_chat_answer_ends_with_the_token_that_ended_it(
    embedded_url: str, embedded_vocab: Llama, stream: bool
) -> None:
    asked = {**CHAT, **IDS, "logprobs": True}
    if stream:
        parts = await chunks(embedded_url, CHAT_PATH, asked)
        ids, entries = streamed_ids(parts), streamed_logprobs(parts)
        words = "".join(part["choices"][0]["delta"].get("content") or "" for part in parts)
        finish, usage = parts[-1]["choices"][0]["finish_reason"], parts[-1]["usage"]
        assert parts[-1]["choices"][0]["token_ids"] == [embedded_vocab.token_eos()]
    else:
        answer = json.loads(await post(embedded_url, CHAT_PATH, asked))
        (choice,) = answer["choices"]
        ids, entries = choice["token_ids"], choice["logprobs"]["content"]
        words, finish, usage = (
            choice["message"]["content"],
            choice["finish_reason"],
            answer["usage"],
        )
    assert finish == "stop" and ids[-1] == embedded_vocab.token_eos()
    assert text_of(embedded_vocab, ids) == words != ""  # the token has no text
    assert [e["token"] for e in entries][-1] == END and len(entries) == len(ids)
    assert all(e["logprob"] <= 0 for e in entries)
    # llama-cpp-python counts the text's tokens; vLLM would count this one too.
    assert usage["completion_tokens"] == len(ids) - 1


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_a_completion_lists_the_token_that_ended_it(
    embedded_url: str, embedded_vocab: Llama, stream: bool
) -> None:
    body = {**completion_of(COLOURS, []), **IDS, "logprobs": 2}
    own = json.loads(await post(embedded_url, CHAT_PATH, {**CHAT, **IDS, "logprobs": True}))
    if stream:
        parts = await chunks(embedded_url, COMPLETIONS_PATH, body)
        (last,) = [part["choices"][0] for part in parts if part["choices"][0]["finish_reason"]]
        assert last["token_ids"] == [embedded_vocab.token_eos()] and last["logprobs"]["tokens"] == [
            END
        ]
        ids = streamed_ids(parts)
        logprobs = [p["choices"][0]["logprobs"] for p in parts if p["choices"][0]["logprobs"]]
        text = "".join(part["choices"][0]["text"] for part in parts)
    else:
        (choice,) = json.loads(await post(embedded_url, COMPLETIONS_PATH, body))["choices"]
        ids, logprobs, text = choice["token_ids"], [choice["logprobs"]], choice["text"]
    listed = {key: [v for entry in logprobs for v in entry[key]] for key in logprobs[0]}
    assert ids == own["choices"][0]["token_ids"] and ids[-1] == embedded_vocab.token_eos()
    assert listed["token_logprobs"] == [
        e["logprob"] for e in own["choices"][0]["logprobs"]["content"]
    ]
    assert listed["tokens"][-1] == END and len(listed["tokens"]) == len(ids)
    assert listed["text_offset"][-1] == len(body["prompt"]) + len(text)
    assert END in listed["top_logprobs"][-1] and len(listed["top_logprobs"][-1]) <= 2


async def test_the_next_turns_prompt_continues_the_stopped_turn(
    embedded_url: str, embedded_vocab: Llama
) -> None:
    """The template writes `<|im_end|>` after an assistant's message: the next prompt begins
    with the last prompt, its answer and the token that ended it."""
    first = json.loads(await post(embedded_url, CHAT_PATH, {**CHAT, **IDS}))
    said = {"role": "assistant", "content": first["choices"][0]["message"]["content"]}
    again = [*COLOURS, said, {"role": "user", "content": "And two more?"}]
    second = json.loads(await post(embedded_url, CHAT_PATH, {**CHAT, **IDS, "messages": again}))
    turns = [
        CallTokens(answer["prompt_token_ids"], answer["choices"][0]["token_ids"])
        for answer in (first, second)
    ]
    assert turns[0].completion_ids[-1] == embedded_vocab.token_eos()
    assert continues(*turns)
    given = turns[1].prompt_ids[len(turns[0].prompt_ids) + len(turns[0].completion_ids) :]
    assert text_of(embedded_vocab, given, special=True).startswith(
        "\n<|im_start|>user\nAnd two more?"
    )


async def test_chat_alternatives_are_the_likeliest_tokens(embedded_url: str) -> None:
    asked = {**CHAT, "logprobs": True, "top_logprobs": 3}
    answer = json.loads(await post(embedded_url, CHAT_PATH, asked))
    for entry in answer["choices"][0]["logprobs"]["content"]:
        values = [top["logprob"] for top in entry["top_logprobs"]]
        assert len(values) == 3 and values == sorted(values, reverse=True)
        # At temperature 0 the model writes its likeliest token.
        assert entry["top_logprobs"][0]["token"] == entry["token"]


async def test_completion_ids_are_the_prompt_and_the_text(
    embedded_url: str, embedded_vocab: Llama
) -> None:
    body = {**completion_of(COLOURS, []), **IDS}
    answer = json.loads(await post(embedded_url, COMPLETIONS_PATH, body))
    (choice,) = answer["choices"]
    assert text_of(embedded_vocab, choice["prompt_token_ids"], special=True) == body["prompt"]
    assert text_of(embedded_vocab, choice["token_ids"]) == choice["text"]
    assert "prompt_token_ids" not in answer


async def test_a_tool_calls_ids_are_its_line_in_the_next_prompt(
    embedded_url: str, embedded_vocab: Llama
) -> None:
    answer = json.loads(await post(embedded_url, CHAT_PATH, {**TOOL_CALL, **IDS}))
    (call,) = answer["choices"][0]["message"]["tool_calls"]
    assert text_of(embedded_vocab, answer["prompt_token_ids"], special=True) == render(
        QUESTION, [MULTIPLY]
    )
    written = text_of(embedded_vocab, answer["choices"][0]["token_ids"])
    assert written.strip() == f"functions.multiply:\n{call['function']['arguments']}"


@pytest.mark.parametrize("body", [CHAT, TOOL_CALL], ids=["words", "tool call"])
async def test_a_chat_stream_carries_the_whole_answers_tokens(
    embedded_url: str, embedded_vocab: Llama, body: dict[str, Any]
) -> None:
    asked = {**body, **IDS, "logprobs": True}
    whole = json.loads(await post(embedded_url, CHAT_PATH, asked))
    parts = await chunks(embedded_url, CHAT_PATH, asked)
    assert parts[0]["prompt_token_ids"] == whole["prompt_token_ids"]
    assert all("prompt_token_ids" not in part for part in parts[1:])
    assert streamed_ids(parts) == whole["choices"][0]["token_ids"]
    assert streamed_logprobs(parts) == whole["choices"][0]["logprobs"]["content"]
    words = "".join(part["choices"][0]["delta"].get("content") or "" for part in parts)
    if body is CHAT:
        assert words == text_of(embedded_vocab, streamed_ids(parts))


async def test_a_completion_stream_carries_the_whole_answers_tokens(embedded_url: str) -> None:
    asked = {**completion_of(COLOURS, []), **IDS, "logprobs": 0}
    (whole,) = json.loads(await post(embedded_url, COMPLETIONS_PATH, asked))["choices"]
    parts = await chunks(embedded_url, COMPLETIONS_PATH, asked)
    assert parts[0]["choices"][0]["prompt_token_ids"] == whole["prompt_token_ids"]
    assert streamed_ids(parts) == whole["token_ids"]
    # llama-cpp-python streams one token a chunk with logprobs: each chunk's id is its token.
    for part in parts:
        choice = part["choices"][0]
        assert len(choice["token_ids"]) == len((choice["logprobs"] or {}).get("tokens", []))
    listed = [p["choices"][0]["logprobs"] for p in parts if p["choices"][0]["logprobs"]]
    values = [v for logprobs in listed for v in logprobs["token_logprobs"]]
    assert values == whole["logprobs"]["token_logprobs"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize(
    ("path", "body"),
    [(CHAT_PATH, CHAT), (CHAT_PATH, TOOL_CALL), (COMPLETIONS_PATH, completion_of(COLOURS, []))],
    ids=["chat", "tool call", "completion"],
)
async def test_the_token_fields_are_the_only_difference(
    embedded_url: str, path: str, body: dict[str, Any], stream: bool
) -> None:
    plain = await post(embedded_url, path, {**body, "stream": stream})
    fielded = await post(embedded_url, path, {**body, **IDS, "stream": stream})
    assert b"token_ids" not in plain and b"token_ids" in fielded
    assert without_ids(fielded) == without_ids(plain)
