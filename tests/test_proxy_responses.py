"""The proxy's /v1/responses over workers with and without a Responses API of their own."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import openai
import pytest
from openai.types.responses import Response

from agent_eval.proxy.fleet.health import HealthChecker
from agent_eval.testing.mock_worker import MockWorker
from agent_eval.testing.replies import Reply, ToolCall
from tests.helpers.proxy import MakeClient, StartProxy, StartWorkers
from tests.helpers.waits import until

MODEL = "mock-model"
WEATHER = {
    "type": "function",
    "name": "weather",
    "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"


async def first_turn(client: openai.AsyncOpenAI, stream: bool, **fields: Any) -> Response:
    """A `responses.create`, plain or streamed to its final response."""
    fields = {"model": MODEL, **fields}
    if not stream:
        return await client.responses.create(**fields)
    async with client.responses.stream(**fields) as events:
        return await events.get_final_response()


async def worker_modes(base_url: str) -> dict[str, str]:
    workers = await until(lambda body: bool(body["workers"]), base_url, "/workers")
    return {w["url"]: w["responses_api"] for w in workers["workers"]}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_a_tool_round_trip_is_translated_for_a_worker_without_the_route(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient, stream: bool
) -> None:
    (worker,) = await start_workers(1, responses_api=False)
    worker.script(Reply(tool_calls=[ToolCall("weather", '{"city": "Paris"}', "call_7")]))
    worker.script(Reply("Sunny in Paris."))
    base_url = await start_proxy([worker])
    client = make_client(base_url)
    question = [{"role": "user", "content": "Weather in Paris?"}]
    first = await first_turn(
        client, stream, input=question, instructions="Use tools.", tools=[WEATHER]
    )
    (call,) = first.output
    assert (call.type, call.call_id, call.name) == ("function_call", "call_7", "weather")
    assert json.loads(call.arguments) == {"city": "Paris"}
    assert first.status == "completed" and first.usage and first.usage.input_tokens > 0
    result = {"type": "function_call_output", "call_id": "call_7", "output": "sunny"}
    history = [*question, call.model_dump(exclude_none=True), result]
    second = await first_turn(client, stream, input=history, tools=[WEATHER])
    assert second.output_text == "Sunny in Paris."
    asked, answered = worker.requests_to(CHAT)
    assert asked["messages"] == [
        {"role": "system", "content": "Use tools."},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    assert asked["tools"] == [
        {"type": "function", "function": {k: v for k, v in WEATHER.items() if k != "type"}}
    ]
    assert answered["messages"][1:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_7",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_7", "content": "sunny"},
    ]
    assert asked.get("stream", False) is stream and not worker.requests_to(RESPONSES)
    assert await worker_modes(base_url) == {worker.url: "translated"}


async def test_the_stream_carries_the_events_the_sdk_expects(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    (worker,) = await start_workers(1, responses_api=False)
    worker.script(Reply("Let me look.", [ToolCall("weather", '{"city": "Oslo"}')]))
    client = make_client(await start_proxy([worker]))
    stream = await client.responses.create(
        model=MODEL, input="Weather in Oslo?", tools=[WEATHER], stream=True
    )
    events = [event async for event in stream]
    kinds = [event.type for event in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    for kind in (
        "response.output_item.added",
        "response.output_text.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
    ):
        assert kind in kinds
    assert [event.sequence_number for event in events] == list(range(len(events)))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    final = events[-1].response
    assert text == final.output_text == "Let me look."
    assert [item.type for item in final.output] == ["message", "function_call"]


async def test_a_native_worker_gets_the_request_untouched(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    (worker,) = await start_workers(1)
    base_url = await start_proxy([worker])
    sent = {
        "model": MODEL,
        "input": [{"role": "user", "content": "Hi"}],
        "instructions": "Be brief.",
        "tools": [WEATHER],
        "temperature": 0.3,
    }
    response = await make_client(base_url).responses.create(**sent)
    assert response.output_text.startswith(f"mock reply from {worker.name}")
    assert worker.requests_to(RESPONSES) == [sent] and not worker.requests_to(CHAT)
    assert await worker_modes(base_url) == {worker.url: "native"}


async def test_previous_response_id_sends_only_the_new_items(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    (worker,) = await start_workers(1, responses_api=False)
    worker.script(Reply("Hello Ada."), Reply("You are Ada."), Reply("Bye Ada."))
    client = make_client(await start_proxy([worker]))
    first = await client.responses.create(
        model=MODEL, input="My name is Ada.", instructions="Be brief."
    )
    second = await client.responses.create(
        model=MODEL, input="What is my name?", previous_response_id=first.id
    )
    stream = await client.responses.create(
        model=MODEL, input="Goodbye.", previous_response_id=second.id, stream=True
    )
    third = [event async for event in stream][-1].response
    assert (second.output_text, third.output_text) == ("You are Ada.", "Bye Ada.")
    # Instructions are not carried over to follow-ups, as on OpenAI's servers.
    assert [m["content"] for m in worker.requests_to(CHAT)[2]["messages"]] == [
        "My name is Ada.",
        "Hello Ada.",
        "What is my name?",
        "You are Ada.",
        "Goodbye.",
    ]


async def test_an_unknown_or_unstored_previous_response_is_a_404(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    (worker,) = await start_workers(1, responses_api=False)
    client = make_client(await start_proxy([worker]))
    unstored = await client.responses.create(model=MODEL, input="Hi", store=False)
    for missing in (unstored.id, "resp_never_made"):
        with pytest.raises(openai.NotFoundError) as raised:
            await client.responses.create(model=MODEL, input="Again", previous_response_id=missing)
        error = raised.value.body
        assert isinstance(error, dict)
        assert (error["code"], error["param"]) == (
            "previous_response_not_found",
            "previous_response_id",
        )
        assert missing in error["message"] and "whole conversation" in error["message"]
    assert len(worker.requests_to(CHAT)) == 1


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"tools": [{"type": "web_search"}]}, "tools[0]"),
        ({"background": True}, "background"),
        ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input[0].type"),
    ],
)
async def test_unsupported_fields_are_a_400_naming_the_field(
    start_workers: StartWorkers,
    start_proxy: StartProxy,
    make_client: MakeClient,
    fields: dict[str, Any],
    param: str,
) -> None:
    (worker,) = await start_workers(1, responses_api=False)
    client = make_client(await start_proxy([worker]))
    with pytest.raises(openai.BadRequestError) as raised:
        await client.responses.create(**{"model": MODEL, "input": "Hi", **fields})
    error = raised.value.body
    assert isinstance(error, dict)
    assert (error["code"], error["param"]) == ("unsupported_field", param)
    assert f"`{param}`" in error["message"]
    assert worker.stats.generation_requests == 0


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"tools": "x"}, "tools"),
        ({"tools": [None]}, "tools[0]"),
        ({"input": [{"role": "user", "content": 5}]}, "input[0].content"),
        ({"text": "x"}, "text"),
        ({"text": {"format": 5}}, "text.format"),
        ({"previous_response_id": 5}, "previous_response_id"),
    ],
)
async def test_fields_of_the_wrong_type_are_a_400_naming_the_field(
    start_workers: StartWorkers, start_proxy: StartProxy, fields: dict[str, Any], param: str
) -> None:
    (worker,) = await start_workers(1, responses_api=False)
    base_url = await start_proxy([worker])
    sent = {"model": MODEL, "input": "Hi", **fields}
    async with (
        aiohttp.ClientSession() as http,
        http.post(base_url + "/responses", json=sent) as answer,
    ):
        assert answer.status == 400
        error = (await answer.json())["error"]
    assert (error["type"], error["code"], error["param"]) == (
        "invalid_request_error",
        "invalid_type",
        param,
    )
    assert error["message"].startswith(f"`{param}` must be ")
    assert worker.stats.generation_requests == 0


async def test_translated_traffic_sticks_to_its_worker(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    workers = await start_workers(3, responses_api=False)
    base_url = await start_proxy(workers)
    sessions = [make_client(base_url, session=f"s{i}") for i in range(4)]
    for _ in range(3):
        for client in sessions:
            await client.responses.create(model=MODEL, input="Hi")
    served = [w.stats.generation_requests for w in workers]
    assert sum(served) == 12 and all(n % 3 == 0 for n in served)
    # Without a session key, a chain of follow-ups stays where its first response was made.
    client = make_client(base_url)
    raw = await client.responses.with_raw_response.create(model=MODEL, input="Start")
    home, previous = raw.headers["X-Agent-Eval-Worker"], raw.parse().id
    for turn in range(5):
        raw = await client.responses.with_raw_response.create(
            model=MODEL, input=f"Turn {turn}", previous_response_id=previous
        )
        assert raw.headers["X-Agent-Eval-Worker"] == home
        previous = raw.parse().id


async def test_a_stream_broken_mid_way_ends_with_response_failed(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    (worker,) = await start_workers(1, responses_api=False)
    worker.behavior.stream_chunks = 8
    worker.behavior.die_mid_stream_after = 3
    worker.script(Reply("one two three four five six seven eight"))
    client = make_client(await start_proxy([worker]))
    stream = await client.responses.create(model=MODEL, input="Count.", stream=True)
    events = [event async for event in stream]
    assert events[-1].type == "response.failed"
    failed = events[-1].response
    assert failed.status == "failed" and failed.error is not None
    assert "stream broke" in failed.error.message
    assert "response.completed" not in [event.type for event in events]


async def test_a_native_stream_broken_mid_way_ends_with_response_failed(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    (worker,) = await start_workers(1)
    worker.behavior.stream_chunks = 8
    worker.behavior.die_mid_stream_after = 4
    worker.script(Reply("one two three four five six seven eight"))
    client = make_client(await start_proxy([worker]))
    stream = await client.responses.create(model=MODEL, input="Count.", stream=True)
    events = [event async for event in stream]
    assert worker.requests_to(RESPONSES) and not worker.requests_to(CHAT)
    created, *_, failed = events
    assert [event.sequence_number for event in events] == list(range(5))
    assert (created.type, failed.type) == ("response.created", "response.failed")
    assert failed.response.id == created.response.id and failed.response.status == "failed"
    assert failed.response.error is not None and "stream broke" in failed.response.error.message


async def test_a_404_from_a_worker_of_unknown_kind_switches_it_to_translation(
    start_workers: StartWorkers,
    start_proxy: StartProxy,
    make_client: MakeClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def inconclusive(self: HealthChecker, worker: Any, route: str) -> None:
        return None

    monkeypatch.setattr(HealthChecker, "_serves", inconclusive)
    (worker,) = await start_workers(1, responses_api=False)
    worker.script(Reply("Translated."))
    base_url = await start_proxy([worker])
    assert await worker_modes(base_url) == {worker.url: "unknown"}
    response = await make_client(base_url).responses.create(model=MODEL, input="Hi")
    assert response.output_text == "Translated."
    assert worker.stats.requests[RESPONSES] == 1 and len(worker.requests_to(CHAT)) == 1
    assert await worker_modes(base_url) == {worker.url: "translated"}


async def test_mixed_fleet_serves_both_kinds(
    start_proxy: StartProxy, make_client: MakeClient
) -> None:
    async with MockWorker("native") as native, MockWorker("plain", responses_api=False) as plain:
        base_url = await start_proxy([native, plain], policy="round_robin")
        client = make_client(base_url)
        answers = [(await client.responses.create(model=MODEL, input="Hi")) for _ in range(4)]
        assert all(answer.status == "completed" for answer in answers)
        assert len(native.requests_to(RESPONSES)) == len(plain.requests_to(CHAT)) == 2
        assert await worker_modes(base_url) == {native.url: "native", plain.url: "translated"}


async def test_other_routes_reach_a_translated_worker_untouched(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    (worker,) = await start_workers(1, responses_api=False)
    client = make_client(await start_proxy([worker]))
    messages = [{"role": "user", "content": "Hi"}]
    await client.chat.completions.create(model=MODEL, messages=messages, seed=3)
    await client.completions.create(model=MODEL, prompt="Once", max_tokens=5)
    assert worker.requests_to(CHAT) == [{"model": MODEL, "messages": messages, "seed": 3}]
    assert worker.requests_to("/v1/completions") == [
        {"model": MODEL, "prompt": "Once", "max_tokens": 5}
    ]


async def test_the_agents_sdk_streams_a_tool_round_trip_over_translation(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    from agents import Agent, OpenAIProvider, RunConfig, Runner, function_tool

    (worker,) = await start_workers(1, responses_api=False)
    worker.script(
        Reply("Let me add.", [ToolCall("add", json.dumps({"a": 2, "b": 3}))]),
        Reply("The answer is 5."),
    )

    @function_tool
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    provider = OpenAIProvider(openai_client=make_client(await start_proxy([worker])))
    config = RunConfig(model_provider=provider, tracing_disabled=True)
    agent = Agent(name="calc", tools=[add], model=MODEL)
    result = Runner.run_streamed(agent, "2+3?", run_config=config)
    raw = [e.data.type async for e in result.stream_events() if e.type == "raw_response_event"]
    assert result.final_output == "The answer is 5."
    assert [item.type for item in result.new_items] == [
        "message_output_item",
        "tool_call_item",
        "tool_call_output_item",
        "message_output_item",
    ]
    assert raw.count("response.completed") == 2 and "response.function_call_arguments.done" in raw
    assert len(worker.requests_to(CHAT)) == 2


async def test_stored_responses_can_be_retrieved_and_deleted(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    (worker,) = await start_workers(1, responses_api=False)
    worker.script(Reply("Kept."))
    client = make_client(await start_proxy([worker]))
    made = await client.responses.create(model=MODEL, input="Keep this.")
    again = await client.responses.retrieve(made.id)
    assert (again.id, again.output_text, again.status) == (made.id, "Kept.", "completed")
    await client.responses.delete(made.id)
    for gone in (
        client.responses.retrieve(made.id),
        client.responses.create(model=MODEL, input="More.", previous_response_id=made.id),
    ):
        with pytest.raises(openai.NotFoundError):
            await gone
    assert len(worker.requests_to(CHAT)) == 1


async def test_a_large_stored_response_is_retrieved_and_continued_whole(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    (worker,) = await start_workers(1, responses_api=False)
    text = "long " * 100_000  # kept in a memory map of its own, as large conversations are
    worker.script(Reply(text), Reply("Done."))
    client = make_client(await start_proxy([worker]))
    made = await client.responses.create(model=MODEL, input="Say it long.")
    again = await client.responses.retrieve(made.id)
    assert again.output_text == made.output_text == text
    await client.responses.create(model=MODEL, input="Again.", previous_response_id=made.id)
    messages = worker.requests_to(CHAT)[-1]["messages"]
    assert [m["content"] for m in messages] == ["Say it long.", text, "Again."]


async def test_a_native_response_is_retrieved_from_the_worker_that_made_it(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    workers = await start_workers(2)
    client = make_client(await start_proxy(workers))
    raw = await client.responses.with_raw_response.create(model=MODEL, input="Hi")
    made, maker = raw.parse(), raw.headers["X-Agent-Eval-Worker"]
    # The mock worker keeps no responses: its 404 comes back in OpenAI's shape.
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve(made.id)
    asked = [w for w in workers if w.stats.requests[f"{RESPONSES}/{made.id}"]]
    assert [w.url for w in asked] == [maker]
