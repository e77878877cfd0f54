"""The Ray actor behind one worker: it runs the server process on the node Ray placed it.

Ray imports this module on every node, so agent-eval must be installed there too.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
from pathlib import Path
from typing import BinaryIO, TypedDict

import ray

from agent_eval.errors import ConfigError
from agent_eval.schedulers.ports import choose_ports
from agent_eval.system.children import dying_with_parent, signal_group
from agent_eval.system.diagnostics import log_tail

log = logging.getLogger(__name__)

_SIOCGIFADDR = 0x8915  # Linux ioctl: an interface's IPv4 address


class Started(TypedDict):
    """What the actor reports once its server process runs."""

    pid: int
    log: str
    gpus: list[str]


def _open_log(path: Path) -> BinaryIO:
    """The log file at `path`, or under the node's temp dir when the run dir is not writable here.

    A multi-node cluster needs the run dir on a shared filesystem for the logs to land in it;
    without one, each node keeps its workers' logs in its own temp dir.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return path.open("ab")
    except OSError as exc:
        fallback = Path(tempfile.gettempdir(), "agent-eval", *path.parts[-3:])
        log.warning("cannot write %s (%s); logging to %s on this node", path, exc, fallback)
        fallback.parent.mkdir(parents=True, exist_ok=True)
        return fallback.open("ab")


def interface_ipv4(name: str) -> str:
    """The IPv4 address of network interface `name` on this node.

    Raises: ConfigError naming the interfaces this node has.
    """
    request = struct.pack("256s", name.encode()[:15])
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            answer = fcntl.ioctl(probe.fileno(), _SIOCGIFADDR, request)
        except OSError as exc:
            names = ", ".join(n for _, n in socket.if_nameindex())
            raise ConfigError(
                f"interface {name!r} has no IPv4 address on node {ray.util.get_node_ip_address()} "
                f"({exc.strerror}); its interfaces: {names}. Fix scheduler.ray.interface, or "
                "leave it out to use the node's Ray address"
            ) from None
    return socket.inet_ntoa(answer[20:24])


class ServerProcess:
    """One server process on this node, in its own process group."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.log = Path()

    def address(self, interface: str | None, avoid: list[int]) -> tuple[str, int]:
        """This node's IP (on `interface`, else Ray's) and a port free on it, not in `avoid`."""
        host = ray.util.get_node_ip_address() if interface is None else interface_ipv4(interface)
        return host, choose_ports(host, 1, avoid)[0]

    def start(self, argv: list[str], env: dict[str, str], log_path: str, gpus: bool) -> Started:
        """Start the server; with `gpus`, it sees exactly the GPUs Ray gave this actor.

        A server started before (one that ended: a relaunch) takes its group's leftovers with it.
        """
        self.stop(0)
        assigned = [str(g) for g in ray.get_gpu_ids()]
        full_env = {**os.environ, **env}
        if gpus:
            full_env["CUDA_VISIBLE_DEVICES"] = ",".join(assigned)
        if shutil.which(argv[0], path=full_env.get("PATH")) is None:  # setpriv would exec it
            raise ConfigError(
                f"cannot start {argv[0]!r} on {ray.util.get_node_ip_address()}: no such "
                "program; install it on every node or set the backend's python, prefix or "
                "container"
            )
        started, preexec = dying_with_parent(argv)  # when Ray kills the actor, its server goes too
        with _open_log(Path(log_path)) as log_file:
            self.log = Path(log_file.name)
            self.process = subprocess.Popen(
                started,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                env=full_env,
                start_new_session=True,
                preexec_fn=preexec,
            )
        return Started(pid=self.process.pid, log=str(self.log), gpus=assigned)

    def returncode(self) -> int | None:
        """The server's exit code, or None while it runs."""
        return None if self.process is None else self.process.poll()

    def tail(self, lines: int) -> str:
        """The last lines of the server's log, read on this node."""
        return log_tail(self.log, lines)

    def stop(self, grace: float) -> int | None:
        """SIGTERM the server's process group, SIGKILL it after `grace` seconds; the exit code."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            signal_group(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(grace)
            except subprocess.TimeoutExpired:
                log.warning("server %d did not stop in %.0f s; killing it", self.process.pid, grace)
        # The whole group, every time: the server's own children must not outlive it.
        signal_group(self.process.pid, signal.SIGKILL)
        return self.process.wait()


ServerActor = ray.remote(ServerProcess)
