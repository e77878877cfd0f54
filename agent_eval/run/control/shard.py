"""A shard's side of control: the orders the driver forwards to one engine, and its state after."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_eval.data import Item
from agent_eval.run.engine import Engine, RecordSink

Pair = tuple[str, int]
"""An attempt: (sample id, attempt index)."""


class Order(BaseModel):
    """What the driver asks of one shard; `limit` is the shard's part of the run's limit."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["status", "pause", "resume", "cancel", "limit", "requeue"]
    limit: int | None = Field(default=None, ge=0)
    attempts: list[Pair] = []
    """requeue's attempts, set aside by the driver: the shard plays them again."""


class ShardState(BaseModel):
    """One shard's gate, and whether it has attempts left to start."""

    in_flight: int
    limit: int
    paused: bool
    busy: bool


class News(BaseModel):
    """A shard process's line to the driver: a reply to its last order, or its fall to idle."""

    reply: bool
    state: ShardState


class ShardSide:
    """One engine's plays (its share, then requeued attempts) and the orders it takes."""

    def __init__(
        self,
        engine: Engine,
        items: Callable[[], Iterable[Item]],
        sink: RecordSink | None = None,
        on_change: Callable[[ShardState], None] | None = None,
    ) -> None:
        """`items`: this shard's items afresh, `sink` where its records go (or each play's own);
        `on_change`: told when the shard falls idle."""
        self.engine, self._items, self._sink, self._on_change = engine, items, sink, on_change
        self._plays: set[asyncio.Task[None]] = set()
        self.failed = asyncio.Event()
        """Set once a play fails: the shard stops rather than wait for more orders."""

    @property
    def state(self) -> ShardState:
        gate = self.engine.gate.state
        busy = any(not play.done() for play in self._plays)
        return ShardState(in_flight=gate.in_flight, limit=gate.limit, paused=gate.paused, busy=busy)

    def play(
        self,
        items: Iterable[Item],
        done: set[Pair] | frozenset[Pair],
        sink: RecordSink | None = None,
    ) -> asyncio.Task[None]:
        """Play the attempts of `items` not in `done` beside what this shard plays already,
        each record to `sink` (the shard's own by default)."""
        where = sink or self._sink
        assert where is not None, "a shard without a sink of its own is given one each play"
        task = asyncio.create_task(self.engine.play(items, done, where))
        self._plays.add(task)
        task.add_done_callback(self._ended)
        return task

    async def order(self, order: Order) -> ShardState:
        """Carry out `order`; the shard's state after."""
        gate = self.engine.gate
        if order.action == "pause":
            gate.pause()
        elif order.action == "resume":
            gate.resume()
        elif order.action == "cancel":
            self.engine.cancel()
        elif order.action == "limit" and order.limit is not None:
            gate.resize(order.limit, least=0)
        elif order.action == "requeue" and order.attempts and not self.engine.stopping:
            await self._requeue(set(order.attempts))
        return self.state

    async def wait(self) -> None:
        """Until every play has ended; the first one's error, if one failed."""
        while self._plays:
            await asyncio.gather(*self._plays)

    async def stop(self) -> None:
        """End the plays still going (the shard ends on an error or a signal)."""
        for play in self._plays:
            play.cancel()
        await asyncio.gather(*self._plays, return_exceptions=True)

    async def _requeue(self, wanted: set[Pair]) -> None:
        ids = {sample_id for sample_id, _ in wanted}
        found = await asyncio.to_thread(items_of, self._items(), ids)
        n_samples = self.engine.config.n_samples
        others = {(item.id, n) for item in found for n in range(n_samples)} - wanted
        self.play(found, others)

    def _ended(self, task: asyncio.Task[None]) -> None:
        if task.cancelled() or task.exception() is None:
            self._plays.discard(task)
        else:
            self.failed.set()  # the failed play stays, for wait() to raise its error
        if self._on_change is not None and not self.state.busy:
            self._on_change(self.state)


def items_of(items: Iterable[Item], ids: set[str]) -> list[Item]:
    """The items with these ids, in the run's order."""
    return [item for item in items if item.id in ids]
