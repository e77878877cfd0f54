"""Raw calls to a proxy and what its answers, /workers and /metrics say."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from agent_eval.testing.mock_worker import MockWorker
from tests.helpers.cli_runs import CLI
from tests.helpers.waits import until, wait_ready

CHAT = {"model": "mock-model", "messages": [{"role": "user", "content": "hello"}]}


async def worker_state(base_url: str, worker: MockWorker) -> dict:
    """The proxy's /workers entry of one worker."""
    body = await until(lambda _: True, base_url, "/workers")
    return next(w for w in body["workers"] if w["url"] == worker.url)


async def metric_total(base_url: str, family: str) -> float:
    """The sum of a family's samples on the proxy's /metrics: a counter's totals, a gauge's."""
    root = base_url.removesuffix("/v1")
    async with aiohttp.ClientSession() as http, http.get(root + "/metrics") as response:
        text = await response.text()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    totals = (family, family + "_total")
    return sum(s.value for s in families[family].samples if s.name in totals)


async def raw(
    method: str, url: str, data: bytes | None = None, headers: dict | None = None
) -> tuple[int, dict]:
    """Status and JSON body of one request, as sent."""
    async with (
        aiohttp.ClientSession() as http,
        http.request(method, url, data=data, headers=headers) as r,
    ):
        return r.status, await r.json(content_type=None)


def assert_openai_error(body: dict, code: str) -> str:
    """Check an OpenAI-shaped error body with this code; its message."""
    error = body["error"]
    assert set(error) >= {"message", "type", "code"}
    assert error["code"] == code
    return error["message"]


@contextlib.asynccontextmanager
async def serve_process(worker_url: str, *flags: str) -> AsyncIterator[tuple[str, int]]:
    """`agent-eval serve` over one worker in a process of its own: its base URL and pid."""
    serve = await asyncio.create_subprocess_exec(
        *CLI, "serve", "--port", "0", "--endpoint", worker_url, *flags,
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert serve.stdout is not None
        base_url = re.search(r"http://\S+/v1", (await serve.stdout.readline()).decode())[0]
        await wait_ready(base_url, 1)
        yield base_url, serve.pid
    finally:
        serve.terminate()
        await serve.wait()
