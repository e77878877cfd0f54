"""The async scorer: answers scored in a process pool with a per-item timeout."""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import signal
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.context import BaseContext

from agent_eval.errors import AgentEvalError
from agent_eval.rewards.loading import as_reward
from agent_eval.rewards.processes import helper_died, pool_processes, retire
from agent_eval.rewards.result import RewardFn, RewardResult
from agent_eval.rewards.workers import init_worker, run_reward, wait_for_siblings

logger = logging.getLogger(__name__)


class RewardPoolError(AgentEvalError):
    """The scoring processes could not start, or the scorer is closed."""


def default_workers() -> int:
    """Scoring processes when none are asked for: up to 4, never more than cores."""
    return min(4, os.cpu_count() or 1)


class RewardScorer:
    """Scores answers in a process pool, never blocking the event loop.

    At most `max_workers` items run at once, so an item's `timeout` counts its own scoring, not
    time queued behind others. Use as `async with RewardScorer(...) as scorer:`.
    """

    def __init__(
        self,
        reward: str | RewardFn | None = None,
        *,
        timeout: float = 10.0,
        max_workers: int | None = None,
        startup_timeout: float = 60.0,
        close_grace: float = 5.0,
    ) -> None:
        self._fn = as_reward(reward)
        module = getattr(self._fn, "__module__", None) or "math_verify"
        self._modules = tuple(dict.fromkeys(("math_verify", module)))
        self._timeout = timeout
        self._workers = max_workers or default_workers()
        self._startup_timeout = startup_timeout
        self._close_grace = close_grace
        self._slots = asyncio.Semaphore(self._workers)
        self._starting: asyncio.Task[tuple[ProcessPoolExecutor, int]] | None = None
        self._generation = 0
        self._reaping: set[asyncio.Task[None]] = set()
        self._closed = False
        self.counts: Counter[str] = Counter()

    async def __aenter__(self) -> RewardScorer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Start and warm the workers now rather than on the first item.

        Raises:
            RewardPoolError: the workers did not start (the message says why).
        """
        await self._ready_pool()

    async def score(self, prediction: str, gold: str) -> RewardResult:
        """Score one answer; a timeout, parse failure or error scores 0 and is counted."""
        result = await self._on_pool(prediction, gold)
        if result is None:  # the pool broke under this item: once more on a fresh pool
            result = await self._on_pool(prediction, gold)
        if result is None:
            result = RewardResult.failed("error", "a worker process died twice scoring this item")
        self.counts[result.status] += 1
        return result

    @property
    def ready(self) -> bool:
        """Whether a pool has started and warmed up: `start()` then returns at once."""
        starting = self._starting
        return (
            starting is not None
            and starting.done()
            and not starting.cancelled()
            and starting.exception() is None
        )

    def worker_pids(self) -> list[int]:
        """Process ids of the current pool's workers (empty when none is running)."""
        if not self.ready:
            return []
        assert self._starting is not None
        pool, _ = self._starting.result()
        return [process.pid for process in pool_processes(pool) if process.pid is not None]

    async def close(self) -> None:
        """Stop the workers (killing any still busy after `close_grace`) and reap them.

        Call it once the last `score()` has returned: items still queued are cancelled.
        """
        self._closed = True
        starting, self._starting = self._starting, None
        if starting is not None:
            pool = await _settle(starting)
            if pool is not None:
                await retire(pool, self._close_grace, cancel_pending=True)
        if self._reaping:
            await asyncio.gather(*self._reaping)

    async def _on_pool(self, prediction: str, gold: str) -> RewardResult | None:
        """One scoring on the current pool; None when the pool broke: score the item again."""
        submitted = await self._submit(prediction, gold)
        if submitted is None:
            return None
        job, generation = submitted
        try:
            async with asyncio.timeout(self._timeout):  # wait_for can swallow a cancellation
                return await asyncio.wrap_future(job)
        except TimeoutError:
            logger.warning(
                "scoring took over %.1f s; restarting the scoring pool (prediction %r)",
                self._timeout,
                prediction[:80],
            )
            self._recycle(generation)
            return RewardResult.failed(
                "timeout", f"scoring took over {self._timeout:g} s; the worker was killed"
            )
        except BrokenProcessPool:
            self._recycle(generation)
            return None

    async def _submit(self, prediction: str, gold: str) -> tuple[Future[RewardResult], int] | None:
        """Start an item once a worker is free; None when the pool turned out to be broken."""
        await self._slots.acquire()
        try:
            pool, generation = await self._ready_pool()
        except BaseException:
            self._slots.release()
            raise
        try:  # no await between getting the pool and submitting: a restart cannot slip in
            job = pool.submit(run_reward, self._fn, prediction, gold)
        except BrokenProcessPool:  # a worker died since the last item; found out only now
            self._slots.release()
            self._recycle(generation)
            return None
        # The slot follows the worker, not the caller: a cancelled caller leaves the worker busy.
        loop = asyncio.get_running_loop()
        job.add_done_callback(lambda _: _call_soon(loop, self._slots.release))
        return job, generation

    async def _ready_pool(self) -> tuple[ProcessPoolExecutor, int]:
        if self._closed:
            raise RewardPoolError("the reward scorer is closed; create a new one to score more")
        died = None if self._starting is None else _helper_death(self._starting)
        if died is not None:
            logger.warning(
                "the scoring pool's start broke (%r in %s); starting it again", died, _raiser(died)
            )
            self._starting = None
        if self._starting is None:
            self._starting = asyncio.ensure_future(self._start_pool(self._generation))
        # Shielded: one waiter being cancelled must not abort the start the others wait on.
        return await asyncio.shield(self._starting)

    async def _start_pool(self, generation: int) -> tuple[ProcessPoolExecutor, int]:
        started = time.monotonic()
        try:  # the barrier and the pool's queues register with the resource tracker's pipe
            pool = self._new_pool()
        except Exception as exc:
            raise RewardPoolError(self._start_failure(exc)) from exc
        try:
            await asyncio.wait_for(self._warm(pool), self._startup_timeout)
        except BaseException as exc:
            await retire(pool, 0.0, cancel_pending=True)
            if isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt, SystemExit)):
                raise
            raise RewardPoolError(self._start_failure(exc)) from exc
        # Named apart from the inference workers, whose start-up lines it follows.
        logger.info(
            "scoring pool: %d processes ready in %.2f s", self._workers, time.monotonic() - started
        )
        return pool, generation

    def _new_pool(self) -> ProcessPoolExecutor:
        context = _scoring_context(self._modules)
        return ProcessPoolExecutor(
            self._workers,
            mp_context=context,
            initializer=init_worker,
            initargs=(context.Barrier(self._workers), self._modules),
        )

    def _start_failure(self, exc: BaseException) -> str:
        if isinstance(exc, asyncio.TimeoutError):
            cause = (
                f"did not start within {self._startup_timeout:g} s (reward.start_timeout; "
                "raise it on a busy machine)"
            )
        elif helper_died(exc):
            return (
                "the scoring pool failed to start: a process it needs (the fork server or the "
                f"resource tracker) died or could not run ({type(exc).__name__}: {exc}); check "
                f"that {sys.executable} runs and that the machine has memory and processes to spare"
            )
        else:
            cause = f"failed to start ({type(exc).__name__}: {str(exc).strip()[:300]})"
        return (
            f"the scoring pool {cause}; check that {', '.join(self._modules)} import in a fresh "
            "Python process, and that a script starting the scorer guards its entry point "
            "with `if __name__ == '__main__':`"
        )

    async def _warm(self, pool: ProcessPoolExecutor) -> None:
        # A process start waits for the fork server's imports: in a thread, off the loop.
        launching = asyncio.ensure_future(asyncio.to_thread(self._launch, pool))
        try:
            jobs = await asyncio.shield(launching)
        except asyncio.CancelledError:
            # A pool is retired whole, never mid-start; how its start ended no longer matters.
            await asyncio.gather(launching, return_exceptions=True)
            raise
        await asyncio.gather(*map(asyncio.wrap_future, jobs))

    def _launch(self, pool: ProcessPoolExecutor) -> list[Future[int]]:
        """One warm-up call per worker: the pool starts a process for each."""
        # Ctrl-C reaches every process of the terminal's foreground group: the fork server and
        # the scoring processes start with it blocked, as they inherit this thread's mask, until
        # they ignore it. Else it is a KeyboardInterrupt traceback across the live view.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            return [
                pool.submit(wait_for_siblings, self._startup_timeout) for _ in range(self._workers)
            ]
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)

    def _recycle(self, generation: int) -> None:
        """Replace the pool of `generation` unless another item already did."""
        if generation != self._generation or self._starting is None:
            return
        self._generation += 1
        starting, self._starting = self._starting, None
        pool, _ = starting.result()
        # Other items on this pool fail with BrokenProcessPool and are scored again on the next one.
        task = asyncio.ensure_future(retire(pool, 0.0, cancel_pending=False))
        self._reaping.add(task)
        task.add_done_callback(self._reaping.discard)


def _scoring_context(modules: tuple[str, ...]) -> BaseContext:
    """Processes forked from a server that imported the scoring modules once.

    Spawned, each imported math-verify (sympy) afresh: a second or more of CPU apiece, while
    the inference workers load; a benchmark's reward (AgentDojo's: seconds) likewise. fork
    would copy the event loop's threads.
    """
    context = multiprocessing.get_context("forkserver")
    # Read once, when this process's server starts: a later scorer of another reward imports
    # its module in each process. Only our own modules: the server skips one that cannot
    # import (each process then says why), but a user's module failing otherwise would end
    # the server with a traceback.
    own = [name for name in modules if name.startswith("agent_eval.")]
    context.set_forkserver_preload(["agent_eval.rewards", "math_verify", *own])
    return context


def _helper_death(starting: asyncio.Task[tuple[ProcessPoolExecutor, int]]) -> BaseException | None:
    """What a pool's start ended on when a fork server or resource tracker died; else None."""
    if not starting.done() or starting.cancelled():
        return None
    cause = getattr(starting.exception(), "__cause__", None)
    return cause if helper_died(cause) else None


def _raiser(error: BaseException) -> str:
    """The file and function an error came from (which pipe broke): `resource_tracker.py:_send`."""
    frames = traceback.extract_tb(error.__traceback__)
    return f"{os.path.basename(frames[-1].filename)}:{frames[-1].name}" if frames else "?"


async def _settle(
    starting: asyncio.Task[tuple[ProcessPoolExecutor, int]],
) -> ProcessPoolExecutor | None:
    """The pool a start task made, cancelling the start if it is still running."""
    if not starting.done():
        starting.cancel()
    try:
        pool, _ = await starting
    except (asyncio.CancelledError, RewardPoolError):
        return None  # a start that did not finish retires its own pool
    return pool


def _call_soon(loop: asyncio.AbstractEventLoop, callback: Callable[[], object]) -> None:
    """Run `callback` on `loop` from a pool thread, unless the loop is already gone."""
    if not loop.is_closed():
        loop.call_soon_threadsafe(callback)
