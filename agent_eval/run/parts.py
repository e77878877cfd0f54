"""The parts of a run its config makes: dataset items, engine settings, a warm scorer.

Shared by the run (`evaluation`) and its engine processes (`shards.child`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
from collections.abc import AsyncIterator, Iterator

from agent_eval.data import Item, load_dataset
from agent_eval.data.edits import benchmark_edits
from agent_eval.data.subset import seeded_subset
from agent_eval.perturb.expand import perturbed
from agent_eval.proxy.capture.attempt import Price
from agent_eval.rewards import RewardScorer
from agent_eval.rewards.scorer import default_workers
from agent_eval.run.config import RunConfig
from agent_eval.run.engine import EngineConfig
from agent_eval.run.limits import Limits


def dataset_items(config: RunConfig, limit: int | None = None) -> Iterator[Item]:
    """A run's dataset (or its first `limit` items), streamed afresh."""
    dataset = config.dataset
    items = load_dataset(config.dataset_name, dataset.path, dataset.limit)
    if dataset.subset is not None:
        items = seeded_subset(items, dataset.subset, config.eval.seed)
    if dataset.perturb:
        edits = benchmark_edits(config.dataset_name)
        items = perturbed(items, dataset.perturb, config.eval.seed, edits)
    return items if limit is None else itertools.islice(items, limit)


def engine_config(config: RunConfig, model: str) -> EngineConfig:
    """The engine settings of a run against `model`."""
    return EngineConfig(
        model=model,
        n_samples=config.eval.n_samples,
        concurrency=config.eval.concurrency,
        adaptive=config.eval.concurrency_mode == "adaptive",
        seed=config.eval.seed,
        attempt_timeout=config.eval.attempt_timeout,
        replays=config.eval.replays,
        replay_backoff=config.eval.replay_backoff,
        max_unscored=config.eval.max_unscored,
        sampling=config.sampling,
        ks=config.eval.k_values(),
        seed_scope=config.seed_scope(),
        run_dir=config.output.dir,
        limits=attempt_limits(config, model),
    )


def attempt_limits(config: RunConfig, model: str) -> Limits:
    """The run's per-attempt limits, its cost priced at `model`'s tokens.

    Raises: ConfigError when eval.limits.cost is set and eval.prices has no `model`."""
    limits, priced = config.eval.limits, config.eval.price(model)
    price = None if priced is None else Price(priced.prompt, priced.completion)
    return Limits(
        limits.wall_time, limits.working_time, limits.tokens, limits.model_calls, limits.cost, price
    )


@contextlib.asynccontextmanager
async def warm_scorer(config: RunConfig) -> AsyncIterator[RewardScorer]:
    """A reward scorer whose processes warm up while the workers start."""
    reward = config.reward
    scorer = RewardScorer(
        reward.function,
        timeout=reward.timeout,
        max_workers=scoring_workers(config),
        startup_timeout=reward.start_timeout,
    )
    # A failure to start is raised where the pool is first awaited (before a run's first attempt).
    warming = asyncio.ensure_future(scorer.start())
    try:
        yield scorer
    finally:
        warming.cancel()
        await asyncio.gather(warming, return_exceptions=True)
        await scorer.close()


def scoring_workers(config: RunConfig) -> int:
    """Scoring processes of each engine process: `reward.workers` (or the default) shared."""
    total = config.reward.workers or default_workers()
    return max(1, math.ceil(total / config.eval.processes))
