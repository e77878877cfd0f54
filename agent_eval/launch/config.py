"""From an allocation string to running workers: backend, scheduler and their settings."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Self

from pydantic import AfterValidator, Field, SecretStr, model_validator

from agent_eval.allocation import Allocation
from agent_eval.backends import Backend, WorkerConfig, get_backend
from agent_eval.errors import ConfigError
from agent_eval.launch.schedulers import RayConfig, SlurmConfig
from agent_eval.proxy.config import ProxyConfig
from agent_eval.proxy.fleet.urls import normalize_worker_url
from agent_eval.proxy.policies import FIXED_POLICY
from agent_eval.proxy.server.listener import serve_forever
from agent_eval.registry import Registry
from agent_eval.schedulers.base import Scheduler
from agent_eval.schedulers.errors import SchedulerUnavailableError
from agent_eval.settings import Section
from agent_eval.system.lifecycle import forever

SCHEDULERS: Registry[type[Scheduler]] = Registry(
    "scheduler",
    "agent_eval.schedulers",
    {
        "local": "agent_eval.schedulers.local:LocalScheduler",
        "ray": "agent_eval.schedulers.ray_cluster:RayScheduler",
        "slurm": "agent_eval.schedulers.slurm:SlurmScheduler",
    },
    extras={"ray": "ray"},
)
# Checked by name when the config is read; the scheduler itself is imported only when launched.
SchedulerName = Annotated[str, AfterValidator(SCHEDULERS.check)]


def _worker_urls(urls: list[str]) -> list[str]:
    """Each URL as the proxy spells it; a malformed one stops a command before it starts."""
    return [normalize_worker_url(url) for url in urls]


WorkerUrls = Annotated[list[str], AfterValidator(_worker_urls)]


class ModelSection(Section):
    """The model under evaluation."""

    path: str | None = Field(
        None, description="Checkpoint path or hub id; llamacpp: a .gguf (default: embedded)."
    )
    name: str | None = Field(
        None, description="Name in requests; default: the served name, or the endpoint's first."
    )
    context_length: int | None = Field(None, ge=1, description="Longest context, in tokens.")


class RolloutSection(Section):
    """The inference workers: launched from an allocation, or existing endpoints."""

    backend: str = Field("llamacpp:d2", description="Allocation, e.g. sglang:d4p1t1.")
    endpoints: WorkerUrls = Field(
        default_factory=list, description="URLs of running servers; nothing is launched."
    )
    worker: WorkerConfig = Field(default_factory=WorkerConfig)
    reproducible: bool = Field(
        False,
        description="Pin what a seed cannot: each llama.cpp worker reads every prompt whole "
        "on one thread, and each attempt goes to the same worker (proxy.policy fixed).",
    )


class SchedulerSection(Section):
    """Where launched workers run."""

    type: SchedulerName = Field("local", description="Where workers run: local, ray or slurm.")
    ray: RayConfig = Field(default_factory=RayConfig)
    slurm: SlurmConfig = Field(default_factory=SlurmConfig)


class LaunchConfig(Section):
    """Which workers to run, where, and how: the settings every command that launches shares."""

    model: ModelSection = Field(default_factory=ModelSection)
    rollout: RolloutSection = Field(default_factory=RolloutSection)
    scheduler: SchedulerSection = Field(default_factory=SchedulerSection)

    @model_validator(mode="after")
    def _endpoints_mean_external(self) -> Self:
        # Endpoints without a backend named explicitly: serve those, launch nothing.
        if self.rollout.endpoints and "backend" not in self.rollout.model_fields_set:
            self.rollout.backend = "external"
        return self

    @model_validator(mode="after")
    def _pinned_workers_when_reproducible(self) -> Self:
        worker = self.rollout.worker
        if self.rollout.reproducible:
            refuse_unpinned("rollout.worker.threads", worker.threads, 1)
            self.rollout.worker = worker.model_copy(update={"reproducible": True})
        return self

    def allocation(self) -> Allocation:
        """The parsed allocation string."""
        return Allocation.parse(self.rollout.backend)

    def backend(self) -> Backend:
        """The backend the allocation names; an unknown name is a ConfigError."""
        return get_backend(self.allocation().backend)

    def worker(self) -> WorkerConfig:
        """The worker settings with the model section folded in."""
        model = {
            "model": self.model.path,
            "served_model_name": self.model.name,
            "context_length": self.model.context_length,
        }
        return self.rollout.worker.model_copy(
            update={k: v for k, v in model.items() if v is not None}
        )


class ServeConfig(LaunchConfig):
    """`agent-eval serve`: the proxy, in front of launched workers or given endpoints."""

    proxy: ProxyConfig = Field(default_factory=ProxyConfig)

    @model_validator(mode="after")
    def _fixed_routes_when_reproducible(self) -> Self:
        pin_routes(self.rollout, self.proxy)
        return self

    def launches(self) -> bool:
        """Whether workers are launched: only when a backend is named; else the proxy alone."""
        return "backend" in self.rollout.model_fields_set and self.backend().launches

    def proxy_config(self) -> ProxyConfig:
        """The proxy's settings, the given endpoints among its workers."""
        endpoints = [*self.proxy.endpoints, *self.rollout.endpoints]
        return ProxyConfig.model_validate({**self.proxy.model_dump(), "endpoints": endpoints})


def refuse_unpinned(key: str, given: object, pinned: object) -> None:
    """Refuse a setting that would undo rollout.reproducible (None: not given)."""
    if given is not None and given != pinned:
        raise ValueError(
            f"rollout.reproducible pins {key} to {pinned}; leave out {key}={given} "
            "or rollout.reproducible"
        )


def pin_routes(rollout: RolloutSection, proxy: ProxyConfig) -> None:
    """With rollout.reproducible, the proxy routes each attempt to the same worker every run."""
    if rollout.reproducible:
        chosen = proxy.policy if "policy" in proxy.model_fields_set else None
        refuse_unpinned("proxy.policy", chosen, FIXED_POLICY)
        proxy.policy = FIXED_POLICY


@dataclass(frozen=True)
class WorkerEndpoint:
    """A worker the proxy can route to."""

    url: str
    health_path: str


def build_scheduler(config: LaunchConfig, run_dir: Path) -> Scheduler:
    """The chosen scheduler, loaded only when chosen; a missing one says what to install."""
    try:
        scheduler = SCHEDULERS.load(config.scheduler.type)
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
        await serve_forever(
            proxy.model_copy(update={"endpoints": urls, "health": health}), on_ready
        )
