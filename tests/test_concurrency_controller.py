"""Adaptive concurrency's controller and slots, fed synthetic fleets: no process, no clock."""

from __future__ import annotations

import asyncio

import pytest

from agent_eval.proxy.fleet.queues import waiting_requests
from agent_eval.run.concurrency.controller import START, AdaptiveLimit, Settings, Window
from agent_eval.run.concurrency.signals import FleetCounts, fleet_counts, window_between
from agent_eval.run.concurrency.slots import Slots


def quiet(in_use: int, latency: float = 1.0, finished: int = 10) -> Window:
    """A window of a fleet with room: latency at its floor, no 429, no queue."""
    return Window(1.0, finished, latency, 0, 0, in_use)


class Fleet:
    """A fleet of `capacity` slots and `queue` places: latency grows with the queue, 429s past
    it; throughput is the capacity once full. Each attempt holds one request at a time."""

    def __init__(self, capacity: int, queue: int, service: float = 1.0) -> None:
        self.capacity, self.queue, self.service = capacity, queue, service

    def window(self, limit: int) -> Window:
        running = min(limit, self.capacity)
        waiting = min(max(0, limit - self.capacity), self.queue)
        rejected = max(0, limit - self.capacity - self.queue)
        latency = self.service * (1 + waiting / self.capacity)
        return Window(1.0, running, latency, rejected, waiting, limit)


def drive(controller: AdaptiveLimit, fleet: Fleet, windows: int) -> list[int]:
    limits = []
    for _ in range(windows):
        limits.append(controller.update(fleet.window(round(controller.limit))).limit)
    return limits


def test_slow_start_doubles_from_the_start_up_to_the_ceiling_while_latency_stays_at_its_floor():
    controller = AdaptiveLimit(Settings(ceiling=50))
    limits = [
        controller.update(quiet(round(controller.limit), finished=n)).limit
        for n in (4, 8, 16, 32, 64, 99)
    ]
    assert round(START) == 4 and limits == [8, 16, 32, 50, 50, 50]


def test_an_unused_limit_does_not_grow():
    controller = AdaptiveLimit(Settings(ceiling=50))
    assert [controller.update(quiet(in_use=1)).limit for _ in range(5)] == [4] * 5


def test_429s_cut_the_limit_by_the_backoff_then_it_grows_additively():
    controller = AdaptiveLimit(Settings(ceiling=100))
    controller.limit = 40.0
    decision = controller.update(Window(1.0, 10, 1.0, 5, 0, 40))
    assert decision.limit == 28 and "5 answers 429/503" in decision.reason
    assert not controller.slow_start
    grown = controller.update(quiet(28)).limit
    assert 29 <= grown <= 34  # additive: about the square root, no more doubling


def test_one_cut_per_cooling_window_while_429s_go_on():
    controller = AdaptiveLimit(Settings(ceiling=100))
    controller.limit = 100.0
    storm = Window(1.0, 10, 1.0, 50, 0, 100)
    assert [controller.update(storm).limit for _ in range(4)] == [70, 70, 49, 49]


def test_requests_queued_at_the_workers_cut_and_a_small_queue_does_not():
    controller = AdaptiveLimit(Settings(ceiling=100))
    controller.limit = 20.0
    grown = controller.update(Window(1.0, 10, 1.0, 0, 2, 20)).limit  # a queue of 2: room left
    assert 20 < grown <= 25 and not controller.slow_start  # full, if only just: additive
    cut = controller.update(Window(1.0, 10, 1.0, 0, 12, grown))
    assert cut.limit < grown and "12 requests queued" in cut.reason


def test_latency_far_above_its_floor_cuts_in_proportion_and_between_it_holds():
    controller = AdaptiveLimit(Settings(ceiling=100))
    controller.limit = 30.0
    controller.update(quiet(30, latency=1.0))  # the floor: 1 s
    limit = round(controller.limit)
    held = controller.update(quiet(limit, latency=1.6))
    assert held.limit == limit and held.reason == ""
    cut = controller.update(quiet(limit, latency=4.0))
    assert cut.limit == round(limit * 0.5) and "latency 4.0x its floor" in cut.reason


def test_growth_holds_when_half_as_much_again_did_not_raise_throughput():
    controller = AdaptiveLimit(Settings(ceiling=1000))
    controller.slow_start = False
    controller.limit = 20.0
    limits = [
        controller.update(quiet(round(controller.limit), finished=50)).limit for _ in range(12)
    ]
    assert limits[-1] == limits[-2] == limits[-3]  # flat throughput: no more growth
    assert limits[-1] < 60


def test_on_a_fleet_of_fixed_capacity_the_limit_settles_near_it_with_few_429s():
    fleet = Fleet(capacity=16, queue=16)
    controller = AdaptiveLimit(Settings(ceiling=256))
    limits = drive(controller, fleet, 200)
    settled = limits[100:]
    assert max(limits) <= 256
    assert 12 <= sum(settled) / len(settled) <= 32
    windows_with_429 = sum(fleet.window(limit).rejected > 0 for limit in settled)
    assert windows_with_429 <= len(settled) // 10


def test_the_limit_stays_within_its_bounds():
    controller = AdaptiveLimit(Settings(ceiling=6, least=2))
    assert drive(controller, Fleet(capacity=64, queue=0), 20)[-1] == 6
    assert drive(controller, Fleet(capacity=1, queue=0), 20)[-1] == 2


def test_a_window_between_two_reads_of_the_proxy():
    before = fleet_counts([{"answered": 10, "answer_seconds": 5.0, "rejected": 1}], [])
    after = fleet_counts(
        [{"answered": 30, "answer_seconds": 25.0, "rejected": 4}, {"answered": 0}],
        [{"url": "a", "waiting": 3}, {"url": "b", "waiting": None}],
    )
    assert before == FleetCounts(10, 5.0, 1, None)
    window = window_between(before, after, 2.0, 7)
    assert window == Window(2.0, 20, 1.0, 3, 3, 7)
    assert window_between(after, after, 1.0, 0).latency is None


@pytest.mark.parametrize(
    ("body", "waiting"),
    [
        (b'[{"dp_rank": 0, "num_reqs": 4, "num_waiting_reqs": 3}, {"num_waiting_reqs": 2}]', 5),
        (b'{"num_reqs": 1, "num_waiting_reqs": 0}', 0),
        (b"[]", None),
        (b'[{"num_waiting_reqs": -1}]', None),
        (b'[{"num_waiting_reqs": "3"}]', None),
        (b"not json", None),
        (b'{"load": 3}', None),
    ],
)
def test_sglang_get_load_answers_give_the_requests_waiting(body: bytes, waiting: int | None):
    assert waiting_requests(body) == waiting


async def test_slots_resized_down_let_attempts_finish_and_start_none_until_below_the_limit():
    slots, entered, release = Slots(3), [], asyncio.Event()

    async def attempt(n: int) -> None:
        async with slots:
            entered.append(n)
            await release.wait()

    tasks = [asyncio.create_task(attempt(n)) for n in range(6)]
    await asyncio.sleep(0)
    assert entered == [0, 1, 2] and slots.in_use == 3
    slots.resize(1)
    release.set()
    await asyncio.gather(*tasks)
    assert entered == list(range(6)) and slots.in_use == 0 and slots.take_peak() == 3


async def test_slots_resized_up_start_the_waiting_attempts_at_once():
    slots, hold = Slots(1), asyncio.Event()

    async def attempt() -> None:
        async with slots:
            await hold.wait()

    tasks = [asyncio.create_task(attempt()) for _ in range(4)]
    await asyncio.sleep(0)
    assert slots.in_use == 1
    slots.resize(4)
    await asyncio.sleep(0)
    assert slots.in_use == 4 and slots.peak == 4
    tasks[3].cancel()
    hold.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    assert slots.in_use == 0


async def test_a_waiting_attempt_cancelled_leaves_no_slot_taken():
    slots = Slots(1)
    await slots.__aenter__()
    waiting = asyncio.create_task(slots.__aenter__())
    await asyncio.sleep(0)
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    await slots.__aexit__(None, None, None)
    assert slots.in_use == 0
    async with slots:
        assert slots.in_use == 1
