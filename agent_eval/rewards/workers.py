"""The scoring worker processes' side: start-up, and calling a reward so it never raises."""

from __future__ import annotations

import importlib
import math
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
from typing import Any

from agent_eval.rewards.result import RewardFn, RewardResult

# Set once per worker by the pool initializer; a barrier only passes to a process at its start.
_siblings: Any = None


def init_worker(barrier: Any, modules: tuple[str, ...]) -> None:
    """Import the reward's modules before the first item, so its timeout measures scoring only."""
    global _siblings
    # Ctrl-C on a terminal signals its whole foreground group, this process too: the harness
    # owns the shutdown (it stops and reaps us), and a KeyboardInterrupt here would print a
    # traceback into its live view.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _siblings = barrier
    _exit_with_harness()
    for name in modules:
        importlib.import_module(name)


def _exit_with_harness() -> None:
    """A harness killed outright must not leave its scorers behind.

    Forked by the fork server, this process is not the harness's child, so the harness's
    death sends no signal here (and the fork server waits for its children to go first). The
    harness holds the other end of the parent sentinel: it reads as closed once it is gone.
    """
    parent = multiprocessing.parent_process()
    if parent is not None:
        watch = threading.Thread(target=_exit_when_closed, args=(parent.sentinel,), daemon=True)
        watch.start()


def _exit_when_closed(sentinel: int) -> None:
    multiprocessing.connection.wait([sentinel])
    # At once, whatever the reward is doing: nothing here is of use with the harness gone.
    os.kill(os.getpid(), signal.SIGTERM)


def wait_for_siblings(timeout: float) -> int:
    """Block until every worker has started, so each warm-up call lands on its own process."""
    _siblings.wait(timeout)
    return os.getpid()


def run_reward(fn: RewardFn, prediction: str, gold: str) -> RewardResult:
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
