"""`capture.tokens` on calls translated to Chat Completions (Anthropic Messages, Responses): the
chat request asks the worker for its tokens, the record keeps them, and the client reads the
very bytes it reads with the setting off, whole and streamed."""

from __future__ import annotations

import re
from contextlib import AsyncExitStack
from typing import Any

import aiohttp
import pytest

from agent_eval.agents.captured import calls_of, trajectory_from_calls
from agent_eval.testing.mock_worker import MockWorker
from agent_eval.testing.replies import Reply, ToolCall
from agent_eval.testing.toy_tokens import END, chat_prompt_text, decode, logprob
from tests.helpers.proxy import proxy_starter
from tests.helpers.token_plays import play

MESSAGES = "/v1/messages"
RESPONSES = "/v1/responses"
CHAT = "/v1/chat/completions"
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}
REQUESTS: dict[str, dict[str, Any]] = {
    MESSAGES: {
        "model": "mock-model",
        "max_tokens": 64,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "add 2 and 3"}],
        "tools": [{"name": "add", "description": "Adds", "input_schema": SCHEMA}],
    },
    RESPONSES: {
        "model": "mock-model",
        "instructions": "Be brief.",
        "input": "add 2 and 3",
        "tools": [{"type": "function", "name": "add", "parameters": SCHEMA}],
        "store": False,
    },
}
REPLIES = [
    Reply("Let me add them.", [ToolCall("add", '{"a": 2, "b": 3}', id="call_1")]),
    Reply("five, as in 5 — café"),
]
FIELDS = ["vllm", "sglang", "llamacpp"]
ASKED = {
    "vllm": {"return_token_ids", "logprobs"},
    "llamacpp": {"return_token_ids", "logprobs"},
    "sglang": {"return_input_ids_in_sglext", "return_output_ids_in_sglext", "logprobs"},
}
# What a translation stamps afresh on every answer: its ids and its clock.
_FRESH = re.compile(rb'(?:msg|resp|fc)_[0-9a-f]{32}|"(?:created_at|completed_at)":[0-9.e+]+')


def _steady(read: list[bytes]) -> list[bytes]:
    return [_FRESH.sub(b"FRESH", answer) for answer in read]


async def _translated(fields: str, tokens: bool, route: str, stream: bool) -> Any:
    body = {**REQUESTS[route], "stream": stream}
    # A worker without /v1/responses: both routes are translated to chat for it.
    return await play(fields, tokens, route, body, REPLIES, responses_api=False)  # type: ignore[arg-type]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("route", [MESSAGES, RESPONSES], ids=["messages", "responses"])
@pytest.mark.parametrize("fields", FIELDS)
async def test_a_translated_call_reads_as_without_capture_and_keeps_its_tokens(
    fields: str, route: str, stream: bool
) -> None:
    off = await _translated(fields, False, route, stream)
    on = await _translated(fields, True, route, stream)
    assert _steady(on.read) == _steady(off.read)
    assert len(on.read[1]) > 100 and (b"data: " in on.read[0]) == stream
    # Neither the ids nor a token's logprob leak (Responses' own `logprobs: []` is the API's).
    for leak in (b"_ids", b"sglext", b'"logprob"'):
        assert leak not in b"".join(on.read)
    plain, asked = off.worker.requests_to(CHAT)[0], on.worker.requests_to(CHAT)[0]
    assert set(asked) - set(plain) == ASKED[fields]
    assert all("tokens" not in call for call in off.record["calls"])
    for call, reply in zip(on.record["calls"], REPLIES, strict=True):
        assert call["route"] == route
        _assert_the_workers_tokens(call["tokens"], on.worker.requests_to(CHAT)[0], reply)


def _assert_the_workers_tokens(tokens: dict[str, Any], chat: dict[str, Any], reply: Reply) -> None:
    """`tokens` are those the mock worker produced for `reply` to the chat request `chat`."""
    assert decode(tokens["prompt_ids"]) == chat_prompt_text(chat)
    calls = "".join(f"<|call|>{c.name} {c.arguments}" for c in reply.tool_calls)
    assert decode(tokens["completion_ids"]) == reply.content + calls + END
    expected = [logprob(t, i) for i, t in enumerate(tokens["completion_ids"])]
    assert tokens["logprobs"] == expected


@pytest.mark.parametrize("route", [MESSAGES, RESPONSES], ids=["messages", "responses"])
async def test_a_translated_calls_tokens_reach_its_trajectory(route: str) -> None:
    played = await _translated("sglang", True, route, True)
    trajectory = trajectory_from_calls(calls_of(played.record))
    tokens = [call.tokens for call in trajectory.model_calls]
    assert len(tokens) == 2 and all(t is not None for t in tokens)
    assert tokens[1] is not None and decode(tokens[1].completion_ids) == REPLIES[1].content + END


async def test_a_route_the_worker_serves_itself_is_recorded_without_tokens() -> None:
    body = {**REQUESTS[RESPONSES], "stream": False}
    played = await play("vllm", True, RESPONSES, body, REPLIES[:1])
    assert played.worker.requests_to(RESPONSES) == [body]
    assert [call.get("tokens") for call in played.record["calls"]] == [None]


async def test_a_call_without_an_attempt_key_is_sent_as_with_capture_off() -> None:
    async with AsyncExitStack() as stack:
        worker = MockWorker("w", token_fields="vllm", responses_api=False)
        await stack.enter_async_context(worker)
        base_url = await proxy_starter(stack)([worker], capture={"tokens": True})
        async with aiohttp.ClientSession() as http:
            body = {**REQUESTS[MESSAGES], "stream": False}
            async with http.post(base_url + "/messages", json=body) as response:
                assert response.status == 200, await response.text()
    (sent,) = worker.requests_to(CHAT)
    assert sent["messages"] and not {"return_token_ids", "logprobs"} & set(sent)
