"""Workers' cache reports as proxy metrics, and the retries header the proxy answers with."""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

import aiohttp
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from agent_eval.proxy.server.metrics import CacheTally
from agent_eval.proxy.upstream.streaming import Passthrough
from agent_eval.testing.mock_worker import MockWorker
from agent_eval.usage import reported_tokens
from tests.helpers.caching_worker import MODEL, CachingWorker
from tests.helpers.proxy import MakeClient, StartProxy, StartWorkers
from tests.helpers.waits import until

CHAT: dict[str, Any] = {"model": MODEL, "messages": [{"role": "user", "content": "2 + 2?"}]}


async def three_workers(stack: AsyncExitStack) -> tuple[CachingWorker, ...]:
    """One that reports cached tokens, one that reports usage without them, one without usage."""
    workers = (CachingWorker(), CachingWorker(cached_tokens=None), CachingWorker(usage=False))
    for worker in workers:
        await stack.enter_async_context(worker)
    return workers


async def token_counters(base_url: str) -> dict[tuple[str, str], float]:
    """(family, worker) -> value of the proxy's token counters on /metrics."""
    root = base_url.removesuffix("/v1")
    async with aiohttp.ClientSession() as http, http.get(root + "/metrics") as response:
        text = await response.text()
    return {
        (sample.name, sample.labels["worker"]): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name
        in ("agent_eval_proxy_prompt_tokens_total", "agent_eval_proxy_cached_tokens_total")
    }


async def workers_view(base_url: str) -> dict[str, dict[str, Any]]:
    body = await until(lambda _: True, base_url, "/workers")
    return {worker["url"]: worker for worker in body["workers"]}


@pytest.mark.parametrize("stream", [False, True])
async def test_tokens_are_counted_per_worker_from_what_each_reports(
    stack: AsyncExitStack, start_proxy: StartProxy, make_client: MakeClient, stream: bool
) -> None:
    reports, silent, bare = await three_workers(stack)
    base_url = await start_proxy([w.url for w in (reports, silent, bare)], policy="round_robin")
    client = make_client(base_url)
    for _ in range(6):
        if stream:
            chunks = await client.chat.completions.create(
                **CHAT, stream=True, stream_options={"include_usage": True}
            )
            assert [chunk async for chunk in chunks]
        else:
            await client.chat.completions.create(**CHAT)
    assert reports.served and silent.served and bare.served
    counters = await token_counters(base_url)
    assert counters[("agent_eval_proxy_prompt_tokens_total", reports.url)] == 100 * reports.served
    assert counters[("agent_eval_proxy_cached_tokens_total", reports.url)] == 60 * reports.served
    assert counters[("agent_eval_proxy_prompt_tokens_total", silent.url)] == 100 * silent.served
    # Not reported is not zero hits: no cached counter for a worker that never said.
    assert ("agent_eval_proxy_cached_tokens_total", silent.url) not in counters
    assert not [key for key in counters if key[1] == bare.url]
    view = await workers_view(base_url)
    assert view[reports.url]["cache_hit_rate"] == pytest.approx(0.6)
    assert view[reports.url]["cached_tokens"] == 60 * reports.served
    assert view[silent.url]["prompt_tokens"] == 100 * silent.served
    assert view[silent.url]["cached_tokens"] is None and view[silent.url]["cache_hit_rate"] is None
    assert view[bare.url]["prompt_tokens"] == 0 and view[bare.url]["cache_hit_rate"] is None


async def test_a_stream_without_usage_counts_nothing(
    stack: AsyncExitStack, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    worker = await stack.enter_async_context(CachingWorker())
    base_url = await start_proxy([worker.url])
    chunks = await make_client(base_url).chat.completions.create(**CHAT, stream=True)
    assert [chunk async for chunk in chunks][-1].usage is None
    assert await token_counters(base_url) == {}
    assert (await workers_view(base_url))[worker.url]["prompt_tokens"] == 0


async def test_a_followed_stream_is_counted_from_the_answer_it_spelled_out(
    stack: AsyncExitStack, start_proxy: StartProxy, make_client: MakeClient, tmp_path: Any
) -> None:
    worker = await stack.enter_async_context(CachingWorker(prompt_tokens=40, cached_tokens=32))
    base_url = await start_proxy([worker.url], record_dir=tmp_path)
    chunks = await make_client(base_url).chat.completions.create(
        **CHAT, stream=True, stream_options={"include_usage": True}
    )
    assert [chunk async for chunk in chunks]
    assert (await workers_view(base_url))[worker.url]["cache_hit_rate"] == 0.8


def test_the_usage_event_is_found_across_the_last_two_chunks() -> None:
    relay = Passthrough(None, None, max_event_bytes=1024)
    usage = b'data: {"choices": [], "usage": {"prompt_tokens": 9, "prompt_tokens_details": {"cac'
    for chunk in (b'data: {"choices": [{"delta": {"content": "\\"usage\\""}}]}\n\n', usage):
        relay.feed(chunk)
    relay.feed(b'hed_tokens": 4}}}\n\ndata: [DONE]\n\n')
    assert relay.usage_event() == {
        "choices": [],
        "usage": {"prompt_tokens": 9, "prompt_tokens_details": {"cached_tokens": 4}},
    }
    relay.feed(b"data: [DONE]\n\n")  # the usage event is no longer among the last two chunks
    relay.feed(b"")
    assert relay.usage_event() is None


@pytest.mark.parametrize(
    ("usage", "tokens"),
    [
        ({"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 4}}, (10, 4)),
        ({"input_tokens": 10, "input_tokens_details": {"cached_tokens": 7}}, (10, 7)),
        ({"prompt_tokens": 10, "prompt_tokens_details": None}, (10, None)),
        ({"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": True}}, (10, None)),
        ({"prompt_tokens": "10", "prompt_tokens_details": {"cached_tokens": 4}}, None),
        ({"prompt_tokens": -1}, None),
        (None, None),
    ],
)
def test_usage_blocks_of_every_shape_are_read_and_odd_ones_ignored(
    usage: dict[str, Any] | None, tokens: tuple[int, int | None] | None
) -> None:
    assert reported_tokens(usage) == tokens


def test_a_tally_has_a_hit_rate_only_once_cached_tokens_were_reported() -> None:
    tally = CacheTally()
    tally.add(10, None)
    assert tally.snapshot() == {"prompt_tokens": 10, "cached_tokens": None, "cache_hit_rate": None}
    tally.add(30, 20)
    assert tally.snapshot() == {"prompt_tokens": 40, "cached_tokens": 20, "cache_hit_rate": 0.5}


async def test_the_retries_header_counts_the_workers_that_failed_first(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    bad, good = await start_workers(2)
    bad.behavior.error_status, bad.behavior.error_count = 503, 1
    base_url = await start_proxy([bad, good], policy="round_robin")
    client = make_client(base_url)
    chat = {**CHAT, "model": "mock-model"}
    answers = [await client.chat.completions.with_raw_response.create(**chat) for _ in range(2)]
    assert sorted(answer.headers["x-agent-eval-retries"] for answer in answers) == ["0", "1"]
    assert {answer.headers["x-agent-eval-worker"] for answer in answers} == {good.url, bad.url}


async def test_an_exhausted_request_says_the_retries_it_took(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    workers: list[MockWorker] = await start_workers(2)
    for worker in workers:
        worker.behavior.error_status = 503
    retry = {"max_retries": 2, "backoff_base": 0.001, "backoff_max": 0.01}
    base_url = await start_proxy(workers, retry=retry)
    with pytest.raises(openai.APIStatusError) as caught:
        await make_client(base_url).chat.completions.create(**{**CHAT, "model": "mock-model"})
    assert caught.value.response.headers["x-agent-eval-retries"] == "2"
