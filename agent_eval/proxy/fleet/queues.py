"""The workers' own queues, read on demand: SGLang's GET /get_load, for adaptive concurrency.

Each data-parallel rank answers `{"num_reqs", "num_waiting_reqs", ...}`; the requests waiting
are those the worker took but cannot run yet. A worker without the route (vLLM, llama.cpp)
answers None: its queue is unknown, not empty.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import orjson
from pydantic import SecretStr

from agent_eval.proxy.fleet.worker import Worker
from agent_eval.proxy.upstream.headers import worker_auth
from agent_eval.proxy.upstream.http1 import UpstreamTooLarge, read_whole

LOAD_PATH = "/get_load"
LOAD_BYTES = 64 * 1024
"""Bytes of an answer read at most: one small object per data-parallel rank."""
LOAD_TIMEOUT = 1.0
"""Seconds a worker may take to answer: a queue read late is of no use to the controller."""


def waiting_requests(body: bytes) -> int | None:
    """Requests waiting across the ranks of a /get_load answer; None when it is not one."""
    try:
        ranks: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    ranks = ranks if isinstance(ranks, list) else [ranks]
    counts: list[int] = []
    for rank in ranks:
        count = rank.get("num_waiting_reqs") if isinstance(rank, dict) else None
        if type(count) is not int or count < 0:
            return None
        counts.append(count)
    return sum(counts) if counts else None


async def worker_queue(
    session: aiohttp.ClientSession, worker: Worker, key: SecretStr | None
) -> int | None:
    """The requests waiting at `worker`; None when it does not say."""
    timeout = aiohttp.ClientTimeout(total=LOAD_TIMEOUT)
    try:
        async with session.get(
            worker.url + LOAD_PATH, headers=worker_auth(key, worker), timeout=timeout
        ) as response:
            if response.status != 200:
                return None
            body = await read_whole(response.content.readany, response.content_length, LOAD_BYTES)
    except (TimeoutError, aiohttp.ClientError, OSError, UpstreamTooLarge):
        return None
    return waiting_requests(body)


async def worker_queues(
    session: aiohttp.ClientSession, workers: list[Worker], key: SecretStr | None
) -> list[dict[str, Any]]:
    """Each worker's URL and the requests waiting there (None: unknown), asked all at once."""
    waiting = await asyncio.gather(*(worker_queue(session, w, key) for w in workers))
    return [{"url": w.url, "waiting": n} for w, n in zip(workers, waiting, strict=True)]


Queues = list[dict[str, Any]]


class QueueReadings:
    """The workers' queues read at most once every `max_age` seconds, however many ask: each
    engine process asks every half second, and at 1,000 workers a reading is 1,000 requests."""

    def __init__(self, max_age: float) -> None:
        self._max_age = max_age
        self._started = -math.inf
        self._reading: asyncio.Future[Queues] | None = None

    async def read(self, sweep: Callable[[], Awaitable[Queues]]) -> Queues:
        """The last reading while it is fresh or under way, else a new one by `sweep`."""
        now = time.monotonic()
        reading = self._reading
        if reading is None or (reading.done() and now - self._started >= self._max_age):
            self._started = now
            reading = self._reading = asyncio.ensure_future(sweep())
        # Shielded: a caller that leaves does not cancel the reading the others wait for.
        return await asyncio.shield(reading)
