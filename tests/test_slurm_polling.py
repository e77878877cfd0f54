"""The scheduler asks slurmctld once per poll for the whole job, and less often while it pends."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from agent_eval.launch.schedulers import SlurmConfig
from agent_eval.schedulers import slurm as slurm_module
from agent_eval.schedulers.base import LaunchedWorker
from agent_eval.schedulers.slurm import PENDING_POLL_MAX, SlurmScheduler


class FakeSlurm:
    """Answers squeue with a settable state and counts the calls; a settable clock."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.state = "RUNNING"
        self.calls = 0
        self.now = 1000.0
        monkeypatch.setattr(slurm_module, "_run", self.run)
        # The scheduler's clock only: asyncio keeps the real one.
        monkeypatch.setattr(slurm_module, "time", SimpleNamespace(monotonic=lambda: self.now))

    async def run(self, *argv: str) -> tuple[int, str, str]:
        assert argv[0] == "squeue"
        self.calls += 1
        return 0, f"{self.state}|None", ""


def scheduler(tmp_path: Path, workers: int) -> SlurmScheduler:
    slurm = SlurmScheduler(tmp_path, SlurmConfig(poll_interval=2.0))
    slurm.job_id = "42"
    log = tmp_path / "worker.log"
    slurm.workers = [LaunchedWorker(i, "", 0, log, "/", "/") for i in range(workers)]
    return slurm


async def test_one_squeue_per_poll_for_96_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeSlurm(monkeypatch)
    slurm = scheduler(tmp_path, 96)
    for _ in range(3):
        assert [await slurm.exit_status(w) for w in slurm.workers] == [None] * 96
        assert await slurm.waiting_reason() == "Slurm job 42 is RUNNING; waiting for the workers"
    assert fake.calls == 1
    fake.now += 2.0
    await slurm.exit_status(slurm.workers[0])
    assert fake.calls == 2


async def test_a_pending_job_is_asked_less_and_less_often(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeSlurm(monkeypatch)
    fake.state = "PENDING"
    slurm = scheduler(tmp_path, 1)
    gaps = []
    for _ in range(6):
        before, start = fake.calls, fake.now
        while fake.calls == before:
            await slurm.waiting_reason()
            fake.now += 0.5
        gaps.append(fake.now - start)
    assert gaps[1:] == [4.0, 8.0, 16.0, PENDING_POLL_MAX, PENDING_POLL_MAX]


async def test_stop_asks_afresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeSlurm(monkeypatch)
    slurm = scheduler(tmp_path, 1)
    await slurm.exit_status(slurm.workers[0])
    fake.state = "CANCELLED"
    assert await slurm._job_state(fresh=True) == ("CANCELLED", "")
