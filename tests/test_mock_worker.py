"""The mock SGLang worker, driven by the real openai SDK and by plain HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator

import aiohttp
import openai
import pytest
from openai import AsyncOpenAI

from agent_eval.testing import mock_worker
from agent_eval.testing.mock_worker import MockWorker
from agent_eval.testing.replies import Reply, ToolCall
from agent_eval.testing.worker_state import LOG_SIZE
from tests.helpers.waits import eventually

USER = [{"role": "user", "content": "what is two plus two"}]
DEFAULT = "mock reply from w-test: what is two plus two"
ADD = ToolCall("add", json.dumps({"a": 2, "b": 2}))


@pytest.fixture
async def worker() -> AsyncIterator[MockWorker]:
    async with MockWorker(name="w-test") as mock:
        yield mock


@pytest.fixture
async def client(worker: MockWorker) -> AsyncIterator[AsyncOpenAI]:
    async with AsyncOpenAI(base_url=f"{worker.url}/v1", api_key="unused", max_retries=0) as sdk:
        yield sdk


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        yield session


async def test_chat_answers_a_default_reply_that_names_the_worker(
    worker: MockWorker, client: AsyncOpenAI
) -> None:
    raw = await client.chat.completions.with_raw_response.create(model="m", messages=USER)
    completion = raw.parse()
    assert raw.headers["X-Mock-Worker"] == "w-test"
    assert list(worker.stats.authorizations) == ["Bearer unused"]
    assert completion.system_fingerprint == "w-test"
    assert completion.choices[0].message.content == DEFAULT
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (5, 9)
    assert completion.usage.total_tokens == 14


async def test_chat_stream_splits_content_and_ends_with_usage(
    worker: MockWorker, client: AsyncOpenAI
) -> None:
    worker.behavior.stream_chunks = 3
    stream = await client.chat.completions.create(
        model="m", messages=USER, stream=True, stream_options={"include_usage": True}
    )
    chunks = [chunk async for chunk in stream]
    assert chunks[0].choices[0].delta.role == "assistant"
    pieces = [
        c.choices[0].delta.content for c in chunks[1:] if c.choices and c.choices[0].delta.content
    ]
    assert len(pieces) == 3
    assert "".join(pieces) == DEFAULT
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 9


async def test_scripted_tool_call_arrives_intact(worker: MockWorker, client: AsyncOpenAI) -> None:
    worker.script(Reply(tool_calls=[ADD]), Reply(tool_calls=[ADD]))
    plain = (await client.chat.completions.create(model="m", messages=USER)).choices[0]
    async with client.chat.completions.stream(model="m", messages=USER) as stream:
        streamed = (await stream.get_final_completion()).choices[0]
    for choice in (plain, streamed):
        assert choice.finish_reason == "tool_calls"
        assert choice.message.content is None
        assert choice.message.tool_calls is not None
        [call] = choice.message.tool_calls
        assert (call.id, call.function.name, call.function.arguments) == (
            ADD.id,
            "add",
            ADD.arguments,
        )
    worker.assert_script_used_up()


async def test_script_falls_back_to_the_default_once_used_up(
    worker: MockWorker, client: AsyncOpenAI
) -> None:
    worker.script(Reply("scripted"), Reply("never asked for"))
    first = await client.chat.completions.create(model="m", messages=USER)
    assert first.choices[0].message.content == "scripted"
    with pytest.raises(AssertionError, match="1 scripted replies never used"):
        worker.assert_script_used_up()
    await client.chat.completions.create(model="m", messages=USER)
    third = await client.chat.completions.create(model="m", messages=USER)
    assert third.choices[0].message.content == DEFAULT


async def test_completions_plain_and_streamed(client: AsyncOpenAI) -> None:
    plain = await client.completions.create(model="m", prompt="two plus two")
    assert plain.object == "text_completion"
    assert plain.choices[0].text == "mock reply from w-test: two plus two"
    stream = await client.completions.create(model="m", prompt="two plus two", stream=True)
    chunks = [chunk async for chunk in stream]
    assert "".join(c.choices[0].text for c in chunks) == plain.choices[0].text
    assert chunks[-1].choices[0].finish_reason == "stop"


async def test_responses_plain_text_and_function_call(
    worker: MockWorker, client: AsyncOpenAI
) -> None:
    text = await client.responses.create(model="m", input="what is two plus two")
    assert (text.status, text.output_text) == ("completed", DEFAULT)
    assert text.usage is not None and text.usage.input_tokens == 5
    worker.script(Reply(tool_calls=[ADD]))
    call = await client.responses.create(model="m", input=USER)
    [item] = call.output
    assert item.type == "function_call"
    assert (item.call_id, item.name, item.arguments) == (ADD.id, "add", ADD.arguments)


async def test_responses_stream_parsed_by_the_sdk(client: AsyncOpenAI) -> None:
    stream = await client.responses.create(model="m", input="what is two plus two", stream=True)
    events = [event async for event in stream]
    assert events[0].type == "response.created"
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert len(deltas) == 4 and "".join(deltas) == DEFAULT
    assert events[-1].type == "response.completed"
    assert events[-1].response.output_text == DEFAULT
    assert [e.sequence_number for e in events] == list(range(len(events)))


async def test_responses_stream_helper_rebuilds_text_and_call(
    worker: MockWorker, client: AsyncOpenAI
) -> None:
    worker.script(Reply("let me add", [ADD]))
    async with client.responses.stream(model="m", input="two plus two") as stream:
        final = await stream.get_final_response()
    assert final.output_text == "let me add"
    assert [item.type for item in final.output] == ["message", "function_call"]


async def test_body_that_is_not_json_gets_sglang_400(
    worker: MockWorker, http: aiohttp.ClientSession
) -> None:
    async with http.post(f"{worker.url}/v1/chat/completions", data=b"{not json") as response:
        body = await response.json()
        assert response.status == 400
        assert response.headers["X-Mock-Worker"] == "w-test"
    assert body.pop("message").startswith("invalid request body")
    assert body == {"object": "error", "type": "BadRequestError", "param": None, "code": 400}


async def test_injected_errors_fail_the_next_n_requests_then_clear(
    worker: MockWorker, client: AsyncOpenAI
) -> None:
    worker.behavior.error_status, worker.behavior.error_count = 503, 2
    for _ in range(2):
        with pytest.raises(openai.InternalServerError) as failure:
            await client.chat.completions.create(model="m", messages=USER)
        assert failure.value.status_code == 503
        assert isinstance(failure.value.body, dict)
        assert failure.value.body["type"] == "ServiceUnavailableError"
    ok = await client.chat.completions.create(model="m", messages=USER)
    assert ok.choices[0].message.content == DEFAULT
    assert worker.behavior.error_status is None
    assert worker.stats.generation_requests == 3


async def test_error_count_zero_fails_every_request(
    worker: MockWorker, client: AsyncOpenAI
) -> None:
    worker.behavior.error_status = 429
    for _ in range(3):
        with pytest.raises(openai.RateLimitError):
            await client.completions.create(model="m", prompt="hi")
    assert worker.behavior.error_status == 429


async def test_die_mid_stream_breaks_the_clients_stream(
    worker: MockWorker, client: AsyncOpenAI
) -> None:
    worker.behavior.die_mid_stream_after = 2
    received = []
    with pytest.raises(openai.APIConnectionError):
        stream = await client.chat.completions.create(model="m", messages=USER, stream=True)
        async for chunk in stream:
            received.append(chunk)
    assert len(received) == 2
    assert worker.stats.aborted_streams == 1


async def test_hang_holds_requests_until_the_gate_opens(
    worker: MockWorker, client: AsyncOpenAI
) -> None:
    worker.behavior.hang = True
    calls = [
        asyncio.create_task(client.chat.completions.create(model="m", messages=USER))
        for _ in range(3)
    ]
    await worker.gate.wait_for_arrivals(3)
    assert worker.stats.in_flight == 3
    assert not any(call.done() for call in calls)
    worker.gate.release()
    answers = await asyncio.gather(*calls)
    assert [a.choices[0].message.content for a in answers] == [DEFAULT] * 3
    assert (worker.stats.in_flight, worker.stats.max_in_flight) == (0, 3)


async def test_client_leaving_the_gate_counts_as_a_disconnect(
    worker: MockWorker, client: AsyncOpenAI
) -> None:
    worker.behavior.hang = True
    call = asyncio.create_task(client.chat.completions.create(model="m", messages=USER))
    await worker.gate.wait_for_arrivals(1)
    call.cancel()
    await worker.gate.wait_until_empty()
    assert (worker.stats.disconnects, worker.stats.in_flight) == (1, 0)


async def test_health_follows_the_healthy_knob(
    worker: MockWorker, http: aiohttp.ClientSession
) -> None:
    for path in ("/health", "/health_generate"):
        async with http.get(worker.url + path) as response:
            assert (response.status, await response.read()) == (200, b"")
    worker.behavior.healthy = False
    for path in ("/health", "/health_generate"):
        async with http.get(worker.url + path) as response:
            assert response.status == 503
            assert response.headers["X-Mock-Worker"] == "w-test"


async def test_info_routes_describe_the_model(
    worker: MockWorker, client: AsyncOpenAI, http: aiohttp.ClientSession
) -> None:
    models = await client.models.list()
    assert [(m.id, m.owned_by) for m in models.data] == [("mock-model", "agent-eval-mock")]
    async with http.get(f"{worker.url}/get_model_info") as response:
        assert await response.json() == {
            "model_path": "mock-model",
            "tokenizer_path": "mock-model",
            "is_generation": True,
        }
    async with http.get(f"{worker.url}/get_server_info") as response:
        info = await response.json()
    assert (info["port"], info["version"]) == (worker.port, "mock")


async def test_control_api_changes_behavior_and_reports_stats(
    worker: MockWorker, http: aiohttp.ClientSession
) -> None:
    update = {"error_status": 500, "error_count": 1, "stream_chunks": 2}
    async with http.post(f"{worker.url}/mock/behavior", json=update) as response:
        assert response.status == 200
        assert (await response.json())["stream_chunks"] == 2
    assert (worker.behavior.error_status, worker.behavior.error_count) == (500, 1)
    for bad in ({"no_such_knob": 1}, {"hang": "perhaps"}):
        async with http.post(f"{worker.url}/mock/behavior", json=bad) as response:
            assert response.status == 400
            assert (await response.json())["type"] == "BadRequestError"
    assert worker.behavior.hang is False
    async with http.post(f"{worker.url}/v1/completions", json={"prompt": "hi"}) as response:
        assert response.status == 500
    async with http.get(f"{worker.url}/mock/stats") as response:
        stats = await response.json()
    assert stats["requests"] == {"/mock/behavior": 3, "/v1/completions": 1, "/mock/stats": 1}
    assert (stats["generation_requests"], stats["authorizations"]) == (1, [None])


async def test_log_holds_each_request_and_the_answer_the_client_got(
    worker: MockWorker, client: AsyncOpenAI, http: aiohttp.ClientSession
) -> None:
    worker.script(Reply(tool_calls=[ADD]))
    async with client.chat.completions.stream(model="m", messages=USER) as stream:
        streamed = await stream.get_final_completion()
    plain = await client.responses.create(model="m", input="what is two plus two")
    called, answered = worker.served()
    assert (called.path, called.stream, called.status) == ("/v1/chat/completions", True, 200)
    assert called.request == {"model": "m", "messages": USER, "stream": True}
    assert called.answer["id"] == streamed.id
    [call] = called.answer["choices"][0]["message"]["tool_calls"]
    assert (call["id"], call["function"]["arguments"]) == (ADD.id, ADD.arguments)
    [message] = answered.answer["output"]
    assert (answered.answer["id"], message["content"][0]["text"]) == (plain.id, plain.output_text)
    assert worker.served("/v1/responses") == [answered]
    async with http.get(f"{worker.url}/mock/requests") as response:
        logged = await response.json()
    assert [entry["answer"]["id"] for entry in logged] == [streamed.id, plain.id]


async def test_a_worker_of_fixed_capacity_queues_then_answers_429_and_says_so_at_get_load(
    worker: MockWorker, client: AsyncOpenAI, http: aiohttp.ClientSession
) -> None:
    worker.behavior.update({"capacity": 2, "queue_limit": 1, "hang": True})
    calls = [
        asyncio.create_task(client.chat.completions.create(model="m", messages=USER))
        for _ in range(3)
    ]
    await worker.gate.wait_for_arrivals(2)  # two served, the third waits its turn
    await eventually(lambda: worker.state.queue.waiting == 1)
    async with http.get(f"{worker.url}/get_load") as response:
        load = await response.json()
    assert load == [{"dp_rank": 0, "num_reqs": 2, "num_waiting_reqs": 1, "num_tokens": 0}]
    with pytest.raises(openai.RateLimitError, match="is full: 1 requests wait"):
        await client.chat.completions.create(model="m", messages=USER)
    assert worker.stats.rejected == 1
    worker.behavior.hang = False
    worker.gate.release()
    answers = await asyncio.gather(*calls)
    assert [answer.choices[0].message.content for answer in answers] == [DEFAULT] * 3
    assert worker.stats.max_in_flight == 4  # three served or waiting, and the one refused
    assert (worker.state.queue.running, worker.state.queue.waiting) == (0, 0)


async def test_log_holds_injected_errors_and_stays_bounded(worker: MockWorker) -> None:
    worker.behavior.update({"error_status": 503, "error_count": 1})
    async with AsyncOpenAI(base_url=f"{worker.url}/v1", api_key="k", max_retries=0) as sdk:
        with pytest.raises(openai.InternalServerError):
            await sdk.completions.create(model="m", prompt="hi")
        for _ in range(LOG_SIZE):
            await sdk.completions.create(model="m", prompt="again")
    served = worker.served()
    assert len(served) == LOG_SIZE
    assert {entry.request["prompt"] for entry in served} == {"again"}
    assert worker.stats.generation_requests == LOG_SIZE + 1


async def test_script_over_http_queues_replies_as_the_python_method_does(
    worker: MockWorker, client: AsyncOpenAI, http: aiohttp.ClientSession
) -> None:
    script = [{"tool_calls": [{"name": "add", "arguments": ADD.arguments, "id": ADD.id}]}]
    async with http.post(f"{worker.url}/mock/script", json=[*script, {"content": "4"}]) as answer:
        assert (answer.status, await answer.json()) == (200, {"queued": 2})
    async with http.post(f"{worker.url}/mock/script", json=[{"tool_calls": [{}]}]) as refused:
        assert refused.status == 400
        assert "tool_calls" in (await refused.json())["message"]
    call = await client.responses.create(model="m", input=USER)
    [item] = call.output
    assert item.type == "function_call" and (item.call_id, item.name) == (ADD.id, "add")
    text = await client.chat.completions.create(model="m", messages=USER)
    assert text.choices[0].message.content == "4"
    worker.assert_script_used_up()


async def test_runs_as_a_process_until_sigterm(http: aiohttp.ClientSession) -> None:
    command = [
        "-m",
        "agent_eval.testing.mock_worker",
        "--port",
        "0",
        "--name",
        "proc",
        "--model",
        "pm",
    ]
    process = await asyncio.create_subprocess_exec(
        sys.executable, *command, stdout=asyncio.subprocess.PIPE
    )
    try:
        assert process.stdout is not None
        ready = (await asyncio.wait_for(process.stdout.readline(), timeout=30)).decode()
        assert ready.startswith("READY http://127.0.0.1:")
        async with http.get(f"{ready.split()[1]}/health") as response:
            assert (response.status, response.headers["X-Mock-Worker"]) == (200, "proc")
    finally:
        process.terminate()
        code = await asyncio.wait_for(process.wait(), timeout=10)
    assert code == 0
    with pytest.raises(ProcessLookupError):
        os.kill(process.pid, 0)


async def test_one_process_serves_many_workers_each_on_its_port_under_its_name(
    http: aiohttp.ClientSession,
) -> None:
    command = ["-m", "agent_eval.testing.mock_worker", "--name", "many", "--count", "3"]
    process = await asyncio.create_subprocess_exec(
        sys.executable, *command, stdout=asyncio.subprocess.PIPE
    )
    try:
        assert process.stdout is not None
        lines = [
            (await asyncio.wait_for(process.stdout.readline(), timeout=30)).decode()
            for _ in range(3)
        ]
        urls = [line.split()[1] for line in lines if line.startswith("READY ")]
        assert len(set(urls)) == 3
        names = []
        for url in urls:
            async with http.get(f"{url}/health") as response:
                names.append(response.headers["X-Mock-Worker"])
        assert names == ["many-0", "many-1", "many-2"]
    finally:
        process.terminate()
        assert await asyncio.wait_for(process.wait(), timeout=10) == 0


def test_many_workers_take_free_ports(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        mock_worker.main(["--count", "2", "--port", "30000"])
    assert refused.value.code == 2
    assert "more than 1 takes --port 0" in capsys.readouterr().err
