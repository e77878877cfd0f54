"""The task script run by bash with stand-in servers: ports taken, relaunches, ranks following."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from agent_eval.launch.schedulers import SlurmConfig
from agent_eval.schedulers.ports import WORKER_PORTS
from agent_eval.schedulers.slurm_script import (
    DIST_PORT_VARIABLE,
    NODE_RANK_VARIABLE,
    PORT_VARIABLE,
    TaskCommands,
    render_task,
    shell_command,
)

LOCAL = SlurmConfig(host="127.0.0.1", port_attempts=3)
# Reports its port taken on its first launch, then serves.
TAKEN_ONCE = """
if [ ! -e "$0.taken" ]; then
    touch "$0.taken"; echo "OSError: [Errno 98] Address already in use"; exit 1
fi
echo "serving on $1"
"""
# A rank-0 server: once the other rank joined, its port is taken; the next time it fails.
LEADER = """
n=$(( $(cat "$0.count" 2>/dev/null || echo 0) + 1 )); echo "$n" > "$0.count"
until [ "$(wc -l < "$0.joined")" = "$n" ]; do sleep 0.2; done
if [ "$n" = 1 ]; then echo "bind: address already in use"; exit 1; fi
exit 3
"""
# Any other rank's server: notes whom it joined, then runs until killed.
FOLLOWER = """
echo "$1 $2" >> "$(dirname "$0")/leader.sh.joined"
exec sleep 60
"""


def task(tmp_path: Path, commands: TaskCommands, slurm: SlurmConfig = LOCAL) -> Path:
    path = tmp_path / "task.sh"
    path.write_text(render_task(commands, tmp_path, slurm))
    return path


def stand_in(tmp_path: Path, name: str, body: str, *args: str) -> str:
    (tmp_path / name).write_text(body)
    return shell_command(["bash", str(tmp_path / name), *args])


def run_rank(script: Path, rank: int) -> subprocess.Popen[str]:
    env = {**os.environ, "SLURM_PROCID": str(rank)}
    return subprocess.Popen(["bash", str(script), "0"], env=env, text=True, start_new_session=True)


def test_a_taken_port_relaunches_the_server_on_another(tmp_path: Path) -> None:
    command = stand_in(tmp_path, "server.sh", TAKEN_ONCE, PORT_VARIABLE)
    assert run_rank(task(tmp_path, TaskCommands(command)), 0).wait(timeout=30) == 0
    log = (tmp_path / "worker-0.log").read_text()
    assert "relaunching" in log
    host, _, port = (tmp_path / "worker-0.addr").read_text().strip().rpartition(":")
    assert host == "127.0.0.1" and int(port) in WORKER_PORTS
    assert f"serving on {port}" in log
    assert (tmp_path / "worker-0.exit").read_text() == "0\n"


def test_a_port_taken_every_time_ends_after_the_last_attempt(tmp_path: Path) -> None:
    command = shell_command(["sh", "-c", "echo 'Address in use'; exit 1"])
    assert run_rank(task(tmp_path, TaskCommands(command)), 0).wait(timeout=30) == 1
    assert (tmp_path / "worker-0.log").read_text().count("Address in use") == 3
    assert (tmp_path / "worker-0.exit").read_text() == "1\n"


def test_other_ranks_follow_rank_zero_to_its_new_ports(tmp_path: Path) -> None:
    (tmp_path / "leader.sh.joined").touch()
    leader = stand_in(tmp_path, "leader.sh", LEADER)
    follower = stand_in(tmp_path, "follower.sh", FOLLOWER, DIST_PORT_VARIABLE, NODE_RANK_VARIABLE)
    script = task(tmp_path, TaskCommands(leader, follower))
    rank1 = run_rank(script, 1)
    try:
        assert run_rank(script, 0).wait(timeout=60) == 3
    finally:
        os.killpg(rank1.pid, signal.SIGTERM)
        rank1.wait(timeout=30)
    joined = (tmp_path / "leader.sh.joined").read_text().split("\n")[:2]
    ports = [line.split()[0] for line in joined]
    assert ports[0] != ports[1] and all(line.split()[1] == "1" for line in joined)
    assert (tmp_path / "worker-0.exit").read_text() == "3\n"
