"""The sbatch script of a worker job, rendered by pure functions so it can be golden-tested.

One job, one `srun` step per worker, each on its own GPUs: a worker larger than a node
spans whole nodes, one task per node. Slurm sets each task's CUDA_VISIBLE_DEVICES. Node
rank 0 picks a port from WORKER_PORTS, publishes `host:port` through a file in the shared
run directory, runs the server (again on other ports while they turn out to be taken) and
records how it ended; the other ranks join rank 0's distributed address.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass
from pathlib import Path

from agent_eval.allocation import Allocation
from agent_eval.errors import ConfigError
from agent_eval.launch.schedulers import SlurmConfig
from agent_eval.schedulers.ports import WORKER_PORTS

HOST_VARIABLE = "$AGENT_EVAL_HOST"
PORT_VARIABLE = "$AGENT_EVAL_PORT"
NODE_RANK_VARIABLE = "$AGENT_EVAL_NODE_RANK"
DIST_HOST_VARIABLE = "$AGENT_EVAL_DIST_HOST"
DIST_PORT_VARIABLE = "$AGENT_EVAL_DIST_PORT"
_VARIABLES = (HOST_VARIABLE, PORT_VARIABLE, NODE_RANK_VARIABLE, DIST_HOST_VARIABLE,
              DIST_PORT_VARIABLE)  # fmt: skip
# What SGLang, vLLM and uvicorn log when a port is taken (EADDRINUSE is errno 98 on Linux).
PORT_TAKEN = "address already in use|address in use|errno 98"
# A follower's server fails soon after rank 0's; rank 0 needs a moment to move ports.
MOVE_SECONDS = 30


@dataclass(frozen=True)
class JobLayout:
    """The job's shape: nodes and tasks, and what each task of a worker holds."""

    workers: int
    nodes: int
    tasks_per_node: int
    nodes_per_worker: int = 1
    gpus_per_task: int = 0
    cpus_per_task: int | None = None
    memory: str | None = None
    """The memory flag of each task: --mem=0 (whole node) or --mem-per-gpu."""

    @property
    def tasks(self) -> int:
        return self.workers * self.nodes_per_worker


@dataclass(frozen=True)
class TaskCommands:
    """The server's shell line on node rank 0, and on the other ranks (None: one node)."""

    leader: str
    follower: str | None = None


def job_layout(allocation: Allocation, slurm: SlurmConfig, needs_gpus: bool) -> JobLayout:
    """The job's shape; ConfigError when the workers cannot be laid out on the nodes."""
    gpus = allocation.gpus_per_worker
    if not needs_gpus:
        nodes = slurm.nodes or 1
        per_node = math.ceil(allocation.dp / nodes)
        return JobLayout(allocation.dp, nodes, per_node, cpus_per_task=slurm.cpus_per_task)
    if slurm.gpus_per_node < 1:
        raise ConfigError("scheduler.slurm.gpus_per_node is 0: set the GPUs of each node")
    if gpus > slurm.gpus_per_node:
        return _multinode_layout(allocation, slurm)
    return _node_sharing_layout(allocation, slurm)


def _multinode_layout(allocation: Allocation, slurm: SlurmConfig) -> JobLayout:
    """Workers larger than a node: whole nodes each, one task per node."""
    gpus, per_node = allocation.gpus_per_worker, slurm.gpus_per_node
    if gpus % per_node:
        raise ConfigError(
            f"a worker of t x p = {gpus} GPUs does not fill whole nodes of "
            f"scheduler.slurm.gpus_per_node={per_node}: choose t x p a multiple of {per_node}"
        )
    span = gpus // per_node
    what = f"{allocation.dp} worker(s) of {span} nodes each"
    nodes = _nodes(slurm, allocation.dp * span, what)
    cpus = slurm.cpus_per_task or slurm.cpus_per_gpu * per_node
    return JobLayout(allocation.dp, nodes, 1, span, per_node, cpus, "--mem=0")


def _node_sharing_layout(allocation: Allocation, slurm: SlurmConfig) -> JobLayout:
    """Workers within a node: as many per node as its GPUs hold."""
    gpus, per_node = allocation.gpus_per_worker, slurm.gpus_per_node
    fit = per_node // gpus
    what = f"{allocation.dp} worker(s) of {gpus} GPUs, {fit} per node"
    nodes = _nodes(slurm, math.ceil(allocation.dp / fit), what)
    memory = "--mem=0" if gpus == per_node else f"--mem-per-gpu={slurm.mem_per_gpu}"
    cpus = slurm.cpus_per_task or slurm.cpus_per_gpu * gpus
    per_job_node = min(fit, math.ceil(allocation.dp / nodes))
    return JobLayout(allocation.dp, nodes, per_job_node, 1, gpus, cpus, memory)


def _nodes(slurm: SlurmConfig, needed: int, what: str) -> int:
    if slurm.nodes is None:
        return needed
    if slurm.nodes < needed:
        raise ConfigError(
            f"scheduler.slurm.nodes={slurm.nodes} is too few for {what}: set it to {needed} "
            "(or leave it unset), or ask for fewer workers"
        )
    return slurm.nodes


def shell_command(argv: list[str]) -> str:
    """argv as one shell line; the placeholders (host, ports, node rank) stay shell variables."""
    return " ".join(_quote(arg) for arg in argv)


def _quote(arg: str) -> str:
    if not any(variable in arg for variable in _VARIABLES):
        return shlex.quote(arg)
    # In double quotes our variables expand; every other special character is escaped.
    escaped = "".join("\\" + c if c in '"\\`$' else c for c in arg)
    for variable in _VARIABLES:
        escaped = escaped.replace("\\" + variable, variable)
    return f'"{escaped}"'


def _task_resources(layout: JobLayout, memory: str | None) -> list[str]:
    """What each task holds, for sbatch and again for srun (which inherits no CPU count)."""
    flags = [f"--gpus-per-task={layout.gpus_per_task}"] if layout.gpus_per_task else []
    if layout.cpus_per_task:
        flags.append(f"--cpus-per-task={layout.cpus_per_task}")
    return flags + ([memory] if memory else [])


def render_sbatch(
    layout: JobLayout, slurm: SlurmConfig, workers_dir: Path, task_script: Path, name: str
) -> str:
    """The job script: resources as #SBATCH lines, the user's setup, then one step per worker."""
    job = [
        f"--job-name={name}",
        f"--output={workers_dir}/slurm-%j.out",
        f"--nodes={layout.nodes}",
        f"--ntasks={layout.tasks}",
        f"--ntasks-per-node={layout.tasks_per_node}",
        f"--time={slurm.time}",
        *_task_resources(layout, f"--mem={slurm.mem}" if slurm.mem else layout.memory),
        *[f"--{key}={value}" for key, value in _site(slurm).items() if value is not None],
        *[line.removeprefix("#SBATCH").strip() for line in slurm.sbatch_lines],
    ]
    span = layout.nodes_per_worker
    step = [
        "srun", "--exact", f"--nodes={span}", f"--ntasks={span}", "--ntasks-per-node=1",
        *_task_resources(layout, layout.memory), "--kill-on-bad-exit=1",
        "bash", shlex.quote(str(task_script)),
    ]  # fmt: skip
    lines = ["#!/bin/bash", *[f"#SBATCH {flag}" for flag in job], "set -euo pipefail"]
    return "\n".join([
        *lines, *slurm.setup_lines,
        "# Each worker is its own step, so it gets its own GPUs and a failed rank ends only it.",
        f"for i in $(seq 0 {layout.workers - 1}); do",
        f'    {" ".join(step)} "$i" &',
        "done",
        "wait",
    ]) + "\n"  # fmt: skip


def _site(slurm: SlurmConfig) -> dict[str, str | None]:
    return {"partition": slurm.partition, "account": slurm.account}


def address_expression(slurm: SlurmConfig) -> str:
    """Shell text giving the IPv4 address a task publishes for its node."""
    if slurm.host:
        return shlex.quote(slurm.host)
    if slurm.interface:
        device = shlex.quote(slurm.interface)
        first_ipv4 = "awk '{split($4, a, \"/\"); print a[1]; exit}'"
        return f"$(ip -4 -o addr show dev {device} | {first_ipv4})"
    return "$(hostname -I | awk '{print $1}')"


def render_task(commands: TaskCommands, workers_dir: Path, slurm: SlurmConfig) -> str:
    """One task of worker $1: its address, ports, the server (relaunched while ports are taken)."""
    folder = shlex.quote(str(workers_dir))
    lines = [
        "#!/bin/bash",
        "set -u",
        "i=$1",
        f"dir={folder}",
        'log="$dir/worker-$i.log"',
        *_finish(),
        f"export AGENT_EVAL_HOST={address_expression(slurm)}",
        'if [ -z "$AGENT_EVAL_HOST" ]; then',
        '    echo "no IPv4 address on $(hostname)" >> "$log"',
        "    finish 1",
        "fi",
        *_interface_lines(slurm, commands),
        *_port_functions(),
        *_leader(commands, slurm.port_attempts),
    ]
    if commands.follower is None:
        return "\n".join([*lines, "leader"]) + "\n"
    lines += ['head="$dir/worker-$i.head"', *_follower(commands.follower)]
    lines += [
        "export AGENT_EVAL_NODE_RANK=$SLURM_PROCID",
        'if [ "$SLURM_PROCID" = 0 ]; then leader; else follower; fi',
    ]
    return "\n".join(lines) + "\n"


def _finish() -> list[str]:
    return [
        "# The first rank to end tells the harness how the worker ended.",
        "finish() {",
        '    [ -e "$dir/worker-$i.exit" ] || echo "${2:-$1}" > "$dir/worker-$i.exit"',
        '    exit "$1"',
        "}",
    ]


def _interface_lines(slurm: SlurmConfig, commands: TaskCommands) -> list[str]:
    """Point torch's bootstrap at the chosen interface too, unless the site already did."""
    if not slurm.interface or commands.follower is None:
        return []
    device = shlex.quote(slurm.interface)
    return [
        f"export GLOO_SOCKET_IFNAME=${{GLOO_SOCKET_IFNAME:-{device}}}",
        f"export NCCL_SOCKET_IFNAME=${{NCCL_SOCKET_IFNAME:-{device}}}",
    ]


def _port_functions() -> list[str]:
    first, last = WORKER_PORTS.start, WORKER_PORTS.stop - 1
    return [
        f"# Ports {first}-{last}: outside the kernel's ephemeral ports and SGLang's own.",
        f"pick_port() {{ shuf -n 1 -i {first}-{last}; }}",
        "# Written then renamed, so no one reads half a file.",
        'publish() { echo "$1" > "$2.tmp" && mv "$2.tmp" "$2"; }',
        f'port_taken() {{ tail -c "+$(($1 + 1))" "$log" | grep -qiE \'{PORT_TAKEN}\'; }}',
    ]


def _leader(commands: TaskCommands, attempts: int) -> list[str]:
    """Node rank 0: picks ports, publishes them, runs the server, moves on if a port is taken."""
    distributed = [
        "        export AGENT_EVAL_DIST_HOST=$AGENT_EVAL_HOST AGENT_EVAL_DIST_PORT=$(pick_port)",
        '        publish "$attempt $AGENT_EVAL_DIST_HOST $AGENT_EVAL_DIST_PORT'
        ' $AGENT_EVAL_PORT" "$head"',
    ]  # fmt: skip
    return [
        "leader() {",
        "    local attempt start code",
        f"    for attempt in $(seq {attempts}); do",
        "        export AGENT_EVAL_PORT=$(pick_port)",
        *(distributed if commands.follower is not None else []),
        '        publish "$AGENT_EVAL_HOST:$AGENT_EVAL_PORT" "$dir/worker-$i.addr"',
        '        start=$(stat -c %s "$log" 2>/dev/null || echo 0)',
        f'        {commands.leader} >> "$log" 2>&1',
        "        code=$?",
        '        port_taken "$start" || break',
        '        echo "[agent-eval] a port was taken (attempt $attempt); relaunching" >> "$log"',
        "    done",
        '    finish "$code"',
        "}",
    ]


def _follower(command: str) -> list[str]:
    """Other node ranks: join rank 0's address, and follow it when it moves to other ports."""
    return [
        'same() { [ "$(cat "$head")" = "$1" ]; }',
        "moved() {",
        f"    for _ in $(seq {MOVE_SECONDS}); do",
        '        same "$1" || return 0',
        "        sleep 1",
        "    done",
        "    return 1",
        "}",
        "follower() {",
        "    local current pid code",
        '    log="$dir/worker-$i.rank-$SLURM_PROCID.log"',
        '    until [ -s "$head" ]; do sleep 1; done',
        "    while :; do",
        '        current=$(cat "$head")',
        "        read -r _ AGENT_EVAL_DIST_HOST AGENT_EVAL_DIST_PORT AGENT_EVAL_PORT"
        ' <<< "$current"',
        "        export AGENT_EVAL_DIST_HOST AGENT_EVAL_DIST_PORT AGENT_EVAL_PORT",
        f'        {command} >> "$log" 2>&1 &',
        "        pid=$!",
        '        while kill -0 "$pid" 2>/dev/null && same "$current"; do sleep 2; done',
        '        moved "$current" || break',
        '        kill "$pid" 2>/dev/null; wait "$pid"',
        "    done",
        '    wait "$pid"; code=$?',
        '    finish "$code" "$code (node rank $SLURM_PROCID, log $log)"',
        "}",
    ]  # fmt: skip
