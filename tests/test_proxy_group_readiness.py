"""A proxy of several processes is ready only when every process knows its workers' health."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from agent_eval.proxy.config import ProxyConfig
from agent_eval.proxy.server.group import LOCAL_HEADER
from agent_eval.proxy.server.process import proxy_group
from tests.helpers.proxy import FAST_HEALTH, StartWorkers
from tests.helpers.waits import eventually, until, wait_ready

# Probes that never time out in the test: a held probe is answered only when it is released.
PATIENT_HEALTH = {**FAST_HEALTH, "timeout": 60.0}


class HeldProbes:
    """Answers the first health probe at once and holds the later ones until released: of two
    proxy processes, the one whose probe came first finishes its first round, the other not."""

    def __init__(self) -> None:
        self.released = asyncio.Event()
        self.probes = 0

    async def health(self, request: web.Request) -> web.Response:
        self.probes += 1
        if self.probes > 1:
            await self.released.wait()
        return web.json_response({"status": "ok"})


@contextlib.asynccontextmanager
async def held_worker() -> AsyncIterator[tuple[HeldProbes, str]]:
    """A worker of HeldProbes on a free port, and its URL; its held probes go on at the end."""
    held = HeldProbes()
    app = web.Application()
    app.router.add_get("/health", held.health)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield held, f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        held.released.set()
        await runner.cleanup()


async def _readiness(url: str, **headers: str) -> tuple[int, dict[str, Any]]:
    """GET /readiness on a connection of its own (so the kernel may pick either process)."""
    async with aiohttp.ClientSession() as http, http.get(url + "/readiness", headers=headers) as r:
        return r.status, await r.json()


async def test_the_group_is_not_ready_while_one_process_has_not_probed_every_worker(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    workers = await start_workers(1)
    async with held_worker() as (held, held_url):
        config = ProxyConfig(
            endpoints=[workers[0].url, held_url], port=0, health=PATIENT_HEALTH, processes=2
        )
        async with proxy_group(config, tmp_path) as group:
            origins = [(tmp_path / "proxy-group" / f"member-{i}").read_text() for i in (0, 1)]

            ready: list[int] = []

            async def one_process_ready() -> bool:
                # The first to probe the held worker knows both workers; the other knows one.
                own = [await _readiness(origin, **{LOCAL_HEADER: "1"}) for origin in origins]
                ready[:] = [i for i, (status, _) in enumerate(own) if status == 200]
                return sorted(status for status, _ in own) == [200, 503]

            await eventually(one_process_ready, 30, lambda: "no process became ready alone")
            status, body = await _readiness(origins[ready[0]])  # the group's answer, asked there
            assert status == 503 and f"proxy process {1 - ready[0]}: " in body["error"]["message"]
            root = group.base_url.removesuffix("/v1")
            answers = [await _readiness(root) for _ in range(20)]  # both processes answer some
            assert {status for status, _ in answers} == {503}, answers
            assert {body["error"]["code"] for _, body in answers} == {"proxy_starting"}
            held.released.set()
            await wait_ready(group.base_url, 2, 30)
            status, body = await _readiness(root)
    assert (status, body["healthy_workers"], body["processes"]) == (200, 2, 2)


async def test_one_process_is_not_ready_until_its_first_round_of_probes_is_done(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    workers = await start_workers(1)
    async with held_worker() as (held, held_url):
        held.probes = 1  # every probe is held, the first too
        endpoints = [workers[0].url, held_url]
        config = ProxyConfig(endpoints=endpoints, port=0, health=PATIENT_HEALTH, processes=1)
        async with proxy_group(config, tmp_path) as group:
            root = group.base_url.removesuffix("/v1")
            await until(lambda b: b["workers"][0]["healthy"], group.base_url, "/workers", 30)
            assert held.probes == 2  # held: the first round is not done
            status, body = await _readiness(root)  # one worker healthy, the other not known
            assert (status, body["error"]["code"]) == (503, "proxy_starting")
            held.released.set()
            await wait_ready(group.base_url, 2, 30)
