"""The driver's side of the engine on Ray: shard actors over the cluster's nodes, their records
appended here alone, and a lost shard's unfinished attempts played by the shards left.

The driver knows which attempts each shard still owes; it writes an attempt's record once, the
first time any shard delivers it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import ray
from ray.exceptions import RayActorError, RayTaskError

from agent_eval.data import Item
from agent_eval.errors import AgentEvalError
from agent_eval.proxy.admin_client import on_host
from agent_eval.results.files import RunDirectory
from agent_eval.results.record import AttemptRecord
from agent_eval.run.control.fleet import Fleet
from agent_eval.run.control.shard import Order, ShardState
from agent_eval.run.engine import Engine
from agent_eval.run.shards.job import shard_of
from agent_eval.run.shards.ray_shard import EngineShardActor, Key, RayShardJob
from agent_eval.schedulers.ray_cluster import first_line, join_cluster

log = logging.getLogger(__name__)

START_TIMEOUT = 120.0
STOP_GRACE = 10.0


class EngineShardError(AgentEvalError):
    """An engine shard on Ray failed, or every shard was lost."""


@contextlib.asynccontextmanager
async def ray_connection(address: str | None) -> AsyncIterator[None]:
    """This process joined to the Ray cluster at `address` (a local one for None) inside the
    block; a connection that was there already (the Ray scheduler's) is left open."""
    # Its own thread: a local cluster's processes die with the thread that started them.
    thread = ThreadPoolExecutor(1, thread_name_prefix="ray-engine")
    loop = asyncio.get_running_loop()
    try:
        joined = await loop.run_in_executor(thread, join_cluster, address)
        try:
            yield
        finally:
            if joined:
                await asyncio.shield(loop.run_in_executor(thread, ray.shutdown))
    finally:
        thread.shutdown(wait=False)


def reachable_url(base_url: str) -> str:
    """The proxy's URL as other nodes reach it: a wildcard host becomes this node's IP."""
    return on_host(base_url, ray.util.get_node_ip_address())


async def play_on_ray(
    engine: Engine,
    items: Callable[[], Iterable[Item]],
    done: set[Key],
    job: RayShardJob,
    shards: int,
    run_dir: RunDirectory,
    fleet: Fleet,
) -> None:
    """Play every attempt of `items()` not in `done` on `shards` actors; records to `run_dir`;
    control reaches each actor through `fleet`."""
    spread = EngineShardActor.options(scheduling_strategy="SPREAD")
    actors = [spread.remote(job) for _ in range(shards)]
    try:
        await _started(actors)
        deliveries = Deliveries(engine, items, done, run_dir, dict(enumerate(actors)), fleet)
        limit = engine.config.concurrency
        for index, actor in enumerate(actors):
            await fleet.join(RayLink(actor, limit, functools.partial(deliveries.playing, index)))
        fleet.give = deliveries.requeue
        await deliveries.run()
    finally:
        await _stopped(actors)


class RayLink:
    """A shard actor as the fleet reaches it: orders by a method call, taken while it plays."""

    def __init__(self, actor: Any, limit: int, playing: Callable[[], bool]) -> None:
        self._actor, self._playing = actor, playing
        self._state = ShardState(in_flight=0, limit=limit, paused=False, busy=True)

    @property
    def state(self) -> ShardState:
        """As last heard; busy while the driver reads a stream of its records."""
        return self._state.model_copy(update={"busy": self._playing()})

    async def order(self, order: Order) -> ShardState:
        try:
            self._state = await self._actor.order.remote(order)
        except RayActorError:  # lost or killed: it plays nothing more
            self._state = self._state.model_copy(update={"in_flight": 0})
        return self.state


class Deliveries:
    """The attempts each live shard owes: each record appended once, as it arrives; a lost
    shard's debts shared among the shards left."""

    def __init__(
        self,
        engine: Engine,
        items: Callable[[], Iterable[Item]],
        done: set[Key],
        run_dir: RunDirectory,
        actors: dict[int, Any],
        fleet: Fleet,
    ) -> None:
        self._engine, self._items, self._run_dir, self._fleet = engine, items, run_dir, fleet
        self._delivered = set(done)
        self._alive = actors
        self._owed: dict[int, set[Key]] = {index: set() for index in actors}
        self._streams = dict.fromkeys(actors, 0)
        self._group = asyncio.TaskGroup()

    def playing(self, index: int) -> bool:
        """Whether shard `index` has attempts left to play (a stream still open)."""
        return self._streams.get(index, 0) > 0

    async def requeue(self, wanted: set[Key]) -> None:
        """Play the `wanted` attempts (set aside by the driver) again, each on one live shard."""
        self._delivered -= wanted
        self._share_out(wanted)

    async def run(self) -> None:
        """Give each shard the samples whose id hashes to it; return once every record is in."""
        shares: list[list[Item]] = [[] for _ in self._alive]
        for item in self._items():
            shares[shard_of(item.id, len(shares))].append(item)
        async with self._group:
            for index, share in enumerate(shares):
                self._give(index, share, self._unplayed(share))
            # Open to requeues until every stream has ended: each then has a live group.
            self._group.create_task(self._fleet.keep_open(self._idle))
        missing = sum(len(owed) for owed in self._owed.values())
        if missing and not self._engine.stopping:
            raise EngineShardError(
                f"the engine shards ended with {missing} attempt(s) not sent back; "
                f"`agent-eval run --resume {self._run_dir.path}` plays them"
            )

    def _unplayed(self, items: list[Item]) -> set[Key]:
        return {key for key in self._attempts(items) if key not in self._delivered}

    def _attempts(self, items: list[Item]) -> Iterable[Key]:
        return ((item.id, n) for item in items for n in range(self._engine.config.n_samples))

    def _give(self, index: int, items: list[Item], wanted: set[Key]) -> None:
        """Shard `index` plays the `wanted` attempts of `items`, alongside what it plays."""
        if not wanted:
            return
        self._owed[index] |= wanted
        others = [key for key in self._attempts(items) if key not in wanted]
        stream = self._alive[index].play.remote(items, others)
        self._streams[index] += 1
        self._group.create_task(self._collect(index, stream))

    def _idle(self) -> bool:
        return self._engine.stopping or not any(self._streams.values())

    async def _collect(self, index: int, stream: Any) -> None:
        try:
            async for ref in stream:
                await self._deliver(index, await ref)
        except RayActorError as exc:
            self._lost(index, exc)
        except RayTaskError as exc:
            raise shard_failure(f"engine shard {index} failed", exc) from None
        finally:
            self._streams[index] -= 1
            self._fleet.changed()

    async def _deliver(self, index: int, line: bytes) -> None:
        record = AttemptRecord.from_line(line, f"engine shard {index}'s output")
        key = (record.sample_id, record.attempt)
        for owed in self._owed.values():
            owed.discard(key)
        if key in self._delivered:
            log.warning("attempt %d of %s came twice; its first record is kept", key[1], key[0])
            return
        self._delivered.add(key)
        await self._run_dir.append_line(line)
        self._engine.count(record)
        if self._engine.stopping:
            # Over the unscored budget: no shard starts another attempt. Those in flight are
            # lost with it and played on resume.
            for actor in self._alive.values():
                ray.kill(actor, no_restart=True)

    def _lost(self, index: int, error: RayActorError) -> None:
        """Shard `index`'s actor died (its node was lost): its debts go to the shards left."""
        actor = self._alive.pop(index, None)
        owed = self._owed.pop(index, set())
        if actor is None or self._engine.stopping:
            return  # already handled through another of its streams, or killed on purpose
        ray.kill(actor, no_restart=True)
        if owed and not self._alive:
            raise EngineShardError(
                f"every engine shard on Ray was lost (the last, shard {index}: "
                f"{first_line(error)}); finished attempts are kept: "
                f"`agent-eval run --resume {self._run_dir.path}` plays the rest"
            )
        log.warning(
            "engine shard %d was lost (%s); the %d left play its %d unfinished attempt(s)",
            index, first_line(error), len(self._alive), len(owed),
        )  # fmt: skip
        self._share_out(owed)

    def _share_out(self, wanted: set[Key]) -> None:
        """The `wanted` attempts to the live shards, by the hash of their samples among them."""
        ids = {sample_id for sample_id, _ in wanted}
        items = [item for item in self._items() if item.id in ids]
        survivors = sorted(self._alive)
        for position, survivor in enumerate(survivors):
            part = [item for item in items if shard_of(item.id, len(survivors)) == position]
            mine = {key for key in wanted if shard_of(key[0], len(survivors)) == position}
            self._give(survivor, part, mine)


async def _started(actors: list[Any]) -> None:
    """Every shard started (the proxy reached from its node, its engine warm), or an error."""
    try:
        async with asyncio.timeout(START_TIMEOUT):
            nodes = await asyncio.gather(*(actor.start.remote() for actor in actors))
    except TimeoutError:
        free = ray.available_resources().get("CPU", 0.0)
        raise EngineShardError(
            f"the {len(actors)} engine shard(s) did not start on Ray within {START_TIMEOUT:.0f} "
            f"s; each needs a CPU of its own ({free:g} free now): lower eval.processes or add "
            "nodes"
        ) from None
    except RayTaskError as exc:
        raise shard_failure("an engine shard could not start", exc) from None
    except RayActorError as exc:
        raise EngineShardError(
            f"an engine shard's actor died while starting ({first_line(exc)}); agent-eval, the "
            "agent and the reward must be installed, at the same versions, on every node"
        ) from None
    for index, (node_id, node_ip) in enumerate(nodes):
        log.info("engine shard %d runs on node %s (%s)", index, node_ip, node_id)


async def _stopped(actors: list[Any]) -> None:
    """Each live shard closes its client and scorers, then every actor goes."""
    stopping = asyncio.gather(*(actor.stop.remote() for actor in actors), return_exceptions=True)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stopping, STOP_GRACE)
    for actor in actors:
        ray.kill(actor, no_restart=True)


def shard_failure(what: str, error: RayTaskError) -> AgentEvalError:
    """A shard's own error (a user's mistake) as itself; anything else with its first line."""
    if isinstance(error.cause, AgentEvalError):
        return error.cause
    return EngineShardError(f"{what}: {first_line(error)}")
