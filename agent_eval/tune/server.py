"""Workers, proxy and scorer kept up across trials; each restarted only when its settings change.

Sampling, agent and dataset settings are the client's: trials that differ only there share
everything. A proxy setting restarts the proxy alone; a model, rollout or scheduler setting
restarts the workers too; a reward setting, the scorer.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

from agent_eval.rewards import RewardScorer
from agent_eval.run.config import RunConfig
from agent_eval.run.parts import warm_scorer
from agent_eval.run.serving import Served, proxied, worker_endpoints
from agent_eval.run.workers import WorkerEndpoint

log = logging.getLogger(__name__)

WORKER_SETTINGS = {"model", "rollout", "scheduler"}
PROXY_SETTINGS = {"proxy", "output"}


T = TypeVar("T")


class _Held(Generic[T]):
    """One piece kept up while its settings stay the same."""

    def __init__(self) -> None:
        self.key: str | None = None
        self.value: T | None = None
        self.stack = contextlib.AsyncExitStack()

    async def close(self) -> None:
        stack, self.stack = self.stack, contextlib.AsyncExitStack()
        self.key, self.value = None, None
        await stack.aclose()


class TrialServer:
    """`async with TrialServer(tune_dir, on_wait) as server: served = await server.serve(config)`.

    Logs of workers and proxy go to `tune_dir`, which they serve for; results to each trial's.
    """

    def __init__(self, tune_dir: Path, on_wait: Callable[[str], None]) -> None:
        self.tune_dir, self.on_wait = tune_dir, on_wait
        self._workers: _Held[list[WorkerEndpoint]] = _Held()
        self._proxy: _Held[Served] = _Held()
        self._scorer: _Held[RewardScorer] = _Held()
        self.starts: Counter[str] = Counter()
        """Times the workers, the proxy and the scorer were started."""

    async def __aenter__(self) -> TrialServer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        for held in (self._proxy, self._workers, self._scorer):
            await held.close()

    async def serve(self, config: RunConfig) -> Served:
        """A proxy over workers as `config` asks, started only where the last trial's differ."""
        serving = config.model_copy(update={"output": config.output.model_copy()})
        serving.output.dir = self.tune_dir
        workers_key = _key(serving, WORKER_SETTINGS) + _key(serving.proxy, {"worker_api_key"})
        if workers_key != self._workers.key:
            await self._proxy.close()
            await self._start_workers(serving, workers_key)
        proxy_key = workers_key + _key(serving, PROXY_SETTINGS)
        if proxy_key != self._proxy.key:
            await self._proxy.close()
            assert self._workers.value is not None, "workers start before their proxy"
            context = proxied(serving, self._workers.value, self.on_wait)
            self._proxy.value = await self._proxy.stack.enter_async_context(context)
            self._proxy.key = proxy_key
            self.starts["proxy"] += 1
        assert self._proxy.value is not None
        return self._proxy.value

    async def scorer(self, config: RunConfig) -> RewardScorer:
        """A warm scorer for `config`'s reward settings, the last one while they are the same."""
        key = _key(config, {"reward"})
        if key != self._scorer.key:
            await self._scorer.close()
            scorer = await self._scorer.stack.enter_async_context(warm_scorer(config))
            self._scorer.value, self._scorer.key = scorer, key
            self.starts["scorer"] += 1
        assert self._scorer.value is not None
        return self._scorer.value

    async def _start_workers(self, serving: RunConfig, key: str) -> None:
        if self._workers.key is not None:
            log.info("a serving setting changed: restarting the workers")
        await self._workers.close()
        context = worker_endpoints(serving, self.on_wait)
        self._workers.value = await self._workers.stack.enter_async_context(context)
        self._workers.key = key
        self.starts["workers"] += 1


def _key(section: Any, names: set[str]) -> str:
    """The settings `names` of a config section, as one comparable string."""
    return json.dumps(section.model_dump(mode="json", include=names), sort_keys=True)
