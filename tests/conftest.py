"""Fixtures: mock workers on real ports, a proxy in front of them, a headless browser, a
terminal."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer
from openai import AsyncOpenAI

from agent_eval.proxy.admin_client import WorkerLoad
from agent_eval.proxy.config import ProxyConfig
from agent_eval.proxy.server.listener import running_proxy
from agent_eval.run.engine import Progress
from agent_eval.testing.mock_worker import MockWorker
from agent_eval.view.server import create_app
from tests.browser import BrowserPage, browser_page
from tests.terminal import OnTerminal, terminal

StartWorkers = Callable[..., Awaitable[list[MockWorker]]]
MakeClient = Callable[..., AsyncOpenAI]
StartProxy = Callable[..., Awaitable[str]]

# Fast probes so tests wait on health changes for fractions of a second, not the default 5 s.
FAST_HEALTH = {"interval": 0.05, "timeout": 1.0, "failure_threshold": 1, "success_threshold": 1}


class QuietObserver:
    """A run observer that shows nothing."""

    def waiting(self, reason: str) -> None:
        pass

    def set_proxy(
        self, base_url: str | None, api_key: str | None = None, since: WorkerLoad | None = None
    ) -> None:
        pass

    def on_progress(self, progress: Progress) -> None:
        pass


@pytest.fixture
async def stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as exits:
        yield exits


@pytest.fixture
async def browser() -> AsyncIterator[BrowserPage]:
    """A page in headless Chromium; skipped without Chromium or playwright (tests/browser.py)."""
    async with browser_page() as page:
        yield page


@pytest.fixture
async def on_terminal(tmp_path: Path) -> AsyncIterator[OnTerminal]:
    """Commands on a real terminal, tmux (tests/terminal.py); skipped without tmux."""
    async with terminal(f"agent-eval-test-{os.getpid()}-{id(tmp_path)}") as run:
        yield run


@pytest.fixture
async def client(root: Path) -> AsyncIterator[TestClient[Any, Any]]:
    """The view's app over the module's `root` folder of runs, with a test client."""
    async with TestClient(TestServer(create_app([root]))) as test_client:
        yield test_client


@pytest.fixture
def start_workers(stack: AsyncExitStack) -> StartWorkers:
    """Start n mock workers named w0, w1, ...; they stop after the test."""

    async def start(
        n: int, model: str = "mock-model", responses_api: bool = True
    ) -> list[MockWorker]:
        workers = [
            MockWorker(name=f"w{i}", model=model, responses_api=responses_api) for i in range(n)
        ]
        for worker in workers:
            await stack.enter_async_context(worker)
        return workers

    return start


@pytest.fixture
def make_client(stack: AsyncExitStack) -> MakeClient:
    """An AsyncOpenAI client for a proxy (with a session header if given), closed after the test."""

    def make(base_url: str, session: str | None = None, api_key: str = "unused") -> AsyncOpenAI:
        headers = {"X-Session-ID": session} if session else None
        client = AsyncOpenAI(
            base_url=base_url, api_key=api_key, default_headers=headers, max_retries=0
        )
        stack.push_async_callback(client.close)
        return client

    return make


@pytest.fixture
def start_proxy(stack: AsyncExitStack) -> StartProxy:
    """Start a proxy (free port) over the given workers or URLs; returns its base URL (/v1)."""

    async def start(workers: list[MockWorker] | list[str], **settings: Any) -> str:
        settings.setdefault("health", FAST_HEALTH)
        settings.setdefault("retry", {"backoff_base": 0.001, "backoff_max": 0.01})
        urls = [w if isinstance(w, str) else w.url for w in workers]
        config = ProxyConfig(endpoints=urls, port=0, **settings)
        base_url = await stack.enter_async_context(running_proxy(config))
        await wait_ready(base_url, len(workers))
        return base_url

    return start


async def wait_ready(base_url: str, healthy: int, timeout: float = 10.0) -> None:
    """Wait until /readiness counts `healthy` healthy workers."""
    await until(
        lambda status: status.get("healthy_workers", 0) >= healthy, base_url, "/readiness", timeout
    )


async def until(
    condition: Callable[[dict[str, Any]], bool], base_url: str, path: str, timeout: float = 10.0
) -> dict[str, Any]:
    """Poll a proxy JSON route until `condition` holds on its body; fail after `timeout`."""
    root = base_url.removesuffix("/v1")
    last: dict[str, Any] = {}

    async def check() -> bool:
        nonlocal last
        async with aiohttp.ClientSession() as session, session.get(root + path) as response:
            last = await response.json()
        return condition(last)

    await eventually(check, timeout, lambda: f"{path} never met the condition; last: {last}")
    return last


async def eventually(
    check: Callable[[], Awaitable[bool] | bool], timeout: float = 10.0, why: Callable[[], str] = str
) -> None:
    """Wait for a condition set by another task or process; fail after `timeout` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        result = check()
        if result if isinstance(result, bool) else await result:
            return
        if loop.time() > deadline:
            raise AssertionError(why() or "condition never held")
        await asyncio.sleep(0.02)


def alive(pid: int) -> bool:
    """Whether a process with this pid exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def answers(url: str, path: str = "/health") -> bool:
    """Whether a server answers 200 on `path`; False when nothing listens."""
    try:
        async with aiohttp.ClientSession() as http, http.get(url + path) as response:
            return response.status == 200
    except aiohttp.ClientError:
        return False


def listener_pid(base_url: str) -> int | None:
    """The pid of the process listening on the server's port, found through /proc."""
    port = int(base_url.rsplit(":", 1)[1].split("/")[0])
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
                inodes.add(fields[9])
    for fd in Path("/proc").glob("[0-9]*/fd/*"):
        try:
            target = fd.readlink().name
        except OSError:
            continue
        if target.startswith("socket:[") and target[8:-1] in inodes:
            return int(fd.parts[2])
    return None


def rss_mb(pid: int) -> float:
    """The resident memory of a process, in MB (2^20 bytes), read from /proc."""
    status = Path(f"/proc/{pid}/status").read_text()
    line = next(line for line in status.splitlines() if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024
