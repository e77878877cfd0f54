"""What a user sees of `agent-eval run`: on a real terminal (tmux, 120x40) and in a log file."""

from __future__ import annotations

import re
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from tests.conftest import StartWorkers
from tests.terminal import OnTerminal, Screen, worker_rows
from tests.test_cli_run import agent_eval, finish, lines, write_dataset

ATTEMPTS = 20  # test_cli_run's 10 rows, 2 attempts each
TITLE = "math_calculator on say.jsonl"
RunOnTerminal = Callable[..., Awaitable[Screen]]


@pytest.fixture
async def run_on_terminal(
    start_workers: StartWorkers, on_terminal: OnTerminal, tmp_path: Path
) -> RunOnTerminal:
    """`agent-eval run` on a 120x40 tmux terminal against two mock workers (1 s per call)."""
    workers = await start_workers(2)
    for worker in workers:
        # Two calls of 1 s per attempt: the first attempt ends well after the proxy is ready.
        worker.behavior.latency, worker.behavior.two_step = 1.0, True
    data = write_dataset(tmp_path / "say.jsonl")
    endpoints = [arg for w in workers for arg in ("--endpoint", w.url)]

    async def run(*extra: str) -> Screen:
        command = [sys.executable, "-m", "agent_eval", "run", "--agent", "math_calculator",
                   "--dataset", data.name, *endpoints, "-n", "2", "-j", "8", "-o", "run",
                   *extra]  # fmt: skip
        return await on_terminal(command, tmp_path)

    return run


def _done(frame: str) -> int | None:
    """Finished attempts on the bar of a frame; None when the bar is not there."""
    match = re.search(rf"{TITLE} .*?(\d+)/(\d+|\?) ", frame)
    return None if match is None else int(match.group(1))


def _last_frame(final: str) -> str:
    """The live view's last frame: from its bar to the summary table."""
    return final[final.rindex(TITLE + " ") : final.index("Quality")]


async def test_the_wait_ends_when_the_proxy_is_ready_and_the_total_shows_up_front(
    run_on_terminal: RunOnTerminal,
) -> None:
    screen = await run_on_terminal()
    bars = [frame for frame in screen.frames if _done(frame) is not None]
    assert bars and all(f"/{ATTEMPTS} " in frame for frame in bars)  # never 0/?
    ready = [frame for frame in bars if _done(frame) == 0 and worker_rows(frame)]
    assert ready, "no frame between the proxy's start and the first attempt's end"
    for frame in ready:
        assert "waiting for the proxy" not in frame, frame
    calls = [re.search(r"(\d+) model calls answered, (\d+) in flight", frame) for frame in ready]
    assert all(calls), ready
    assert any(int(m.group(2)) > 0 for m in calls if m), ready


async def test_log_lines_go_through_the_live_display_and_no_stale_frame_stays(
    run_on_terminal: RunOnTerminal,
) -> None:
    screen = await run_on_terminal()
    final = screen.final
    bars = [line for line in final.splitlines() if line.startswith(TITLE)]
    assert len(bars) == 1, final  # the table's title below is indented
    assert "waiting for" not in final and "starting the proxy" not in final, final
    assert final.count("reward workers ready") == 1, final  # printed, above the live area
    assert final.index("reward workers ready") < final.index(TITLE + " ")


async def test_the_live_rates_are_the_summary_rates_under_one_name(
    run_on_terminal: RunOnTerminal,
) -> None:
    screen = await run_on_terminal()
    live, table = _last_frame(screen.final), screen.final[screen.final.index("Quality") :]
    assert "samples/s" not in screen.final
    for name in ("attempts/s", "tokens/s"):
        shown = re.search(rf"([\d,.]+) {name}", live)
        summary = re.search(rf"{name}\s+([\d,.]+)", table)
        assert shown and summary, screen.final
        assert shown.group(1) == summary.group(1), (live, table)


async def test_the_last_frame_shows_every_model_call_answered_none_in_flight(
    run_on_terminal: RunOnTerminal, tmp_path: Path
) -> None:
    screen = await run_on_terminal()
    last = _last_frame(screen.final)
    assert _done(last) == ATTEMPTS, last
    rows = worker_rows(last)
    assert len(rows) == 2 and [in_flight for in_flight, _ in rows] == [0, 0], last
    made = sum(record["model_calls"] for record in lines(tmp_path / "run"))
    assert sum(served for _, served in rows) == made, last


async def test_plain_log_lines_never_wrap_off_a_terminal(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = await start_workers(1)
    data = write_dataset(tmp_path / "say.jsonl")
    dead = "http://127.0.0.1:9"  # nothing listens: the run warns and goes on with the other
    run_dir = tmp_path / "a-run-directory-with-a-long-name-that-a-wrap-would-split"
    process = await agent_eval(
        "run", "--dataset", str(data), "--endpoint", worker.url, "--endpoint", dead,
        "-o", str(run_dir), cwd=tmp_path,
    )  # fmt: skip
    code, out, err = await finish(process)
    assert code == 0, err
    warning = f"endpoint {dead} (cannot connect: Connection refused); the proxy will route"
    assert any(warning in line for line in err.splitlines()), err
    assert any(f"agent-eval report {run_dir}" in line for line in out.splitlines()), out
