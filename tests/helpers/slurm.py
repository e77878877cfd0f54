"""Slurm for the tests: whether a cluster is here, and the job and task scripts rendered for
the golden shapes."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from agent_eval.allocation import Allocation
from agent_eval.backends import WorkerConfig, get_backend
from agent_eval.launch.schedulers import SlurmConfig
from agent_eval.schedulers.slurm import task_commands
from agent_eval.schedulers.slurm_script import (
    HOST_VARIABLE,
    PORT_VARIABLE,
    job_layout,
    render_sbatch,
    render_task,
)


@functools.cache
def _slurm_ready() -> bool:
    """Whether a Slurm cluster here has a node ready to take jobs (`sinfo` can take seconds
    to give up on a controller that is not running: asked once, and only by a Slurm test)."""
    if shutil.which("sinfo") is None:
        return False
    result = subprocess.run(
        ["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, check=False
    )
    return result.returncode == 0 and bool({"idle", "mix"} & set(result.stdout.split()))


def require_slurm() -> None:
    """Skip the test without a Slurm cluster here; CI starts Slurm and sets
    AGENT_EVAL_REQUIRE_SLURM, so there a missing cluster fails loudly instead."""
    if not os.environ.get("AGENT_EVAL_REQUIRE_SLURM") and not _slurm_ready():
        pytest.skip("no Slurm here: run scripts/slurm/start-local-slurm.sh")


needs_slurm = pytest.mark.usefixtures("slurm_here")
"""Marks a test that needs a Slurm cluster (conftest's `slurm_here` fixture)."""


RUN = Path("/shared/runs/r1/workers")


MODEL = WorkerConfig(model="/ckpt/step 500", python="/shared/envs/serve/bin/python")


SITE = SlurmConfig(
    partition="gpu", account="rl-team", time="02:00:00",
    setup_lines=["module load cuda/12.4"],
)  # fmt: skip


# Each golden shape and the settings it is rendered with (8-GPU nodes throughout).
SHAPES: dict[str, tuple[str, dict[str, object]]] = {
    "sglang-d2t16": ("sglang:d2t16", {}),
    "sglang-d3t4": ("sglang:d3t4", {"interface": "ib0"}),
    "vllm-d1t16": ("vllm:d1t16", {"interface": "ib0"}),
    "sglang-d2t8": ("sglang:d2t8", {}),
    "sglang-d96t1": (
        "sglang:d96t1",
        {"cpus_per_task": 12, "mem": "900G", "sbatch_lines": ["--exclusive", "#SBATCH --qos=high"]},
    ),
}


def scripts(shape: str, slurm: SlurmConfig, workers_dir: Path = RUN) -> dict[str, str]:
    """The job and task scripts the scheduler writes for `shape`."""
    allocation = Allocation.parse(shape)
    backend = get_backend(allocation.backend)
    layout = job_layout(allocation, slurm, backend.needs_gpus)
    command = backend.command(MODEL, allocation, HOST_VARIABLE, PORT_VARIABLE)
    commands = task_commands(backend, command, layout.nodes_per_worker)
    task = workers_dir / "task.sh"
    return {
        "job.sbatch": render_sbatch(layout, slurm, workers_dir, task, "agent-eval-workers"),
        "task.sh": render_task(commands, workers_dir, slurm),
    }


def shape_config(name: str) -> tuple[str, SlurmConfig]:
    """A golden shape's allocation and the site settings it is rendered with."""
    shape, settings = SHAPES[name]
    return shape, SITE.model_copy(update=settings)
