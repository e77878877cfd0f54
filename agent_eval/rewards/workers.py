"""The scoring worker processes' side: start-up, and calling a reward so it never raises."""

from __future__ import annotations

import importlib
import math
import os
import signal
from typing import Any

from agent_eval.children import die_with_parent
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
    die_with_parent()  # a harness killed outright must not leave its scorers behind
    for name in modules:
        importlib.import_module(name)


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
