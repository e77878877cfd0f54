"""Workers and the router proxy in front of them, as one block: launched, checked, stopped."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from openai import AsyncOpenAI
from pydantic import SecretStr

from agent_eval.errors import ConfigError, ProxyStartError, StorageError
from agent_eval.proxy.admin_client import WorkerLoad, fetch_workers, load_since
from agent_eval.proxy.server.process import proxy_process
from agent_eval.proxy.upstream.headers import bearer
from agent_eval.results.files import save_worker_snapshot
from agent_eval.run.config import RunConfig
from agent_eval.run.workers import WorkerEndpoint, launched_workers
from agent_eval.system.credentials import client_key
from agent_eval.system.diagnostics import os_reason

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Served:
    """A model behind the proxy: its client, the name requests use, the workers' own URLs."""

    base_url: str
    api_key: str
    client: AsyncOpenAI
    model: str
    workers: list[WorkerEndpoint]
    admin_token: str | None = None
    """The proxy's admin token: what opens per-attempt keys (POST /attempts)."""


@contextlib.asynccontextmanager
async def serving(config: RunConfig, on_wait: Callable[[str], None]) -> AsyncIterator[Served]:
    """The config's workers and a proxy process in front of them, inside the block."""
    async with (
        worker_endpoints(config, on_wait) as endpoints,
        proxied(config, endpoints, on_wait) as served,
    ):
        yield served


@contextlib.asynccontextmanager
async def worker_endpoints(
    config: RunConfig, on_wait: Callable[[str], None]
) -> AsyncIterator[list[WorkerEndpoint]]:
    """The config's workers, launched or given, answering inside the block."""
    worker_key = config.proxy.worker_api_key
    async with launched_workers(config, config.run_dir, on_wait, worker_key) as endpoints:
        if config.rollout.endpoints:
            on_wait("checking the endpoints")
            await _check_endpoints(endpoints, worker_key)
        yield endpoints


@contextlib.asynccontextmanager
async def proxied(
    config: RunConfig, endpoints: list[WorkerEndpoint], on_wait: Callable[[str], None]
) -> AsyncIterator[Served]:
    """A proxy process in front of `endpoints`, ready, with a client of it, inside the block."""
    on_wait("starting the proxy")
    health = config.proxy.health.model_copy(update={"path": endpoints[0].health_path})
    record = config.run_dir / "exchanges" if config.output.record else None
    proxy = config.proxy.model_copy(
        update={
            "endpoints": [*config.proxy.endpoints, *(e.url for e in endpoints)],
            "health": health,
            "record_dir": config.proxy.record_dir or record,
        }
    ).with_admin_token()
    assert proxy.admin_token is not None, "with_admin_token() made one"
    token = proxy.admin_token.get_secret_value()
    key = client_key(config.proxy.api_key)
    async with (
        proxy_process(proxy, config.run_dir) as base_url,
        AsyncOpenAI(base_url=base_url, api_key=key) as client,
    ):
        every = config.rollout.reproducible
        on_wait(f"waiting for the proxy to see {'every' if every else 'a'} healthy worker")
        await _proxy_ready(base_url, config.proxy.health.interval * 5 + 30, every)
        try:
            model = await served_model(config, client)
            yield Served(base_url, key, client, model, endpoints, token)
        except BaseException:
            # The run's own end is what to tell: a workers.json the disk refuses is no news.
            with contextlib.suppress(StorageError):
                await keep_worker_load(base_url, key, config.run_dir)
            raise
        await keep_worker_load(base_url, key, config.run_dir)


async def keep_worker_load(
    base_url: str, key: str, run_dir: Path, since: WorkerLoad | None = None
) -> None:
    """The proxy's last view of its workers into workers.json, for the report's load plot.

    `since`, an earlier view of the same proxy: count only what its workers did after it.
    """
    workers = await worker_load(base_url, key)
    if workers is not None:
        counted = workers if since is None else load_since(since, workers)
        await asyncio.to_thread(save_worker_snapshot, run_dir, counted)


async def worker_load(base_url: str, key: str) -> WorkerLoad | None:
    """The proxy's GET /workers now; None (and why, logged) when it cannot be read."""
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as http:
            return await fetch_workers(http, base_url, key)
    except (aiohttp.ClientError, TimeoutError, KeyError, ValueError, TypeError) as exc:
        log.warning("could not read the proxy's worker load for the report (%s)", exc)
        return None


async def _check_endpoints(endpoints: list[WorkerEndpoint], key: SecretStr | None) -> None:
    """Fail at once when no given server answers, rather than after the proxy's probes."""
    timeout = aiohttp.ClientTimeout(total=10)
    async with aiohttp.ClientSession(timeout=timeout, headers=bearer(key)) as http:
        problems = await asyncio.gather(*(_problem(http, e) for e in endpoints))
    failed = [
        f"{e.url} ({problem})" for e, problem in zip(endpoints, problems, strict=True) if problem
    ]
    if len(failed) == len(endpoints):
        raise ConfigError(
            f"no endpoint answers: {', '.join(failed)}; check the URLs, that the servers run, "
            "and rollout.worker.health_path (llama.cpp servers answer /v1/models)"
        )
    for problem in failed:
        log.warning("endpoint %s; the proxy will route around it until it answers", problem)


async def _problem(http: aiohttp.ClientSession, endpoint: WorkerEndpoint) -> str | None:
    try:
        async with http.get(endpoint.url + endpoint.health_path) as response:
            return (
                None
                if response.status == 200
                else f"{endpoint.health_path} answered {response.status}"
            )
    except aiohttp.ClientConnectorError as exc:
        return f"cannot connect: {os_reason(exc.os_error)}"
    except (aiohttp.ClientError, TimeoutError) as exc:
        return f"{type(exc).__name__} {exc}".strip()


async def _proxy_ready(base_url: str, timeout: float, every: bool) -> None:
    """Wait for the proxy's first health probe to pass, so no early request meets a 503.

    `every`: until every worker is healthy, so that no early request leaves its fixed route."""
    readiness = base_url.removesuffix("/v1") + "/readiness"
    try:
        async with aiohttp.ClientSession() as http, asyncio.timeout(timeout):
            while True:
                async with http.get(readiness) as response:
                    if response.status == 200 and (
                        not every or _all_healthy(await response.json())
                    ):
                        return
                await asyncio.sleep(0.1)
    except TimeoutError:
        found = (
            "not every worker healthy (--reproducible waits for all)"
            if every
            else "no healthy worker"
        )
        raise ProxyStartError(
            f"the proxy found {found} within {timeout:g} s; the workers' logs and "
            "proxy.log in the run directory say why"
        ) from None


def _all_healthy(readiness: dict[str, Any]) -> bool:
    return bool(readiness["healthy_workers"] == readiness["workers"])


async def served_model(config: RunConfig, client: AsyncOpenAI) -> str:
    """The name requests use: the config's, else the first model the workers serve."""
    if config.model.name:
        return config.model.name
    models = await client.models.list()
    if not models.data:
        raise ConfigError("the workers serve no model; name one with model.name=NAME")
    return models.data[0].id
