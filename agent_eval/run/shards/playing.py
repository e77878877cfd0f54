"""What every engine shard plays with, in a process or a Ray actor: runner, client, scorer, keys."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from openai import AsyncOpenAI

from agent_eval.agents import load_runner
from agent_eval.run.capture import engine_keys
from agent_eval.run.config import RunConfig
from agent_eval.run.engine import Engine
from agent_eval.run.parts import engine_config, warm_scorer


@contextlib.asynccontextmanager
async def shard_engine(
    config: RunConfig, base_url: str, model: str, api_key: str, admin_token: str | None
) -> AsyncIterator[Engine]:
    """An engine against the proxy at `base_url`, with its own client and scoring processes."""
    runner = load_runner(config.agent.name, **config.agent.runner_options())
    client = AsyncOpenAI(base_url=base_url, api_key=api_key)
    settings = engine_config(config, model)
    async with (
        warm_scorer(config) as scorer,
        client,
        engine_keys(config, base_url, admin_token, settings.limits) as keys,
    ):
        yield Engine(runner, scorer, client, settings, keys=keys)
