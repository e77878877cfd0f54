"""Mock workers on real ports, a proxy in front of them and clients of it, each closed with the
test's exit stack: the functions behind conftest's start_workers, start_proxy, make_client."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

from openai import AsyncOpenAI

from agent_eval.proxy.config import ProxyConfig
from agent_eval.proxy.server.listener import running_proxy
from agent_eval.testing.mock_worker import MockWorker
from tests.helpers.waits import wait_ready

if TYPE_CHECKING:  # imported when a test makes one: the SDK takes a second or two to import
    from anthropic import AsyncAnthropic

StartWorkers = Callable[..., Awaitable[list[MockWorker]]]
MakeClient = Callable[..., AsyncOpenAI]
MakeAnthropic = Callable[..., "AsyncAnthropic"]
StartProxy = Callable[..., Awaitable[str]]

# Fast probes so tests wait on health changes for fractions of a second, not the default 5 s.
FAST_HEALTH = {"interval": 0.05, "timeout": 1.0, "failure_threshold": 1, "success_threshold": 1}


def worker_starter(stack: AsyncExitStack) -> StartWorkers:
    """Start n mock workers named w0, w1, ...; they stop when the stack closes."""

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


def client_maker(stack: AsyncExitStack) -> MakeClient:
    """An AsyncOpenAI client for a proxy (with a session header if given), closed with the stack."""

    def make(base_url: str, session: str | None = None, api_key: str = "unused") -> AsyncOpenAI:
        headers = {"X-Session-ID": session} if session else None
        client = AsyncOpenAI(
            base_url=base_url, api_key=api_key, default_headers=headers, max_retries=0
        )
        stack.push_async_callback(client.close)
        return client

    return make


def anthropic_maker(stack: AsyncExitStack) -> MakeAnthropic:
    """An AsyncAnthropic client for a proxy's base URL (…/v1), closed with the stack."""

    def make(base_url: str, api_key: str = "unused", **options: Any) -> AsyncAnthropic:
        from anthropic import AsyncAnthropic

        origin = base_url.removesuffix("/v1")
        client = AsyncAnthropic(base_url=origin, api_key=api_key, max_retries=0, **options)
        stack.push_async_callback(client.close)
        return client

    return make


def proxy_starter(stack: AsyncExitStack) -> StartProxy:
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
