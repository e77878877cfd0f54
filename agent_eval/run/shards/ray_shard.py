"""An engine shard in a Ray actor: it plays the attempts the driver gives it, yielding each record.

Ray imports this module on every node, so agent-eval, the run's agent and its reward must be
installed there too. The shard reaches the proxy over the network; the driver alone writes
the run directory.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import aiohttp
import ray
from pydantic import BaseModel, ConfigDict, SecretStr

from agent_eval.data import Item
from agent_eval.errors import ConfigError
from agent_eval.proxy.admin_client import proxy_root
from agent_eval.results.record import AttemptRecord
from agent_eval.run.config import RunConfig
from agent_eval.run.control.shard import Order, ShardSide, ShardState
from agent_eval.run.shards.playing import shard_engine

REACH_TIMEOUT = 10.0

Key = tuple[str, int]
"""An attempt: (sample id, attempt index)."""


class RayShardJob(BaseModel):
    """What every shard actor is given: the run's config, the proxy as its node reaches it."""

    model_config = ConfigDict(extra="forbid")

    config: RunConfig
    base_url: str
    model: str
    api_key: SecretStr
    admin_token: SecretStr | None


class QueueSink:
    """Finished records onto a queue, from which play() yields them to the driver."""

    def __init__(self, queue: asyncio.Queue[bytes | None]) -> None:
        self._queue = queue

    async def append(self, record: AttemptRecord) -> None:
        await self._queue.put(record.to_line())


class EngineShard:
    """One engine on the node Ray placed it, kept warm between the plays the driver asks for."""

    def __init__(self, job: RayShardJob) -> None:
        self._job = job
        self._exits = contextlib.AsyncExitStack()
        self._side: ShardSide | None = None

    async def start(self) -> tuple[str, str]:
        """Check the proxy answers from here, then warm the engine; this node's id and IP.

        Raises: ConfigError when the proxy's URL does not reach it from this node.
        """
        job = self._job
        node_ip = ray.util.get_node_ip_address()
        await _check_reachable(job.base_url, node_ip)
        token = None if job.admin_token is None else job.admin_token.get_secret_value()
        key = job.api_key.get_secret_value()
        engine = shard_engine(job.config, job.base_url, job.model, key, token)
        # The driver gives each play its items: the shard looks none up itself.
        self._side = ShardSide(await self._exits.enter_async_context(engine), list)
        return ray.get_runtime_context().get_node_id(), node_ip

    async def play(self, items: list[Item], done: list[Key]) -> AsyncIterator[bytes]:
        """Play the attempts of `items` not in `done`, yielding each record line as it ends."""
        assert self._side is not None, "the driver awaits start() first"
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        playing = asyncio.ensure_future(self._play(self._side, items, set(done), queue))
        try:
            while (line := await queue.get()) is not None:
                yield line
            await playing  # its error, if it failed, reaches the driver
        finally:
            playing.cancel()
            await asyncio.gather(playing, return_exceptions=True)

    async def order(self, order: Order) -> ShardState:
        """A control order from the driver, taken while play() streams (an async actor runs
        its calls side by side); the shard's state after."""
        assert self._side is not None, "the driver awaits start() first"
        return await self._side.order(order)

    async def stop(self) -> None:
        """Close the client and the scoring processes."""
        await self._exits.aclose()

    @staticmethod
    async def _play(
        side: ShardSide, items: list[Item], done: set[Key], queue: asyncio.Queue[bytes | None]
    ) -> None:
        try:
            await side.play(items, done, QueueSink(queue))
        finally:
            queue.put_nowait(None)


async def _check_reachable(base_url: str, node_ip: str) -> None:
    """Raises: ConfigError naming the node and the URL when the proxy does not answer there."""
    timeout = aiohttp.ClientTimeout(total=REACH_TIMEOUT)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as http,
            http.get(proxy_root(base_url) + "/readiness") as response,
        ):
            await response.read()
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise ConfigError(
            f"the engine shard on node {node_ip} cannot reach the proxy at {base_url} "
            f"({type(exc).__name__}: {exc}); on a cluster of several machines the proxy must "
            "listen where every node reaches it: proxy.host=0.0.0.0 (with proxy.api_key) or "
            "this machine's address on the cluster's network"
        ) from None


EngineShardActor = ray.remote(num_cpus=1, max_restarts=0)(EngineShard)
