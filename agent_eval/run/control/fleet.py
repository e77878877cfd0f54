"""The driver's side of control over several engine shards: each action forwarded to every
shard, the run's limit shared among the shards that still have attempts to start."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol

from agent_eval.run.control.shard import Order, Pair, ShardSide, ShardState
from agent_eval.run.gate import GateState

Requeue = Callable[[set[Pair]], Awaitable[None]]
"""Hands set-aside attempts to the shards, each to one."""


class Link(Protocol):
    """One shard as the driver reaches it: a pipe, an actor, or this process's own engine."""

    @property
    def state(self) -> ShardState:
        """As last heard; `busy` kept current."""

    async def order(self, order: Order) -> ShardState: ...


def split(limit: int, shards: int) -> list[int]:
    """`limit` shared among `shards`: each the same, the first `limit % shards` one more."""
    whole, rest = divmod(limit, shards)
    return [whole + (index < rest) for index in range(shards)]


class Fleet:
    """Every shard of a run, as control acts on them; requeues stop once the fleet closes."""

    def __init__(self, planned: int) -> None:
        """`planned`: the shards' limits added up, as they start (shown until they have)."""
        self.links: list[Link] = []
        self._planned = planned
        self.lock = asyncio.Lock()
        """Held by a requeue and by the closing: a requeue reaches a shard that still plays."""
        self.closed = False
        self.paused = False
        self.run_limit: int | None = None
        """The run's limit once `ctl concurrency` set it; until then each shard keeps its own."""
        self.give: Requeue | None = None
        """Set by the shards' player: how it hands requeued attempts to its shards."""
        self._changed = asyncio.Event()
        self._sharing = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def state(self) -> GateState:
        """The shards together as last heard, for the live view (`status` asks each afresh)."""
        states = [link.state for link in self.links]
        in_flight = sum(state.in_flight for state in states)
        return GateState(in_flight, self.limit, self.paused)

    @property
    def limit(self) -> int:
        """The run's limit: set by `ctl concurrency`, else the shards' own added up."""
        if self.run_limit is not None:
            return self.run_limit
        return sum(link.state.limit for link in self.links) if self.links else self._planned

    async def join(self, link: Link) -> None:
        """A shard started: it is told what the fleet was told before it."""
        self.links.append(link)
        if self.paused:
            await link.order(Order(action="pause"))
        if self.run_limit is not None:
            await self._share()

    async def order(self, action: str) -> list[ShardState]:
        """pause, resume, cancel or status to every shard; their states after."""
        if action in ("pause", "resume"):
            self.paused = action == "pause"
        order = Order.model_validate({"action": action})
        states = list(await asyncio.gather(*(link.order(order) for link in self.links)))
        self._changed.set()  # a cancel leaves every shard idle: the fleet may close
        return states

    async def resize(self, limit: int) -> None:
        """The run's limit is `limit` from now on, shared among the busy shards."""
        self.run_limit = limit
        await self._share()

    def changed(self) -> None:
        """A shard fell idle or went: its part of the limit goes to the others."""
        self._changed.set()
        if self.run_limit is not None:
            task = asyncio.create_task(self._share())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def requeue(self, wanted: set[Pair]) -> None:
        """Hand `wanted` to the shards (the caller holds `lock`), then share the limit again."""
        assert self.give is not None, "the player sets it before the fleet is open"
        await self.give(wanted)
        if self.run_limit is not None:
            await self._share()

    async def keep_open(self, idle: Callable[[], bool]) -> None:
        """Until every shard is `idle` with no requeue under way; then take no more requeues."""
        while True:
            if idle():
                async with self.lock:
                    if idle():
                        self.closed = True
                        return
            await self._changed.wait()
            self._changed.clear()

    def all_idle(self) -> bool:
        return not any(link.state.busy for link in self.links)

    async def _share(self) -> None:
        async with self._sharing:
            if self.run_limit is None:
                return
            busy = [link for link in self.links if link.state.busy] or self.links
            parts = split(self.run_limit, len(busy))
            orders = [Order(action="limit", limit=n) for n in parts]
            await asyncio.gather(*(link.order(o) for link, o in zip(busy, orders, strict=True)))


class LocalLink:
    """This process's own engine as one shard of the fleet."""

    def __init__(self, side: ShardSide) -> None:
        self.side = side

    @property
    def state(self) -> ShardState:
        return self.side.state

    async def order(self, order: Order) -> ShardState:
        return await self.side.order(order)
