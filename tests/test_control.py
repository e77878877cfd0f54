"""`agent-eval ctl` on a running run, through the real CLI, proxy and a mock worker: pause and
resume, concurrency, cancel then resume, requeue --errors, and the refusals."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_eval.cli import app
from agent_eval.run.control.protocol import SOCKET
from agent_eval.testing.mock_worker import MockWorker
from tests.helpers.cli_runs import agent_eval, finish, lines, summary
from tests.helpers.control_runs import ATTEMPTS, NO_REPLAYS, Run, played_again_once, results
from tests.helpers.golden_runs import masked
from tests.helpers.proxy import StartWorkers


@pytest.fixture
async def worker(start_workers: StartWorkers) -> MockWorker:
    (mock,) = await start_workers(1)
    mock.behavior.two_step = True  # each answer follows from its prompt alone: runs compare
    return mock


async def test_pause_holds_new_attempts_and_resume_gives_the_results_of_a_run_left_alone(
    worker: MockWorker, tmp_path: Path
) -> None:
    alone = Run(worker, tmp_path, "alone")
    assert (await finish(await agent_eval(*alone.args(), cwd=tmp_path)))[0] == 0

    run = Run(worker, tmp_path, "paused")
    worker.behavior.hang = True
    process = await run.start()
    await run.pause_holding(2)
    # The two in flight finish; none starts while paused, though slots are free.
    state = await run.let_finish(2)
    assert state.paused and state.limit == 2
    # The live view (plain lines off a terminal, one every 5 s once attempts ended) says the
    # run is paused: held paused until it has, however quickly `ctl` answers.
    await printed(process, "paused, 0 in flight finishing")

    code, out, err = await run.ctl("concurrency", "3")
    assert code == 0, err
    assert "at most 3 attempts at once" in out and "paused · 0 in flight · at most 3" in out
    code, out, err = await run.ctl("status")
    assert code == 0 and "paused" in out, (out, err)
    assert (await run.ctl("resume"))[0] == 0
    code, out, err = await finish(process)
    assert code == 0, err
    # The live view said the new limit.
    assert "at most 3 at once" in out
    assert results(run.dir) == results(alone.dir)
    assert masked(summary(run.dir))["quality"] == masked(summary(alone.dir))["quality"]
    assert not (run.dir / SOCKET).exists()


async def printed(process: asyncio.subprocess.Process, text: str, timeout: float = 60) -> None:
    """Read the running command's output up to a line with `text`; fails if none comes."""
    output = process.stdout
    assert output is not None
    read: list[str] = []

    async def line_with_text() -> None:
        while not read or text not in read[-1]:
            line = await output.readline()
            assert line, f"the command ended without printing {text!r}: {read}"
            read.append(line.decode())

    await asyncio.wait_for(line_with_text(), timeout)


async def test_cancel_ends_the_run_cleanly_and_resume_plays_every_attempt_once(
    worker: MockWorker, tmp_path: Path
) -> None:
    run = Run(worker, tmp_path, "run")
    process = await run.start()
    await run.until(lambda s: s.done >= 4)
    worker.behavior.hang = True
    await worker.gate.wait_for_arrivals(1)
    code, out, err = await run.ctl("cancel")
    assert code == 0, err
    assert "cancelled" in out
    code, _, err = await finish(process)
    assert code == 130, err
    kept = len(lines(run.dir))
    assert 4 <= kept < ATTEMPTS
    said = " ".join(err.split())
    assert f"cancelled by agent-eval ctl: {kept} finished attempts are kept in {run.dir}" in said
    assert "error" not in said
    assert f"agent-eval run --resume {run.dir}" in " ".join(err.split())
    assert summary(run.dir)["complete"] is False
    # The attempts in flight ended: their requests left the worker; nothing half-written.
    await worker.gate.wait_until_empty()
    assert sorted(p.name for p in run.dir.iterdir() if p.suffix in {".partial", ".sock"}) == []
    code, out, err = await run.ctl("status")
    assert code == 2 and "is not running" in err and "--resume" in err, (out, err)

    worker.behavior.hang = False
    code, _, err = await finish(await agent_eval("run", "--resume", str(run.dir), cwd=tmp_path))
    assert code == 0, err
    pairs = [(r["sample_id"], r["attempt"]) for r in lines(run.dir)]
    assert len(pairs) == len(set(pairs)) == ATTEMPTS
    assert summary(run.dir)["complete"] is True


async def test_requeue_errors_plays_the_errored_attempts_again_without_stopping(
    worker: MockWorker, tmp_path: Path
) -> None:
    run = Run(worker, tmp_path, "run")
    # The first three calls are refused (three attempts unscored: a 422 is not retried), then
    # the worker holds the rest.
    worker.behavior.error_status, worker.behavior.error_count = 422, 3
    worker.behavior.hang = True
    process = await run.start(*NO_REPLAYS)
    await worker.gate.wait_for_arrivals(2)
    await run.until(lambda s: s.done == 3)
    errored = {(r["sample_id"], r["attempt"]) for r in lines(run.dir) if r["error"]}
    assert len(errored) == 3

    code, out, err = await run.ctl("requeue", "--errors")
    assert code == 0, err
    assert out.startswith("playing 3 errored attempts again"), out
    assert "0/20 attempts done · 3 requeued to play" in " ".join(out.split())
    worker.behavior.hang = False
    worker.gate.release()
    code, out, err = await finish(process)
    assert code == 0, err
    played_again_once(run.dir, errored)
    last = [line for line in out.splitlines() if line.startswith("[")][-1]
    assert last.startswith(f"[{ATTEMPTS}/{ATTEMPTS} 100%]"), last


def test_ctl_names_what_is_wrong(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    run.mkdir()

    def ctl(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(app, ["ctl", *args], env={"COLUMNS": "400"})
        return result.exit_code, " ".join(result.output.split())

    assert ctl("nowhere", "status") == (
        2, "error: no run directory nowhere (nor runs/nowhere): give the folder the run writes"
    )  # fmt: skip
    code, err = ctl(str(tmp_path / "nowhere"), "status")
    assert (code, err) == (2, f"error: no run directory {tmp_path / 'nowhere'}: give the folder "
                           "the run writes")  # fmt: skip
    (tmp_path / "runs" / "named").mkdir(parents=True)
    code, err = ctl("named", "status")
    assert code == 2 and "runs/named is not running" in err, err
    code, err = ctl(str(run), "pause")
    assert code == 2 and f"{run} is not running: no process plays it now" in err, err
    # A socket left by a run that died: nobody listens.
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(run / SOCKET))
    stale.close()
    (run / "config.yaml").write_text("{}")
    code, err = ctl(str(run), "status")
    assert code == 2 and f"agent-eval run --resume {run}" in err, err
    for args, message in [
        (("concurrency", "0"), "concurrency takes a whole number of 1 or more, not '0'"),
        (("concurrency", "many"), "concurrency takes a whole number of 1 or more, not 'many'"),
        (("concurrency",), "concurrency takes a whole number of 1 or more, not None"),
        (("requeue",), "requeue plays errored attempts again: give it --errors"),
        (("pause", "3"), "pause takes no value (got '3')"),
        (("stop",), "no action 'stop': give one of status, pause, resume, cancel, requeue"),
    ]:
        code, err = ctl(str(run), *args)
        assert code == 2 and message in err, (args, err)
