"""The Slurm scheduler against a real single-node Slurm (scripts/slurm/start-local-slurm.sh)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agent_eval.allocation import Allocation
from agent_eval.backends import WorkerConfig
from agent_eval.errors import ConfigError
from agent_eval.launch.schedulers import SlurmConfig
from agent_eval.schedulers.errors import WorkerFailedError
from agent_eval.schedulers.slurm import SlurmScheduler
from agent_eval.testing.mock_backend import MockBackend
from tests.helpers.processes import answers
from tests.helpers.slurm import needs_slurm
from tests.helpers.waits import eventually

pytestmark = needs_slurm

FAST = SlurmConfig(poll_interval=0.3, time="00:10:00", host="127.0.0.1")


def scheduler(tmp_path: Path, **settings: object) -> SlurmScheduler:
    return SlurmScheduler(tmp_path, FAST.model_copy(update=settings))


async def test_submits_reaches_and_cancels_workers(tmp_path: Path) -> None:
    slurm = scheduler(tmp_path)
    waits: list[str] = []
    async with slurm:
        workers = await slurm.launch(MockBackend(), WorkerConfig(), Allocation("mock", dp=2))
        await slurm.wait_ready(timeout=90, on_wait=waits.append)
        assert all([await answers(w.url) for w in workers])
        assert len({w.port for w in workers}) == 2
        assert any(f"Slurm job {slurm.job_id}" in w for w in waits)
    state, _ = await slurm._job_state()
    assert state in ("CANCELLED", "")
    await eventually(lambda: _none_answers(workers), timeout=30)
    assert "#SBATCH --ntasks=2" in (tmp_path / "workers" / "job.sbatch").read_text()


async def test_cancelled_job_is_an_error_with_its_log(tmp_path: Path) -> None:
    slurm = scheduler(tmp_path)
    async with slurm:
        await slurm.launch(MockBackend(ready_path="/never"), WorkerConfig(), Allocation("mock"))
        scancel = await asyncio.create_subprocess_exec("scancel", str(slurm.job_id))
        assert await scancel.wait() == 0
        with pytest.raises(WorkerFailedError, match="CANCELLED"):
            await slurm.wait_ready(timeout=60)


async def test_worker_that_crashes_reports_its_exit_and_log(tmp_path: Path) -> None:
    slurm = scheduler(tmp_path)
    async with slurm:
        await slurm.launch(MockBackend(), WorkerConfig(extra_args=["--bogus"]), Allocation("mock"))
        with pytest.raises(WorkerFailedError) as error:
            await slurm.wait_ready(timeout=60)
    assert "unrecognized arguments: --bogus" in str(error.value)


async def test_request_beyond_the_cluster_is_refused_at_submission(tmp_path: Path) -> None:
    slurm = scheduler(tmp_path, cpus_per_task=64)
    with pytest.raises(ConfigError, match="sbatch refused the job"):
        await slurm.launch(MockBackend(), WorkerConfig(), Allocation("mock"))
    assert slurm.job_id is None


async def _none_answers(workers: list) -> bool:
    return not any([await answers(w.url) for w in workers])
