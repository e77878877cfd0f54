"""Token capture through the proxy over the embedded llama.cpp worker: an attempt's record holds
ids that detokenize to exactly the prompt and the text, the end-of-turn token that ended it last,
with the server's own logprobs, and a client that did not ask for them reads the bytes it reads
with capture off."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

import pytest
from llama_cpp import Llama

from agent_eval.backends.llamacpp_chat import render
from agent_eval.backends.llamacpp_fields import CHAT_PATH, COMPLETIONS_PATH
from tests.helpers.attempts import ADMIN_TOKEN, attempt_client
from tests.helpers.llamacpp import (
    CHAT,
    COLOURS,
    MODEL,
    TOOL_CALL,
    comparable,
    completion_of,
    post,
)
from tests.helpers.proxy import proxy_starter

COMPLETION = completion_of(COLOURS, [])
MESSAGES_PATH = "/v1/messages"
STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])


@pytest.fixture
async def proxies(embedded_url: str) -> AsyncIterator[dict[bool, str]]:
    """A proxy with capture.tokens on and one with it off, over the worker: their roots."""
    async with AsyncExitStack() as stack:
        start = proxy_starter(stack)
        roots = {}
        for tokens in (True, False):
            capture = {"tokens": tokens, "token_fields": "llamacpp"}
            base = await start([embedded_url], admin_token=ADMIN_TOKEN, capture=capture)
            roots[tokens] = base.removesuffix("/v1")
        yield roots


async def keyed(embedded_url: str, root: str, path: str, body: dict[str, Any]) -> tuple[bytes, Any]:
    """The client's bytes for one call of an attempt opened as the engine opens it, and the
    call's tokens in the attempt's record."""
    async with attempt_client(root + "/v1") as attempts:
        opened = await attempts.open("llamacpp-tokens")
        via = opened.attempt_base_url.removesuffix("/v1")
        answer = await post(embedded_url, path, body, via=via)
        (call,) = (await attempts.end(opened.key))["calls"]
    return answer, call.get("tokens")


def text_of(embedded_vocab: Llama, ids: list[int], special: bool = False) -> str:
    return embedded_vocab.detokenize(ids, special=special).decode()


@STREAMS
async def test_chat_tokens_are_the_prompt_the_text_and_the_servers_logprobs(
    embedded_url: str, proxies: dict[bool, str], embedded_vocab: Llama, stream: bool
) -> None:
    answer, tokens = await keyed(embedded_url, proxies[True], CHAT_PATH, {**CHAT, "stream": stream})
    asked = {**CHAT, "return_token_ids": True, "logprobs": True}
    own = json.loads(await post(embedded_url, CHAT_PATH, asked))
    (choice,) = own["choices"]
    assert text_of(embedded_vocab, tokens["prompt_ids"], special=True) == render(COLOURS, [])
    assert tokens["prompt_ids"] == own["prompt_token_ids"]
    assert tokens["completion_ids"] == choice["token_ids"]
    assert text_of(embedded_vocab, tokens["completion_ids"]) == choice["message"]["content"]
    assert choice["message"]["content"] and _words(answer) == choice["message"]["content"]
    assert tokens["logprobs"] == [e["logprob"] for e in choice["logprobs"]["content"]]
    # The answer ended on `<|im_end|>`: the record keeps it and its logprob, as vLLM gives them.
    assert tokens["completion_ids"][-1] == embedded_vocab.token_eos()
    assert len(tokens["logprobs"]) == len(tokens["completion_ids"])


@STREAMS
async def test_completion_tokens_are_the_prompt_the_text_and_the_servers_logprobs(
    embedded_url: str, proxies: dict[bool, str], embedded_vocab: Llama, stream: bool
) -> None:
    body = {**COMPLETION, "stream": stream}
    _, tokens = await keyed(embedded_url, proxies[True], COMPLETIONS_PATH, body)
    asked = {**COMPLETION, "return_token_ids": True, "logprobs": 1}
    (own,) = json.loads(await post(embedded_url, COMPLETIONS_PATH, asked))["choices"]
    assert text_of(embedded_vocab, tokens["prompt_ids"], special=True) == COMPLETION["prompt"]
    assert tokens["prompt_ids"] == own["prompt_token_ids"]
    assert tokens["completion_ids"] == own["token_ids"]
    assert text_of(embedded_vocab, tokens["completion_ids"]) == own["text"] != ""
    assert tokens["logprobs"] == own["logprobs"]["token_logprobs"]
    assert tokens["completion_ids"][-1] == embedded_vocab.token_eos()
    assert len(tokens["logprobs"]) == len(tokens["completion_ids"])


@STREAMS
@pytest.mark.parametrize(
    ("path", "body"),
    [(CHAT_PATH, CHAT), (CHAT_PATH, TOOL_CALL), (COMPLETIONS_PATH, COMPLETION)],
    ids=["chat", "tool call", "completion"],
)
async def test_a_client_that_did_not_ask_reads_what_it_reads_with_capture_off(
    embedded_url: str, proxies: dict[bool, str], path: str, body: dict[str, Any], stream: bool
) -> None:
    sent = {**body, "stream": stream}
    on, tokens = await keyed(embedded_url, proxies[True], path, sent)
    off, untaken = await keyed(embedded_url, proxies[False], path, sent)
    assert tokens["completion_ids"] and untaken is None
    assert comparable(on) == comparable(off)
    # What the worker writes of the fields when not asked: no ids, logprobs null.
    assert b"token_ids" not in on and b'"logprobs": null' in on.replace(b":null", b": null")


def _words(answer: bytes) -> str:
    """The text of a chat answer, whole or streamed."""
    text = answer.decode()
    if text.startswith("{"):
        return json.loads(text)["choices"][0]["message"]["content"]
    events = text.split("\n\n")
    chunks = [json.loads(e.removeprefix("data: ")) for e in events if e.startswith("data: {")]
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)


@STREAMS
async def test_a_messages_call_translated_to_chat_keeps_its_tokens_and_its_bytes(
    embedded_url: str, proxies: dict[bool, str], embedded_vocab: Llama, stream: bool
) -> None:
    # The server has no /v1/messages: the proxy translates the call to chat.
    sent = {"model": MODEL, "max_tokens": 24, "temperature": 0, "messages": COLOURS}
    sent["stream"] = stream
    on, tokens = await keyed(embedded_url, proxies[True], MESSAGES_PATH, sent)
    off, untaken = await keyed(embedded_url, proxies[False], MESSAGES_PATH, sent)
    assert untaken is None
    assert comparable(on) == comparable(off)
    assert text_of(embedded_vocab, tokens["prompt_ids"], special=True) == render(COLOURS, [])
    assert text_of(embedded_vocab, tokens["completion_ids"]) == _message_text(on) != ""
    assert len(tokens["logprobs"]) == len(tokens["completion_ids"])


def _message_text(answer: bytes) -> str:
    """The text of a Messages answer, whole or streamed."""
    text = answer.decode()
    if text.startswith("{"):
        return "".join(block["text"] for block in json.loads(text)["content"])
    lines = [line.removeprefix("data: ") for line in text.splitlines() if line.startswith("data: ")]
    deltas = [json.loads(line).get("delta") or {} for line in lines]
    return "".join(delta.get("text", "") for delta in deltas)
