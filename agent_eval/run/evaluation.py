"""One evaluation run from a resolved config: a checked plan, played against a served model."""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pydantic import SecretStr

from agent_eval import installs
from agent_eval.agents import AgentRunner, load_runner
from agent_eval.agents.base import runner_options
from agent_eval.data import Item
from agent_eval.errors import ConfigError, first_storage_error
from agent_eval.metrics import Summary
from agent_eval.proxy.admin_client import WorkerLoad
from agent_eval.results.files import RunDirectory
from agent_eval.rewards import RewardScorer, gold_check, load_reward
from agent_eval.rewards.scorer import default_workers
from agent_eval.run.capture import engine_keys
from agent_eval.run.config import CONFIG_FILE, RunConfig, load_run_config, save_run_config
from agent_eval.run.control.actions import RunControl, controlled
from agent_eval.run.control.fleet import Fleet
from agent_eval.run.control.protocol import RunCancelled
from agent_eval.run.engine import Engine, Progress, RecordSink
from agent_eval.run.identity import (
    DIGEST,
    Difference,
    dataset_digest,
    differences,
    identity,
    save_run_facts,
    saved_facts,
)
from agent_eval.run.parts import dataset_items, engine_config, warm_scorer
from agent_eval.run.scoring import with_readable_golds
from agent_eval.run.serving import Served, serving
from agent_eval.run.shards import play_in_processes, shard_of, share
from agent_eval.run.shards.job import ShardJob


class RunObserver(Protocol):
    """What a run tells the live view: waits, the proxy's address, finished attempts."""

    def waiting(self, reason: str) -> None: ...

    def set_proxy(
        self, base_url: str | None, api_key: str | None = None, since: WorkerLoad | None = None
    ) -> None:
        """The proxy whose workers to show; None when it is about to stop.

        `since`: its workers' load before this run, when it served others first (a tune).
        """

    def on_progress(self, progress: Progress) -> None: ...


@dataclass(frozen=True)
class Plan:
    """What a run will do, checked before anything is launched."""

    config: RunConfig
    runner: AgentRunner
    total: int

    def items(self, limit: int | None = None) -> Iterator[Item]:
        """The dataset (or its first `limit` items), streamed afresh."""
        return dataset_items(self.config, limit)


def plan(config: RunConfig, model_given: bool = True) -> Plan:
    """Load the reward, every dataset row and the runner now: a mistake costs no launch.

    A row whose gold the reward cannot read is such a mistake: it could only score 0.
    `model_given=False` (the checkpoint watcher) leaves the model to be found later. The
    runner comes last: its framework can take a second to import, and a data mistake is told
    without it.
    """
    check = gold_check(load_reward(config.reward.function))
    backend = config.backend()
    if backend.launches and model_given:
        backend.validate(config.worker(), config.allocation())
    if config.eval.engine == "ray" and importlib.util.find_spec("ray") is None:
        raise ConfigError(f"eval.engine=ray needs Ray: {installs.extra('ray')}")
    total = sum(1 for _ in with_readable_golds(dataset_items(config), check))
    if total == 0:
        raise ConfigError(f"dataset {config.dataset_name!r} has no samples; check it and --limit")
    runner = load_runner(config.agent.name, **config.agent.runner_options())
    return Plan(config, runner, total)


async def evaluate(plan: Plan, observer: RunObserver) -> Summary:
    """Launch, evaluate and tear down; results so far stay on disk whatever happens."""
    config = plan.config
    async with warm_scorer(config) as scorer, serving(config, observer.waiting) as served:
        return await play_served(plan, served, scorer, observer)


async def save_run_files(config: RunConfig, model: str) -> None:
    """The resolved config (naming the served `model`) and the dataset's digest.

    Written once the workers serve the model, before the first attempt: a run refused before
    that (no endpoint answers, a worker that does not start, a busy port) leaves no config
    for `view` to list or `--resume` to take, only the logs its message names.
    """
    await asyncio.to_thread(save_run_config, resolved_config(config, model), config.run_dir)
    await asyncio.to_thread(save_run_facts, config)


async def play_served(
    plan: Plan,
    served: Served,
    scorer: RewardScorer,
    observer: RunObserver,
    since: WorkerLoad | None = None,
) -> Summary:
    """Every attempt of the plan against a model already served, the live view told of it.

    `since`: the proxy's workers before the run, so the view shows this run's load alone.
    """
    config = plan.config
    if not scorer.ready:
        observer.waiting("waiting for the scoring pool to start")
    await scorer.start()  # one that cannot start refuses the run here, before any file of it
    await save_run_files(config, served.model)
    observer.set_proxy(served.base_url, served.api_key, since)
    try:
        return await play(plan, served, scorer, RunDirectory(config.run_dir), observer)
    finally:
        observer.set_proxy(None)


@dataclass(frozen=True)
class Selection:
    """Items chosen by the caller, in one engine process: pulled one at a time as attempts
    free up (so a lazy iterable may stop early), each record to `sink` (which keeps it)."""

    items: Iterable[Item]
    total: int
    sink: Callable[[RunDirectory], RecordSink]


async def play(
    plan: Plan,
    served: Served,
    scorer: RewardScorer,
    run_dir: RunDirectory,
    observer: RunObserver,
    limit: int | None = None,
    selection: Selection | None = None,
) -> Summary:
    """Every attempt of the plan (or of its first `limit` items, or the `selection`) against a
    served model."""
    settings = engine_config(plan.config, served.model)
    keyed = engine_keys(plan.config, served.base_url, served.admin_token, settings.limits)
    async with keyed as keys:
        engine = Engine(plan.runner, scorer, served.client, settings, observer.on_progress, keys)
        total = plan.total if limit is None else min(limit, plan.total)
        started = time.monotonic()
        done = await engine.start(run_dir, total if selection is None else selection.total)
        shards = plan.config.eval
        one = shards.engine != "ray" and shards.processes == 1
        fleet = None if one else Fleet(shards.processes * shards.concurrency)
        # A selection's caller drives the run itself: control is the whole plan's.
        control = (
            controlled(RunControl(engine, run_dir, lambda: plan.items(limit), fleet), run_dir.path)
            if selection is None
            else nullcontext()
        )
        with first_storage_error():
            async with control:
                if selection is not None:
                    await engine.play(selection.items, done, selection.sink(run_dir))
                elif fleet is None:
                    await engine.play(plan.items(limit), done, run_dir)
                elif plan.config.eval.engine == "ray":
                    await _play_on_ray(plan, served, engine, done, run_dir, limit, fleet)
                else:
                    await _play_sharded(plan, served, engine, done, run_dir, limit, fleet)
    summary = await engine.finish(run_dir, time.monotonic() - started)
    if engine.cancelled:
        raise RunCancelled(run_dir.path, summary.attempts)
    return summary


async def _play_sharded(
    plan: Plan,
    served: Served,
    engine: Engine,
    done: set[tuple[str, int]],
    run_dir: RunDirectory,
    limit: int | None,
    fleet: Fleet,
) -> None:
    """This process plays shard 0; one more engine process for each other shard."""
    shards = plan.config.eval.processes
    # Each process is told only of the finished attempts of its own samples.
    done_by_shard: list[list[tuple[str, int]]] = [[] for _ in range(shards)]
    for sample_id, attempt in sorted(done):
        done_by_shard[shard_of(sample_id, shards)].append((sample_id, attempt))
    jobs = [
        ShardJob(
            config=plan.config,
            base_url=served.base_url,
            model=served.model,
            index=index,
            shards=shards,
            limit=limit,
            done=done_by_shard[index],
        )
        for index in range(1, shards)
    ]

    def own() -> Iterator[Item]:
        return share(plan.items(limit), 0, shards)

    await play_in_processes(engine, own(), done, jobs, run_dir, served.api_key, fleet, own)


async def _play_on_ray(
    plan: Plan,
    served: Served,
    engine: Engine,
    done: set[tuple[str, int]],
    run_dir: RunDirectory,
    limit: int | None,
    fleet: Fleet,
) -> None:
    """Every shard a Ray actor; this process writes what they send."""
    # Imported only here: Ray is an extra (plan() checked it is installed).
    from agent_eval.run.shards import ray_driver
    from agent_eval.run.shards.ray_shard import RayShardJob

    config = plan.config
    token = None if served.admin_token is None else SecretStr(served.admin_token)
    async with ray_driver.ray_connection(config.scheduler.ray.address):
        job = RayShardJob(
            config=config,
            base_url=ray_driver.reachable_url(served.base_url),
            model=served.model,
            api_key=SecretStr(served.api_key),
            admin_token=token,
        )
        shards = config.eval.processes
        items = functools.partial(plan.items, limit)
        await ray_driver.play_on_ray(engine, items, done, job, shards, run_dir, fleet)


def resolved_config(config: RunConfig, model: str | None = None) -> RunConfig:
    """A copy of `config` naming every value the run uses, each default from its one source.

    Saved beside the results, so `run --config RUN/config.yaml` plays the same run again.
    """
    resolved = config.model_copy(deep=True)
    options = runner_options(config.agent.name, **config.agent.runner_options())
    agent = resolved.agent
    agent.max_turns = options.pop("max_turns", None)
    agent.api = options.pop("api", None)
    agent.options = options
    resolved.dataset.name = config.dataset_name
    if not config.rollout.endpoints:
        _resolve_workers(resolved)
    resolved.eval.ks = list(config.eval.k_values())
    resolved.reward.workers = config.reward.workers or default_workers()
    if model is not None:
        resolved.model.name = model
    return resolved


def _resolve_workers(config: RunConfig) -> None:
    """The model path and worker settings the backend picks itself, written into `config`."""
    worker = config.backend().resolved(config.worker(), config.allocation())
    config.model.path = worker.model
    config.model.name = config.model.name or worker.served_model_name
    config.rollout.worker.threads = worker.threads


def resume_config_path(run_dir: Path) -> Path:
    """The saved config of a run to resume; a folder without one is not a run directory."""
    path = run_dir / CONFIG_FILE
    if not path.is_file():
        raise ConfigError(f"{run_dir} holds no config.yaml: not a run directory to resume")
    return path


def resume_differences(config: RunConfig) -> list[Difference]:
    """What `config`, resuming the run in its directory, would change in the run's results."""
    run_dir = config.run_dir
    saved = load_run_config(resume_config_path(run_dir), {}, [])
    resumed = {**identity(resolved_config(config)), DIGEST: dataset_digest(config)}
    return differences({**identity(saved), **saved_facts(run_dir)}, resumed)
