"""The scheduler contract: launch workers, wait until they answer, stop them all."""

from __future__ import annotations

import asyncio
import logging
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import aiohttp
from pydantic import SecretStr

from agent_eval.allocation import Allocation
from agent_eval.backends.base import Backend, WorkerCommand, WorkerConfig, with_env
from agent_eval.launch.config import LaunchConfig
from agent_eval.proxy.upstream.headers import bearer
from agent_eval.schedulers.errors import WorkerFailedError, WorkerTimeoutError
from agent_eval.schedulers.ports import says_address_in_use
from agent_eval.system.credentials import WORKER_API_KEY
from agent_eval.system.diagnostics import last_line, log_tail

log = logging.getLogger(__name__)

POLL_SECONDS = 0.5
PORT_RELAUNCHES = 3


@dataclass
class LaunchedWorker:
    """One running worker: where it listens, what it holds, where it logs."""

    index: int
    host: str
    port: int
    log: Path
    ready_path: str
    health_path: str
    gpus: tuple[int, ...] = ()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def name(self) -> str:
        return f"worker {self.index} ({self.url})"


@dataclass(frozen=True)
class Launch:
    """What a scheduler was asked to launch, kept to start a worker again."""

    backend: Backend
    config: WorkerConfig
    allocation: Allocation
    key: SecretStr | None = None
    """Set: the workers answer only requests bearing it (the proxy's worker key)."""

    def command(self, host: str, port: int | str) -> WorkerCommand:
        """The command of one worker on host:port (either may be a shell variable)."""
        command = self.backend.command(self.config, self.allocation, host, port)
        if self.key is None:
            # Empty rather than unset: a key exported in the user's shell would lock the
            # workers with a key the proxy does not know.
            return with_env(command, WORKER_API_KEY, "")
        return self.backend.require_key(command, self.key.get_secret_value())


class Scheduler(ABC):
    """Places workers somewhere (local processes, Ray actors, a Slurm job) and owns their lives.

    Use as `async with scheduler:`; leaving the block stops every worker, on any path.
    """

    name: str

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.workers: list[LaunchedWorker] = []
        self._relaunches: Counter[int] = Counter()
        self.worker_key: SecretStr | None = None
        """Set: workers answer only requests bearing it (the proxy's worker key)."""

    @classmethod
    @abstractmethod
    def from_config(cls, config: LaunchConfig, run_dir: Path) -> Scheduler:
        """The scheduler a launch's settings describe (its own section of them)."""

    @abstractmethod
    async def launch(
        self, backend: Backend, config: WorkerConfig, allocation: Allocation
    ) -> list[LaunchedWorker]:
        """Start `allocation.dp` workers.

        Raises: ConfigError (bad settings, not enough GPUs), SchedulerUnavailableError.
        """

    @abstractmethod
    async def exit_status(self, worker: LaunchedWorker) -> str | None:
        """How a worker ended ("exited with code 1"), or None while it runs."""

    @abstractmethod
    async def stop(self) -> None:
        """Stop every worker: gracefully, then by force. Safe to call twice."""

    async def relaunch(self, worker: LaunchedWorker, log: Path) -> bool:
        """Start an ended worker again on another port, logging to `log`; False where it cannot.

        Schedulers that chose the port override this; fixed ports stay fixed.
        """
        return False

    def log_path(self, index: int, attempt: int = 0) -> Path:
        """Where worker `index` logs; each relaunch gets its own file, so its tail is its own."""
        name = f"worker-{index}.log" if attempt == 0 else f"worker-{index}.relaunch-{attempt}.log"
        return self.run_dir.absolute() / "workers" / name

    async def waiting_reason(self) -> str | None:
        """What the workers wait for before they can start (a queue), if anything."""
        return None

    async def wait_ready(
        self, timeout: float, on_wait: Callable[[str], None] | None = None
    ) -> None:
        """Return once every worker answers its ready path.

        Raises: WorkerFailedError at once when a worker ends during start-up,
        WorkerTimeoutError at the deadline.
        """
        deadline = time.monotonic() + timeout
        pending = list(self.workers)
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as http:
            while pending:
                pending = [w for w in pending if not await self._check(http, w)]
                if not pending:
                    return
                if time.monotonic() > deadline:
                    raise WorkerTimeoutError(
                        [w.name for w in pending], timeout, self._tails(pending)
                    )
                if on_wait is not None:
                    reason = await self.waiting_reason()
                    if reason is None:
                        reason = await asyncio.to_thread(_starting, pending)
                    on_wait(reason)
                await asyncio.sleep(POLL_SECONDS)

    async def _check(self, http: aiohttp.ClientSession, worker: LaunchedWorker) -> bool:
        status = await self.exit_status(worker)
        if status is not None:
            tail = await asyncio.to_thread(log_tail, worker.log)
            if await self._relaunched(worker, tail):
                return False
            raise WorkerFailedError(worker.name, status, worker.log, tail)
        try:
            async with http.get(
                worker.url + worker.ready_path, headers=bearer(self.worker_key)
            ) as response:
                return response.status == 200
        except (aiohttp.ClientError, OSError):
            return False

    async def _relaunched(self, worker: LaunchedWorker, tail: str) -> bool:
        """Relaunch a worker whose port was taken between our choice and its server's bind."""
        attempt = self._relaunches[worker.index] + 1
        if attempt > PORT_RELAUNCHES or not says_address_in_use(tail):
            return False
        taken, failed_log = worker.port, worker.log
        if not await self.relaunch(worker, self.log_path(worker.index, attempt)):
            return False
        self._relaunches[worker.index] = attempt
        log.warning(
            "worker %d found port %d taken when it bound it (see %s); relaunched it on port %d "
            "(relaunch %d of %d)",
            worker.index, taken, failed_log, worker.port, attempt, PORT_RELAUNCHES,
        )  # fmt: skip
        return True

    @staticmethod
    def _tails(workers: list[LaunchedWorker]) -> str:
        first = workers[0]
        return f"Last lines of {first.log}:\n{log_tail(first.log, 20)}"

    async def __aenter__(self) -> Scheduler:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()


def _starting(pending: list[LaunchedWorker]) -> str:
    """What the workers not answering yet do, as the first one's log last says (a model loads)."""
    waiting = f"waiting for {len(pending)} worker(s) to answer"
    said = last_line(pending[0].log)
    return f"{waiting}; {pending[0].name} logged: {said}" if said else waiting
