"""`agent-eval run` on the embedded model with workers placed by Ray and by Slurm."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agent_eval.schedulers.slurm import JOB_NAME
from tests.helpers.cli_runs import lines, summary
from tests.helpers.llamacpp import ONE_THREAD, run_embedded, servers_on
from tests.helpers.slurm import require_slurm

SETTINGS = {
    "ray": ["scheduler.ray.cpus_per_worker=1", ONE_THREAD],
    "slurm": [
        "scheduler.slurm.poll_interval=0.3",
        "scheduler.slurm.time=00:10:00",
        "scheduler.slurm.host=127.0.0.1",
    ],
}


def slurm_jobs() -> list[str]:
    """Ids of this project's worker jobs still in the Slurm queue."""
    out = subprocess.run(
        ["squeue", "-h", "-n", JOB_NAME, "-o", "%i"], capture_output=True, text=True, check=True
    ).stdout
    return out.split()


def joined(scheduler: str, request: pytest.FixtureRequest) -> list[str]:
    """Settings that join a cluster already there: for Ray, the session's (starting one with
    the run is the Ray tests' `test_starts_answers_and_stops_with_nothing_left`)."""
    if scheduler == "slurm":
        require_slurm()
        return []
    return [f"scheduler.ray.address={request.getfixturevalue('ray_cluster').address}"]


@pytest.mark.parametrize("scheduler", ["ray", "slurm"])
async def test_a_whole_run_on_the_scheduler_leaves_nothing_behind(
    tmp_path: Path, scheduler: str, request: pytest.FixtureRequest
) -> None:
    settings = [*SETTINGS[scheduler], *joined(scheduler, request)]
    run_dir = tmp_path / "run"
    args = ["run", "--agent", "math_calculator", "--limit", "1", "-o", str(run_dir)]
    args += ["--scheduler", scheduler, "--backend", "llamacpp:d1", "-n", "1"]
    code, out, err = await run_embedded(*args, *settings, cwd=tmp_path)
    assert code == 0, err
    (record,) = lines(run_dir)
    assert record["model_calls"] >= 1 and summary(run_dir)["attempts"] == 1
    assert "accuracy" in out
    workers = json.loads((run_dir / "workers.json").read_text())["workers"]
    assert len(workers) == 1 and workers[0]["served"] >= 1
    ports = {int(w["url"].rsplit(":", 1)[1]) for w in workers}
    assert servers_on(ports) == []
    if scheduler == "slurm":
        assert slurm_jobs() == []
