"""The engine's gate: a limit on attempts in flight that can be resized, paused and closed."""

from __future__ import annotations

import asyncio

import pytest

from agent_eval.run.gate import Gate, GateClosed, GateState


async def _holders(gate: Gate, count: int, release: asyncio.Event) -> list[asyncio.Task[None]]:
    """`count` tasks that each take a slot and hold it until `release` is set."""

    async def hold() -> None:
        async with gate.slot():
            await release.wait()

    tasks = [asyncio.create_task(hold()) for _ in range(count)]
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    return tasks


async def test_holds_at_most_limit_and_grows_when_resized() -> None:
    gate, release = Gate(2), asyncio.Event()
    tasks = await _holders(gate, 5, release)
    assert gate.state == GateState(in_flight=2, limit=2, paused=False)
    gate.resize(4)
    await asyncio.sleep(0)
    assert gate.state.in_flight == 4
    release.set()
    await asyncio.gather(*tasks)
    assert gate.state == GateState(in_flight=0, limit=4, paused=False)


async def test_shrinking_ends_none_in_flight_and_starts_none_above_the_new_limit() -> None:
    gate = Gate(3)
    for _ in range(3):
        assert await gate.acquire()
    gate.resize(1)
    waiting = asyncio.create_task(gate.acquire())
    gate.release()
    gate.release()
    await asyncio.sleep(0)
    assert not waiting.done(), "two of three released leave one in flight: the limit, 1"
    gate.release()
    assert await waiting
    assert gate.state.in_flight == 1


async def test_pause_gives_no_slot_until_resumed() -> None:
    gate = Gate(2)
    assert await gate.acquire()
    gate.pause()
    waiting = asyncio.create_task(gate.acquire())
    await asyncio.sleep(0)
    gate.release()
    await asyncio.sleep(0)
    assert not waiting.done()
    assert gate.state == GateState(in_flight=0, limit=2, paused=True)
    gate.resume()
    assert await waiting
    assert gate.state == GateState(in_flight=1, limit=2, paused=False)


async def test_a_woken_waiter_cancelled_passes_its_slot_on() -> None:
    gate = Gate(1)
    assert await gate.acquire()
    first = asyncio.create_task(gate.acquire())
    second = asyncio.create_task(gate.acquire())
    await asyncio.sleep(0)
    gate.release()  # wakes `first`, which is cancelled before it runs
    first.cancel()
    assert await asyncio.wait_for(second, 5)
    assert gate.state.in_flight == 1


async def test_close_tells_waiters_and_later_callers() -> None:
    gate = Gate(1)
    gate.pause()
    waiting = asyncio.create_task(gate.acquire())
    await asyncio.sleep(0)
    gate.close()
    assert await waiting is False
    assert await gate.acquire() is False
    with pytest.raises(GateClosed):
        async with gate.slot():
            pass
    assert gate.state.in_flight == 0


@pytest.mark.parametrize("limit", [0, -3])
def test_a_limit_below_one_is_refused(limit: int) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Gate(limit)
    with pytest.raises(ValueError, match="at least 1"):
        Gate(2).resize(limit)
