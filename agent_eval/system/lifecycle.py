"""Run a long-lived coroutine until SIGINT or SIGTERM, then let its cleanup run; set up logs."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

from rich.console import Console
from rich.logging import RichHandler

from agent_eval.errors import AgentEvalError

run_event_loop: Callable[[Coroutine[Any, Any, Any]], Any]
try:  # uvloop, where it is installed, cuts the proxy's per-request overhead
    from uvloop import run as run_event_loop
except ImportError:
    run_event_loop = asyncio.run

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


def setup_logging(console: Console, debug: bool = False) -> None:
    """Log to `console`: rich lines on a terminal, plain unwrapped lines elsewhere (logs, CI)."""
    handler: logging.Handler
    if console.is_terminal:
        handler = RichHandler(console=console, show_path=False, rich_tracebacks=debug)
    else:
        # Rich wraps at the console's width, 80 columns off a terminal: paths split mid-name.
        handler = logging.StreamHandler(console.file)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logging.basicConfig(level=logging.WARNING, format="%(message)s", handlers=[handler], force=True)
    logging.getLogger("agent_eval").setLevel(logging.DEBUG if debug else logging.INFO)


@contextlib.contextmanager
def logs_through(console: Console) -> Iterator[None]:
    """Inside, log lines bound for a terminal print through `console`, a live display's.

    A live display redraws relative to the cursor: a line written around it leaves a stale
    copy of the display above it, and may be drawn over.
    """
    handlers = [
        handler
        for handler in logging.getLogger().handlers
        if isinstance(handler, RichHandler) and handler.console.is_terminal
    ]
    consoles = [handler.console for handler in handlers]
    for handler in handlers:
        handler.console = console
    try:
        yield
    finally:
        for handler, own in zip(handlers, consoles, strict=True):
            handler.console = own
