"""Ctrl-C in a BFCL multi-turn run and an AgentDojo run, as users type them over a slow mock
worker: one clean message, no process left, a run directory that resumes to every item once;
and a worker that dies mid-play leaves infrastructure errors, never wrong answers."""

from __future__ import annotations

import signal
from asyncio.subprocess import Process
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from agent_eval.testing.mock_worker import MockWorker
from tests.helpers.cli_runs import agent_eval, finish, lines
from tests.helpers.processes import alive, descendants
from tests.helpers.proxy import StartWorkers
from tests.helpers.waits import eventually

ITEMS = 6
START = 600  # s: AgentDojo's import in each scoring process is slow on a busy machine
FIRST = START + 60  # s to the first record
RUNS = {
    "bfcl": ("--agent", "bfcl", "--dataset", "bfcl:multi_turn_base"),
    "agentdojo": ("--agent", "agentdojo", "--dataset", "agentdojo:banking"),
}
# A play of the dead worker fails after the client's own retries (~2 s); one replay, at once,
# still shows the attempt replayed then left unscored, without three more plays and their backoff.
ONE_QUICK_REPLAY = ("eval.replays=1", "eval.replay_backoff=0.01")


@asynccontextmanager
async def started(
    start_workers: StartWorkers, tmp_path: Path, benchmark: str, *options: str
) -> AsyncIterator[tuple[MockWorker, Process, Path]]:
    """A run of ITEMS items over one mock worker answering in 0.3 s, and its directory; a run
    a failed test leaves going is interrupted, so that nothing outlives the test."""
    (worker,) = await start_workers(1)
    worker.behavior.latency = 0.3
    run_dir = tmp_path / "run"
    process = await agent_eval(
        "run", *RUNS[benchmark], "--endpoint", worker.url, "-j", "2", "-o", str(run_dir),
        f"dataset.limit={ITEMS}", f"reward.start_timeout={START}", *options, cwd=tmp_path,
    )  # fmt: skip
    try:
        yield worker, process, run_dir
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGINT)
            await finish(process, 60)


def played(run_dir: Path) -> int:
    samples = run_dir / "samples.jsonl"
    return len(samples.read_bytes().splitlines()) if samples.exists() else 0


@pytest.mark.parametrize("benchmark", sorted(RUNS))
async def test_ctrl_c_leaves_nothing_running_and_a_run_that_resumes(
    start_workers: StartWorkers, tmp_path: Path, benchmark: str
) -> None:
    async with started(start_workers, tmp_path, benchmark) as (_, process, run_dir):
        await eventually(lambda: played(run_dir) >= 1, FIRST)
        children = descendants(process.pid)
        assert children  # the proxy and the scoring processes at least
        process.send_signal(signal.SIGINT)
        code, _, err = await finish(process, 60)
    assert code == 130 and "interrupted" in err, err
    assert "Traceback" not in err and f"agent-eval run --resume {run_dir}" in err
    await eventually(lambda: not any(alive(pid) for pid in children), 10)
    kept = played(run_dir)
    assert 1 <= kept < ITEMS and not (run_dir / "summary.json").exists()
    resumed = await agent_eval("run", "--resume", str(run_dir), cwd=tmp_path)
    code, _, err = await finish(resumed, FIRST)
    assert code == 0, err
    ids = [record["sample_id"] for record in lines(run_dir)]
    assert len(ids) == len(set(ids)) == ITEMS


@pytest.mark.parametrize("benchmark", sorted(RUNS))
async def test_a_worker_dying_mid_play_leaves_infrastructure_errors_not_wrong_answers(
    start_workers: StartWorkers, tmp_path: Path, benchmark: str
) -> None:
    run = started(start_workers, tmp_path, benchmark, *ONE_QUICK_REPLAY)
    async with run as (worker, process, run_dir):
        await eventually(lambda: played(run_dir) >= 1, FIRST)
        await worker.stop()
        code, _, err = await finish(process, 180)
    assert "Traceback" not in err, err
    records = lines(run_dir)
    failed = [record for record in records if record["error"] is not None]
    assert failed and code == 3, err  # more unscored than eval.max_unscored allows
    for record in failed:
        assert record["error"]["class"] == "infra", record["error"]
        assert record["correct"] is None and record["reward"] is None, record["sample_id"]
        assert len(record["trajectory"]["replays"]) == 1, record["sample_id"]
