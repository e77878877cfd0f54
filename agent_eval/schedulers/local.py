"""Local scheduler: one process per worker on this machine, each in its own process group."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import subprocess
from pathlib import Path

from agent_eval.allocation import Allocation
from agent_eval.backends.base import Backend, WorkerCommand, WorkerConfig
from agent_eval.errors import ConfigError
from agent_eval.launch.config import LaunchConfig
from agent_eval.schedulers.base import Launch, LaunchedWorker, Scheduler
from agent_eval.schedulers.errors import GPUAllocationError
from agent_eval.schedulers.ports import choose_ports, port_is_free
from agent_eval.system.children import dying_with_parent, stop_groups
from agent_eval.system.diagnostics import open_to_append, writing

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


def check_port_free(host: str, port: int) -> None:
    """Raises: ConfigError when a fixed port is taken (fixed ports are never swapped)."""
    if not port_is_free(host, port):
        raise ConfigError(
            f"port {port} on {host} is in use; pick another rollout.worker.base_port "
            "or leave it out to use free ports"
        )


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
        self._launch: Launch | None = None
        self._gpus: list[list[str]] = []
        self._ports_taken: set[int] = set()  # by this launch: never handed out twice

    @classmethod
    def from_config(cls, config: LaunchConfig, run_dir: Path) -> LocalScheduler:
        return cls(run_dir, base_port=config.rollout.worker.base_port)

    async def launch(
        self, backend: Backend, config: WorkerConfig, allocation: Allocation
    ) -> list[LaunchedWorker]:
        backend.validate(config, allocation)
        self._gpus = self._gpu_sets(backend, allocation)
        self._launch = Launch(backend, config, allocation, self.worker_key)
        logs = self.run_dir / "workers"
        with writing(logs):
            logs.mkdir(parents=True, exist_ok=True)
        for index, port in enumerate(self._ports(allocation.dp)):
            command = self._launch.command(self.host, port)
            worker = LaunchedWorker(
                index, self.host, port, self.log_path(index), command.ready_path,
                command.health_path, tuple(int(g) for g in self._gpus[index] if g.isdigit()),
            )  # fmt: skip
            await self._start(worker, command)
            self.workers.append(worker)
        return self.workers

    async def relaunch(self, worker: LaunchedWorker, log: Path) -> bool:
        if self.base_port is not None or self._launch is None:
            return False
        # Whatever the failed server left in its group goes before the new one starts.
        await stop_groups([self._processes[worker.index]], 0)
        (worker.port,) = self._ports(1)
        worker.log = log
        await self._start(worker, self._launch.command(self.host, worker.port))
        return True

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
            ports = choose_ports(self.host, count, self._ports_taken)
            self._ports_taken.update(ports)
            return ports
        ports = [self.base_port + i for i in range(count)]
        for port in ports:
            check_port_free(self.host, port)
        return ports

    async def _start(self, worker: LaunchedWorker, command: WorkerCommand) -> None:
        env = {**os.environ, **command.env}
        if self._gpus[worker.index]:  # only backends that need GPUs get a set
            env["CUDA_VISIBLE_DEVICES"] = ",".join(self._gpus[worker.index])
        self._processes[worker.index] = await self._spawn(command.argv, env, worker.log)
        log.info("started %s, logging to %s", worker.name, worker.log)
        log.debug("%s runs: %s", worker.name, " ".join(command.argv))

    async def _spawn(
        self, argv: list[str], env: dict[str, str], log_path: Path
    ) -> asyncio.subprocess.Process:
        if shutil.which(argv[0], path=env.get("PATH")) is None:  # setpriv would exec it
            raise ConfigError(
                f"cannot start {argv[0]!r}: no such program; install it or set the "
                "backend's python, prefix or container"
            )
        log_file = await asyncio.to_thread(open_to_append, log_path)
        started, preexec = dying_with_parent(argv)
        with log_file:
            return await asyncio.create_subprocess_exec(
                *started,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log_file,
                stderr=asyncio.subprocess.STDOUT,
                env=env,
                start_new_session=True,
                preexec_fn=preexec,
            )
