"""The mock worker's simulated prefix cache: block arithmetic, usage on the wire, prefill delay."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam

from agent_eval.testing.kv_cache import CacheConfig, Prefill, PrefixCache, approx_tokens
from agent_eval.testing.mock_worker import MockWorker
from agent_eval.testing.templates import chat_text

BLOCK = 16  # tokens per block; 64 bytes of ASCII
SYSTEM = "You are a careful agent. Use the tools. " * 20
TOOLS: list[ChatCompletionToolParam] = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two numbers.",
            "parameters": {"type": "object", "properties": {"a": {"type": "number"}}},
        },
    }
]
MESSAGES: list[ChatCompletionMessageParam] = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": "What is 2 + 3?"},
]


def _text(tokens: int, fill: str = "a") -> str:
    """ASCII text of exactly `tokens` tokens (4 bytes each)."""
    return fill * (4 * tokens)


def _cached_after_repeat(prompt_tokens: int) -> int:
    """What a repeated prompt finds: every full block but the one with its last token."""
    return (prompt_tokens - 1) // BLOCK * BLOCK


def _seen(cache: PrefixCache, text: str) -> int:
    """Cached tokens of `text`, which is then inserted."""
    lookup = cache.lookup(text)
    cache.insert(lookup)
    return lookup.cached_tokens


@pytest.mark.parametrize(("tokens", "cached"), [(101, 96), (64, 48), (16, 0), (17, 16)])
def test_a_repeated_prompt_is_cached_but_for_its_last_partial_block(
    tokens: int, cached: int
) -> None:
    cache = PrefixCache(capacity_tokens=4096, block_tokens=BLOCK)
    text = _text(tokens)
    assert approx_tokens(text) == tokens
    assert _seen(cache, text) == 0
    lookup = cache.lookup(text)
    assert (lookup.prompt_tokens, lookup.cached_tokens) == (tokens, cached)


def test_a_shared_prefix_gets_exactly_its_full_blocks() -> None:
    cache = PrefixCache(capacity_tokens=4096, block_tokens=BLOCK)
    shared = _text(40)  # two full blocks and half of a third
    _seen(cache, shared + _text(60, "x"))
    assert _seen(cache, shared + _text(60, "y")) == 2 * BLOCK


def test_eviction_at_capacity_drops_the_least_recent_blocks_deepest_first() -> None:
    cache = PrefixCache(capacity_tokens=4 * BLOCK, block_tokens=BLOCK)
    first, second = _text(3 * BLOCK + 1, "a"), _text(3 * BLOCK + 1, "b")  # three blocks each
    _seen(cache, first)
    _seen(cache, second)
    assert len(cache) == 4
    # The first prompt lost its two deepest blocks and keeps its first; the second is whole.
    assert cache.lookup(first).cached_tokens == BLOCK
    assert cache.lookup(second).cached_tokens == 3 * BLOCK


def test_a_prompt_seen_again_outlives_one_not_seen_since() -> None:
    cache = PrefixCache(capacity_tokens=4 * BLOCK, block_tokens=BLOCK)
    kept, dropped = _text(2 * BLOCK + 1, "a"), _text(2 * BLOCK + 1, "b")  # two blocks each
    for text in (kept, dropped, kept, _text(2 * BLOCK + 1, "c")):
        _seen(cache, text)
    assert (cache.lookup(kept).cached_tokens, cache.lookup(dropped).cached_tokens) == (32, 0)


def test_a_block_is_cached_only_behind_the_same_prefix() -> None:
    cache = PrefixCache(capacity_tokens=4096, block_tokens=BLOCK)
    first, second = _text(BLOCK, "p"), _text(BLOCK, "q")
    _seen(cache, first + second + "tail")
    assert _seen(cache, second + second + "tail") == 0


def test_a_different_system_prompt_shares_nothing() -> None:
    cache = PrefixCache(capacity_tokens=4096, block_tokens=BLOCK)
    other: list[ChatCompletionMessageParam] = [
        {"role": "system", "content": "Another agent. " + SYSTEM},
        MESSAGES[1],
    ]
    _seen(cache, chat_text({"messages": MESSAGES, "tools": TOOLS}))
    assert _seen(cache, chat_text({"messages": other, "tools": TOOLS})) == 0


def test_a_grown_conversation_finds_every_full_block_of_its_previous_turn() -> None:
    cache = PrefixCache(capacity_tokens=4096, block_tokens=BLOCK)
    before = chat_text({"messages": MESSAGES, "tools": TOOLS})
    call = {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": "{}"}}
    grown = [
        *MESSAGES,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "5"},
    ]
    _seen(cache, before)
    assert _seen(cache, chat_text({"messages": grown, "tools": TOOLS})) == (
        approx_tokens(before) // BLOCK * BLOCK
    )


class SleepLog:
    """An injected sleep: records each delay and returns at once, or waits while held."""

    def __init__(self) -> None:
        self.delays: list[float] = []
        self.called = asyncio.Event()
        self.held: asyncio.Event | None = None

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        self.called.set()
        if self.held is not None:
            await self.held.wait()


async def test_the_prefill_delay_is_paid_per_uncached_token() -> None:
    sleep = SleepLog()
    prefill = Prefill(CacheConfig(prefill_per_token=0.001), sleep)
    text = _text(101)
    await prefill.run(text)
    await prefill.run(text)
    assert sleep.delays == pytest.approx([101 * 0.001, 5 * 0.001])


NO_DELAY = CacheConfig(prefill_per_token=0.0)


@pytest.fixture
async def worker() -> AsyncIterator[MockWorker]:
    async with MockWorker(name="w-cache", cache=NO_DELAY) as mock:
        yield mock


@pytest.fixture
async def client(worker: MockWorker) -> AsyncIterator[AsyncOpenAI]:
    async with AsyncOpenAI(base_url=f"{worker.url}/v1", api_key="unused", max_retries=0) as sdk:
        yield sdk


def _chat_tokens() -> int:
    return approx_tokens(chat_text({"messages": MESSAGES, "tools": TOOLS}))


async def test_chat_usage_reports_cached_tokens(worker: MockWorker, client: AsyncOpenAI) -> None:
    found = []
    for _ in range(2):
        usage = (
            await client.chat.completions.create(model="m", messages=MESSAGES, tools=TOOLS)
        ).usage
        assert usage is not None and usage.prompt_tokens_details is not None
        assert usage.prompt_tokens == _chat_tokens()
        found.append(usage.prompt_tokens_details.cached_tokens)
    assert found == [0, _cached_after_repeat(_chat_tokens())]
    assert (worker.stats.prompt_tokens, worker.stats.cached_tokens) == (
        2 * _chat_tokens(),
        found[1],
    )


async def test_streamed_chat_usage_reports_cached_tokens(client: AsyncOpenAI) -> None:
    found = []
    for _ in range(2):
        stream = await client.chat.completions.create(
            model="m",
            messages=MESSAGES,
            tools=TOOLS,
            stream=True,
            stream_options={"include_usage": True},
        )
        usage = [chunk async for chunk in stream][-1].usage
        assert usage is not None and usage.prompt_tokens_details is not None
        found.append(usage.prompt_tokens_details.cached_tokens)
    assert found == [0, _cached_after_repeat(_chat_tokens())]


async def test_completion_usage_reports_cached_tokens(client: AsyncOpenAI) -> None:
    prompt = _text(50)
    found = []
    for stream in (False, True):
        if stream:
            chunks = await client.completions.create(
                model="m", prompt=prompt, stream=True, stream_options={"include_usage": True}
            )
            usage = [chunk async for chunk in chunks][-1].usage
        else:
            usage = (await client.completions.create(model="m", prompt=prompt)).usage
        assert usage is not None and usage.prompt_tokens_details is not None
        assert usage.prompt_tokens == 50
        found.append(usage.prompt_tokens_details.cached_tokens)
    assert found == [0, 48]


async def test_responses_usage_reports_cached_input_tokens(client: AsyncOpenAI) -> None:
    ask: dict[str, Any] = {"model": "m", "instructions": SYSTEM, "input": "What is 2 + 3?"}
    first = await client.responses.create(**ask)
    stream = await client.responses.create(**ask, stream=True)
    events = [event async for event in stream]
    assert events[-1].type == "response.completed"
    second = events[-1].response
    assert first.usage is not None and second.usage is not None
    tokens = first.usage.input_tokens
    assert first.usage.input_tokens_details.cached_tokens == 0
    assert second.usage.input_tokens_details.cached_tokens == _cached_after_repeat(tokens)


async def test_without_the_cache_usage_has_no_cached_tokens() -> None:
    async with (
        MockWorker() as plain,
        AsyncOpenAI(base_url=f"{plain.url}/v1", api_key="unused", max_retries=0) as sdk,
    ):
        usage = (await sdk.chat.completions.create(model="m", messages=MESSAGES)).usage
    assert usage is not None and usage.prompt_tokens_details is None
    assert (plain.stats.prompt_tokens, plain.stats.cached_tokens) == (0, 0)


async def test_stats_count_tokens_and_clearing_empties_the_cache(
    worker: MockWorker, client: AsyncOpenAI
) -> None:
    await client.completions.create(model="m", prompt=_text(50))
    await client.completions.create(model="m", prompt=_text(50))
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{worker.url}/mock/stats") as answer:
            stats = await answer.json()
        async with http.delete(f"{worker.url}/mock/cache") as answer:
            assert answer.status == 200
    assert (stats["prompt_tokens"], stats["cached_tokens"]) == (100, 48)
    usage = (await client.completions.create(model="m", prompt=_text(50))).usage
    assert usage is not None and usage.prompt_tokens_details is not None
    assert usage.prompt_tokens_details.cached_tokens == 0


async def test_the_worker_sleeps_for_the_uncached_tokens_of_each_request(
    worker: MockWorker, client: AsyncOpenAI
) -> None:
    sleep = SleepLog()
    assert worker.state.prefill is not None
    worker.state.prefill = Prefill(CacheConfig(prefill_per_token=0.001), sleep)
    uncached = []
    for _ in range(2):
        usage = (await client.completions.create(model="m", prompt=_text(50))).usage
        assert usage is not None and usage.prompt_tokens_details is not None
        uncached.append(usage.prompt_tokens - (usage.prompt_tokens_details.cached_tokens or 0))
    assert uncached == [50, 2]
    assert sleep.delays == pytest.approx([50 * 0.001, 2 * 0.001])


async def test_a_stream_starts_only_after_its_prefill(worker: MockWorker) -> None:
    sleep = SleepLog()
    sleep.held = asyncio.Event()
    worker.state.prefill = Prefill(NO_DELAY, sleep)
    body = {"model": "m", "prompt": _text(50), "stream": True}
    async with aiohttp.ClientSession() as http:
        started = asyncio.create_task(http.post(f"{worker.url}/v1/completions", json=body))
        await sleep.called.wait()
        for _ in range(20):  # room for headers already written to reach the client
            await asyncio.sleep(0)
        assert not started.done()
        sleep.held.set()
        async with await started as answer:
            assert answer.status == 200
            assert (await answer.read()).endswith(b"data: [DONE]\n\n")
