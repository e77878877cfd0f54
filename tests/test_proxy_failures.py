"""Workers that fail, hang, die or recover: retries, breaker, health, timeouts, disconnects."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import AsyncExitStack

import aiohttp
import openai
import pytest

from agent_eval.proxy.config import ProxyConfig
from agent_eval.proxy.server.listener import running_proxy
from tests.helpers.proxy import FAST_HEALTH, MakeClient, StartProxy, StartWorkers
from tests.helpers.proxy_calls import CHAT, metric_total, worker_state
from tests.helpers.waits import eventually, until, wait_ready


async def post(base_url: str, body: dict, headers: dict | None = None) -> tuple[int, dict]:
    # A bounded wait: a request the proxy never answers fails the test in a minute, not five.
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http,
        http.post(f"{base_url}/chat/completions", json=body, headers=headers) as response,
    ):
        return response.status, await response.json()


async def test_retryable_status_goes_to_another_worker(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    bad, good = await start_workers(2)
    bad.behavior.error_status = 503
    base_url = await start_proxy([bad, good], policy="round_robin")
    results = [await post(base_url, CHAT) for _ in range(6)]
    assert [status for status, _ in results] == [200] * 6
    assert good.stats.generation_requests == 6
    assert bad.stats.generation_requests >= 1


async def test_exhausted_retries_give_an_openai_error(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    (worker,) = await start_workers(1)
    worker.behavior.error_status = 503
    base_url = await start_proxy([worker])
    status, body = await post(base_url, CHAT)
    assert status == 503
    assert set(body["error"]) >= {"message", "type", "code"}
    assert worker.url in body["error"]["message"]


async def test_client_errors_never_count_against_a_worker(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    (worker,) = await start_workers(1)
    worker.behavior.error_status = 400
    base_url = await start_proxy([worker], health={**FAST_HEALTH, "breaker_failures": 2})
    for _ in range(5):
        status, body = await post(base_url, CHAT)
        assert status == 400 and "error" in body
    state = await worker_state(base_url, worker)
    assert (state["healthy"], state["breaker"], state["failures"]) == (True, "closed", 0)
    assert worker.stats.generation_requests == 5, "a 4xx was retried"


async def test_breaker_opens_and_recovers(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    flaky, steady = await start_workers(2)
    flaky.behavior.error_status = 502
    health = {**FAST_HEALTH, "breaker_failures": 3, "breaker_cooldown": 0.5}
    base_url = await start_proxy([flaky, steady], policy="round_robin", health=health)
    for _ in range(8):
        assert (await post(base_url, CHAT))[0] == 200
    assert (await worker_state(base_url, flaky))["breaker"] == "open"
    sent_while_open = flaky.stats.generation_requests
    for _ in range(4):
        assert (await post(base_url, CHAT))[0] == 200
    assert flaky.stats.generation_requests == sent_while_open, (
        "an open breaker let requests through"
    )

    flaky.behavior.error_status = None
    await until(lambda b: b["workers"][0]["breaker"] == "half_open", base_url, "/workers")
    for _ in range(4):
        assert (await post(base_url, CHAT))[0] == 200
    assert (await worker_state(base_url, flaky))["breaker"] == "closed"
    assert flaky.stats.generation_requests > sent_while_open


async def test_refused_connection_marks_worker_down_and_session_moves(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    workers = await start_workers(2)
    base_url = await start_proxy(workers, health={**FAST_HEALTH, "interval": 30.0})
    headers = {"X-Session-ID": "conversation-1"}
    _, first = await post(base_url, CHAT, headers)
    home = next(w for w in workers if w.name == first["system_fingerprint"])
    other = next(w for w in workers if w is not home)
    await home.stop()
    for _ in range(3):
        status, body = await post(base_url, CHAT, headers)
        assert status == 200 and body["system_fingerprint"] == other.name
    state = await worker_state(base_url, home)
    assert state["healthy"] is False and "cannot connect" in state["last_error"]


async def test_stream_broken_mid_way_is_not_replayed(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    workers = await start_workers(2)
    for worker in workers:
        worker.behavior.die_mid_stream_after = 2
    base_url = await start_proxy(workers)
    stream = await make_client(base_url).chat.completions.create(**CHAT, stream=True)
    with pytest.raises(openai.APIError, match="stream broke"):
        async for _ in stream:
            pass
    assert sum(w.stats.generation_requests for w in workers) == 1


async def test_silent_stream_is_cut_by_idle_timeout(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    (worker,) = await start_workers(1)
    worker.behavior.stream_chunks = 3
    worker.behavior.chunk_delay = 30.0
    base_url = await start_proxy([worker], timeouts={"stream_idle": 0.3})
    stream = await make_client(base_url).chat.completions.create(**CHAT, stream=True)
    with pytest.raises(openai.APIError, match="did not answer in time"):
        await asyncio.wait_for(_drain(stream), timeout=20)


async def test_stream_that_never_starts_is_retried_elsewhere(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    stuck, good = await start_workers(2)
    stuck.behavior.hang = True
    base_url = await start_proxy([stuck, good], policy="round_robin", timeouts={"stream_idle": 0.3})
    for _ in range(2):
        stream = await make_client(base_url).chat.completions.create(**CHAT, stream=True)
        text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
        assert text.startswith("mock reply from w1")
    assert stuck.stats.generation_requests >= 1


async def test_client_disconnect_closes_upstream_request(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    (worker,) = await start_workers(1)
    worker.behavior.hang = True
    base_url = await start_proxy([worker])
    for stream in (False, True):
        request = asyncio.create_task(post(base_url, {**CHAT, "stream": stream}))
        await worker.gate.wait_for_arrivals(1)
        request.cancel()
        await eventually(lambda n=stream: worker.stats.disconnects == 1 + n)
        assert worker.stats.in_flight == 0


async def test_client_leaving_mid_stream_closes_upstream(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    (worker,) = await start_workers(1)
    worker.behavior.stream_chunks = 50
    worker.behavior.chunk_delay = 0.1
    base_url = await start_proxy([worker])
    async with aiohttp.ClientSession() as http:
        response = await http.post(f"{base_url}/chat/completions", json={**CHAT, "stream": True})
        assert (await response.content.readline()).startswith(b"data:")
        response.close()
    await eventually(lambda: worker.stats.disconnects == 1)


@pytest.fixture
def process_workers() -> Iterator[list[tuple[subprocess.Popen[str], str]]]:
    """Two mock workers in their own processes, so one can be killed outright."""
    started = []
    for i in range(2):
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "agent_eval.testing.mock_worker",
                "--port",
                "0",
                "--name",
                f"p{i}",
                "--latency",
                "0.02",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        ready = process.stdout.readline().split()
        assert ready[0] == "READY", ready
        started.append((process, ready[1]))
    yield started
    for process, _ in started:
        process.kill()
        process.wait()


async def test_killed_worker_under_load_fails_no_client_request(
    process_workers: list[tuple[subprocess.Popen[str], str]], stack: AsyncExitStack
) -> None:
    config = ProxyConfig(
        endpoints=[url for _, url in process_workers],
        port=0,
        policy="round_robin",
        health=FAST_HEALTH,
        retry={"backoff_base": 0.001, "backoff_max": 0.01},
    )
    base_url = await stack.enter_async_context(running_proxy(config))
    await wait_ready(base_url, 2)
    victim = process_workers[0][0]
    outcomes: list[int] = []

    async def one(i: int) -> None:
        if i == 60:
            os.kill(victim.pid, signal.SIGKILL)
        outcomes.append((await post(base_url, CHAT))[0])

    semaphore = asyncio.Semaphore(16)

    async def bounded(i: int) -> None:
        async with semaphore:
            await one(i)

    await asyncio.gather(*(bounded(i) for i in range(300)))
    assert victim.wait(timeout=5) == -signal.SIGKILL
    assert outcomes.count(200) == 300, f"failed: {[s for s in outcomes if s != 200]}"
    assert await metric_total(base_url, "agent_eval_proxy_retries") >= 1


async def _drain(stream: object) -> None:
    async for _ in stream:  # type: ignore[attr-defined]
        pass
