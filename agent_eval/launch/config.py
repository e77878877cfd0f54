"""What to launch and where: the model, the workers (an allocation or endpoints), the scheduler."""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import AfterValidator, Field, model_validator

from agent_eval.allocation import Allocation
from agent_eval.backends import Backend, WorkerConfig, get_backend
from agent_eval.launch.schedulers import SchedulerSection
from agent_eval.proxy.config import ProxyConfig
from agent_eval.proxy.fleet.urls import normalize_worker_url
from agent_eval.proxy.policies import FIXED_POLICY
from agent_eval.settings import Section


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

    @model_validator(mode="after")
    def _token_fields_of_the_backend(self) -> Self:
        if self.proxy.capture.tokens:
            pick_token_fields(self, self.proxy)
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


def pick_token_fields(launch: LaunchConfig, proxy: ProxyConfig) -> None:
    """The proxy asks for token ids in the fields the backend's server takes, unless
    proxy.capture.token_fields says whose (an external endpoint's)."""
    if "token_fields" not in proxy.capture.model_fields_set:
        proxy.capture.token_fields = launch.backend().token_fields


def pin_routes(rollout: RolloutSection, proxy: ProxyConfig) -> None:
    """With rollout.reproducible, the proxy routes each attempt to the same worker every run."""
    if rollout.reproducible:
        chosen = proxy.policy if "policy" in proxy.model_fields_set else None
        refuse_unpinned("proxy.policy", chosen, FIXED_POLICY)
        proxy.policy = FIXED_POLICY
