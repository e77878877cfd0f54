"""From an allocation string to running workers: backend, scheduler and their settings."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_eval.allocation import Allocation
from agent_eval.backends import WorkerConfig, get_backend
from agent_eval.errors import ConfigError
from agent_eval.lifecycle import forever
from agent_eval.proxy.config import ProxyConfig
from agent_eval.proxy.server import serve_forever
from agent_eval.proxy.urls import normalize_worker_url
from agent_eval.schedulers.base import Scheduler
from agent_eval.schedulers.config import RayConfig, SlurmConfig
from agent_eval.schedulers.errors import SchedulerUnavailableError

SchedulerName = Literal["local", "ray", "slurm"]
_SCHEDULERS = {
    "local": ("agent_eval.schedulers.local", "LocalScheduler", None),
    "ray": ("agent_eval.schedulers.ray", "RayScheduler", "ray"),
    "slurm": ("agent_eval.schedulers.slurm", "SlurmScheduler", None),
}


class LaunchConfig(BaseModel):
    """Which workers to run, where, and how."""

    model_config = ConfigDict(extra="forbid")

    backend: str = Field("llamacpp:d1", description="Allocation, e.g. sglang:d4t2 or llamacpp:d2.")
    scheduler: SchedulerName = "local"
    endpoints: list[str] = Field(default_factory=list, description="URLs of external workers.")
    worker: WorkerConfig = Field(default_factory=WorkerConfig)
    ray: RayConfig = Field(default_factory=RayConfig)
    slurm: SlurmConfig = Field(default_factory=SlurmConfig)


@dataclass(frozen=True)
class WorkerEndpoint:
    """A worker the proxy can route to."""

    url: str
    health_path: str


def build_scheduler(config: LaunchConfig, run_dir: Path) -> Scheduler:
    """The chosen scheduler, loaded only when chosen; a missing one says what to install."""
    module_name, class_name, package = _SCHEDULERS[config.scheduler]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        extra = f"pip install 'agent-eval[{package}]'" if package else "check the installation"
        raise SchedulerUnavailableError(
            f"the {config.scheduler} scheduler cannot load ({exc}); {extra}"
        ) from None
    return getattr(module, class_name).from_config(config, run_dir)


@contextlib.asynccontextmanager
async def launched_workers(
    config: LaunchConfig, run_dir: Path, on_wait: Callable[[str], None] | None = None
) -> AsyncIterator[list[WorkerEndpoint]]:
    """Workers up and answering inside the block, stopped on the way out, whatever happens."""
    allocation = Allocation.parse(config.backend)
    backend = get_backend(allocation.backend)
    if not backend.launches:
        if not config.endpoints:
            raise ConfigError("the external backend needs worker URLs: pass --endpoint URL")
        yield [
            WorkerEndpoint(normalize_worker_url(u), config.worker.health_path)
            for u in config.endpoints
        ]
        return
    async with build_scheduler(config, run_dir) as scheduler:
        await scheduler.launch(backend, config.worker, allocation)
        await scheduler.wait_ready(config.worker.startup_timeout, on_wait)
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
    async with launched_workers(config, run_dir, on_wait) as endpoints:
        health = proxy.health.model_copy(update={"path": endpoints[0].health_path})
        urls = [*proxy.endpoints, *(e.url for e in endpoints)]
        await serve_forever(
            proxy.model_copy(update={"endpoints": urls, "health": health}), on_ready
        )
