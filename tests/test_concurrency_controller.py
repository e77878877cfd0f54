"""Adaptive concurrency's controller and slots, fed synthetic fleets: no process, no clock."""

from __future__ import annotations

import asyncio
import json

import pytest

from agent_eval.proxy.fleet.queues import waiting_requests
from agent_eval.run.concurrency import driver
from agent_eval.run.concurrency.controller import START, AdaptiveLimit, Settings, Window
from agent_eval.run.concurrency.signals import FleetCounts, fleet_counts, window_between
from agent_eval.run.gate import Gate


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


def test_an_unused_limit_does_not_grow_nor_one_whose_requests_are_not_answered():
    controller = AdaptiveLimit(Settings(ceiling=50))
    assert [controller.update(quiet(in_use=1)).limit for _ in range(5)] == [4] * 5
    held = Window(10.0, 0, None, 0, 0, 4)  # every request held: no latency to go by
    assert [controller.update(held).limit for _ in range(3)] == [4] * 3


def test_429s_cut_the_limit_by_the_backoff_then_it_grows_additively():
    controller = AdaptiveLimit(Settings(ceiling=100))
    controller.limit = 40.0
    decision = controller.update(Window(1.0, 10, 1.0, 5, 0, 40))
    assert decision.limit == 28 and "5 answers 429/503" in decision.reason
    assert not controller.slow_start
    grown = controller.update(quiet(28)).limit
    assert grown == 31  # additive, a tenth of the limit: no more doubling


def test_one_cut_per_cooling_window_while_429s_go_on():
    controller = AdaptiveLimit(Settings(ceiling=100))
    controller.limit = 100.0
    storm = Window(1.0, 10, 1.0, 50, 0, 100)
    assert [controller.update(storm).limit for _ in range(4)] == [70, 70, 49, 49]


def test_a_queue_at_the_workers_past_two_fifths_of_the_limit_is_taken_off_it():
    controller = AdaptiveLimit(Settings(ceiling=100))
    controller.limit = 20.0
    held = controller.update(Window(1.0, 10, 1.0, 0, 8.0, 20))  # a queue of 8: let be
    assert held.limit == 20 and not controller.slow_start  # full, if only just: no growth
    cut = controller.update(Window(1.0, 10, 1.0, 0, 11.0, 20))
    assert cut.limit == 17 and "11.0 requests queued" in cut.reason  # 20 - (11 - 8)


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
    assert after.waiting == 3
    window = window_between(before, after, 2.0, 7, 2.5)
    assert window == Window(2.0, 20, 1.0, 3, 2.5, 7)
    assert window_between(after, after, 1.0, 0, None).latency is None


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


class ScriptedProxy:
    """Stands in for the proxy's counters: each read gives the next, then the last again."""

    def __init__(self, *counts: FleetCounts) -> None:
        self.counts, self.read_all = list(counts), asyncio.Event()

    async def read(self) -> FleetCounts | None:
        if len(self.counts) == 1:
            self.read_all.set()
            return self.counts[0]
        return self.counts.pop(0)


def counts(answered: int, rejected: int = 0, waiting: int | None = 0) -> FleetCounts:
    return FleetCounts(answered, answered * 0.5, rejected, waiting)


async def test_the_loop_resizes_the_gate_traces_each_change_and_yields_to_a_limit_set_outside(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(driver, "INTERVAL", 0.0)
    gate, trace = Gate(64), tmp_path / driver.TRACE_FILE
    proxy = ScriptedProxy(counts(0), counts(10), counts(20, rejected=5), counts(20, rejected=5))
    adapting = driver.Adapting(AdaptiveLimit(Settings(ceiling=64)), proxy, gate, trace)  # type: ignore[arg-type]
    task = asyncio.create_task(adapting.run())
    await asyncio.wait_for(proxy.read_all.wait(), 10)
    assert gate.limit == 3  # started at 4, cut to 0.7x by the 429s (nothing in flight: no growth)
    gate.resize(7)  # agent-eval ctl RUN concurrency 7
    await asyncio.wait_for(task, 10)
    assert gate.limit == 7
    moves = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [(m["limit"], m["reason"]) for m in moves] == [
        (4, "start"),
        (3, "5 answers 429/503 from the workers"),
        (7, "set from outside"),
    ]
    assert moves[1]["rejected"] == 5 and moves[1]["latency_s"] == 0.5


async def test_a_trace_that_cannot_be_written_leaves_the_loop_adapting(
    tmp_path, monkeypatch, caplog
):
    monkeypatch.setattr(driver, "INTERVAL", 0.0)
    gate, trace = Gate(64), tmp_path / "not-here" / driver.TRACE_FILE
    proxy = ScriptedProxy(counts(0), counts(10, rejected=5), counts(10, rejected=5))
    adapting = driver.Adapting(AdaptiveLimit(Settings(ceiling=64)), proxy, gate, trace)  # type: ignore[arg-type]
    task = asyncio.create_task(adapting.run())
    await asyncio.wait_for(proxy.read_all.wait(), 10)
    assert gate.limit == 3 and adapting.trace is None
    assert "adaptive concurrency writes no" in caplog.text
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
