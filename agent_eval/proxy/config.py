"""Settings of the router proxy, validated once at the edge."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from agent_eval.proxy.capture.settings import CaptureConfig
from agent_eval.proxy.fleet.urls import normalize_worker_url
from agent_eval.proxy.policies import POLICIES, Policy, build_policy
from agent_eval.proxy.policies.prefix import PrefixSettings
from agent_eval.proxy.policies.session import SessionSettings
from agent_eval.proxy.server.auth import new_admin_token
from agent_eval.settings import merged, renamed_keys


class HealthConfig(BaseModel):
    """Active probing and the circuit breaker."""

    model_config = ConfigDict(extra="forbid")

    interval: float = Field(5.0, gt=0, description="Seconds between active probes of each worker.")
    timeout: float = Field(3.0, gt=0, description="Seconds a probe may take.")
    path: str = Field(
        "/health", pattern=r"^/", description="Probe path; llama.cpp servers answer /v1/models."
    )
    failure_threshold: int = Field(
        2, ge=1, description="Failed probes in a row that mark a worker down."
    )
    success_threshold: int = Field(
        2, ge=1, description="Good probes in a row that mark it up again."
    )
    breaker_failures: int = Field(
        5, ge=1, description="Failed requests in a row that open the breaker."
    )
    breaker_cooldown: float = Field(
        10.0, gt=0, description="Seconds an open breaker waits before a trial."
    )
    queues_max_age: float = Field(
        1.0,
        ge=0,
        description="Seconds GET /workers/queues answers from its last reading of the workers' "
        "queues (SGLang's /get_load): callers within it share one request per worker.",
    )


class RetryConfig(BaseModel):
    """Which failures are tried again, how often and how far apart."""

    model_config = ConfigDict(extra="forbid")

    max_retries: int = Field(3, ge=0, description="Re-sends of a failed request to other workers.")
    backoff_base: float = Field(
        0.05, ge=0, description="Seconds before the first retry; doubles each time."
    )
    backoff_max: float = Field(2.0, ge=0, description="Cap on the wait between retries.")


class TimeoutConfig(BaseModel):
    """Bounds on every upstream wait, so a silent worker never hangs a client."""

    model_config = ConfigDict(extra="forbid")

    connect: float = Field(10.0, gt=0, description="Seconds to open a connection to a worker.")
    total: float = Field(
        1800.0, gt=0, description="Seconds one client request may take, retries included."
    )
    stream_idle: float = Field(120.0, gt=0, description="Seconds a stream may go without a byte.")
    worker: float | None = Field(
        None,
        gt=0,
        description="Seconds one worker may take before the answer starts reaching the client "
        "(the whole answer when not streamed); past it the request goes to another worker. "
        "Off by default: long generations are normal.",
    )

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        # Before, `attempt`: a word the engine keeps for one play of a sample.
        return renamed_keys(data, {"attempt": "worker"})


class LimitsConfig(BaseModel):
    """Bounds that keep a flood of clients from exhausting the proxy or a worker."""

    model_config = ConfigDict(extra="forbid")

    max_in_flight: int = Field(
        8192,
        ge=1,
        description="Requests in flight at once; past it clients get 429 with Retry-After. "
        "Lowered at start to what the open-files limit allows.",
    )
    max_connections_per_worker: int = Field(
        1024, ge=1, description="Connections open to one worker; more requests wait for one."
    )
    max_idle_per_worker: int = Field(
        128, ge=0, description="Idle connections kept open to one worker for reuse."
    )
    idle_timeout: float = Field(
        30.0, gt=0, description="Seconds an idle connection to a worker is kept."
    )
    client_timeout: float = Field(
        60.0,
        gt=0,
        description="Seconds a client may take to send a request's headers, then its body, "
        "or keep an idle connection open; past it the connection is closed.",
    )
    max_choices: int | None = Field(
        None,
        ge=1,
        description="Most choices one request may ask for in `n` or `best_of`, each a whole "
        "generation; past it the request gets 400 too_many_choices. Off by default.",
    )


class PolicySettings(BaseModel):
    """Each routing policy's settings under its name, a policy of your own's too (older configs'
    `proxy.sessions` and `proxy.prefix` load here)."""

    model_config = ConfigDict(extra="allow")

    session: SessionSettings = Field(default_factory=SessionSettings)
    prefix: PrefixSettings = Field(default_factory=PrefixSettings)

    def in_a_group(self) -> PolicySettings:
        """These settings for a proxy of several processes: sessions, and the prefix policy's
        conversations, placed by the ring (unless a placement is given), so each process places
        them as the others do."""
        ring = {"placement": "ring"}
        session = _placement_defaulted(self.session, ring)
        sessions = _placement_defaulted(self.prefix.sessions, ring)
        placement = self.prefix.placement or "ring"
        prefix = self.prefix.model_copy(update={"sessions": sessions, "placement": placement})
        return self.model_copy(update={"session": session, "prefix": prefix})

    def of(self, policy: str) -> object:
        """The settings given for `policy`; None when there are none."""
        if policy in type(self).model_fields:
            return getattr(self, policy)
        return (self.model_extra or {}).get(policy)


def _placement_defaulted(settings: SessionSettings, update: dict[str, Any]) -> SessionSettings:
    return settings if settings.placement is not None else settings.model_copy(update=update)


class ResponsesConfig(BaseModel):
    """The store behind `previous_response_id` for workers without a Responses API."""

    model_config = ConfigDict(extra="forbid")

    store_capacity: int = Field(
        10_000, ge=1, description="Responses kept at most; the least recently used go first."
    )
    store_ttl: float = Field(
        3600.0, gt=0, description="Seconds a stored response is kept after its last use."
    )
    store_bytes: int = Field(
        256 * 1024**2,
        ge=1024,
        description="Bytes of stored conversations kept at most; the least recently used go first.",
    )


class ProxyConfig(BaseModel):
    """Everything `agent-eval serve` needs to run the proxy."""

    model_config = ConfigDict(extra="forbid")

    endpoints: list[str] = Field(default_factory=list, description="Worker base URLs.")
    host: str = Field(
        "127.0.0.1",
        description="Address to listen on; 0.0.0.0 for every interface (then set an API key).",
    )
    port: int = Field(8000, ge=0, le=65535, description="0 picks a free port.")
    processes: int | None = Field(
        None,
        ge=1,
        description="Proxy processes accepting on the one port (more than 1 needs Linux's "
        "SO_REUSEPORT); default one per 8 usable cores, at most 8: 1 below 16 cores.",
    )
    policy: str = Field(
        "session",
        description=f"Routing policy: {', '.join(POLICIES.built_in)}, an agent_eval.policies "
        "entry point, or package.module:Class.",
    )
    api_key: SecretStr | None = Field(
        None, description="Bearer key clients must send on /v1/* and /workers."
    )
    worker_api_key: SecretStr | None = Field(
        None, description="Bearer key the proxy sends to workers."
    )
    admin_token: SecretStr | None = Field(
        None,
        description="Bearer token for adding and removing workers (POST and DELETE /workers); "
        "one is made at start when not given.",
    )
    max_body_bytes: int = Field(
        32 * 1024 * 1024, ge=1024, description="Largest request body accepted."
    )
    max_response_bytes: int = Field(
        64 * 1024 * 1024,
        ge=1024,
        description="Largest answer read whole from a worker (an answer not streamed), or "
        "followed (a stream with --record or on /v1/responses); past it the worker's "
        "connection is dropped and the request fails as upstream_response_too_large, or the "
        "stream ends with its route's error event.",
    )
    max_event_bytes: int = Field(
        16 * 1024 * 1024,
        ge=1024,
        description="Longest event of a worker's stream the proxy follows (--record, "
        "/v1/responses); past it the stream ends with its route's error event.",
    )
    record_dir: Path | None = Field(
        None, description="Append every exchange to DIR/<session>.jsonl."
    )
    health: HealthConfig = Field(default_factory=HealthConfig)
    retry: RetryConfig = Field(default_factory=RetryConfig)
    timeouts: TimeoutConfig = Field(default_factory=TimeoutConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    policies: PolicySettings = Field(default_factory=PolicySettings)
    responses: ResponsesConfig = Field(default_factory=ResponsesConfig)
    capture: CaptureConfig = Field(default_factory=CaptureConfig)

    def routing_policy(self) -> Policy:
        """The chosen policy, built with its settings."""
        policies = self.policies.in_a_group() if self.process_count() > 1 else self.policies
        return build_policy(self.policy, policies.of(self.policy))

    def process_count(self) -> int:
        """The proxy processes to run: the setting, else one per 8 usable cores (1 to 8)."""
        return self.processes or default_processes()

    def with_admin_token(self) -> ProxyConfig:
        """This config with an admin token, made now when it has none."""
        if self.admin_token is not None:
            return self
        return self.model_copy(update={"admin_token": new_admin_token()})

    @model_validator(mode="before")
    @classmethod
    def _policy_settings_under_their_names(cls, data: Any) -> Any:
        # Configs written before (a run's config.yaml, `serve --config`) hold the session and
        # prefix settings beside `policy`; the prefix policy kept its sessions as `sessions` said.
        if not isinstance(data, dict) or not {"sessions", "prefix"} & data.keys():
            return data
        data = dict(data)
        sessions, prefix = data.pop("sessions", None) or {}, data.pop("prefix", None) or {}
        earlier = {"session": sessions, "prefix": {**prefix, "sessions": sessions}}
        data["policies"] = merged(earlier, data.get("policies") or {})
        return data

    @field_validator("policy")
    @classmethod
    def _known_policy(cls, name: str) -> str:
        # Here, not at the first request: a misspelt policy stops the proxy before it starts.
        return POLICIES.check(name)

    @field_validator("endpoints")
    @classmethod
    def _normalize_endpoints(cls, urls: list[str]) -> list[str]:
        normalized = [normalize_worker_url(url) for url in urls]
        return list(dict.fromkeys(normalized))


def default_processes() -> int:
    """One proxy process per 8 usable cores, from 1 to 8: below 16 cores the single-process
    path, and on a big host room left for the engine, its scorers and local workers."""
    if not hasattr(os, "sched_getaffinity"):
        return 1  # not Linux: no SO_REUSEPORT spreading connections over processes
    return max(1, min(8, len(os.sched_getaffinity(0)) // 8))
