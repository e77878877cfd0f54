"""The set of workers behind the proxy, and which of them may take a request."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial

from agent_eval.errors import AgentEvalError
from agent_eval.proxy.config import HealthConfig
from agent_eval.proxy.fleet.breaker import BreakerState, CircuitBreaker
from agent_eval.proxy.fleet.urls import check_health_path, normalize_worker_url
from agent_eval.proxy.fleet.worker import Worker
from agent_eval.proxy.policies import Policy, RequestInfo
from agent_eval.proxy.policies.base import Candidates


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
    """Holds the workers; the policy picks among those that are healthy with a closed breaker.

    Which workers are healthy (by model served) and which breakers are not closed is kept as
    they change, so a request's candidates are counted and looked up by URL without a scan.
    """

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
        self._healthy: set[str] = set()
        self._serving: dict[str, set[str]] = {}
        """Healthy workers' URLs by each model they list now."""
        self._unclosed: dict[str, Worker] = {}
        """Workers whose breaker is not closed, healthy or not: few, and checked per request."""

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
        self._watch(worker)
        return worker

    def remove(self, url: str) -> Worker:
        """Take a worker out; requests already on it finish."""
        key = normalize_worker_url(url)
        worker = self._workers.pop(key, None)
        if worker is None:
            known = ", ".join(self._workers) or "none"
            raise UnknownWorkerError(f"no worker {key} in the pool (workers: {known})")
        worker.changed = worker.health.changed = worker.breaker.changed = None
        self._unindex(worker)
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
        candidates = self._candidates(info, tried, now)
        if candidates is None:
            candidates = self._listed_candidates(info, tried, now)
        preferred = candidates.get(info.prefer) if info.prefer is not None else None
        return preferred if preferred is not None else self._policy.choose(candidates, info)

    def _candidates(self, info: RequestInfo, tried: list[Worker], now: float) -> Candidates | None:
        """The candidates from the index, when the model is one an available worker lists now
        (or none is named); None otherwise, as the old names and the errors need a scan."""
        # Every healthy worker's breaker not closed is asked, as a scan would: an ended
        # cooldown half-opens.
        healthy = self._healthy
        stopped = {
            url for url, w in self._unclosed.items() if url in healthy and not w.breaker.allows(now)
        }
        urls = healthy if info.model is None else self._serving.get(info.model, set())
        count = len(urls) - len(stopped.intersection(urls))
        if count == 0 and info.model is not None:
            return None
        available = _Available(self._workers, stopped, info.model)
        tried_here = {w for w in tried if available.has(w)}
        if tried and len(tried_here) == count:
            # Every candidate was tried: any but the one that just failed.
            tried_here = {tried[-1]} if available.has(tried[-1]) else set()
        available.excluded = tried_here
        return Candidates(count - len(tried_here), available.get, available.listing)

    def _listed_candidates(self, info: RequestInfo, tried: list[Worker], now: float) -> Candidates:
        """The candidates by a scan: for a model no available worker lists now."""
        candidates = self._by_model(
            info.model, [w for w in self._workers.values() if w.available(now)]
        )
        untried = [w for w in candidates if w not in tried]
        if not untried and tried:
            untried = [w for w in candidates if w is not tried[-1]]
        by_url = {w.url: w for w in untried}
        return Candidates(len(untried), by_url.get, lambda: untried)

    def _by_model(self, model: str | None, workers: list[Worker]) -> list[Worker]:
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

    def _watch(self, worker: Worker) -> None:
        """Index the worker, and again whenever its health, breaker or models change."""
        worker.changed = worker.health.changed = worker.breaker.changed = partial(
            self._reindex, worker
        )
        self._reindex(worker)

    def _reindex(self, worker: Worker) -> None:
        self._unindex(worker)
        url = worker.url
        if worker.breaker.state is not BreakerState.CLOSED:
            self._unclosed[url] = worker
        if worker.health.healthy:
            self._healthy.add(url)
            for model in worker.models:
                self._serving.setdefault(model, set()).add(url)

    def _unindex(self, worker: Worker) -> None:
        url = worker.url
        self._unclosed.pop(url, None)
        if url in self._healthy:
            self._healthy.discard(url)
            for model, urls in list(self._serving.items()):
                urls.discard(url)
                if not urls:
                    del self._serving[model]


@dataclass
class _Available:
    """The pool's workers a request may go to: healthy, breaker letting it through, serving its
    model (any when it names none), not excluded."""

    workers: dict[str, Worker]
    stopped: set[str]
    """URLs of healthy workers whose breaker stops requests now."""
    model: str | None
    excluded: set[Worker] = field(default_factory=set)

    def has(self, worker: Worker) -> bool:
        return (
            worker.health.healthy
            and worker.url not in self.stopped
            and (self.model is None or self.model in worker.models)
            and self.workers.get(worker.url) is worker
            and worker not in self.excluded
        )

    def get(self, url: str) -> Worker | None:
        worker = self.workers.get(url)
        return worker if worker is not None and self.has(worker) else None

    def listing(self) -> list[Worker]:
        """In the pool's order, as policies that break ties by position expect."""
        stopped, model, excluded = self.stopped, self.model, self.excluded
        return [
            w
            for w in self.workers.values()
            if w.health.healthy
            and w.url not in stopped
            and (model is None or model in w.models)
            and w not in excluded
        ]
