"""Answer scoring: math-verify (or a plugged-in function) in a process pool with a per-item timeout.

math-verify's own timeouts use SIGALRM, which fails off the main thread and cannot interrupt a
long call inside C code, so they are disabled here. Each item runs in a worker process instead and
the event loop enforces the timeout; a worker that overruns is killed with its pool and a fresh
pool takes over, so one pathological answer cannot wedge a run.

Custom rewards are named `package.module:function`: they take `(prediction: str, gold: str)` and
return a `RewardResult`, a float (`correct` when >= 1.0) or a bool. They run in the same spawned
workers, so the module must be importable there by that path (installed, or on the parent's
`sys.path`, which spawned workers inherit). Spawned workers also re-import the parent's main
script, so a script that starts a scorer needs the usual `if __name__ == "__main__":` guard.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import math
import multiprocessing
import multiprocessing.connection
import os
import pickle
import re
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from typing import Any, Literal

from agent_eval.errors import AgentEvalError, ConfigError

logger = logging.getLogger(__name__)

RewardStatus = Literal["ok", "parse_failed", "timeout", "error"]


@dataclass(frozen=True)
class RewardResult:
    """One scored answer; `parsed` is the prediction's answer as canonical text, for maj@k."""

    reward: float
    correct: bool
    parsed: str | None = None
    status: RewardStatus = "ok"
    detail: str | None = None

    @classmethod
    def failed(cls, status: RewardStatus, detail: str) -> RewardResult:
        """A zero score that says why."""
        return cls(reward=0.0, correct=False, parsed=None, status=status, detail=detail)


RewardFn = Callable[[str, str], RewardResult | float | bool]


class RewardPoolError(AgentEvalError):
    """The scoring worker processes could not start, or the scorer is closed."""


# --- GSM8K gold ------------------------------------------------------------------------------

_THOUSANDS_COMMA = re.compile(r"(?<=\d),(?=\d)")


def gsm8k_gold(answer: str) -> str:
    """The final answer after `####` in a GSM8K solution, without thousands commas."""
    _, marker, final = answer.rpartition("####")
    final = final.strip()
    if not marker or not final:
        snippet = answer[-80:].strip()
        raise ValueError(f"GSM8K answer has no final answer after '####': ...{snippet!r}")
    return _THOUSANDS_COMMA.sub("", final)


# --- the default scorer (runs inside worker processes) ----------------------------------------


def score_math(prediction: str, gold: str) -> RewardResult:
    """Score `prediction` against `gold` with math-verify, gold first as its API requires."""
    # Imported here: sympy costs the parent process most of a second and only workers need it.
    from math_verify import parse, verify

    # Timeouts off: math-verify's use SIGALRM; the scorer enforces its own from outside.
    gold_parsed = parse(gold, parsing_timeout=None)
    if not gold_parsed:
        return RewardResult.failed("parse_failed", f"gold answer did not parse: {gold[:80]!r}")
    predicted = parse(prediction, parsing_timeout=None)
    if not predicted:
        return RewardResult.failed("parse_failed", "no answer found in the prediction")
    correct = bool(verify(gold_parsed, predicted, timeout_seconds=None))
    return RewardResult(reward=float(correct), correct=correct, parsed=_canonical(predicted))


def _canonical(parsed: list[Any]) -> str:
    """Text for an extracted answer such that equal numbers vote together ("72.0" is "72")."""
    import sympy

    value = parsed[0]
    if isinstance(value, sympy.Float):
        value = sympy.nsimplify(value, rational=True)
    if isinstance(value, sympy.Integer):
        return str(int(value))
    return str(value)


# --- loading a reward by name ------------------------------------------------------------------


def load_reward(spec: str | None) -> RewardFn:
    """The math scorer for None or "math", else the function named by `package.module:function`.

    Raises:
        ConfigError: the spec is malformed, the module does not import, the attribute is missing,
            not callable, or cannot be sent to a worker process.
    """
    if spec is None or spec.strip() == "math":
        return score_math
    module_name, sep, attr = spec.strip().partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"reward {spec!r}: expected 'math' or 'package.module:function'")
    target = _resolve(spec, _import_module(spec, module_name), attr)
    if not callable(target):
        kind = type(target).__name__
        raise ConfigError(f"reward {spec!r}: {attr!r} is a {kind}, not a function")
    _check_picklable(spec, target)
    return target


def _as_reward(reward: str | RewardFn | None) -> RewardFn:
    """A reward from a spec, or a function given directly (checked to reach a worker)."""
    if not callable(reward):
        return load_reward(reward)
    _check_picklable(getattr(reward, "__qualname__", repr(reward)), reward)
    return reward


def _import_module(spec: str, module_name: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ConfigError(
            f"reward {spec!r}: module {module_name!r} not found ({exc}); install it or put it "
            "on PYTHONPATH"
        ) from exc
    except Exception as exc:
        raise ConfigError(
            f"reward {spec!r}: importing {module_name!r} failed: {type(exc).__name__}: {exc}"
        ) from exc


def _resolve(spec: str, module: Any, attr: str) -> Any:
    target = module
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ConfigError(
                f"reward {spec!r}: module {module.__name__!r} has no attribute {attr!r}"
            ) from None
    return target


def _check_picklable(spec: str, target: Any) -> None:
    # Workers receive the function by reference; a lambda or nested function fails only there.
    try:
        pickle.dumps(target)
    except Exception as exc:
        raise ConfigError(
            f"reward {spec!r}: cannot be sent to a worker process ({exc}); define it as a "
            "module-level function"
        ) from exc


# --- worker-process side -----------------------------------------------------------------------

# Set once per worker by the pool initializer; a barrier only passes to a process at its start.
_siblings: Any = None


def _init_worker(barrier: Any, modules: tuple[str, ...]) -> None:
    """Import the reward's modules before the first item, so its timeout measures scoring only."""
    global _siblings
    _siblings = barrier
    # With its timeouts off math-verify warns on every worker start; we enforce our own.
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    for name in modules:
        importlib.import_module(name)


def _wait_for_siblings(timeout: float) -> int:
    """Block until every worker has started, so each warm-up call lands on its own process."""
    _siblings.wait(timeout)
    return os.getpid()


def _run_reward(fn: RewardFn, prediction: str, gold: str) -> RewardResult:
    """Call a reward in a worker; its errors come back as results, never as raised exceptions."""
    try:
        return _normalise(fn(prediction, gold))
    except Exception as exc:
        return RewardResult.failed("error", f"{type(exc).__name__}: {exc}")


def _normalise(value: object) -> RewardResult:
    if isinstance(value, RewardResult):
        return value
    if isinstance(value, bool):
        return RewardResult(reward=float(value), correct=value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return RewardResult(reward=float(value), correct=value >= 1.0)
    return RewardResult.failed(
        "error", f"reward returned {value!r}; expected a RewardResult, a finite float or a bool"
    )


# --- the async scorer --------------------------------------------------------------------------


def _default_workers() -> int:
    return min(4, os.cpu_count() or 1)


class RewardScorer:
    """Scores answers in a spawned process pool, never blocking the event loop.

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
        self._fn = _as_reward(reward)
        module = getattr(self._fn, "__module__", None) or "math_verify"
        self._modules = tuple(dict.fromkeys(("math_verify", module)))
        self._timeout = timeout
        self._workers = max_workers or _default_workers()
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
        result = await self._attempt(prediction, gold)
        if result is None:  # the pool broke under this item: once more on a fresh pool
            result = await self._attempt(prediction, gold)
        if result is None:
            result = RewardResult.failed("error", "a worker process died twice scoring this item")
        self.counts[result.status] += 1
        return result

    def worker_pids(self) -> list[int]:
        """Process ids of the current pool's workers (empty when none is running)."""
        if self._starting is None or not self._starting.done() or self._starting.exception():
            return []
        pool, _ = self._starting.result()
        return [process.pid for process in _processes(pool) if process.pid is not None]

    async def close(self) -> None:
        """Stop the workers (killing any still busy after `close_grace`) and reap them.

        Call it once the last `score()` has returned: items still queued are cancelled.
        """
        self._closed = True
        starting, self._starting = self._starting, None
        if starting is not None:
            pool = await _settle(starting)
            if pool is not None:
                await _retire(pool, self._close_grace, cancel_pending=True)
        if self._reaping:
            await asyncio.gather(*self._reaping)

    async def _attempt(self, prediction: str, gold: str) -> RewardResult | None:
        """One run on the current pool; None when the pool broke and the item may be retried."""
        submitted = await self._submit(prediction, gold)
        if submitted is None:
            return None
        job, generation = submitted
        try:
            return await asyncio.wait_for(asyncio.wrap_future(job), self._timeout)
        except TimeoutError:
            logger.warning(
                "scoring took over %.1f s; restarting the reward workers (prediction %r)",
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
            job = pool.submit(_run_reward, self._fn, prediction, gold)
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
        if self._starting is None:
            self._starting = asyncio.ensure_future(self._start_pool(self._generation))
        # Shielded: one waiter being cancelled must not abort the start the others wait on.
        return await asyncio.shield(self._starting)

    async def _start_pool(self, generation: int) -> tuple[ProcessPoolExecutor, int]:
        context = multiprocessing.get_context("spawn")  # fork would copy the loop's threads
        barrier = context.Barrier(self._workers)
        pool = ProcessPoolExecutor(
            self._workers,
            mp_context=context,
            initializer=_init_worker,
            initargs=(barrier, self._modules),
        )
        started = time.monotonic()
        try:
            await asyncio.wait_for(self._warm(pool), self._startup_timeout)
        except BaseException as exc:
            await _retire(pool, 0.0, cancel_pending=True)
            if isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt, SystemExit)):
                raise
            raise RewardPoolError(self._start_failure(exc)) from exc
        logger.info("%d reward workers ready in %.2f s", self._workers, time.monotonic() - started)
        return pool, generation

    def _start_failure(self, exc: BaseException) -> str:
        if isinstance(exc, asyncio.TimeoutError):
            cause = f"did not start within {self._startup_timeout:g} s"
        else:
            cause = f"failed to start ({type(exc).__name__}: {str(exc).strip()[:300]})"
        return (
            f"reward workers {cause}; check that {', '.join(self._modules)} import in a fresh "
            "Python process, and that a script starting the scorer guards its entry point "
            "with `if __name__ == '__main__':`"
        )

    async def _warm(self, pool: ProcessPoolExecutor) -> None:
        loop = asyncio.get_running_loop()
        calls = [
            loop.run_in_executor(pool, _wait_for_siblings, self._startup_timeout)
            for _ in range(self._workers)
        ]
        await asyncio.gather(*calls)

    def _recycle(self, generation: int) -> None:
        """Replace the pool of `generation` unless another item already did."""
        if generation != self._generation or self._starting is None:
            return
        self._generation += 1
        starting, self._starting = self._starting, None
        pool, _ = starting.result()
        # Other items on this pool fail with BrokenProcessPool and retry on the next one.
        task = asyncio.ensure_future(_retire(pool, 0.0, cancel_pending=False))
        self._reaping.add(task)
        task.add_done_callback(self._reaping.discard)


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


def _processes(pool: ProcessPoolExecutor) -> list[BaseProcess]:
    # Private attribute, but the only handle on the workers: shutdown() cannot stop a busy one.
    return list((getattr(pool, "_processes", None) or {}).values())


async def _retire(pool: ProcessPoolExecutor, grace: float, *, cancel_pending: bool) -> None:
    """Shut `pool` down, kill workers still alive after `grace` seconds, and reap them all."""
    processes = _processes(pool)
    if grace <= 0:
        _kill(processes)  # before shutdown: its manager thread would wait on a busy worker
    # Not cancelling on recycle: a cancelled future would look like our own task's cancellation.
    pool.shutdown(wait=False, cancel_futures=cancel_pending)
    await asyncio.to_thread(_reap, processes, grace)


def _kill(processes: list[BaseProcess]) -> None:
    for process in processes:
        process.kill()  # a no-op for a process already reaped


def _reap(processes: list[BaseProcess], grace: float) -> None:
    _wait_exit(processes, grace)
    _kill(processes)
    if not _wait_exit(processes, 5.0):
        logger.error("reward workers %s survived SIGKILL", [p.pid for p in processes])
    for process in processes:
        process.join(1.0)  # reaps it, unless the pool's own manager thread already has


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


__all__ = [
    "RewardFn",
    "RewardPoolError",
    "RewardResult",
    "RewardScorer",
    "RewardStatus",
    "gsm8k_gold",
    "load_reward",
    "score_math",
]
