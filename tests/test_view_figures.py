"""The view's plots of a run: a big run's drawn in a process beside the server, ended on close."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent_eval.errors import ConfigError
from agent_eval.rewards.processes import pool_processes
from agent_eval.view import figures
from agent_eval.view.figures import Plots
from agent_eval.view.runs import RunDir
from tests.helpers.view_runs import append, finish, record, write_run

DRAWN = {"accuracy", "latency", "prompt-tokens", "completion-tokens"}


@pytest.fixture
def run(tmp_path: Path) -> RunDir:
    path = tmp_path / "runs" / "r1"
    write_run(path, [record(f"s{i}", 0, i % 2 == 0) for i in range(6)], finished=False)
    return RunDir("runs/r1", path, "run")


async def test_a_big_runs_plots_come_from_a_process_ended_on_close(
    run: RunDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(figures, "PROCESS_BYTES", 0)  # any run is big
    plots = Plots()
    try:
        drawn = (await plots.of(run)).plots
        assert set(drawn) == DRAWN
        assert "6 scored attempts" in drawn["accuracy"].caption
        processes = pool_processes(plots._pool)  # type: ignore[arg-type]
        assert len(processes) == 1 and processes[0].is_alive()
        append(run.path, [record("s6", 0, True)])  # a new version of the run: drawn again
        assert "7 scored attempts" in (await plots.of(run)).plots["accuracy"].caption
    finally:
        await plots.close()
    assert not processes[0].is_alive()


# In a fresh interpreter: the fork server and the resource tracker start with the first pool.
BROKEN_HELPER = """
import asyncio, json, multiprocessing.spawn, sys
from pathlib import Path
from agent_eval.view import figures
from agent_eval.view.runs import RunDir

async def main():
    figures.PROCESS_BYTES = 0
    plots, run = figures.Plots(), RunDir("runs/r1", Path(sys.argv[1]), "run")
    multiprocessing.spawn.set_executable("/nonexistent/python")  # its helpers cannot run
    print("drawn:", sorted((await plots.of(run)).plots), plots._pool is None)
    multiprocessing.spawn.set_executable(sys.executable)
    samples = run.path / "samples.jsonl"
    first = json.loads(samples.read_text().splitlines()[0])
    with samples.open("a") as lines:  # a new version of the run: drawn again
        lines.write(json.dumps({**first, "sample_id": "s9"}) + "\\n")
    print("then:", sorted((await plots.of(run)).plots), plots._pool is not None)
    await plots.close()

asyncio.run(main())
"""


def test_a_drawing_process_that_cannot_start_leaves_the_plots_to_a_thread(run: RunDir) -> None:
    done = subprocess.run(
        [sys.executable, "-c", BROKEN_HELPER, str(run.path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"drawn: {sorted(DRAWN)} True",  # in a thread, the broken pool let go
        f"then: {sorted(DRAWN)} True",  # in a new process
    ]
    assert "the view's drawing process broke (" in done.stderr


async def test_a_small_runs_plots_need_no_process(run: RunDir) -> None:
    plots = Plots()
    assert set((await plots.of(run)).plots) == DRAWN
    assert plots._pool is None
    await plots.close()


async def test_an_unreadable_run_is_said_from_the_process(
    run: RunDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(figures, "PROCESS_BYTES", 0)
    with (run.path / "samples.jsonl").open("a") as samples:
        samples.write("{not json\n")
    plots = Plots()
    try:
        with pytest.raises(ConfigError, match=r"samples\.jsonl"):
            await plots.of(run)
    finally:
        await plots.close()


async def test_a_finished_runs_captions_are_its_summary_json(run: RunDir) -> None:
    finish(run.path)  # summary.json over 6 attempts
    append(run.path, [record("s6", 0, True)])  # a 7th the summary does not count
    plots = Plots()
    drawn = (await plots.of(run)).plots
    await plots.close()
    assert "over 6 scored attempts" in drawn["accuracy"].caption
