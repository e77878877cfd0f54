"""Control over several engine shards: the run's limit shared among them and moved as they fall
idle, what a shard that joins late is told, and no requeue once the fleet has closed."""

from __future__ import annotations

import asyncio

from agent_eval.run.control.fleet import Fleet, LocalLink, split
from agent_eval.run.control.shard import ShardSide, ShardState
from tests.helpers.control_runs import idle_engine
from tests.helpers.waits import eventually


class Held(LocalLink):
    """A shard with a real engine's gate, busy until the test says its share is played."""

    def __init__(self) -> None:
        super().__init__(ShardSide(idle_engine(), list))
        self.busy = True

    @property
    def state(self) -> ShardState:
        return self.side.state.model_copy(update={"busy": self.busy})

    @property
    def limit(self) -> int:
        return self.side.engine.gate.limit


async def fleet_of(count: int) -> tuple[Fleet, list[Held]]:
    fleet, shards = Fleet(3 * count), [Held() for _ in range(count)]
    for shard in shards:
        await fleet.join(shard)
    return fleet, shards


def test_a_limit_is_split_evenly_the_first_shards_taking_the_rest() -> None:
    assert split(5, 2) == [3, 2]
    assert split(8, 4) == [2, 2, 2, 2]
    assert split(2, 3) == [1, 1, 0]
    assert all(sum(split(n, s)) == n for n in range(1, 40) for s in range(1, 9))


async def test_the_limit_moves_to_the_shards_still_playing() -> None:
    fleet, (a, b, c) = await fleet_of(3)
    assert fleet.state.limit == 9  # each shard's own until ctl sets the run's
    await fleet.resize(5)
    assert [a.limit, b.limit, c.limit] == [2, 2, 1] and fleet.state.limit == 5
    b.busy = False
    fleet.changed()
    await eventually(lambda: [a.limit, c.limit] == [3, 2], 5, lambda: f"{a.limit}, {c.limit}")
    a.busy = False
    fleet.changed()
    await eventually(lambda: c.limit == 5, 5, lambda: f"{c.limit}")


async def test_a_shard_whose_part_is_none_starts_nothing_until_another_falls_idle() -> None:
    fleet, (a, b) = await fleet_of(2)
    await fleet.resize(1)
    assert [a.limit, b.limit] == [1, 0]
    gate = b.side.engine.gate
    waiting = asyncio.ensure_future(gate.acquire())
    await asyncio.sleep(0.01)
    assert not waiting.done()
    a.busy = False
    fleet.changed()
    assert await asyncio.wait_for(waiting, 5) and b.limit == 1


async def test_a_shard_that_joins_late_is_told_the_pause_and_the_limit() -> None:
    fleet, (a,) = await fleet_of(1)
    await fleet.order("pause")
    await fleet.resize(4)
    late = Held()
    await fleet.join(late)
    assert late.side.engine.gate.paused and [a.limit, late.limit] == [2, 2]
    states = await fleet.order("resume")
    assert not any(state.paused for state in states) and not fleet.state.paused


async def test_the_fleet_closes_once_idle_and_never_under_a_requeue() -> None:
    fleet, shards = await fleet_of(2)
    closing = asyncio.ensure_future(fleet.keep_open(fleet.all_idle))
    async with fleet.lock:  # a requeue under way: its shard is handed attempts
        for shard in shards:
            shard.busy = False
        fleet.changed()
        await asyncio.sleep(0.01)
        assert not fleet.closed and not closing.done()
    await asyncio.wait_for(closing, 5)
    assert fleet.closed
