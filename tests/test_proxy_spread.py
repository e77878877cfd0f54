"""Requests in flight through the real proxy: new sessions go where there is room."""

from __future__ import annotations

import asyncio

import pytest
from openai import AsyncOpenAI

from agent_eval.proxy.fleet.urls import normalize_worker_url
from tests.helpers.policies import plain_ring_owners
from tests.helpers.proxy import MakeClient, StartProxy, StartWorkers
from tests.helpers.waits import eventually

MODEL = "mock-model"
PER_WORKER = 4  # attempts in flight per worker, as in the default run: 8 on 2 workers


def keys_hashed_to(urls: list[str], owner: str, n: int, tag: str) -> list[str]:
    """`n` session keys that plain consistent hashing puts on `owner`."""
    candidates = [f"{tag}-{i}" for i in range(200 * n)]
    owners = plain_ring_owners(urls, candidates)
    keys = [key for key, url in zip(candidates, owners, strict=True) if url == owner][:n]
    assert len(keys) == n
    return keys


async def ask(client: AsyncOpenAI, session: str) -> None:
    await client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "What is 2 + 3?"}],
        extra_headers={"X-Session-ID": session},
    )


@pytest.mark.parametrize("n_workers", [2, 4])
async def test_new_sessions_spread_their_requests_over_workers_with_room(
    n_workers: int, start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    workers = await start_workers(n_workers)
    client = make_client(await start_proxy(workers))  # the default policy, session
    urls = [normalize_worker_url(w.url) for w in workers]
    # Attempts that ended stay live sessions for the TTL: they loosen the bound on sessions.
    for key in keys_hashed_to(urls, urls[-1], 10 * n_workers, "done"):
        await ask(client, key)
    for worker in workers:
        worker.behavior.hang = True
    wave = keys_hashed_to(urls, urls[0], PER_WORKER * n_workers, "new")
    asking = [asyncio.create_task(ask(client, key)) for key in wave]
    await eventually(lambda: sum(w.gate.held for w in workers) == len(wave))
    in_flight = [w.gate.held for w in workers]
    for worker in workers:
        worker.behavior.hang = False
        worker.gate.release()
    await asyncio.gather(*asking)
    # Every new session hashes to the first worker; the ones in flight still spread evenly.
    assert in_flight == [PER_WORKER] * n_workers
