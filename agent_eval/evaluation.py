"""One evaluation run from a resolved config: workers, proxy, engine, summary, teardown."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import aiohttp
from openai import AsyncOpenAI

from agent_eval.agents import AgentRunner, load_runner
from agent_eval.allocation import Allocation
from agent_eval.backends import get_backend
from agent_eval.config import CONFIG_FILE, RunConfig, save_run_config
from agent_eval.data import Item, load_dataset
from agent_eval.engine import Engine, EngineConfig, Progress
from agent_eval.errors import ConfigError, ProxyStartError
from agent_eval.launch import WorkerEndpoint, launched_workers
from agent_eval.metrics import Summary
from agent_eval.proxy.http1 import os_reason
from agent_eval.proxy.process import proxy_process
from agent_eval.report.runs import save_worker_snapshot
from agent_eval.results import RunDirectory
from agent_eval.rewards import RewardScorer, load_reward

log = logging.getLogger(__name__)


class RunObserver(Protocol):
    """What a run tells the live view: waits, the proxy's address, finished attempts."""

    def waiting(self, reason: str) -> None: ...

    def set_proxy(self, base_url: str, api_key: str | None) -> None: ...

    def on_progress(self, progress: Progress) -> None: ...


@dataclass(frozen=True)
class Plan:
    """What a run will do, checked before anything is launched."""

    config: RunConfig
    runner: AgentRunner
    total: int

    def items(self) -> Iterator[Item]:
        """The dataset, streamed afresh."""
        dataset = self.config.dataset
        return load_dataset(self.config.dataset_name, dataset.path, dataset.limit)


def plan(config: RunConfig) -> Plan:
    """Load the runner, the reward and every dataset row now: a mistake costs no launch."""
    runner = load_runner(config.agent.name, **config.agent.runner_options())
    load_reward(config.reward.function)
    launch = config.launch_config()
    allocation = Allocation.parse(launch.backend)
    backend = get_backend(allocation.backend)
    if backend.launches:
        backend.validate(launch.worker, allocation)
    dataset = config.dataset
    total = sum(1 for _ in load_dataset(config.dataset_name, dataset.path, dataset.limit))
    if total == 0:
        raise ConfigError(f"dataset {config.dataset_name!r} has no samples; check it and --limit")
    return Plan(config, runner, total)


async def evaluate(plan: Plan, observer: RunObserver) -> Summary:
    """Launch, evaluate and tear down; results so far stay on disk whatever happens."""
    config = plan.config
    run_dir = RunDirectory(config.run_dir)
    await asyncio.to_thread(_prepare, config)
    scorer = RewardScorer(
        config.reward.function, timeout=config.reward.timeout, max_workers=config.reward.workers
    )
    # Scoring processes warm up while the workers start; a failure shows at the first score.
    warming = asyncio.ensure_future(scorer.start())
    try:
        async with _proxy_over_workers(config, observer.waiting) as base_url:
            key = _client_key(config)
            observer.set_proxy(base_url, key)
            async with AsyncOpenAI(base_url=base_url, api_key=key) as client:
                model = config.model.name or await _served_model(client)
                settings = _engine_config(config, model)
                engine = Engine(plan.runner, scorer, client, settings, observer.on_progress)
                return await engine.run(plan.items(), run_dir, total=plan.total)
    finally:
        warming.cancel()
        await asyncio.gather(warming, return_exceptions=True)
        await scorer.close()


@contextlib.asynccontextmanager
async def _proxy_over_workers(
    config: RunConfig, on_wait: Callable[[str], None]
) -> AsyncIterator[str]:
    async with launched_workers(config.launch_config(), config.run_dir, on_wait) as endpoints:
        if config.rollout.endpoints:
            on_wait("checking the endpoints")
            await _check_endpoints(endpoints)
        on_wait("starting the proxy")
        health = config.proxy.health.model_copy(update={"path": endpoints[0].health_path})
        record = config.run_dir / "exchanges" if config.output.record else None
        proxy = config.proxy.model_copy(
            update={
                "endpoints": [*config.proxy.endpoints, *(e.url for e in endpoints)],
                "health": health,
                "record_dir": config.proxy.record_dir or record,
            }
        )
        async with proxy_process(proxy, config.run_dir) as base_url:
            on_wait("waiting for the proxy to see a healthy worker")
            await _proxy_ready(base_url, config.proxy.health.interval * 5 + 30)
            try:
                yield base_url
            finally:
                await _keep_worker_load(base_url, _client_key(config), config.run_dir)


async def _keep_worker_load(base_url: str, key: str, run_dir: Path) -> None:
    """The proxy's last view of its workers into workers.json, for the report's load plot."""
    headers = {"Authorization": f"Bearer {key}"}
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as http,
            http.get(base_url.removesuffix("/v1") + "/workers", headers=headers) as response,
        ):
            workers = (await response.json())["workers"]
    except (aiohttp.ClientError, TimeoutError, KeyError, ValueError) as exc:
        log.warning("could not read the proxy's worker load for the report (%s)", exc)
        return
    await asyncio.to_thread(save_worker_snapshot, run_dir, workers)


async def _check_endpoints(endpoints: list[WorkerEndpoint]) -> None:
    """Fail at once when no given server answers, rather than after the proxy's probes."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
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


async def _proxy_ready(base_url: str, timeout: float) -> None:
    """Wait for the proxy's first health probe to pass, so no early request meets a 503."""
    readiness = base_url.removesuffix("/v1") + "/readiness"
    try:
        async with aiohttp.ClientSession() as http, asyncio.timeout(timeout):
            while True:
                async with http.get(readiness) as response:
                    if response.status == 200:
                        return
                await asyncio.sleep(0.1)
    except TimeoutError:
        raise ProxyStartError(
            f"the proxy found no healthy worker within {timeout:g} s; the workers' logs and "
            "proxy.log in the run directory say why"
        ) from None


def _prepare(config: RunConfig) -> None:
    config.run_dir.mkdir(parents=True, exist_ok=True)
    save_run_config(config, config.run_dir)


def _engine_config(config: RunConfig, model: str) -> EngineConfig:
    return EngineConfig(
        model=model,
        n_samples=config.eval.n_samples,
        concurrency=config.eval.concurrency,
        seed=config.eval.seed,
        attempt_timeout=config.eval.attempt_timeout,
        sampling=config.sampling_settings(),
        ks=config.eval.k_values(),
    )


def _client_key(config: RunConfig) -> str:
    key = config.proxy.api_key
    return key.get_secret_value() if key is not None else "unused"


async def _served_model(client: AsyncOpenAI) -> str:
    """The first model the workers serve, for runs that do not name one."""
    models = await client.models.list()
    if not models.data:
        raise ConfigError("the workers serve no model; name one with --set model.name=NAME")
    return models.data[0].id


def resume_config_path(run_dir: Path) -> Path:
    """The saved config of a run to resume; a folder without one is not a run directory."""
    path = run_dir / CONFIG_FILE
    if not path.is_file():
        raise ConfigError(f"{run_dir} holds no config.yaml: not a run directory to resume")
    return path
