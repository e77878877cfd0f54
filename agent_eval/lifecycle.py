"""Run a long-lived coroutine until SIGINT or SIGTERM, then let its cleanup run."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Coroutine
from typing import Any, TypeVar

from agent_eval.errors import AgentEvalError

try:  # uvloop, where it is installed, cuts the proxy's per-request overhead
    from uvloop import run as run_event_loop
except ImportError:
    from asyncio import run as run_event_loop

T = TypeVar("T")


def run_until_signalled(main: Coroutine[Any, Any, T]) -> T | None:
    """Run `main` to its result, or None when a signal cancelled it (its cleanup still runs)."""
    return run_event_loop(_cancel_on_signal(main))


def run_child_main(main: Coroutine[Any, Any, object]) -> None:
    """A child process's main until a signal; a user's mistake is one stderr line, exit 2.

    The parent shows the tail of the child's log, so that line is what the user reads.
    """
    try:
        run_until_signalled(main)
    except AgentEvalError as exc:
        sys.stderr.write(f"error: {exc}\n")
        sys.exit(2)


async def _cancel_on_signal(main: Coroutine[Any, Any, T]) -> T | None:
    task = asyncio.ensure_future(main)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, task.cancel)
    try:
        return await task
    except asyncio.CancelledError:
        return None


async def forever() -> None:
    """Wait until cancelled."""
    await asyncio.Event().wait()
