"""Run a long-lived coroutine until SIGINT or SIGTERM, then let its cleanup run."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Coroutine
from typing import Any

try:  # uvloop, where it is installed, cuts the proxy's per-request overhead
    from uvloop import run as run_event_loop
except ImportError:
    from asyncio import run as run_event_loop


def run_until_signalled(main: Coroutine[Any, Any, None]) -> None:
    """Run `main`; a signal cancels it, so its `finally` and `async with` exits stop everything."""
    run_event_loop(_cancel_on_signal(main))


async def _cancel_on_signal(main: Coroutine[Any, Any, None]) -> None:
    task = asyncio.ensure_future(main)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def forever() -> None:
    """Wait until cancelled."""
    await asyncio.Event().wait()
