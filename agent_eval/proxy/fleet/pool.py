"""The set of workers behind the proxy, and which of them may take a request."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator

from agent_eval.errors import AgentEvalError
from agent_eval.proxy.config import HealthConfig
from agent_eval.proxy.fleet.breaker import CircuitBreaker
from agent_eval.proxy.fleet.urls import check_health_path, normalize_worker_url
from agent_eval.proxy.fleet.worker import Worker
from agent_eval.proxy.policies import Policy, RequestInfo


class WorkerExistsError(AgentEvalError):
    """A worker with this URL is already in the pool."""


class UnknownWorkerError(AgentEvalError):
    """No worker with this URL is in the pool."""


class ModelNotServedError(AgentEvalError):
    """The request names a model no healthy worker serves."""

    def __init__(self, model: str, available: list[str]) -> None:
        self.model = model
        self.available = available
        super().__init__(
            f"no healthy worker serves model {model!r}; available models: "
            f"{', '.join(available)} (listed at /v1/models)"
        )


class WorkerPool:
    """Holds the workers; the policy picks among those that are healthy with a closed breaker."""

    def __init__(
        self,
        health: HealthConfig,
        policy: Policy,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._health = health
        self._policy = policy
        self._clock = clock
        self._workers: dict[str, Worker] = {}

    def __iter__(self) -> Iterator[Worker]:
        return iter(list(self._workers.values()))

    def __len__(self) -> int:
        return len(self._workers)

    def add(self, url: str, health_path: str | None = None, takes_key: bool = True) -> Worker:
        """Add a worker; it takes traffic once its first probe succeeds.

        Raises: ConfigError for a malformed URL or health path, WorkerExistsError.
        """
        worker = self._admit(url, health_path, takes_key)
        self._policy.on_workers_changed(list(self._workers))
        return worker

    def add_all(self, urls: Iterable[str]) -> None:
        """Add the workers a proxy starts with; the policy hears of them once, not once per
        worker (a hash ring rebuilt per worker made 1,000 workers a minute's start).

        Raises: as `add`.
        """
        for url in urls:
            self._admit(url, None, True)
        self._policy.on_workers_changed(list(self._workers))

    def _admit(self, url: str, health_path: str | None, takes_key: bool) -> Worker:
        key = normalize_worker_url(url)
        if health_path is not None:
            check_health_path(health_path)
        if key in self._workers:
            raise WorkerExistsError(f"worker {key} is already in the pool")
        breaker = CircuitBreaker(self._health.breaker_failures, self._health.breaker_cooldown)
        worker = Worker(key, health_path or self._health.path, breaker, takes_key=takes_key)
        self._workers[key] = worker
        return worker

    def remove(self, url: str) -> Worker:
        """Take a worker out; requests already on it finish."""
        key = normalize_worker_url(url)
        worker = self._workers.pop(key, None)
        if worker is None:
            known = ", ".join(self._workers) or "none"
            raise UnknownWorkerError(f"no worker {key} in the pool (workers: {known})")
        self._policy.on_workers_changed(list(self._workers))
        return worker

    def get(self, url: str) -> Worker | None:
        """The worker with this URL, if it is in the pool."""
        return self._workers.get(url)

    def healthy(self) -> list[Worker]:
        return [w for w in self._workers.values() if w.health.healthy]

    def models(self) -> list[str]:
        """Models served by healthy workers, in first-seen order."""
        return list(dict.fromkeys(m for w in self.healthy() for m in w.models))

    def choose(self, info: RequestInfo, tried: list[Worker]) -> Worker | None:
        """The worker for this attempt, never the one that just failed; None when none is left."""
        now = self._clock()
        candidates = self._serving(
            info.model, [w for w in self._workers.values() if w.available(now)]
        )
        untried = [w for w in candidates if w not in tried]
        if not untried and tried:
            untried = [w for w in candidates if w is not tried[-1]]
        preferred = [w for w in untried if w.url == info.prefer]
        return preferred[0] if preferred else self._policy.choose(untried, info)

    def _serving(self, model: str | None, workers: list[Worker]) -> list[Worker]:
        """Workers serving `model`, now or else before a weight swap; any if the pool serves one."""
        if model is None:
            return workers
        serving = [w for w in workers if model in w.models]
        serving = serving or [w for w in workers if w.answers_to(model)]
        if serving:
            return serving
        available = self.models()
        if len(available) > 1:
            raise ModelNotServedError(model, available)
        return workers
