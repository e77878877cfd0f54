"""`agent-eval ctl` on a run of two engine processes, through the real CLI, proxy and a mock
worker: each action reaches both processes, as on a run of one."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from agent_eval.run.shards import shard_of
from agent_eval.testing.mock_worker import MockWorker
from tests.helpers.cli_runs import agent_eval, finish, lines, summary
from tests.helpers.control_runs import ATTEMPTS, NO_REPLAYS, Run, played_again_once, results
from tests.helpers.processes import running_with
from tests.helpers.proxy import StartWorkers

CHILD = "agent_eval.run.shards.child"
SHARDED = ("--processes", "2")
ARRIVE = 60.0  # the second process starts its engine after the run takes control requests


@pytest.fixture
async def worker(start_workers: StartWorkers) -> MockWorker:
    (mock,) = await start_workers(1)
    mock.behavior.two_step = True  # each answer follows from its prompt alone: runs compare
    return mock


def by_shard(pairs: set[tuple[str, int]] | list[tuple[str, int]]) -> Counter[int]:
    return Counter(shard_of(sample_id, 2) for sample_id, _ in pairs)


def pairs_of(run_dir: Path) -> list[tuple[str, int]]:
    return [(r["sample_id"], r["attempt"]) for r in lines(run_dir)]


async def test_pause_holds_both_processes_and_resume_gives_the_records_of_a_run_left_alone(
    worker: MockWorker, tmp_path: Path
) -> None:
    alone = Run(worker, tmp_path, "alone", *SHARDED)
    assert (await finish(await agent_eval(*alone.args(), cwd=tmp_path)))[0] == 0

    run = Run(worker, tmp_path, "paused", *SHARDED)
    worker.behavior.hang = True
    process = await run.start()
    await run.pause_holding(4, ARRIVE)  # two at once in each process
    state = await run.let_finish(4)
    assert state.paused and state.limit == 4
    # Neither process started an attempt: each finished its two and stopped.
    assert by_shard(pairs_of(run.dir)) == {0: 2, 1: 2}

    code, out, err = await run.ctl("concurrency", "3")
    assert code == 0, err
    assert "at most 3 attempts at once" in out and "paused · 0 in flight · at most 3" in out
    assert (await run.ctl("resume"))[0] == 0
    code, out, err = await finish(process)
    assert code == 0, err
    assert any("paused, 0 in flight finishing" in line for line in out.splitlines()), out
    assert results(run.dir) == results(alone.dir)
    assert summary(run.dir)["quality"] == summary(alone.dir)["quality"]
    assert not running_with(CHILD, cwd=tmp_path)


async def test_cancel_stops_both_processes_and_resume_plays_every_attempt_once(
    worker: MockWorker, tmp_path: Path
) -> None:
    run = Run(worker, tmp_path, "run", *SHARDED)
    worker.behavior.hang = True
    process = await run.start()
    # Two attempts finish in each process (held, paused, let go), then two more start in each
    # and are held: the cancel finds both processes with attempts in flight.
    await run.pause_holding(4, ARRIVE)
    await run.let_finish(4)
    worker.behavior.hang = True
    assert (await run.ctl("resume"))[0] == 0
    await worker.gate.wait_for_arrivals(4, ARRIVE)
    code, out, err = await run.ctl("cancel")
    assert code == 0 and "cancelled" in out, err
    code, _, err = await finish(process)
    assert code == 130, err
    kept = len(pairs_of(run.dir))
    assert kept == 4
    said = " ".join(err.split())
    assert f"cancelled by agent-eval ctl: {kept} finished attempts are kept in {run.dir}" in said
    assert f"agent-eval run --resume {run.dir}" in said
    assert summary(run.dir)["complete"] is False
    # The four attempts in flight ended unrecorded, in both processes; none is left running.
    await worker.gate.wait_until_empty()
    assert not running_with(CHILD, cwd=tmp_path)

    worker.behavior.hang = False
    code, _, err = await finish(await agent_eval("run", "--resume", str(run.dir), cwd=tmp_path))
    assert code == 0, err
    pairs = pairs_of(run.dir)
    assert len(pairs) == len(set(pairs)) == ATTEMPTS
    assert summary(run.dir)["complete"] is True


async def test_requeue_errors_plays_the_errored_attempts_of_both_processes_once(
    worker: MockWorker, tmp_path: Path
) -> None:
    run = Run(worker, tmp_path, "run", *SHARDED)
    worker.behavior.hang = True
    process = await run.start(*NO_REPLAYS)
    # Two attempts in each process hold their first call; paused, their second calls are
    # refused (a 422 is not retried) and no attempt starts after them.
    await run.pause_holding(4, ARRIVE)
    worker.behavior.error_status, worker.behavior.error_count = 422, 4
    await run.let_finish(4)
    errored = {(r["sample_id"], r["attempt"]) for r in lines(run.dir) if r["error"]}
    assert len(errored) == 4 and set(by_shard(errored)) == {0, 1}

    code, out, err = await run.ctl("requeue", "--errors")
    assert code == 0, err
    assert out.startswith("playing 4 errored attempts again"), out
    assert "0/20 attempts done · 4 requeued to play" in " ".join(out.split())
    assert (await run.ctl("resume"))[0] == 0
    code, out, err = await finish(process)
    assert code == 0, err
    played_again_once(run.dir, errored)
