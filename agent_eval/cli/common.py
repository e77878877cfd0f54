"""What every command shares: the consoles, waits and error handling.

Text that is not ours (errors, paths, URLs, config values, model names) is printed as rich
`Text`, never inside a markup string, where `[local]` in `agent-eval[local]` would be a tag.
"""

from __future__ import annotations

import select
import sys
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from agent_eval.errors import AgentEvalError, mistakes_only

console = Console()
err_console = Console(stderr=True)
T = TypeVar("T")


class WaitReporter:
    """Prints what a long wait is waiting for, once each time it changes."""

    def __init__(self) -> None:
        self._last: str | None = None

    def __call__(self, reason: str) -> None:
        if reason != self._last:
            self._last = reason
            err_console.print(Text(reason, style="dim"))


def guarded(ctx: typer.Context, function: Callable[..., T], *args: Any) -> T:
    """Run a command's work: an error of ours ends in one message and its exit code (a user's
    mistake: 2)."""
    try:
        return function(*args)
    except AgentEvalError as exc:
        if ctx.obj:
            raise
        fail(str(exc), exc.exit_code)
    except BaseExceptionGroup as group:
        # Concurrent work (the engine's task group) reports a mistake inside a group.
        message = mistakes_only(group)
        if ctx.obj or message is None:
            raise
        fail(message)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    except BrokenPipeError as exc:
        # Click ends a command quietly, exit 1, on a broken pipe: right when our own output's
        # reader has gone (`agent-eval ... | head`), a silent failure for any other pipe.
        if ctx.obj or _output_gone():
            raise
        raise RuntimeError(f"a pipe between agent-eval's own processes broke: {exc}") from exc


def _output_gone() -> bool:
    """Whether the reader of this process's stdout has gone (a pipe that reports an error)."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by a capturing stream
        return False
    poller = select.poll()
    poller.register(descriptor, select.POLLOUT)
    return any(events & select.POLLERR for _, events in poller.poll(0))


def fail(message: str, code: int = AgentEvalError.exit_code) -> NoReturn:
    """Print `error: message` (the message as it is, brackets included) and exit with `code`."""
    err_console.print(Text.assemble(("error:", "bold red"), " ", message), soft_wrap=True)
    raise typer.Exit(code)
