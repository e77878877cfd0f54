"""GET /workers/queues: the workers' own queues, read once for every caller within a max age."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp

from agent_eval.testing.mock_worker import MockWorker
from tests.helpers.proxy import FAST_HEALTH, StartProxy, StartWorkers

LOAD = "/get_load"


async def _queues(http: aiohttp.ClientSession, base_url: str) -> list[dict[str, Any]]:
    async with http.get(base_url.removesuffix("/v1") + "/workers/queues") as answer:
        assert answer.status == 200
        body: list[dict[str, Any]] = (await answer.json())["workers"]
        return body


def _readings(workers: list[MockWorker]) -> list[int]:
    return [worker.stats.requests[LOAD] for worker in workers]


async def test_many_callers_within_the_max_age_cost_one_reading_of_each_worker(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    workers = await start_workers(3)
    health = {**FAST_HEALTH, "queues_max_age": 600.0}
    base_url = await start_proxy(workers, health=health)
    assert _readings(workers) == [0, 0, 0]
    async with aiohttp.ClientSession() as http:
        together = await asyncio.gather(*(_queues(http, base_url) for _ in range(40)))
        after = [await _queues(http, base_url) for _ in range(10)]
    assert _readings(workers) == [1, 1, 1]
    expected = [{"url": worker.url, "waiting": 0} for worker in workers]
    assert all(answer == expected for answer in together + after)


async def test_a_reading_past_the_max_age_asks_the_workers_again(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    workers = await start_workers(2)
    base_url = await start_proxy(workers, health={**FAST_HEALTH, "queues_max_age": 0.0})
    async with aiohttp.ClientSession() as http:
        for _ in range(5):
            assert [q["waiting"] for q in await _queues(http, base_url)] == [0, 0]
    assert _readings(workers) == [5, 5]
