"""The local scheduler with real processes: start, wait, fail early, stop with nothing left."""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Callable, Collection, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from agent_eval.allocation import Allocation
from agent_eval.backends import WorkerCommand, WorkerConfig, get_backend
from agent_eval.errors import ConfigError
from agent_eval.schedulers import local, ports
from agent_eval.schedulers.base import PORT_RELAUNCHES
from agent_eval.schedulers.errors import GPUAllocationError, WorkerFailedError, WorkerTimeoutError
from agent_eval.schedulers.local import LocalScheduler
from agent_eval.system.diagnostics import last_line
from agent_eval.testing.mock_backend import MockBackend
from tests.helpers.processes import alive, answers
from tests.helpers.waits import eventually

MOCKS = Allocation("mock", dp=2)


async def test_starts_answers_and_stops_with_nothing_left(tmp_path: Path) -> None:
    scheduler = LocalScheduler(tmp_path)
    async with scheduler:
        workers = await scheduler.launch(MockBackend(), WorkerConfig(), MOCKS)
        await scheduler.wait_ready(timeout=30)
        pids = scheduler.pids
        assert all([await answers(w.url, "/v1/models") for w in workers])
        assert len({w.port for w in workers}) == 2
        assert all(w.log.parent == tmp_path / "workers" for w in workers)
    assert not any(alive(pid) for pid in pids)


async def test_worker_that_crashes_fails_the_wait_with_its_log(tmp_path: Path) -> None:
    config = WorkerConfig(extra_args=["--no-such-flag"])
    async with LocalScheduler(tmp_path) as scheduler:
        await scheduler.launch(MockBackend(), config, MOCKS)
        with pytest.raises(WorkerFailedError) as error:
            await scheduler.wait_ready(timeout=60)
    message = str(error.value)
    assert "exited with code 2" in message
    assert "unrecognized arguments: --no-such-flag" in message
    assert str(tmp_path / "workers") in message


async def test_worker_that_never_gets_ready_times_out(tmp_path: Path) -> None:
    async with LocalScheduler(tmp_path) as scheduler:
        await scheduler.launch(MockBackend(ready_path="/never"), WorkerConfig(), Allocation("mock"))
        (pid,) = scheduler.pids
        with pytest.raises(WorkerTimeoutError, match="not ready after 1 s"):
            await scheduler.wait_ready(timeout=1)
    assert not alive(pid)


async def test_the_wait_says_what_a_starting_worker_last_logged(tmp_path: Path) -> None:
    waits: list[str] = []
    async with LocalScheduler(tmp_path) as scheduler:
        await scheduler.launch(MockBackend(ready_path="/never"), WorkerConfig(), Allocation("mock"))
        with pytest.raises(WorkerTimeoutError):
            await scheduler.wait_ready(timeout=3, on_wait=waits.append)
    # A cold start shows its progress (a model loading), not a bare "waiting".
    logged = [w for w in waits if w.startswith("waiting for 1 worker(s) to answer; worker 0")]
    assert any("logged: READY http://127.0.0.1:" in w for w in logged), waits


class LoadingBackend(MockBackend):
    """A worker that logs as llama.cpp does while a model loads (a line, then progress dots)
    and never answers."""

    def command(
        self, config: WorkerConfig, allocation: Allocation, host: str, port: int | str
    ) -> WorkerCommand:
        script = "printf 'load_tensors: loading model tensors\\n.'; exec sleep 60"
        return WorkerCommand(["sh", "-c", script], ready_path="/never")


async def test_the_wait_shows_the_last_line_that_says_something(tmp_path: Path) -> None:
    waits: list[str] = []
    async with LocalScheduler(tmp_path) as scheduler:
        await scheduler.launch(LoadingBackend(), WorkerConfig(), Allocation("mock"))
        waiting = asyncio.create_task(scheduler.wait_ready(timeout=60, on_wait=waits.append))
        try:
            await eventually(lambda: any("logged" in wait for wait in waits), 30)
        finally:
            waiting.cancel()
            await asyncio.wait([waiting])
    logged = next(wait for wait in waits if "logged" in wait)
    assert logged.endswith(" logged: load_tensors: loading model tensors"), waits


def test_the_last_line_of_a_log_is_cut_to_its_width(tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    assert last_line(log) is None
    log.write_text("loading\n" + "x" * 300 + "\n\n")
    assert last_line(log, width=20) == "x" * 17 + "..."


async def test_more_gpus_than_exist_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    scheduler = LocalScheduler(tmp_path)
    with pytest.raises(
        GPUAllocationError, match=r"needs 8 GPUs \(2 workers x 4 each\) but 2 are visible"
    ):
        await scheduler.launch(
            get_backend("sglang"), WorkerConfig(model="m"), Allocation.parse("sglang:d2t4")
        )
    assert scheduler.workers == []


async def test_gpus_are_split_between_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7")
    scheduler = LocalScheduler(tmp_path)
    assert scheduler._gpu_sets(get_backend("sglang"), Allocation.parse("sglang:d2t2")) == [
        ["4", "5"],
        ["6", "7"],
    ]


async def test_port_in_use_is_refused(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        scheduler = LocalScheduler(tmp_path, base_port=port)
        with pytest.raises(ConfigError, match=f"port {port} on 127.0.0.1 is in use"):
            await scheduler.launch(MockBackend(), WorkerConfig(), Allocation("mock"))


@pytest.fixture
def sockets() -> Iterator[ExitStack]:
    """Sockets a test holds ports with; closed after it."""
    with ExitStack() as held:
        yield held


def occupy(held: ExitStack, host: str, port: int) -> None:
    """Listen on host:port, as another program taking the port would."""
    taken = held.enter_context(socket.socket())
    taken.bind((host, port))
    taken.listen()


def snatching(held: ExitStack, times: int) -> Callable[..., list[int]]:
    """A port chooser whose first `times` choices another program takes right after."""
    left = [times]

    def choose(host: str, count: int, avoid: Collection[int] = ()) -> list[int]:
        chosen = ports.choose_ports(host, count, avoid)
        if left[0] > 0:
            left[0] -= 1
            occupy(held, host, chosen[0])
        return chosen

    return choose


def test_ports_come_from_the_worker_range_each_once(sockets: ExitStack) -> None:
    chosen = ports.choose_ports("127.0.0.1", 50, avoid=range(20000, 21000))
    assert len(set(chosen)) == 50
    assert all(21000 <= port < 22000 for port in chosen)
    occupy(sockets, "127.0.0.1", chosen[0])
    assert not ports.port_is_free("127.0.0.1", chosen[0])
    # Every free port of the upper half, however many other processes on the machine hold.
    free = sum(ports.port_is_free("127.0.0.1", port) for port in range(21000, 22000))
    assert 0 < free < 1000
    assert chosen[0] not in ports.choose_ports("127.0.0.1", free, avoid=range(20000, 21000))


async def test_a_port_taken_before_the_server_binds_it_gets_a_relaunch(
    tmp_path: Path,
    sockets: ExitStack,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(local, "choose_ports", snatching(sockets, 1))
    caplog.set_level(logging.WARNING, "agent_eval.schedulers.base")
    async with LocalScheduler(tmp_path) as scheduler:
        first, second = await scheduler.launch(MockBackend(), WorkerConfig(), MOCKS)
        taken = first.port
        await scheduler.wait_ready(timeout=60)
        assert await answers(first.url, "/v1/models")
        assert first.port not in (taken, second.port)
        assert first.log == tmp_path / "workers" / "worker-0.relaunch-1.log"
    failed = (tmp_path / "workers" / "worker-0.log").read_text()
    assert "[Errno 98]" in failed and "address already in use" in failed
    (warning,) = caplog.messages
    assert f"worker 0 found port {taken} taken" in warning
    assert f"relaunched it on port {first.port} (relaunch 1 of {PORT_RELAUNCHES})" in warning


async def test_a_port_taken_every_time_fails_after_the_last_relaunch(
    tmp_path: Path, sockets: ExitStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local, "choose_ports", snatching(sockets, PORT_RELAUNCHES + 1))
    async with LocalScheduler(tmp_path) as scheduler:
        await scheduler.launch(MockBackend(), WorkerConfig(), Allocation("mock"))
        with pytest.raises(WorkerFailedError, match="address already in use"):
            await scheduler.wait_ready(timeout=60)
    logs = sorted(p.name for p in (tmp_path / "workers").iterdir())
    assert len(logs) == PORT_RELAUNCHES + 1


async def test_a_fixed_port_taken_late_is_not_swapped(
    tmp_path: Path, sockets: ExitStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = ports.choose_ports("127.0.0.1", 1)[0]
    monkeypatch.setattr(local, "check_port_free", lambda host, port: occupy(sockets, host, port))
    async with LocalScheduler(tmp_path, base_port=port) as scheduler:
        (worker,) = await scheduler.launch(MockBackend(), WorkerConfig(), Allocation("mock"))
        with pytest.raises(WorkerFailedError, match="address already in use"):
            await scheduler.wait_ready(timeout=60)
    assert worker.port == port


async def test_missing_program_is_a_clear_error(tmp_path: Path) -> None:
    async with LocalScheduler(tmp_path) as scheduler:
        with pytest.raises(ConfigError, match="no such program"):
            await scheduler.launch(
                MockBackend(python="/no/such/python"), WorkerConfig(), Allocation("mock")
            )


HARNESS = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from agent_eval.allocation import Allocation
    from agent_eval.backends import WorkerConfig
    from agent_eval.system.lifecycle import forever, run_until_signalled
    from agent_eval.schedulers.local import LocalScheduler
    from agent_eval.testing.mock_backend import MockBackend

    async def main():
        async with LocalScheduler(Path(sys.argv[1])) as scheduler:
            await scheduler.launch(MockBackend(), WorkerConfig(), Allocation("mock", dp=2))
            await scheduler.wait_ready(timeout=60)
            print(*scheduler.pids, flush=True)
            await forever()

    run_until_signalled(main())
    """
)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
async def test_no_orphans_whatever_stops_the_harness(
    tmp_path: Path, signum: signal.Signals
) -> None:
    harness = await asyncio.create_subprocess_exec(
        sys.executable, "-c", HARNESS, str(tmp_path), stdout=subprocess.PIPE
    )
    pids = [int(p) for p in (await asyncio.wait_for(harness.stdout.readline(), 60)).split()]
    assert len(pids) == 2 and all(alive(pid) for pid in pids)
    harness.send_signal(signum)
    code = await asyncio.wait_for(harness.wait(), 30)
    assert code == (-signal.SIGKILL if signum == signal.SIGKILL else 0)
    await eventually(lambda: not any(alive(pid) for pid in pids), timeout=15)
