"""Local scheduler: one process per worker on this machine, each in its own process group."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import socket
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from agent_eval.allocation import Allocation
from agent_eval.backends.base import Backend, WorkerConfig
from agent_eval.children import die_with_parent, stop_groups
from agent_eval.errors import ConfigError
from agent_eval.schedulers.base import LaunchedWorker, Scheduler
from agent_eval.schedulers.errors import GPUAllocationError

if TYPE_CHECKING:
    from agent_eval.launch import LaunchConfig

log = logging.getLogger(__name__)

GRACE_SECONDS = 10.0


def visible_gpus() -> list[str]:
    """GPU ids this process may use: CUDA_VISIBLE_DEVICES if set, else what nvidia-smi lists."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [g.strip() for g in listed.split(",") if g.strip() and g.strip() != "-1"]
    if shutil.which("nvidia-smi") is None:
        return []
    result = subprocess.run(
        ["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    return result.stdout.split() if result.returncode == 0 else []


def free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def check_port_free(host: str, port: int) -> None:
    with socket.socket() as probe:
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise ConfigError(
                f"port {port} on {host} is in use ({exc.strerror}); pick another base port "
                "or leave it out to use free ports"
            ) from None


class LocalScheduler(Scheduler):
    """Workers as child processes; logs in RUN_DIR/workers/."""

    name = "local"

    def __init__(
        self, run_dir: Path, host: str = "127.0.0.1", base_port: int | None = None
    ) -> None:
        super().__init__(run_dir)
        self.host = host
        self.base_port = base_port
        self._processes: dict[int, asyncio.subprocess.Process] = {}

    @classmethod
    def from_config(cls, config: LaunchConfig, run_dir: Path) -> LocalScheduler:
        return cls(run_dir, base_port=config.rollout.worker.base_port)

    async def launch(
        self, backend: Backend, config: WorkerConfig, allocation: Allocation
    ) -> list[LaunchedWorker]:
        backend.validate(config, allocation)
        gpu_sets = self._gpu_sets(backend, allocation)
        ports = self._ports(allocation.dp)
        (self.run_dir / "workers").mkdir(parents=True, exist_ok=True)
        for index, (port, gpus) in enumerate(zip(ports, gpu_sets, strict=True)):
            command = backend.command(config, allocation, self.host, port)
            worker = LaunchedWorker(
                index, self.host, port, self.run_dir / "workers" / f"worker-{index}.log",
                command.ready_path, command.health_path, tuple(int(g) for g in gpus if g.isdigit()),
            )  # fmt: skip
            env = {**os.environ, **command.env}
            if backend.needs_gpus:
                env["CUDA_VISIBLE_DEVICES"] = ",".join(gpus)
            self._processes[index] = await self._spawn(command.argv, env, worker.log)
            self.workers.append(worker)
            log.info("started %s, logging to %s", worker.name, worker.log)
            log.debug("%s runs: %s", worker.name, " ".join(command.argv))
        return self.workers

    @property
    def pids(self) -> list[int]:
        """Process ids of the workers, in launch order."""
        return [process.pid for process in self._processes.values()]

    async def exit_status(self, worker: LaunchedWorker) -> str | None:
        code = self._processes[worker.index].returncode
        return None if code is None else f"exited with code {code}"

    async def stop(self) -> None:
        if not await stop_groups(list(self._processes.values()), GRACE_SECONDS):
            log.warning("workers did not stop in %.0f s; killed them", GRACE_SECONDS)

    def _gpu_sets(self, backend: Backend, allocation: Allocation) -> list[list[str]]:
        if not backend.needs_gpus:
            return [[] for _ in range(allocation.dp)]
        gpus = visible_gpus()
        if allocation.world_size > len(gpus):
            raise GPUAllocationError(
                f"{allocation} needs {allocation.world_size} GPUs "
                f"({allocation.dp} workers x {allocation.gpus_per_worker} each) but "
                f"{len(gpus)} are visible here; lower d, t or p, or set CUDA_VISIBLE_DEVICES"
            )
        per = allocation.gpus_per_worker
        return [gpus[i * per : (i + 1) * per] for i in range(allocation.dp)]

    def _ports(self, count: int) -> list[int]:
        if self.base_port is None:
            return [free_port(self.host) for _ in range(count)]
        ports = [self.base_port + i for i in range(count)]
        for port in ports:
            check_port_free(self.host, port)
        return ports

    async def _spawn(
        self, argv: list[str], env: dict[str, str], log_path: Path
    ) -> asyncio.subprocess.Process:
        log_file = await asyncio.to_thread(log_path.open, "ab")
        with log_file:
            try:
                return await asyncio.create_subprocess_exec(
                    *argv,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=log_file,
                    stderr=asyncio.subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                    preexec_fn=die_with_parent,
                )
            except FileNotFoundError:
                raise ConfigError(
                    f"cannot start {argv[0]!r}: no such program; install it or set the "
                    "backend's python, prefix or container"
                ) from None
