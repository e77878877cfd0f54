"""The proxy's /v1/messages through the real Anthropic SDK, over mock and broken workers."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import aiohttp
import anthropic
import orjson
import pytest
from anthropic.types import Message, MessageParam

from agent_eval.proxy.fleet.health import HealthChecker
from agent_eval.testing.broken_worker import BrokenWorker, Script, sse_event
from agent_eval.testing.mock_worker import MockWorker
from agent_eval.testing.replies import Reply, ToolCall
from tests.helpers.proxy import MakeAnthropic, StartProxy, StartWorkers
from tests.helpers.waits import eventually, until

MODEL = "mock-model"
CHAT = "/v1/chat/completions"
MESSAGES = "/v1/messages"
WEATHER = {
    "name": "weather",
    "description": "Weather in a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}
QUESTION: MessageParam = {"role": "user", "content": "Weather in Paris?"}
NATIVE = {
    "id": "msg_native",
    "type": "message",
    "role": "assistant",
    "content": [{"type": "text", "text": "From the worker itself."}],
    "model": "broken-model",
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 3, "output_tokens": 5},
}
"""What a worker serving /v1/messages itself answers."""
PIXEL = base64.b64encode(b"\x89PNG\r\n\x1a\n not really a picture").decode()


async def create(client: anthropic.AsyncAnthropic, stream: bool, **fields: Any) -> Message:
    """A `messages.create`, or the SDK's `messages.stream` helper's final message."""
    fields = {"model": MODEL, "max_tokens": 64, **fields}
    if not stream:
        return await client.messages.create(**fields)
    async with client.messages.stream(**fields) as events:
        return await events.get_final_message()


async def test_a_message_is_translated_for_a_chat_worker(
    start_workers: StartWorkers, start_proxy: StartProxy, make_anthropic: MakeAnthropic
) -> None:
    (worker,) = await start_workers(1)
    worker.script(Reply("Bonjour."))
    base_url = await start_proxy([worker])
    client = make_anthropic(base_url)
    message = await create(
        client,
        False,
        system="Answer in French.",
        messages=[{"role": "user", "content": "Hello"}],
        stop_sequences=["END"],
        # The SDK's create no longer names them; older clients send them, and they map.
        extra_body={"temperature": 0.5, "top_k": 20},
    )
    assert message.id.startswith("msg_") and (message.type, message.role) == (
        "message",
        "assistant",
    )
    assert [block.type for block in message.content] == ["text"]
    assert message.content[0].text == "Bonjour." and message.model == MODEL  # type: ignore[union-attr]
    assert (message.stop_reason, message.stop_sequence) == ("end_turn", None)
    assert message.usage.input_tokens == 4 and message.usage.output_tokens == 1
    (asked,) = worker.requests_to(CHAT)
    assert asked["messages"] == [
        {"role": "system", "content": "Answer in French."},
        {"role": "user", "content": "Hello"},
    ]
    assert (asked["max_tokens"], asked["temperature"], asked["top_k"]) == (64, 0.5, 20)
    assert asked["stop"] == ["END"]
    (headers,) = worker.stats.headers
    assert not any(name.startswith("anthropic-") or name == "x-api-key" for name in headers)
    assert (await messages_modes(base_url)) == ["translated"]


async def test_a_404_from_a_worker_of_unknown_kind_switches_it_to_translation(
    start_workers: StartWorkers,
    start_proxy: StartProxy,
    make_anthropic: MakeAnthropic,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def inconclusive(self: HealthChecker, worker: Any, route: str) -> None:
        return None

    monkeypatch.setattr(HealthChecker, "_serves", inconclusive)
    (worker,) = await start_workers(1)
    worker.script(Reply("Translated."))
    base_url = await start_proxy([worker])
    assert (await messages_modes(base_url)) == ["unknown"]
    message = await create(make_anthropic(base_url), False, messages=[QUESTION])
    assert message.content[0].text == "Translated."  # type: ignore[union-attr]
    assert worker.stats.requests[MESSAGES] == 1 and len(worker.requests_to(CHAT)) == 1
    assert (await messages_modes(base_url)) == ["translated"]


async def messages_modes(base_url: str) -> list[str]:
    workers = await until(lambda body: bool(body["workers"]), base_url, "/workers")
    return [w["messages_api"] for w in workers["workers"]]


async def test_the_stream_has_anthropics_events_in_anthropics_order(
    start_workers: StartWorkers, start_proxy: StartProxy, make_anthropic: MakeAnthropic
) -> None:
    (worker,) = await start_workers(1)
    worker.behavior.stream_chunks = 3
    worker.script(Reply("one two three", [ToolCall("weather", '{"city": "Paris"}', "toolu_1")]))
    client = make_anthropic(await start_proxy([worker]))
    fields = {"model": MODEL, "max_tokens": 64, "messages": [QUESTION], "tools": [WEATHER]}
    async with client.messages.stream(**fields) as stream:  # type: ignore[arg-type]
        kinds = [event.type async for event in stream]
        final = await stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert [k for k in kinds if k not in ("content_block_delta", "text", "input_json")] == [
        "message_start",
        "content_block_start",
        "content_block_stop",
        "content_block_start",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    text, call = final.content
    assert text.type == "text" and text.text == "one two three"
    assert call.type == "tool_use" and (call.id, call.name) == ("toolu_1", "weather")
    assert call.input == {"city": "Paris"}
    assert final.stop_reason == "tool_use" and final.usage.output_tokens == 5
    assert final.usage.input_tokens == 3
    assert worker.requests_to(CHAT)[0]["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_a_tool_round_trip(
    start_workers: StartWorkers,
    start_proxy: StartProxy,
    make_anthropic: MakeAnthropic,
    stream: bool,
) -> None:
    (worker,) = await start_workers(1)
    worker.script(Reply(tool_calls=[ToolCall("weather", '{"city": "Paris"}', "toolu_7")]))
    worker.script(Reply("Sunny in Paris."))
    client = make_anthropic(await start_proxy([worker]))
    first = await create(
        client, stream, messages=[QUESTION], tools=[WEATHER], tool_choice={"type": "any"}
    )
    (call,) = first.content
    assert call.type == "tool_use" and call.input == {"city": "Paris"}
    assert first.stop_reason == "tool_use"
    result = {"type": "tool_result", "tool_use_id": call.id, "content": "sunny", "is_error": False}
    history = [
        QUESTION,
        {"role": "assistant", "content": [call.model_dump()]},
        {"role": "user", "content": [result]},
    ]
    second = await create(client, stream, messages=history, tools=[WEATHER])
    assert second.content[0].text == "Sunny in Paris." and second.stop_reason == "end_turn"  # type: ignore[union-attr]
    asked, answered = worker.requests_to(CHAT)
    assert asked["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "weather",
                "parameters": WEATHER["input_schema"],
                "description": "Weather in a city",
            },
        }
    ]
    assert asked["tool_choice"] == "required"
    assert answered["messages"][1:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "toolu_7",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_7", "content": "sunny"},
    ]


async def test_images_are_passed_as_image_url_parts(
    start_workers: StartWorkers, start_proxy: StartProxy, make_anthropic: MakeAnthropic
) -> None:
    (worker,) = await start_workers(1)
    client = make_anthropic(await start_proxy([worker]))
    content = [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PIXEL}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}},
        {"type": "text", "text": "What are these?"},
    ]
    await create(client, False, messages=[{"role": "user", "content": content}])
    (asked,) = worker.requests_to(CHAT)
    assert asked["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PIXEL}"}},
                {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
                {"type": "text", "text": "What are these?"},
            ],
        }
    ]


async def test_a_request_without_max_tokens_is_refused_as_anthropic_refuses_it(
    start_workers: StartWorkers, start_proxy: StartProxy, make_anthropic: MakeAnthropic
) -> None:
    (worker,) = await start_workers(1)
    client = make_anthropic(await start_proxy([worker]))
    with pytest.raises(anthropic.BadRequestError) as caught:
        # The SDK's create checks for it too: the body is posted as a client without it would.
        await client.post(MESSAGES, cast_to=Message, body={"model": MODEL, "messages": [QUESTION]})
    assert caught.value.body == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "the proxy's /v1/messages cannot serve `max_tokens`: it is missing, "
            "and is required",
        },
    }
    with pytest.raises(anthropic.BadRequestError) as caught:
        await create(client, False, messages=[QUESTION], tools=[{"type": "web_search_20250305"}])
    assert "server tools" in caught.value.message and not worker.requests_to(CHAT)


async def test_a_worker_error_reaches_the_sdk_in_anthropics_envelope(
    start_workers: StartWorkers, start_proxy: StartProxy, make_anthropic: MakeAnthropic
) -> None:
    (worker,) = await start_workers(1)
    worker.behavior.error_status = 400
    client = make_anthropic(await start_proxy([worker]))
    with pytest.raises(anthropic.BadRequestError) as caught:
        await create(client, False, messages=[QUESTION])
    assert "error injected into mock worker w0" in caught.value.message
    assert caught.value.response.headers["X-Agent-Eval-Worker"] == worker.url


async def test_a_stream_broken_mid_way_ends_with_an_error_event(
    start_workers: StartWorkers, start_proxy: StartProxy, make_anthropic: MakeAnthropic
) -> None:
    (worker,) = await start_workers(1)
    worker.behavior.stream_chunks = 8
    worker.behavior.die_mid_stream_after = 3
    worker.script(Reply("one two three four five six seven eight"))
    client = make_anthropic(await start_proxy([worker]))
    seen: list[str] = []
    with pytest.raises(anthropic.APIStatusError) as caught:
        async with client.messages.stream(
            model=MODEL, max_tokens=64, messages=[QUESTION]
        ) as stream:
            async for event in stream:
                seen.append(event.type)
    assert seen[0] == "message_start" and "text" in seen and "message_stop" not in seen
    error = caught.value.body["error"]  # type: ignore[index]
    assert error["type"] == "api_error" and "stream broke" in error["message"]


async def test_a_broken_worker_before_the_stream_is_an_anthropic_error(
    start_proxy: StartProxy, make_anthropic: MakeAnthropic
) -> None:
    async with BrokenWorker(Script.answer(500, b"\x1c")) as broken:
        client = make_anthropic(await start_proxy([broken.url]))
        with pytest.raises(anthropic.InternalServerError) as caught:
            await create(client, True, messages=[QUESTION])
    assert caught.value.status_code == 500 and "failed the same way" in caught.value.message
    assert caught.value.body["error"]["type"] == "api_error"  # type: ignore[index]
    assert len(broken.received) == 2 and broken.received[0].path == CHAT


async def test_a_native_worker_gets_the_request_untouched(
    start_proxy: StartProxy, make_anthropic: MakeAnthropic
) -> None:
    script = Script.answer(200, orjson.dumps(NATIVE))
    async with BrokenWorker(script, messages_api=True) as worker:
        base_url = await start_proxy([worker.url])
        kinds = await until(lambda body: bool(body["workers"]), base_url, "/workers")
        assert kinds["workers"][0]["messages_api"] == "native"
        message = await make_anthropic(base_url).messages.create(
            model="broken-model", max_tokens=9, messages=[QUESTION], extra_body={"odd": 1}
        )
    assert message.id == "msg_native" and message.content[0].text == "From the worker itself."  # type: ignore[union-attr]
    (received,) = worker.received
    assert received.path == MESSAGES
    assert json.loads(received.body) == {
        "model": "broken-model",
        "max_tokens": 9,
        "messages": [QUESTION],
        "odd": 1,
    }


async def test_a_native_stream_passes_whole_and_is_recorded_assembled(
    start_proxy: StartProxy, make_anthropic: MakeAnthropic, tmp_path: Path
) -> None:
    usage = {"input_tokens": 3, "output_tokens": 0}
    start = {"type": "message_start", "message": {**NATIVE, "content": [], "usage": usage}}
    events: list[dict[str, Any]] = [
        start,
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "!"}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 2},
        },
        {"type": "message_stop"},
    ]
    sse = [f"event: {e['type']}\n".encode() + sse_event(e) for e in events]
    async with BrokenWorker(Script.sse(sse), messages_api=True) as worker:
        base_url = await start_proxy([worker.url], record_dir=str(tmp_path))
        client = make_anthropic(base_url)
        final = await create(
            client, True, model="broken-model", metadata={"user_id": "n1"}, messages=[QUESTION]
        )
    assert final.content[0].text == "Hi!" and final.usage.output_tokens == 2  # type: ignore[union-attr]
    assert worker.received[0].path == MESSAGES
    record = tmp_path / "n1.jsonl"

    def recorded_whole() -> bool:  # the file is opened before its line is written
        return record.exists() and record.read_text().endswith("\n")

    await eventually(recorded_whole, 10.0, lambda: f"{record} was never written")
    (recorded,) = (json.loads(line) for line in record.read_text().splitlines())
    assert recorded["response"]["content"] == [{"type": "text", "text": "Hi!"}]
    assert recorded["response"]["usage"] == {"input_tokens": 3, "output_tokens": 2}


async def test_a_native_stream_broken_mid_way_ends_with_an_error_event(
    start_proxy: StartProxy, make_anthropic: MakeAnthropic
) -> None:
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_native",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "broken-model",
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 3, "output_tokens": 0},
        },
    }
    events = [b"event: message_start\n" + sse_event(start)]
    async with BrokenWorker(Script.sse(events, end=False), messages_api=True) as worker:
        client = make_anthropic(await start_proxy([worker.url]))
        with pytest.raises(anthropic.APIStatusError) as caught:
            await create(client, True, model="broken-model", messages=[QUESTION])
    assert "stream broke" in caught.value.message


async def test_count_tokens_asks_the_workers_tokenizer(
    start_workers: StartWorkers, start_proxy: StartProxy, make_anthropic: MakeAnthropic
) -> None:
    (worker,) = await start_workers(1)
    client = make_anthropic(await start_proxy([worker]))
    counted = await client.messages.count_tokens(
        model=MODEL,
        system="Be brief.",
        messages=[QUESTION],
        tools=[WEATHER],  # type: ignore[list-item]
    )
    assert counted.input_tokens == 5  # the mock's tokens are words: its prompt_tokens too
    (asked,) = worker.requests_to("/tokenize")
    assert asked["messages"][0] == {"role": "system", "content": "Be brief."}
    assert asked["add_generation_prompt"] is True and asked["tools"][0]["type"] == "function"
    answered = await create(client, False, system="Be brief.", messages=[QUESTION])
    assert answered.usage.input_tokens == counted.input_tokens


async def test_count_tokens_without_a_tokenizer_says_it_cannot_count(
    start_proxy: StartProxy, make_anthropic: MakeAnthropic
) -> None:
    async with MockWorker(tokenize_api=False) as worker:
        client = make_anthropic(await start_proxy([worker]))
        with pytest.raises(anthropic.APIStatusError) as caught:
            await client.messages.count_tokens(model=MODEL, messages=[QUESTION])  # type: ignore[list-item]
    assert caught.value.status_code == 501
    assert "cannot be counted on this fleet" in caught.value.message
    assert caught.value.response.headers["x-should-retry"] == "false"
    assert worker.stats.requests["/tokenize"] == 1


async def test_the_key_is_taken_as_x_api_key_on_this_route_only(
    start_workers: StartWorkers, start_proxy: StartProxy, make_anthropic: MakeAnthropic
) -> None:
    (worker,) = await start_workers(1)
    base_url = await start_proxy([worker], api_key="s3cret")
    answer = await create(make_anthropic(base_url, api_key="s3cret"), False, messages=[QUESTION])
    assert answer.content
    with pytest.raises(anthropic.AuthenticationError) as caught:
        await create(make_anthropic(base_url, api_key="wrong"), False, messages=[QUESTION])
    assert caught.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]
    assert "x-api-key" in caught.value.message
    bearer = make_anthropic(base_url, api_key=None, auth_token="s3cret")
    assert (await create(bearer, False, messages=[QUESTION])).content
    async with aiohttp.ClientSession() as session:
        chat = {"model": MODEL, "messages": [QUESTION]}
        async with session.post(
            f"{base_url}/chat/completions", json=chat, headers={"x-api-key": "s3cret"}
        ) as refused:
            assert refused.status == 401
            assert (await refused.json())["error"]["code"] == "invalid_api_key"


@pytest.mark.parametrize(
    ("body", "status", "kind"),
    [
        (b"{not json", 400, "invalid_request_error"),
        (b"[1]", 400, "invalid_request_error"),
        (b"{" * 200 + b"}" * 200, 400, "invalid_request_error"),
    ],
    ids=["bad-json", "not-an-object", "nested"],
)
async def test_the_proxys_own_errors_come_in_anthropics_envelope(
    start_workers: StartWorkers, start_proxy: StartProxy, body: bytes, status: int, kind: str
) -> None:
    (worker,) = await start_workers(1)
    base_url = await start_proxy([worker])
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{base_url}/messages", data=body) as answer,
    ):
        error = await answer.json()
    assert answer.status == status and error["type"] == "error"
    assert error["error"]["type"] == kind and error["error"]["message"]


async def test_no_healthy_worker_and_a_too_large_body_are_anthropic_errors(
    start_workers: StartWorkers, start_proxy: StartProxy, make_anthropic: MakeAnthropic
) -> None:
    (worker,) = await start_workers(1)
    base_url = await start_proxy([worker], max_body_bytes=4096)
    client = make_anthropic(base_url)
    with pytest.raises(anthropic.APIStatusError) as caught:
        await create(client, False, messages=[{"role": "user", "content": "x" * 8192}])
    assert caught.value.status_code == 413
    assert caught.value.body["error"]["type"] == "request_too_large"  # type: ignore[index]
    worker.behavior.healthy = False
    await until(lambda body: not body["workers"][0]["healthy"], base_url, "/workers")
    with pytest.raises(anthropic.InternalServerError) as caught:
        await create(client, False, messages=[QUESTION])
    assert caught.value.status_code == 503
    assert caught.value.body["error"]["type"] == "overloaded_error"  # type: ignore[index]


async def test_metadata_user_id_keeps_a_session_on_one_worker(
    start_workers: StartWorkers, start_proxy: StartProxy, make_anthropic: MakeAnthropic
) -> None:
    workers = await start_workers(3)
    client = make_anthropic(await start_proxy(workers, policy="session"))
    homes = set()
    for _ in range(6):
        raw = await client.messages.with_raw_response.create(
            model=MODEL, max_tokens=8, messages=[QUESTION], metadata={"user_id": "attempt-42"}
        )
        homes.add(raw.headers["X-Agent-Eval-Worker"])
    assert len(homes) == 1
    assert all("metadata" not in body for w in workers for body in w.requests_to(CHAT))


async def test_metrics_and_the_recorder_see_the_route(
    start_workers: StartWorkers,
    start_proxy: StartProxy,
    make_anthropic: MakeAnthropic,
    tmp_path: Path,
) -> None:
    (worker,) = await start_workers(1)
    base_url = await start_proxy([worker], record_dir=str(tmp_path))
    client = make_anthropic(base_url)
    await create(client, False, messages=[QUESTION], metadata={"user_id": "s1"})
    await create(client, True, messages=[QUESTION], metadata={"user_id": "s1"})
    async with aiohttp.ClientSession() as session, session.get(f"{base_url}/../metrics") as got:
        metrics = await got.text()
    assert f'route="{MESSAGES}",status="200",worker="{worker.url}"}} 2.0' in metrics
    record = tmp_path / "s1.jsonl"

    async def both_recorded() -> bool:
        return record.exists() and len(record.read_text().splitlines()) == 2

    await eventually(both_recorded, 10.0, lambda: f"{record} never held both exchanges")
    plain, streamed = (json.loads(line) for line in record.read_text().splitlines())
    assert plain["route"] == streamed["route"] == MESSAGES
    assert plain["response"]["type"] == streamed["response"]["type"] == "message"
    assert streamed["response"]["content"][0]["type"] == "text"
