"""Process pools: whether a start broke on a dead multiprocessing helper, and retiring a pool
for good (shut down, kill what is still busy, reap every process)."""

from __future__ import annotations

import asyncio
import logging
import multiprocessing.connection
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.process import BaseProcess

logger = logging.getLogger(__name__)


def helper_died(exc: BaseException | None) -> bool:
    """Whether a pipe or socket to the fork server or the resource tracker broke or was
    refused: multiprocessing starts a dead one anew, so a new start may succeed."""
    return isinstance(exc, (ConnectionError, EOFError))


def pool_processes(pool: ProcessPoolExecutor) -> list[BaseProcess]:
    # Private attribute, but the only handle on the workers: shutdown() cannot stop a busy one.
    return list((getattr(pool, "_processes", None) or {}).values())


async def retire(pool: ProcessPoolExecutor, grace: float, *, cancel_pending: bool) -> None:
    """Shut `pool` down, kill workers still alive after `grace` seconds, and reap them all."""
    processes = pool_processes(pool)
    if grace <= 0:
        _kill(processes)  # before shutdown: its manager thread would wait on a busy worker
    # Not cancelling on recycle: a cancelled future would look like our own task's cancellation.
    pool.shutdown(wait=False, cancel_futures=cancel_pending)
    await asyncio.to_thread(_reap, pool, processes, grace)


def _kill(processes: list[BaseProcess]) -> None:
    for process in processes:
        process.kill()  # a no-op for a process already reaped


def _reap(pool: ProcessPoolExecutor, processes: list[BaseProcess], grace: float) -> None:
    _wait_exit(processes, grace)
    _kill(processes)
    if not _wait_exit(processes, 5.0):
        logger.error("scoring processes %s survived SIGKILL", [p.pid for p in processes])
        return
    for process in processes:
        process.join(1.0)  # reaps it, unless the pool's own manager thread already has
    # With its workers gone the pool's manager thread ends at once; waiting for it here means
    # none is still closing its wake-up pipe when the interpreter's exit hook writes to it
    # (Python 3.11 then prints an OSError traceback after a clean exit).
    pool.shutdown(wait=True)


def _wait_exit(processes: list[BaseProcess], timeout: float) -> bool:
    """Wait on exit sentinels, not join(): the pool's manager thread may be reaping concurrently."""
    deadline = time.monotonic() + timeout
    running = [process.sentinel for process in processes]
    while running:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        done = multiprocessing.connection.wait(running, left)
        running = [sentinel for sentinel in running if sentinel not in done]
    return True
