"""What a user sees of `agent-eval run`: on a real terminal (tmux, 120x40) and in a log file."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent_eval.testing.mock_worker import MockWorker
from agent_eval.view.runs import find_runs
from tests.helpers.cli_runs import agent_eval, finish, lines, write_dataset
from tests.helpers.proxy import StartWorkers, worker_starter
from tests.helpers.terminal import OnTerminal, Screen, terminal, worker_rows

ATTEMPTS = 20  # test_cli_run's 10 rows, 2 attempts each
TITLE = "math_calculator on say.jsonl"
RunOnTerminal = Callable[..., Awaitable[Screen]]


def runner(workers: list[MockWorker], on_terminal: OnTerminal, folder: Path) -> RunOnTerminal:
    """`agent-eval run` in `folder` on a 120x40 tmux terminal against two mock workers (1 s
    per call)."""
    for worker in workers:
        # Two calls of 1 s per attempt: the first attempt ends well after the proxy is ready.
        worker.behavior.latency, worker.behavior.two_step = 1.0, True
    data = write_dataset(folder / "say.jsonl")
    endpoints = [arg for w in workers for arg in ("--endpoint", w.url)]

    async def run(
        *extra: str, ctrl_c_when: Callable[[str], bool] | None = None, code: int = 0
    ) -> Screen:
        """The run's screens; Ctrl-C is typed at the first frame `ctrl_c_when` holds for."""
        command = [sys.executable, "-m", "agent_eval", "run", "--agent", "math_calculator",
                   "--dataset", data.name, *endpoints, "-n", "2", "-j", "8", "-o", "run",
                   *extra]  # fmt: skip
        return await on_terminal(command, folder, ctrl_c_when=ctrl_c_when, code=code)

    return run


@pytest.fixture
async def run_on_terminal(
    start_workers: StartWorkers, on_terminal: OnTerminal, tmp_path: Path
) -> RunOnTerminal:
    """A run of the test's own, in its tmp_path (`runner`)."""
    return runner(await start_workers(2), on_terminal, tmp_path)


@dataclass(frozen=True)
class Played:
    """A plain run's screens and its directory."""

    screen: Screen
    run_dir: Path


async def _play(folder: Path) -> Screen:
    """One plain run (`runner`), its workers and terminal gone once it ended."""
    socket = f"agent-eval-plain-{os.getpid()}"
    async with AsyncExitStack() as stack, terminal(socket) as on_terminal:
        return await runner(await worker_starter(stack)(2), on_terminal, folder)()


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Played:
    """One plain run, made once: the tests that only read its screens and records share it
    (each run takes seconds of a terminal's waits and a process's start)."""
    folder = tmp_path_factory.mktemp("plain")
    return Played(asyncio.run(_play(folder)), folder / "run")


def _done(frame: str) -> int | None:
    """Finished attempts on the bar of a frame; None when the bar is not there."""
    match = re.search(rf"{TITLE} .*?(\d+)/(\d+|\?) ", frame)
    return None if match is None else int(match.group(1))


def _last_frame(final: str) -> str:
    """The live view's last frame: from its bar to the summary table."""
    return final[final.rindex(TITLE + " ") : final.index("Quality")]


def test_the_wait_ends_when_the_proxy_is_ready_and_the_total_shows_up_front(plain: Played) -> None:
    screen = plain.screen
    bars = [frame for frame in screen.frames if _done(frame) is not None]
    assert bars and all(f"/{ATTEMPTS} " in frame for frame in bars)  # never 0/?
    ready = [frame for frame in bars if _done(frame) == 0 and worker_rows(frame)]
    assert ready, "no frame between the proxy's start and the first attempt's end"
    for frame in ready:
        assert "waiting for the proxy" not in frame, frame
    calls = [re.search(r"(\d+) model calls answered, (\d+) in flight", frame) for frame in ready]
    assert all(calls), ready
    assert any(int(m.group(2)) > 0 for m in calls if m), ready


def test_log_lines_go_through_the_live_display_and_no_stale_frame_stays(plain: Played) -> None:
    screen = plain.screen
    final = screen.final
    bars = [line for line in final.splitlines() if line.startswith(TITLE)]
    assert len(bars) == 1, final  # the table's title below is indented
    assert "waiting for" not in final and "starting the proxy" not in final, final
    assert final.count("scoring pool: 2 processes ready") == 1, final  # above the live area
    assert final.index("scoring pool: 2 processes ready") < final.index(TITLE + " ")


def test_the_live_rates_are_the_summary_rates_each_named(plain: Played) -> None:
    screen = plain.screen
    live, table = _last_frame(screen.final), screen.final[screen.final.index("Quality") :]
    assert "samples/s" not in screen.final
    # Prompt tokens are read, not generated: a rate of both together would say neither.
    assert re.search(r"(?<!completion )(?<!prompt )tokens/s", screen.final) is None, screen.final
    for name in ("attempts/s", "completion tokens/s", "prompt tokens/s"):
        shown = re.search(rf"([\d,.]+) {name}", live)
        summary = re.search(rf"{name}\s+([\d,.]+)", table)
        assert shown and summary, screen.final
        assert shown.group(1) == summary.group(1), (live, table)


def test_the_eta_waits_until_as_many_attempts_as_run_at_once_have_ended(plain: Played) -> None:
    screen = plain.screen  # 8 at once
    bars = [re.search(rf"^{TITLE} .*?(\d+)/{ATTEMPTS} .* eta (\S+)$", frame, re.MULTILINE)
            for frame in screen.frames]  # fmt: skip
    etas = [(int(bar.group(1)), bar.group(2)) for bar in bars if bar]
    # The first attempts end together: one over its seconds would say the run takes 8x longer.
    early = [eta for done, eta in etas if done < 8]
    assert early and set(early) == {"-"}, etas
    assert any(eta != "-" for done, eta in etas if 8 <= done < ATTEMPTS), etas


def test_the_terminal_says_what_the_run_does_from_its_first_line(plain: Played) -> None:
    screen = plain.screen
    # Python modules, the agent and the dataset load for seconds before the live view.
    first = next(frame for frame in screen.frames if frame.strip()).splitlines()[0]
    assert first.startswith("agent-eval run: loading"), screen.frames[:3]
    assert screen.final.count("agent-eval run: loading") == 1, screen.final


async def test_a_resumed_run_shows_all_its_attempts_from_the_first_frame(
    run_on_terminal: RunOnTerminal, on_terminal: OnTerminal, tmp_path: Path
) -> None:
    await run_on_terminal()
    run = tmp_path / "run"
    (run / "summary.json").unlink()  # interrupted after 6 of its 20 attempts
    kept = (run / "samples.jsonl").read_bytes().splitlines(keepends=True)[:6]
    (run / "samples.jsonl").write_bytes(b"".join(kept))

    screen = await on_terminal(
        [sys.executable, "-m", "agent_eval", "run", "--resume", "run"], tmp_path
    )
    assert f"resuming run: 6 finished attempts kept, {ATTEMPTS - 6} of {ATTEMPTS} to play" in (
        screen.final.replace("\n", "")
    )
    bars = [frame for frame in screen.frames if _done(frame) is not None]
    assert bars and all(_done(frame) >= 6 for frame in bars), bars  # type: ignore[operator]
    for frame in bars:
        assert "no attempt finished yet" not in frame, frame
        assert re.search(r"^acc \d", frame, re.MULTILINE), frame
    figures = json.loads((run / "summary.json").read_text())["quality"]["accuracy"]
    shown = f"acc {figures['value']:.3f} [{figures['low']:.2f}, {figures['high']:.2f}]"
    assert shown in _last_frame(screen.final), (screen.final, figures)


RACE = """
import asyncio
import time

from rich.text import Text

from agent_eval.cli.common import console
from agent_eval.progress import RunView


class SlowLine:
    # A line that takes a while to draw, as a log line does on a busy machine.
    def __init__(self, text):
        self.text = text

    def __rich_console__(self, console, options):
        time.sleep(0.6)  # past the moment the view's next frame is due
        yield Text(self.text)


async def main():
    async with RunView(console, "view on say.jsonl", total=20) as view:
        console.print(SlowLine("printed as the first frame comes due"))
        view.waiting("a wait, a row more in the frame")
        console.print(SlowLine("printed as the frame grows"))
        await asyncio.sleep(0.3)


asyncio.run(main())
"""


async def test_a_line_printed_while_a_frame_comes_due_leaves_no_stale_frame(
    on_terminal: OnTerminal, tmp_path: Path
) -> None:
    # Workers starting log lines as the view opens, and as its wait row comes and goes.
    screen = await on_terminal([sys.executable, "-c", RACE], tmp_path)
    lines_shown = screen.final.splitlines()
    bars = [line for line in lines_shown if line.startswith("view on say.jsonl")]
    assert len(bars) == 1, screen.final
    for text in ("printed as the first frame comes due", "printed as the frame grows"):
        assert text in lines_shown, screen.final  # on a line of its own, not glued to a frame
    assert screen.final.count("a wait, a row more") == 1, screen.final


def test_the_last_frame_shows_every_model_call_answered_none_in_flight(plain: Played) -> None:
    screen = plain.screen
    last = _last_frame(screen.final)
    assert _done(last) == ATTEMPTS, last
    rows = worker_rows(last)
    assert len(rows) == 2 and [in_flight for in_flight, _ in rows] == [0, 0], last
    made = sum(record["model_calls"] for record in lines(plain.run_dir))
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


NOISE = ("Traceback", "KeyboardInterrupt", "Process SpawnProcess", "Aborted")
"""What Ctrl-C must not print: every process in the terminal's foreground group receives it."""


async def test_ctrl_c_leaves_a_clean_screen_and_the_resume_hint(
    run_on_terminal: RunOnTerminal, tmp_path: Path
) -> None:
    screen = await run_on_terminal(ctrl_c_when=lambda frame: (_done(frame) or 0) >= 4, code=130)
    for noise in NOISE:
        assert noise not in screen.final, screen.final
    assert "interrupted" in screen.final and "agent-eval run --resume run" in screen.final
    assert 4 <= len(lines(tmp_path / "run")) < ATTEMPTS


async def test_ctrl_c_while_the_run_loads_ends_it_quietly_and_leaves_nothing(
    run_on_terminal: RunOnTerminal, tmp_path: Path
) -> None:
    # Python modules, the agent and the dataset load for seconds: Ctrl-C comes in among them.
    screen = await run_on_terminal(ctrl_c_when=lambda frame: "loading" in frame, code=130)
    for noise in NOISE:
        assert noise not in screen.final, screen.final
    assert not (tmp_path / "run").exists()


async def test_ctrl_c_before_the_first_attempt_leaves_no_run_to_resume(
    run_on_terminal: RunOnTerminal, tmp_path: Path
) -> None:
    # Probes that time out at once: the proxy never sees a healthy worker, the run waits.
    screen = await run_on_terminal(
        "proxy.health.timeout=0.000001",
        ctrl_c_when=lambda frame: "waiting for the proxy to see a healthy worker" in frame,
        code=130,
    )
    final = screen.final.replace("\n", " ")
    assert "interrupted before any attempt was played" in final, screen.final
    assert "--resume" not in final and "run the same command again" in final, screen.final
    assert find_runs([tmp_path]) == {}  # `agent-eval view` lists no run
