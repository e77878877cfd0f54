"""Adaptive concurrency through the real CLI, proxy and mock workers of fixed capacity."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path

from agent_eval.run.concurrency.controller import START
from agent_eval.run.control.protocol import SOCKET
from agent_eval.testing.mock_worker import MockWorker
from tests.helpers.cli_runs import ROWS, agent_eval, finish, lines, write_dataset
from tests.helpers.proxy import StartWorkers
from tests.helpers.waits import eventually


def trace(run_dir: Path) -> list[dict]:
    """The run's concurrency.jsonl: the start, then each change of the limit."""
    text = (run_dir / "concurrency.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


async def held_run(
    start_workers: StartWorkers, tmp_path: Path, *options: str
) -> tuple[MockWorker, asyncio.subprocess.Process, Path]:
    """A run of `options` on one worker that holds every request until its gate is released."""
    (worker,) = await start_workers(1)
    worker.behavior.hang = True
    data, run_dir = write_dataset(tmp_path / "say.jsonl"), tmp_path / "run"
    process = await agent_eval(
        "run", "--dataset", str(data), "--endpoint", worker.url, "-n", "2", "-o", str(run_dir),
        *options, cwd=tmp_path,
    )  # fmt: skip
    return worker, process, run_dir


async def test_429s_cut_the_limit_and_the_run_completes_under_its_ceiling(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    workers = await start_workers(2)
    for worker in workers:  # one request at a time each, no queue: a 429 for any other
        worker.behavior.update({"capacity": 1, "queue_limit": 0, "latency": 0.2})
    data, run_dir = write_dataset(tmp_path / "say.jsonl"), tmp_path / "run"
    endpoints = [arg for w in workers for arg in ("--endpoint", w.url)]
    process = await agent_eval(
        "run", "--dataset", str(data), *endpoints, "-n", "4", "-j", "16", "-o", str(run_dir),
        "eval.concurrency_mode=adaptive", "eval.max_unscored=1", cwd=tmp_path,
    )  # fmt: skip
    code, _, err = await finish(process, timeout=300)
    assert code == 0, err
    assert len(lines(run_dir)) == ROWS * 4
    assert sum(worker.stats.rejected for worker in workers) > 0  # the fleet did refuse
    moves = trace(run_dir)
    assert moves[0]["limit"] == START and moves[0]["reason"] == "start"
    assert moves[1]["in_use"] <= START  # from the first attempt on, not -j's 16 at first
    cuts = [
        (before["limit"], after)
        for before, after in itertools.pairwise(moves)
        if "429/503" in after["reason"]
    ]
    assert cuts and all(after["limit"] < limit and after["rejected"] > 0 for limit, after in cuts)
    assert all(move["limit"] <= 16 for move in moves)
    assert "concurrency 4 -> " in err  # each change is logged too


async def test_on_a_fleet_with_room_the_limit_grows_to_eval_concurrency_and_never_above(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = await start_workers(1)
    worker.behavior.latency = 0.3
    data, run_dir = write_dataset(tmp_path / "say.jsonl"), tmp_path / "run"
    process = await agent_eval(
        "run", "--dataset", str(data), "--endpoint", worker.url, "-n", "8", "-j", "6",
        "-o", str(run_dir), "eval.concurrency_mode=adaptive", cwd=tmp_path,
    )  # fmt: skip
    code, _, err = await finish(process, timeout=300)
    assert code == 0, err
    assert len(lines(run_dir)) == ROWS * 8
    limits = [move["limit"] for move in trace(run_dir)]
    assert limits[0] == START and max(limits) == 6
    # One worker sees every request, and each attempt has one in flight at a time.
    assert worker.stats.max_in_flight <= 6 and worker.stats.rejected == 0


async def test_fixed_concurrency_keeps_its_number_and_leaves_no_trace(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    worker, process, run_dir = await held_run(start_workers, tmp_path, "-j", "5")
    await worker.gate.wait_for_arrivals(5, timeout=120)
    worker.behavior.hang = False
    worker.gate.release()
    code, _, err = await finish(process, timeout=300)
    assert code == 0, err
    assert not (run_dir / "concurrency.jsonl").exists()
    assert worker.stats.max_in_flight == 5


async def test_a_limit_set_with_ctl_stops_the_adapting_and_is_kept(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    worker, process, run_dir = await held_run(
        start_workers, tmp_path, "-j", "16", "eval.concurrency_mode=adaptive"
    )
    await worker.gate.wait_for_arrivals(START, timeout=120)
    await eventually(lambda: (run_dir / SOCKET).exists(), 60)
    set_by_hand = await agent_eval("ctl", str(run_dir), "concurrency", "6", cwd=tmp_path)
    code, out, err = await finish(set_by_hand)
    assert code == 0 and "at most 6 attempts at once" in out, (out, err)
    traced = run_dir / "concurrency.jsonl"
    await eventually(lambda: traced.exists() and "set from outside" in traced.read_text(), 60)
    await worker.gate.wait_for_arrivals(6, timeout=60)  # the two more it allows now
    worker.behavior.hang = False
    worker.gate.release()
    code, _, err = await finish(process, timeout=300)
    assert code == 0, err
    moves = trace(run_dir)
    assert [(m["limit"], m["reason"]) for m in moves] == [(4, "start"), (6, "set from outside")]
    assert worker.stats.max_in_flight == 6
