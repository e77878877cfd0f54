"""The golden job shapes, weighed by a real slurmctld against 16 fake 8-GPU nodes.

scripts/slurm/start-local-slurm.sh adds the nodes (powered-down CLOUD nodes in the
DOWN partition `fakegpu`): `sbatch --test-only` places jobs on them, nothing runs.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agent_eval.launch.schedulers import SlurmConfig
from tests.helpers.slurm import SHAPES, needs_slurm, scripts, shape_config

pytestmark = needs_slurm

FAKE = {"partition": "fakegpu", "account": None, "time": "01:00:00", "setup_lines": []}


def weigh(shape: str, slurm: SlurmConfig, tmp_path: Path) -> str:
    """What `sbatch --test-only` says of the job script rendered for `shape`."""
    script = tmp_path / "job.sbatch"
    script.write_text(scripts(shape, slurm.model_copy(update=FAKE), tmp_path)["job.sbatch"])
    result = subprocess.run(
        ["sbatch", "--test-only", str(script)], capture_output=True, text=True, check=False
    )
    return result.stdout + result.stderr


@pytest.mark.parametrize("name", SHAPES)
def test_slurm_would_start_every_golden_shape(name: str, tmp_path: Path) -> None:
    said = weigh(*shape_config(name), tmp_path)
    assert " to start at " in said, said


def test_slurm_still_refuses_a_task_larger_than_a_node(tmp_path: Path) -> None:
    # A site that misstates its nodes as 16-GPU ones: one task would ask for 16 GPUs.
    said = weigh("sglang:d1t16", SlurmConfig(gpus_per_node=16), tmp_path)
    assert "Requested node configuration is not available" in said, said


def test_slurm_still_refuses_more_nodes_than_the_partition_has(tmp_path: Path) -> None:
    said = weigh("sglang:d9t16", SlurmConfig(), tmp_path)
    assert "allocation failure" in said or "Node count specification invalid" in said, said
