"""What an attempt's record holds: its own calls in order, streams with their first byte,
Responses calls, calls in flight when it ends, failures and whose they are."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from openai import APIError, AsyncOpenAI, AuthenticationError, BadRequestError, InternalServerError

from agent_eval.agents.captured import calls_of, infra_failure
from tests.helpers.attempts import ADMIN_TOKEN, attempt_client
from tests.helpers.proxy import FAST_HEALTH, MakeClient, StartProxy, StartWorkers
from tests.helpers.proxy_calls import raw
from tests.helpers.waits import eventually

ATTEMPTS, TURNS = 50, 3


async def _play(client: AsyncOpenAI, name: str) -> list[dict[str, Any]]:
    """TURNS chat calls, each with the conversation so far; the messages each call sent."""
    messages: list[dict[str, Any]] = []
    sent = []
    for turn in range(TURNS):
        messages.append({"role": "user", "content": f"{name} turn {turn}"})
        sent.append(list(messages))
        answer = await client.chat.completions.create(model="mock-model", messages=messages)
        messages.append({"role": "assistant", "content": answer.choices[0].message.content})
    return sent


async def test_parallel_attempts_never_mix(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    # Probes that tolerate a busy machine: 150 calls at once may keep a probe waiting.
    health = {**FAST_HEALTH, "timeout": 10.0, "failure_threshold": 5}
    base_url = await start_proxy(await start_workers(2), admin_token=ADMIN_TOKEN, health=health)
    async with attempt_client(base_url) as attempts:
        opened = [await attempts.open(f"sample-{i}") for i in range(ATTEMPTS)]
        clients = [
            make_client(a.base_url, api_key=a.key) if i % 2 else make_client(a.attempt_base_url)
            for i, a in enumerate(opened)
        ]
        sent = await asyncio.gather(
            *(_play(client, f"attempt {i}") for i, client in enumerate(clients))
        )
        records = await asyncio.gather(*(attempts.end(a.key) for a in opened))
    for i, (record, messages) in enumerate(zip(records, sent, strict=True)):
        assert record["attempt"] == f"sample-{i}"
        assert [call["request"]["messages"] for call in record["calls"]] == messages
        assert [call["index"] for call in record["calls"]] == list(range(TURNS))
        # The attempt is the session: every call of it went to one worker.
        assert len({call["worker"] for call in record["calls"]}) == 1


async def test_a_stream_is_recorded_as_the_client_read_it_with_its_first_byte(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    base_url = await start_proxy(await start_workers(1), admin_token=ADMIN_TOKEN)
    async with attempt_client(base_url) as attempts:
        opened = await attempts.open("streamed")
        client = make_client(opened.attempt_base_url)
        stream = await client.chat.completions.create(
            model="mock-model",
            messages=[{"role": "user", "content": "stream please"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        pieces = [chunk async for chunk in stream]
        record = await attempts.end(opened.key)
    read = "".join(c.choices[0].delta.content or "" for c in pieces if c.choices)
    [call] = record["calls"]
    assert call["stream"] is True and call["status"] == 200
    assert call["response"]["choices"][0]["message"]["content"] == read
    assert call["ttft_s"] is not None and 0 < call["ttft_s"] <= call["latency_s"]
    assert call["completion_tokens"] == pieces[-1].usage.completion_tokens


async def test_responses_calls_are_recorded(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    workers = await start_workers(1, responses_api=False)  # the proxy translates to chat
    base_url = await start_proxy(workers, admin_token=ADMIN_TOKEN)
    async with attempt_client(base_url) as attempts:
        opened = await attempts.open("responses")
        client = make_client(opened.base_url, api_key=opened.key)
        first = await client.responses.create(model="mock-model", input="first question")
        second = await client.responses.create(
            model="mock-model", input="second question", previous_response_id=first.id
        )
        record = await attempts.end(opened.key)
    calls = record["calls"]
    assert [call["route"] for call in calls] == ["/v1/responses"] * 2
    # What the client sent, not the conversation the proxy put in front of it.
    assert calls[1]["request"] == {
        "model": "mock-model",
        "input": "second question",
        "previous_response_id": first.id,
    }
    assert [call["response"]["id"] for call in calls] == [first.id, second.id]
    assert calls[1]["response"]["output"][0]["content"][0]["text"] == second.output_text
    assert calls[1]["prompt_tokens"] == second.usage.input_tokens


async def test_ending_waits_for_calls_in_flight_and_refuses_new_ones(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    [worker] = await start_workers(1)
    base_url = await start_proxy([worker], admin_token=ADMIN_TOKEN)
    async with attempt_client(base_url) as attempts:
        opened = await attempts.open("in-flight")
        client = make_client(opened.attempt_base_url)
        worker.behavior.hang = True
        call = asyncio.create_task(
            client.chat.completions.create(
                model="mock-model", messages=[{"role": "user", "content": "slow"}]
            )
        )
        await worker.gate.wait_for_arrivals(1)
        ending = asyncio.create_task(attempts.end(opened.key))

        async def ended() -> bool:
            return (await attempts.read(opened.key))["state"] == "ended"

        await eventually(ended)
        assert not ending.done(), "the record was taken with a call in flight"
        with pytest.raises(AuthenticationError):
            await client.chat.completions.create(
                model="mock-model", messages=[{"role": "user", "content": "late"}]
            )
        worker.behavior.hang = False
        worker.gate.release()
        answer = await call
        record = await ending
    [recorded] = record["calls"]
    assert recorded["request"]["messages"][0]["content"] == "slow"
    assert recorded["response"]["id"] == answer.id
    assert record["unfinished"] == 0


async def test_a_failed_call_says_whose_fault_it_was(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    [worker] = await start_workers(1)
    base_url = await start_proxy([worker], admin_token=ADMIN_TOKEN, retry={"max_retries": 0})
    async with attempt_client(base_url) as attempts:
        opened = await attempts.open("failing")
        client = make_client(opened.attempt_base_url)
        worker.behavior.error_status = 500
        with pytest.raises(InternalServerError):
            await client.chat.completions.create(
                model="mock-model", messages=[{"role": "user", "content": "boom"}]
            )
        worker.behavior.error_status = None
        with pytest.raises(BadRequestError):
            await client.chat.completions.create(model="mock-model", messages="not a list")  # type: ignore[arg-type]
        url = opened.attempt_base_url + "/chat/completions"
        status, _ = await raw("POST", url, b"{not json", {"Content-Type": "application/json"})
        assert status == 400
        record = await attempts.end(opened.key)
    failed, refused, unread = record["calls"]
    assert unread["route"] == "/v1/chat/completions" and unread["request"] is None
    assert unread["error"]["code"] == "invalid_json" and unread["error"]["fault"] == "client"
    assert unread["response"]["error"]["code"] == "invalid_json"  # as the client got it
    assert failed["response"]["error"]["code"] == "upstream_error"
    assert failed["status"] == 500 and failed["error"]["fault"] == "worker"
    assert failed["error"]["code"] == "upstream_error"
    assert refused["status"] == 400 and refused["error"]["fault"] == "client"


async def test_a_stream_that_breaks_is_recorded_as_the_workers_failure(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    [worker] = await start_workers(1)
    base_url = await start_proxy([worker], admin_token=ADMIN_TOKEN)
    async with attempt_client(base_url) as attempts:
        opened = await attempts.open("broken")
        client = make_client(opened.attempt_base_url)
        worker.behavior.die_mid_stream_after = 2
        stream = await client.chat.completions.create(
            model="mock-model", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        with pytest.raises(APIError):
            [chunk async for chunk in stream]
        record = await attempts.end(opened.key)
    [call] = record["calls"]
    assert call["status"] == 200 and call["ttft_s"] is not None
    assert call["error"]["code"] == "stream_interrupted" and call["error"]["fault"] == "worker"
    failure = infra_failure(calls_of(record))
    assert failure is not None and failure.kind == "upstream_error"
    assert failure.worker == worker.url
