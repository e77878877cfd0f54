"""The rendered job and task scripts, compared byte for byte with golden copies.

Regenerate the copies with AGENT_EVAL_UPDATE_GOLDEN=1 and review their diff.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agent_eval.allocation import Allocation
from agent_eval.backends import get_backend
from agent_eval.errors import ConfigError
from agent_eval.launch.schedulers import SlurmConfig
from agent_eval.schedulers.slurm_script import (
    DIST_HOST_VARIABLE,
    DIST_PORT_VARIABLE,
    NODE_RANK_VARIABLE,
    JobLayout,
    job_layout,
)
from tests.helpers.slurm import SHAPES, scripts, shape_config

GOLDEN = Path(__file__).parent / "golden" / "slurm"


@pytest.mark.parametrize("name", SHAPES)
def test_scripts_match_their_golden_copies(name: str) -> None:
    for file, text in scripts(*shape_config(name)).items():
        path = GOLDEN / name / file
        if os.environ.get("AGENT_EVAL_UPDATE_GOLDEN") == "1":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode())
        assert path.read_bytes() == text.encode(), f"{path}: regenerate and review"


@pytest.mark.parametrize("name", SHAPES)
def test_scripts_are_valid_bash(name: str, tmp_path: Path) -> None:
    for file, text in scripts(*shape_config(name)).items():
        (tmp_path / file).write_text(text)
        result = subprocess.run(["bash", "-n", str(tmp_path / file)], capture_output=True)
        assert result.returncode == 0, result.stderr


def test_layouts() -> None:
    slurm = SlurmConfig(gpus_per_node=8)
    assert job_layout(Allocation.parse("sglang:d2t16"), slurm, True) == JobLayout(
        2, 4, 1, nodes_per_worker=2, gpus_per_task=8, cpus_per_task=64, memory="--mem=0"
    )
    assert job_layout(Allocation.parse("sglang:d3t4"), slurm, True) == JobLayout(
        3, 2, 2, gpus_per_task=4, cpus_per_task=32, memory="--mem-per-gpu=64G"
    )
    assert job_layout(Allocation.parse("sglang:d3t2p4"), slurm, True) == JobLayout(
        3, 3, 1, gpus_per_task=8, cpus_per_task=64, memory="--mem=0"
    )
    assert job_layout(Allocation.parse("llamacpp:d2"), slurm, False) == JobLayout(2, 1, 2)
    assert job_layout(Allocation.parse("mock:d5"), SlurmConfig(nodes=2), False) == JobLayout(
        5, 2, 3
    )
    assert job_layout(Allocation.parse("sglang:d1t2"), SlurmConfig(cpus_per_task=3), True) == (
        JobLayout(1, 1, 1, gpus_per_task=2, cpus_per_task=3, memory="--mem-per-gpu=64G")
    )


@pytest.mark.parametrize(
    ("shape", "settings", "message"),
    [
        ("sglang:d1t12", {}, "t x p = 12 GPUs does not fill whole nodes of .*gpus_per_node=8"),
        ("sglang:d3t16", {"nodes": 4}, r"nodes=4 is too few for 3 worker\(s\) of 2 nodes each"),
        ("sglang:d5t4", {"nodes": 2}, r"nodes=2 is too few .*2 per node: set it to 3"),
        ("sglang:d1", {"gpus_per_node": 0}, "gpus_per_node is 0"),
    ],
)
def test_impossible_shapes_are_refused_with_what_to_change(
    shape: str, settings: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        job_layout(Allocation.parse(shape), SlurmConfig(**settings), True)  # type: ignore[arg-type]


def test_sglang_ranks_join_rank_zeros_dist_init_address() -> None:
    args = get_backend("sglang").multinode_args(2, NODE_RANK_VARIABLE, "10.0.0.1", 20001)
    assert args == [
        "--nnodes", "2", "--node-rank", NODE_RANK_VARIABLE, "--dist-init-addr", "10.0.0.1:20001",
    ]  # fmt: skip


def test_vllm_ranks_join_the_master_and_only_rank_zero_serves() -> None:
    vllm = get_backend("vllm")
    leader = vllm.multinode_args(2, 0, DIST_HOST_VARIABLE, DIST_PORT_VARIABLE)
    assert leader == [
        "--nnodes", "2", "--node-rank", "0",
        "--master-addr", DIST_HOST_VARIABLE, "--master-port", DIST_PORT_VARIABLE,
    ]  # fmt: skip
    follower = vllm.multinode_args(2, 1, "10.0.0.1", 20001)
    assert follower[-1] == "--headless" and follower[:4] == ["--nnodes", "2", "--node-rank", "1"]


def test_a_backend_that_cannot_span_nodes_says_so() -> None:
    with pytest.raises(ConfigError, match="cannot span nodes"):
        get_backend("llamacpp").multinode_args(2, 0, "h", 1)
