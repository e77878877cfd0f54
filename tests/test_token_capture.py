"""`capture.tokens`: the proxy asks the worker for token ids and logprobs in its own fields
(vLLM's, SGLang's), records them in the attempt's record, and the client gets the very bytes
it gets with the setting off, whole and streamed."""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from typing import Any

import aiohttp
import orjson
import pytest

from agent_eval.agents.captured import calls_of, trajectory_from_calls
from agent_eval.agents.trajectory import CallTokens
from agent_eval.launch.config import ServeConfig
from agent_eval.proxy.capture.json_spans import apply, members, nulled, removals
from agent_eval.proxy.capture.token_fields import token_ask
from agent_eval.proxy.capture.token_stream import TokenRelay, whole_answer
from agent_eval.run.config import RunConfig
from agent_eval.testing.mock_worker import MockWorker
from agent_eval.testing.replies import (
    Reply,
    ReplyMeta,
    ToolCall,
    chat_body,
    chat_stream,
    completion_body,
    sampled,
)
from agent_eval.testing.toy_tokens import END, ReplyTokens, chat_prompt_text, decode, logprob
from tests.helpers.attempts import ADMIN_TOKEN, attempt_client
from tests.helpers.proxy import MakeClient, proxy_starter
from tests.helpers.token_plays import play

CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
MESSAGES: list[Any] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "add 2 and 3"},
]
REQUESTS: dict[str, dict[str, Any]] = {
    CHAT: {"model": "mock-model", "messages": MESSAGES, "tools": [{"type": "function"}]},
    COMPLETIONS: {"model": "mock-model", "prompt": "Once upon a time"},
}
REPLIES = [
    Reply("Let me add them.", [ToolCall("add", '{"a": 2, "b": 3}', id="call_1")]),
    Reply("five, as in 5 — café"),
]


async def _play(
    fields: str, tokens: bool, route: str, stream: bool, extra: dict[str, Any]
) -> tuple[list[bytes], dict[str, Any], dict[str, Any]]:
    """The bytes a client reads for each reply; the attempt's record; the first request the
    worker got."""
    body = {**REQUESTS[route], **extra, "stream": stream}
    played = await play(fields, tokens, route, body, REPLIES)  # type: ignore[arg-type]
    return played.read, played.record, played.worker.requests_to(route)[0]


FIELDS = ["vllm", "sglang", "llamacpp"]
ROUTES = [CHAT, COMPLETIONS]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("route", ROUTES, ids=["chat", "completions"])
@pytest.mark.parametrize("fields", FIELDS)
async def test_the_client_reads_the_bytes_it_reads_without_capture(
    fields: str, route: str, stream: bool
) -> None:
    off, _, plain = await _play(fields, False, route, stream, {})
    on, record, asked = await _play(fields, True, route, stream, {})
    assert on == off
    assert len(on[0]) > 100 and (b"data: " in on[0]) == stream
    ids = ["return_token_ids"]
    if fields == "sglang" and route == CHAT:
        ids = ["return_input_ids_in_sglext", "return_output_ids_in_sglext"]
    assert set(asked) - set(plain) == {"logprobs", *ids}
    assert all(call["tokens"]["completion_ids"] for call in record["calls"])


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("fields", FIELDS)
async def test_a_client_that_asked_for_logprobs_keeps_them(fields: str, stream: bool) -> None:
    off, _, _ = await _play(fields, False, CHAT, stream, {"logprobs": True})
    on, record, _ = await _play(fields, True, CHAT, stream, {"logprobs": True})
    assert on == off
    assert b'"logprob":' in on[0]
    assert record["calls"][0]["tokens"]["logprobs"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("fields", FIELDS)
async def test_chat_tokens_detokenize_to_the_prompt_and_the_answer(
    fields: str, stream: bool
) -> None:
    _, record, _ = await _play(fields, True, CHAT, stream, {})
    calls = record["calls"]
    for call, reply in zip(calls, REPLIES, strict=True):
        tokens = call["tokens"]
        assert decode(tokens["prompt_ids"]) == chat_prompt_text(call["request"])
        calls_text = "".join(f"<|call|>{c.name} {c.arguments}" for c in reply.tool_calls)
        assert decode(tokens["completion_ids"]) == reply.content + calls_text + END
        expected = [logprob(t, i) for i, t in enumerate(tokens["completion_ids"])]
        assert tokens["logprobs"] == expected
    # The worker was asked in its own fields, and the record keeps what the client sent.
    assert "logprobs" not in calls[0]["request"] and "return_token_ids" not in calls[0]["request"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("fields", FIELDS)
async def test_completion_tokens_detokenize_to_the_prompt_and_the_text(
    fields: str, stream: bool
) -> None:
    _, record, _ = await _play(fields, True, COMPLETIONS, stream, {})
    for call, reply in zip(record["calls"], REPLIES, strict=True):
        tokens = call["tokens"]
        assert decode(tokens["prompt_ids"]) == REQUESTS[COMPLETIONS]["prompt"]
        assert decode(tokens["completion_ids"]) == reply.content
        assert len(tokens["logprobs"]) == len(tokens["completion_ids"])


async def test_the_trajectory_carries_each_calls_tokens() -> None:
    _, record, _ = await _play("vllm", True, CHAT, True, {})
    trajectory = trajectory_from_calls(calls_of(record))
    tokens = [call.tokens for call in trajectory.model_calls]
    assert all(isinstance(t, CallTokens) for t in tokens)
    assert tokens[0] is not None and decode(tokens[0].completion_ids).startswith("Let me")
    line = orjson.loads(orjson.dumps(trajectory.to_dict()))
    kept = line["model_calls"][0]["tokens"]
    assert set(kept) == {"prompt_ids", "completion_ids", "logprobs", "choices"}
    assert kept["choices"] is None  # one choice sampled


async def test_without_the_setting_nothing_is_asked_or_recorded() -> None:
    _, record, _ = await _play("vllm", False, CHAT, False, {})
    assert all("tokens" not in call for call in record["calls"])


async def test_an_sdk_client_reads_its_answer_through_capture(make_client: MakeClient) -> None:
    async with AsyncExitStack() as stack:
        worker = await stack.enter_async_context(MockWorker("w", token_fields="sglang"))
        capture = {"tokens": True, "token_fields": "sglang"}
        base_url = await proxy_starter(stack)([worker], admin_token=ADMIN_TOKEN, capture=capture)
        async with attempt_client(base_url) as attempts:
            opened = await attempts.open("sdk")
            client = make_client(opened.attempt_base_url)
            stream = await client.chat.completions.create(
                model="mock-model", messages=MESSAGES, stream=True
            )
            text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
            record = await attempts.end(opened.key)
    tokens = record["calls"][0]["tokens"]
    assert decode(tokens["completion_ids"]) == text + END
    asked = worker.requests_to(CHAT)[0]
    assert asked["return_input_ids_in_sglext"] is True and asked["logprobs"] is True


def test_the_fields_asked_are_each_servers_own() -> None:
    body = orjson.dumps({"messages": [], "logprobs": False})
    vllm = token_ask(CHAT, orjson.loads(body), body, "vllm")
    sglang = token_ask(CHAT, orjson.loads(body), body, "sglang")
    completions = token_ask(COMPLETIONS, {"prompt": "x"}, b'{"prompt": "x"}', "sglang")
    assert vllm is not None and sglang is not None and completions is not None
    # The added members come last: a parser meeting `logprobs` twice keeps the proxy's.
    assert orjson.loads(vllm.body) == {"messages": [], "logprobs": True, "return_token_ids": True}
    assert orjson.loads(sglang.body) == {
        "messages": [],
        "logprobs": True,
        "return_input_ids_in_sglext": True,
        "return_output_ids_in_sglext": True,
    }
    assert orjson.loads(completions.body) == {
        "prompt": "x",
        "return_token_ids": True,
        "logprobs": 1,
    }
    assert token_ask("/v1/responses", {}, b"{}", "vllm") is None


def _stream(fields: str, asked: dict[str, Any]) -> bytes:
    """A mock worker's chat stream of the second reply, in `fields`, with what `asked` asks."""
    body = {**REQUESTS[CHAT], **asked}
    tokens = ReplyTokens.of(fields, True, chat_prompt_text(body), body)  # type: ignore[arg-type]
    meta = ReplyMeta("c", "m", 1, "w", 5, 3, True, tokens=tokens)
    return b"".join(chat_stream(REPLIES[0], meta))


@pytest.mark.parametrize("size", [1, 7, 64, 100_000])
@pytest.mark.parametrize("fields", FIELDS)
def test_a_stream_cut_anywhere_is_relayed_as_without_capture(fields: str, size: int) -> None:
    plain = _stream(fields, {})
    ask = token_ask(CHAT, REQUESTS[CHAT], orjson.dumps(REQUESTS[CHAT]), fields)  # type: ignore[arg-type]
    assert ask is not None
    worker_bytes = _stream(fields, orjson.loads(ask.body))
    assert len(worker_bytes) > len(plain)
    relay = TokenRelay(ask, None, None, 1 << 20)
    pieces = [worker_bytes[i : i + size] for i in range(0, len(worker_bytes), size)]
    out = b"".join(relay.feed(piece) for piece in pieces) + relay.end()
    assert out == plain
    assert decode(relay.reader.result()["completion_ids"]).endswith(END)  # type: ignore[index]


@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize(
    "cut", [["a"], ["b"], ["c"], ["a", "b"], ["b", "c"], ["a", "c"], ["a", "b", "c"]]
)
def test_members_cut_out_leave_the_rest_as_written(cut: list[str], indent: int | None) -> None:
    whole = {"a": {"x": "}\\"}, "b": [1, {"y": "]"}], "c": None}
    data = json.dumps(whole, indent=indent).encode()
    edits = removals(data, members(data, 0), cut)
    left = {k: v for k, v in whole.items() if k not in cut}
    assert apply(data, edits) == json.dumps(left, indent=indent).encode()


def test_a_value_is_nulled_in_place() -> None:
    data = b'{"a": [1, 2], "b": "text with \\" and }"}'
    found = members(data, 0)
    assert [m.key for m in found] == ["a", "b"]
    assert apply(data, [nulled(found[0])]) == b'{"a": null, "b": "text with \\" and }"}'


@pytest.mark.parametrize("drift", [False, True])
async def test_a_drifting_template_breaks_the_continuation_on_purpose(drift: bool) -> None:
    async with AsyncExitStack() as stack:
        worker = MockWorker("w", token_fields="vllm", drift=drift)
        await stack.enter_async_context(worker)
        capture = {"tokens": True}
        base_url = await proxy_starter(stack)([worker], admin_token=ADMIN_TOKEN, capture=capture)
        async with attempt_client(base_url) as attempts, aiohttp.ClientSession() as http:
            opened = await attempts.open("drift")
            messages = list(MESSAGES)
            for _ in range(2):
                body = {"model": "mock-model", "messages": messages}
                url = opened.attempt_base_url + "/chat/completions"
                async with http.post(url, json=body) as response:
                    answer = await response.json()
                messages += [answer["choices"][0]["message"], {"role": "user", "content": "and?"}]
            record = await attempts.end(opened.key)
    first, second = (call["tokens"] for call in record["calls"])
    before = first["prompt_ids"] + first["completion_ids"]
    continued = second["prompt_ids"][: len(before)] == before
    assert continued is not drift
    if drift:
        sent = second["prompt_ids"]
        at = next(i for i, (a, b) in enumerate(zip(before, sent, strict=False)) if a != b)
        # Inside the re-sent answer's end of turn, which the template renders anew.
        assert len(before) - len(END) <= at < len(before)


def _fields_asked(fields: str, route: str) -> set[str]:
    body = b'{"model": "m"}'
    ask = token_ask(route, {}, body, fields)  # type: ignore[arg-type]
    assert ask is not None
    return set(orjson.loads(ask.body)) - {"model"}


def test_vllms_own_models_take_the_fields_asked_and_answer_the_ids() -> None:
    protocol = pytest.importorskip(
        "vllm.entrypoints.openai.protocol", reason="vllm is not installed here (it needs CUDA)"
    )
    assert _fields_asked("vllm", CHAT) <= set(protocol.ChatCompletionRequest.model_fields)
    assert _fields_asked("vllm", COMPLETIONS) <= set(protocol.CompletionRequest.model_fields)
    assert "prompt_token_ids" in protocol.ChatCompletionResponse.model_fields
    assert "token_ids" in protocol.ChatCompletionResponseChoice.model_fields
    assert "prompt_token_ids" in protocol.CompletionResponseChoice.model_fields


def test_sglangs_own_models_take_the_fields_asked_and_answer_the_ids() -> None:
    protocol = pytest.importorskip(
        "sglang.srt.entrypoints.openai.protocol", reason="sglang is not installed here"
    )
    assert _fields_asked("sglang", CHAT) <= set(protocol.ChatCompletionRequest.model_fields)
    assert _fields_asked("sglang", COMPLETIONS) <= set(protocol.CompletionRequest.model_fields)
    assert {"input_ids", "output_ids"} <= set(protocol.SglExt.model_fields)
    assert {"token_ids", "prompt_token_ids"} <= set(protocol.CompletionResponseChoice.model_fields)


def test_ids_the_client_asked_for_itself_stay_in_its_answer() -> None:
    payload = {"messages": [], "return_token_ids": True}
    body = orjson.dumps(payload)
    ask = token_ask(CHAT, payload, body, "vllm")
    assert ask is not None and not ask.token_ids and ask.logprobs
    answer = {
        "choices": [{"index": 0, "logprobs": {"content": []}, "token_ids": [1, 2]}],
        "prompt_token_ids": [3],
    }
    data = orjson.dumps(answer)
    cut, _, tokens = whole_answer(data, answer, ask)
    assert orjson.loads(cut) == {
        "choices": [{"index": 0, "logprobs": None, "token_ids": [1, 2]}],
        "prompt_token_ids": [3],
    }
    assert tokens == {"prompt_ids": [3], "completion_ids": [1, 2], "logprobs": []}


@pytest.mark.parametrize(
    ("backend", "fields"), [("sglang", "sglang"), ("vllm", "vllm"), ("llamacpp", "llamacpp")]
)
def test_the_proxy_asks_in_the_fields_of_the_backends_server(backend: str, fields: str) -> None:
    run = RunConfig.model_validate(
        {"rollout": {"backend": f"{backend}:d1"}, "eval": {"tokens": True}}
    )
    assert run.eval.capture and run.proxy.capture.tokens
    assert run.proxy.capture.token_fields == fields
    serve = ServeConfig.model_validate(
        {"rollout": {"backend": f"{backend}:d1"}, "proxy": {"capture": {"tokens": True}}}
    )
    assert serve.proxy_config().capture.token_fields == fields
    told = {"tokens": True, "token_fields": "vllm"}
    serve = ServeConfig.model_validate(
        {"rollout": {"backend": "sglang:d1"}, "proxy": {"capture": told}}
    )
    assert serve.proxy.capture.token_fields == "vllm"


@pytest.mark.parametrize("route", ROUTES, ids=["chat", "completions"])
@pytest.mark.parametrize("fields", FIELDS)
def test_the_answer_kept_parsed_is_the_one_the_client_reads(fields: str, route: str) -> None:
    request = REQUESTS[route]
    ask = token_ask(route, request, orjson.dumps(request), fields)  # type: ignore[arg-type]
    assert ask is not None
    chat = route == CHAT
    prompt = chat_prompt_text(request) if chat else request["prompt"]
    asked = orjson.loads(ask.body)
    tokens = ReplyTokens.of(fields, chat, prompt, asked)  # type: ignore[arg-type]
    meta = ReplyMeta("c", "m", 1, "w", 5, 3, False, tokens=tokens)
    body = (chat_body if chat else completion_body)(REPLIES[0], meta)
    data = orjson.dumps(body)
    cut, answer, kept = whole_answer(data, orjson.loads(data), ask)
    assert answer == orjson.loads(cut) and len(cut) < len(data)
    assert kept is not None and kept["prompt_ids"] == tokens.prompt_ids


N_CHOICES = 3


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("route", ROUTES, ids=["chat", "completions"])
@pytest.mark.parametrize("fields", FIELDS)
async def test_every_choice_of_n_is_recorded_and_read_as_without_capture(
    fields: str, route: str, stream: bool
) -> None:
    off, _, _ = await _play(fields, False, route, stream, {"n": N_CHOICES})
    on, record, asked = await _play(fields, True, route, stream, {"n": N_CHOICES})
    assert on == off
    assert b'"index":2' in on[0]
    chat = route == CHAT
    for call, reply in zip(record["calls"], REPLIES, strict=True):
        tokens = call["tokens"]
        choices = tokens["choices"]
        assert [choice["index"] for choice in choices] == list(range(N_CHOICES))
        for choice, sample in zip(choices, sampled(reply, N_CHOICES), strict=True):
            calls = "".join(f"<|call|>{c.name} {c.arguments}" for c in sample.tool_calls)
            text = sample.content + calls + END if chat else sample.content
            assert decode(choice["completion_ids"]) == text
            ids = choice["completion_ids"]
            assert choice["logprobs"] == [logprob(t, i) for i, t in enumerate(ids)]
        # The first choice is the one a chat agent goes on with: the record's own.
        first = {k: choices[0][k] for k in ("completion_ids", "logprobs")}
        assert {k: tokens[k] for k in first} == first
        prompt = chat_prompt_text(asked) if chat else REQUESTS[COMPLETIONS]["prompt"]
        assert decode(tokens["prompt_ids"]) == prompt


async def test_the_trajectory_keeps_every_choice() -> None:
    _, record, _ = await _play("sglang", True, CHAT, True, {"n": N_CHOICES})
    recorded = trajectory_from_calls(calls_of(record)).model_calls[0].tokens
    assert recorded is not None and recorded.choices is not None
    kept = [c["completion_ids"] for c in record["calls"][0]["tokens"]["choices"]]
    assert [c.completion_ids for c in recorded.choices] == kept
    assert [a.completion_ids for a in recorded.answers()] == kept


async def test_a_call_of_one_choice_records_no_choices() -> None:
    _, record, _ = await _play("vllm", True, CHAT, True, {"n": 1})
    assert all("choices" not in call["tokens"] for call in record["calls"])
