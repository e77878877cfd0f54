"""The sbatch script of a worker job, rendered by pure functions so it can be golden-tested.

One job, one task per worker: `srun` starts the tasks, each task takes its GPUs
from SLURM_LOCALID, picks a free port on its node, publishes `host:port` through
a file in the shared run directory, then runs the server and records how it ended.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass
from pathlib import Path

from agent_eval.allocation import Allocation
from agent_eval.schedulers.config import SlurmConfig

HOST_VARIABLE = "$AGENT_EVAL_HOST"
PORT_VARIABLE = "$AGENT_EVAL_PORT"
_FREE_PORT = "import socket; s = socket.socket(); s.bind(('', 0)); print(s.getsockname()[1])"


@dataclass(frozen=True)
class JobLayout:
    """How many nodes and tasks the job asks for, and GPUs per task."""

    nodes: int
    tasks: int
    tasks_per_node: int
    gpus_per_task: int


def job_layout(allocation: Allocation, slurm: SlurmConfig, needs_gpus: bool) -> JobLayout:
    gpus = allocation.gpus_per_worker if needs_gpus else 0
    if gpus == 0:
        nodes = slurm.nodes or 1
        return JobLayout(nodes, allocation.dp, math.ceil(allocation.dp / nodes), 0)
    per_node = max(1, slurm.gpus_per_node // gpus)
    nodes = slurm.nodes or math.ceil(allocation.dp / per_node)
    return JobLayout(nodes, allocation.dp, min(per_node, math.ceil(allocation.dp / nodes)), gpus)


def shell_command(argv: list[str]) -> str:
    """argv as one shell line; the host and port placeholders stay shell variables."""
    return " ".join(_quote(arg) for arg in argv)


def _quote(arg: str) -> str:
    if HOST_VARIABLE not in arg and PORT_VARIABLE not in arg:
        return shlex.quote(arg)
    # In double quotes our two variables expand; every other special character is escaped.
    escaped = "".join("\\" + c if c in '"\\`$' else c for c in arg)
    for variable in (HOST_VARIABLE, PORT_VARIABLE):
        escaped = escaped.replace("\\" + variable, variable)
    return f'"{escaped}"'


def render_sbatch(
    layout: JobLayout, slurm: SlurmConfig, workers_dir: Path, task_script: Path, name: str
) -> str:
    """The job script: resources as #SBATCH lines, the user's setup, then one srun."""
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name={name}",
        f"#SBATCH --output={workers_dir}/slurm-%j.out",
        f"#SBATCH --nodes={layout.nodes}",
        f"#SBATCH --ntasks={layout.tasks}",
        f"#SBATCH --ntasks-per-node={layout.tasks_per_node}",
        f"#SBATCH --time={slurm.time}",
    ]
    if layout.gpus_per_task:
        lines.append(f"#SBATCH --gres=gpu:{layout.gpus_per_task * layout.tasks_per_node}")
    optional = {
        "--partition": slurm.partition,
        "--account": slurm.account,
        "--cpus-per-task": slurm.cpus_per_task,
        "--mem": slurm.mem,
    }
    lines += [f"#SBATCH {flag}={value}" for flag, value in optional.items() if value is not None]
    lines += [f"#SBATCH {line.removeprefix('#SBATCH').strip()}" for line in slurm.sbatch_lines]
    lines += ["set -euo pipefail", *slurm.setup_lines]
    lines.append(f"srun --kill-on-bad-exit=0 bash {shlex.quote(str(task_script))}")
    return "\n".join(lines) + "\n"


def render_task(command: str, workers_dir: Path, gpus_per_task: int, host: str | None) -> str:
    """One task: its GPUs, a free port, the published address, the server, its exit code."""
    folder = shlex.quote(str(workers_dir))
    address = shlex.quote(host) if host else "$(hostname -I | awk '{print $1}')"
    lines = [
        "#!/bin/bash",
        "set -u",
        "i=$SLURM_PROCID",
        f"log={folder}/worker-$i.log",
    ]
    if gpus_per_task:
        first = f"$((SLURM_LOCALID * {gpus_per_task}))"
        last = f"$((SLURM_LOCALID * {gpus_per_task} + {gpus_per_task - 1}))"
        lines.append(f"export CUDA_VISIBLE_DEVICES=$(seq -s, {first} {last})")
    lines += [
        f"export AGENT_EVAL_HOST={address}",
        f'export AGENT_EVAL_PORT=$(python3 -c "{_FREE_PORT}")',
        # Written then renamed, so the harness never reads half an address.
        f'echo "$AGENT_EVAL_HOST:$AGENT_EVAL_PORT" > {folder}/worker-$i.addr.tmp',
        f"mv {folder}/worker-$i.addr.tmp {folder}/worker-$i.addr",
        f'{command} >> "$log" 2>&1',
        "code=$?",
        f"echo $code > {folder}/worker-$i.exit",
        "exit $code",
    ]
    return "\n".join(lines) + "\n"
