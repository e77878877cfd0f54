"""Slurm scheduler: one sbatch job with one step per worker.

A plain sbatch script rather than submitit: the workers are shell commands
(often in another environment or a container), not Python callables, and a
rendered script is something a cluster user can read, rerun and golden-test.
"""

from __future__ import annotations

import asyncio
import logging
import shlex
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import aiohttp

from agent_eval.allocation import Allocation
from agent_eval.backends.base import Backend, WorkerCommand, WorkerConfig
from agent_eval.errors import ConfigError
from agent_eval.launch.config import LaunchConfig
from agent_eval.launch.schedulers import SlurmConfig
from agent_eval.schedulers.base import Launch, LaunchedWorker, Scheduler
from agent_eval.schedulers.errors import (
    SchedulerUnavailableError,
    WorkerFailedError,
    WorkerTimeoutError,
)
from agent_eval.schedulers.slurm_script import (
    DIST_HOST_VARIABLE,
    DIST_PORT_VARIABLE,
    HOST_VARIABLE,
    NODE_RANK_VARIABLE,
    PORT_VARIABLE,
    JobLayout,
    TaskCommands,
    job_layout,
    render_sbatch,
    render_task,
    shell_command,
)
from agent_eval.system.diagnostics import log_tail

log = logging.getLogger(__name__)

ENDED = {"FAILED", "CANCELLED", "TIMEOUT", "COMPLETED", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
         "BOOT_FAIL", "DEADLINE"}  # fmt: skip
STOP_SECONDS = 30.0
PENDING_POLL_MAX = 30.0
"""Longest wait between two looks at a pending job: a queue can last hours."""
JOB_NAME = "agent-eval-workers"


async def _run(*argv: str) -> tuple[int, str, str]:
    """Run a Slurm command; (exit code, stdout, stderr)."""
    process = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await process.communicate()
    return process.returncode or 0, out.decode().strip(), err.decode().strip()


class SlurmScheduler(Scheduler):
    """Submits one job, follows its state, finds the workers through files in the run directory."""

    name = "slurm"

    def __init__(self, run_dir: Path, slurm: SlurmConfig) -> None:
        super().__init__(run_dir)
        self.slurm = slurm
        self.job_id: str | None = None
        self._state: tuple[str, str] = ("", "")
        self._state_expires = 0.0
        self._state_ttl = slurm.poll_interval

    @classmethod
    def from_config(cls, config: LaunchConfig, run_dir: Path) -> SlurmScheduler:
        return cls(run_dir, config.scheduler.slurm)

    @property
    def workers_dir(self) -> Path:
        return self.run_dir / "workers"

    async def launch(
        self, backend: Backend, config: WorkerConfig, allocation: Allocation
    ) -> list[LaunchedWorker]:
        if shutil.which("sbatch") is None:
            raise SchedulerUnavailableError(
                "sbatch is not on PATH: the slurm scheduler runs where Slurm's commands are"
            )
        backend.validate(config, allocation)
        layout = job_layout(allocation, self.slurm, backend.needs_gpus)
        command = Launch(backend, config, allocation, self.worker_key).command(
            HOST_VARIABLE, PORT_VARIABLE
        )
        commands = task_commands(backend, command, layout.nodes_per_worker)
        script = await asyncio.to_thread(self._write_scripts, commands, layout)
        self.job_id = await self._submit(script)
        self.workers = [self._pending_worker(i, command) for i in range(allocation.dp)]
        log.info("submitted Slurm job %s with %d worker(s)", self.job_id, allocation.dp)
        return self.workers

    def _write_scripts(self, commands: TaskCommands, layout: JobLayout) -> Path:
        """Write the task and job scripts into the run directory; returns the job script."""
        self.workers_dir.mkdir(parents=True, exist_ok=True)
        task = self.workers_dir / "task.sh"
        task.touch(mode=0o600)  # before its text: the workers' environment may hold a key
        task.write_text(render_task(commands, self.workers_dir, self.slurm))
        script = self.workers_dir / "job.sbatch"
        script.write_text(render_sbatch(layout, self.slurm, self.workers_dir, task, JOB_NAME))
        return script

    def _pending_worker(self, index: int, command: WorkerCommand) -> LaunchedWorker:
        """A worker whose address is known once its task publishes it."""
        log_path = self.workers_dir / f"worker-{index}.log"
        return LaunchedWorker(index, "", 0, log_path, command.ready_path, command.health_path)

    async def wait_ready(
        self, timeout: float, on_wait: Callable[[str], None] | None = None
    ) -> None:
        """Wait for the job to start and every task to publish its address, then for the servers."""
        deadline = time.monotonic() + timeout
        while not all(self._read_address(w) for w in self.workers):
            await self._raise_if_ended()
            if time.monotonic() > deadline:
                detail = await self.waiting_reason() or "The job never started its tasks."
                raise WorkerTimeoutError(
                    [w.name for w in self.workers if not w.port], timeout, detail
                )
            if on_wait is not None:
                on_wait(
                    await self.waiting_reason() or "waiting for the workers to publish addresses"
                )
            await asyncio.sleep(self.slurm.poll_interval)
        await super().wait_ready(max(deadline - time.monotonic(), 0.0), on_wait)

    async def _check(self, http: aiohttp.ClientSession, worker: LaunchedWorker) -> bool:
        # A task relaunched on another port republishes its address.
        await asyncio.to_thread(self._read_address, worker)
        return await super()._check(http, worker)

    async def waiting_reason(self) -> str | None:
        state, reason = await self._job_state()
        if state == "PENDING":
            return f"Slurm job {self.job_id} is PENDING ({reason or 'no reason given'})"
        return f"Slurm job {self.job_id} is {state}; waiting for the workers" if state else None

    async def exit_status(self, worker: LaunchedWorker) -> str | None:
        exit_file = self.workers_dir / f"worker-{worker.index}.exit"
        if exit_file.exists():
            return f"exited with code {exit_file.read_text().strip()}"
        state, reason = await self._job_state()
        if state in ENDED:
            return f"ended with its Slurm job {self.job_id}: {state} ({reason or 'no reason'})"
        return None

    async def stop(self) -> None:
        if self.job_id is None:
            return
        await _run("scancel", self.job_id)
        deadline = time.monotonic() + STOP_SECONDS
        while time.monotonic() < deadline:
            state, _ = await self._job_state(fresh=True)
            if state in ENDED or not state:
                return
            await asyncio.sleep(0.5)
        log.warning("Slurm job %s still %s after scancel", self.job_id, state)

    async def _submit(self, script: Path) -> str:
        code, out, err = await _run("sbatch", "--parsable", str(script))
        if code != 0:
            raise ConfigError(f"sbatch refused the job ({err or out}); check the slurm settings")
        return out.split(";")[0]

    async def _job_state(self, fresh: bool = False) -> tuple[str, str]:
        """(state, reason) of the job, asked of Slurm at most once per poll interval.

        Every worker's check and the wait loop share one answer; while the job is
        pending the interval doubles, up to PENDING_POLL_MAX.
        """
        now = time.monotonic()
        if fresh or now >= self._state_expires:
            self._state = await self._query_state()
            pending = self._state[0] == "PENDING"
            ttl = min(self._state_ttl * 2, PENDING_POLL_MAX) if pending else None
            self._state_ttl = ttl or self.slurm.poll_interval
            self._state_expires = now + self._state_ttl
        return self._state

    async def _query_state(self) -> tuple[str, str]:
        """(state, reason) of the job; ("", "") once Slurm has forgotten it."""
        code, out, _ = await _run("squeue", "-h", "-j", str(self.job_id), "-o", "%T|%r")
        if code == 0 and out:
            state, _, reason = out.splitlines()[0].partition("|")
            return state, "" if reason == "None" else reason
        code, out, _ = await _run("scontrol", "show", "job", str(self.job_id))
        fields = dict(item.split("=", 1) for item in out.split() if "=" in item)
        return fields.get("JobState", ""), fields.get("Reason", "")

    async def _raise_if_ended(self) -> None:
        state, reason = await self._job_state()
        if state in ENDED:
            output = self.workers_dir / f"slurm-{self.job_id}.out"
            raise WorkerFailedError(
                f"Slurm job {self.job_id}", f"ended {state} ({reason or 'no reason'})",
                output, log_tail(output),
            )  # fmt: skip

    def _read_address(self, worker: LaunchedWorker) -> bool:
        """Take the worker's published address, as it stands now; False before there is one."""
        path = self.workers_dir / f"worker-{worker.index}.addr"
        if not path.exists():
            return bool(worker.port)
        host, _, port = path.read_text().strip().rpartition(":")
        worker.host, worker.port = host, int(port)
        return True


def task_commands(backend: Backend, command: WorkerCommand, span: int) -> TaskCommands:
    """The server's shell line for node rank 0 and, for a worker spanning nodes, the others."""
    env = " ".join(f"{name}={shlex.quote(value)}" for name, value in command.env.items())

    def line(argv: list[str]) -> str:
        return " ".join(filter(None, [env, shell_command(argv)]))

    if span == 1:
        return TaskCommands(line(command.argv))
    leader = backend.multinode_args(span, 0, DIST_HOST_VARIABLE, DIST_PORT_VARIABLE)
    follower = backend.multinode_args(span, NODE_RANK_VARIABLE, DIST_HOST_VARIABLE,
                                      DIST_PORT_VARIABLE)  # fmt: skip
    return TaskCommands(line([*command.argv, *leader]), line([*command.argv, *follower]))
