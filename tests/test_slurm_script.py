"""The rendered job and task scripts, compared line for line with golden copies."""

from __future__ import annotations

from pathlib import Path

from agent_eval.allocation import Allocation
from agent_eval.schedulers.config import SlurmConfig
from agent_eval.schedulers.slurm_script import (
    HOST_VARIABLE,
    PORT_VARIABLE,
    JobLayout,
    job_layout,
    render_sbatch,
    render_task,
    shell_command,
)

RUN = Path("/shared/runs/r1/workers")

GOLDEN_SBATCH = """\
#!/bin/bash
#SBATCH --job-name=agent-eval-workers
#SBATCH --output=/shared/runs/r1/workers/slurm-%j.out
#SBATCH --nodes=12
#SBATCH --ntasks=96
#SBATCH --ntasks-per-node=8
#SBATCH --time=02:00:00
#SBATCH --gres=gpu:8
#SBATCH --partition=gpu
#SBATCH --account=rl-team
#SBATCH --cpus-per-task=12
#SBATCH --mem=900G
#SBATCH --exclusive
#SBATCH --qos=high
set -euo pipefail
module load cuda/12.4
source /shared/envs/sglang/bin/activate
srun --kill-on-bad-exit=0 bash /shared/runs/r1/workers/task.sh
"""

GOLDEN_TASK = """\
#!/bin/bash
set -u
i=$SLURM_PROCID
log=/shared/runs/r1/workers/worker-$i.log
export CUDA_VISIBLE_DEVICES=$(seq -s, $((SLURM_LOCALID * 2)) $((SLURM_LOCALID * 2 + 1)))
export AGENT_EVAL_HOST=$(hostname -I | awk '{print $1}')
export AGENT_EVAL_PORT=$(python3 -c "import socket; s = socket.socket(); s.bind(('', 0)); print(s.getsockname()[1])")
echo "$AGENT_EVAL_HOST:$AGENT_EVAL_PORT" > /shared/runs/r1/workers/worker-$i.addr.tmp
mv /shared/runs/r1/workers/worker-$i.addr.tmp /shared/runs/r1/workers/worker-$i.addr
python -m sglang.launch_server --host "$AGENT_EVAL_HOST" --port "$AGENT_EVAL_PORT" --model-path '/ckpt/step 500' >> "$log" 2>&1
code=$?
echo $code > /shared/runs/r1/workers/worker-$i.exit
exit $code
"""


def test_job_script_for_96_workers_on_12_nodes() -> None:
    slurm = SlurmConfig(
        partition="gpu", account="rl-team", time="02:00:00", cpus_per_task=12, mem="900G",
        sbatch_lines=["--exclusive", "#SBATCH --qos=high"],
        setup_lines=["module load cuda/12.4", "source /shared/envs/sglang/bin/activate"],
    )  # fmt: skip
    layout = job_layout(Allocation.parse("sglang:d96p1t1"), slurm, needs_gpus=True)
    assert layout == JobLayout(nodes=12, tasks=96, tasks_per_node=8, gpus_per_task=1)
    script = render_sbatch(layout, slurm, RUN, RUN / "task.sh", "agent-eval-workers")
    assert script == GOLDEN_SBATCH


def test_task_script_takes_gpus_from_localid_and_publishes_its_address() -> None:
    argv = [
        "python",
        "-m",
        "sglang.launch_server",
        "--host",
        HOST_VARIABLE,
        "--port",
        PORT_VARIABLE,
    ]
    command = shell_command([*argv, "--model-path", "/ckpt/step 500"])
    assert render_task(command, RUN, gpus_per_task=2, host=None) == GOLDEN_TASK


def test_layouts() -> None:
    slurm = SlurmConfig(gpus_per_node=8)
    assert job_layout(Allocation.parse("sglang:d4t4"), slurm, True) == JobLayout(2, 4, 2, 4)
    assert job_layout(Allocation.parse("sglang:d3t8"), slurm, True) == JobLayout(3, 3, 1, 8)
    assert job_layout(Allocation.parse("llamacpp:d2"), slurm, False) == JobLayout(1, 2, 2, 0)
    assert job_layout(Allocation.parse("mock:d5"), SlurmConfig(nodes=2), False) == JobLayout(
        2, 5, 3, 0
    )
