"""The launched workers: the chosen scheduler starts them, and a block keeps them up."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import SecretStr

from agent_eval.errors import ConfigError
from agent_eval.launch.config import LaunchConfig
from agent_eval.launch.schedulers import SCHEDULERS
from agent_eval.proxy.config import ProxyConfig
from agent_eval.proxy.server.process import serve_proxy
from agent_eval.schedulers.base import Scheduler
from agent_eval.schedulers.errors import SchedulerUnavailableError
from agent_eval.system.lifecycle import forever


@dataclass(frozen=True)
class WorkerEndpoint:
    """A worker the proxy can route to."""

    url: str
    health_path: str


def build_scheduler(config: LaunchConfig, run_dir: Path) -> Scheduler:
    """The chosen scheduler, loaded only when chosen; a missing one says what to install."""
    try:
        scheduler: type[Scheduler] = SCHEDULERS.load(config.scheduler.type)
    except ConfigError as exc:  # the error Scheduler's contract names for one that cannot run
        raise SchedulerUnavailableError(str(exc)) from exc
    return scheduler.from_config(config, run_dir)


@contextlib.asynccontextmanager
async def launched_workers(
    config: LaunchConfig,
    run_dir: Path,
    on_wait: Callable[[str], None] | None = None,
    worker_key: SecretStr | None = None,
) -> AsyncIterator[list[WorkerEndpoint]]:
    """Workers up and answering inside the block, stopped on the way out, whatever happens.

    With `worker_key`, launched workers answer only requests that bear it.
    """
    allocation, backend, worker = config.allocation(), config.backend(), config.worker()
    if not backend.launches:
        if not config.rollout.endpoints:
            raise ConfigError("the external backend needs worker URLs: pass --endpoint URL")
        yield [WorkerEndpoint(url, worker.health_path) for url in config.rollout.endpoints]
        return
    async with build_scheduler(config, run_dir) as scheduler:
        scheduler.worker_key = worker_key
        await scheduler.launch(backend, worker, allocation)
        await scheduler.wait_ready(worker.startup_timeout, on_wait)
        yield [WorkerEndpoint(w.url, w.health_path) for w in scheduler.workers]


async def hold_workers(
    config: LaunchConfig,
    run_dir: Path,
    on_ready: Callable[[list[WorkerEndpoint]], None],
    on_wait: Callable[[str], None] | None = None,
) -> None:
    """Launch workers and keep them up until cancelled."""
    async with launched_workers(config, run_dir, on_wait) as endpoints:
        on_ready(endpoints)
        await forever()


async def serve_over_workers(
    config: LaunchConfig,
    proxy: ProxyConfig,
    run_dir: Path,
    on_ready: Callable[[str, ProxyConfig], None],
    on_wait: Callable[[str], None] | None = None,
) -> None:
    """Launch workers, then serve the proxy in front of them until cancelled."""
    async with launched_workers(config, run_dir, on_wait, proxy.worker_api_key) as endpoints:
        health = proxy.health.model_copy(update={"path": endpoints[0].health_path})
        urls = [*proxy.endpoints, *(e.url for e in endpoints)]
        proxy = proxy.model_copy(update={"endpoints": urls, "health": health})
        await serve_proxy(proxy, run_dir, on_ready)
