"""`agent-eval ctl`: pause, resume, cancel, requeue or resize a running run, or ask its state."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from agent_eval.cli.common import console, fail, guarded
from agent_eval.errors import ConfigError
from agent_eval.report.choose import RUNS
from agent_eval.run.control.channel import ask
from agent_eval.run.control.protocol import ACTIONS, Request, RunState
from agent_eval.system.lifecycle import run_event_loop


def ctl(
    ctx: typer.Context,
    run: Annotated[
        Path,
        typer.Argument(
            help=f"The running run: its directory, or its name under {RUNS}/.",
            metavar="RUN",
            show_default=False,
        ),
    ],
    action: Annotated[
        str,
        typer.Argument(help=" | ".join(ACTIONS), metavar="ACTION", show_default=False),
    ],
    value: Annotated[
        str | None,
        typer.Argument(help="concurrency's new limit.", metavar="[N]", show_default=False),
    ] = None,
    errors: Annotated[
        bool,
        typer.Option(
            "--errors", help="requeue: the attempts the infrastructure stopped (unscored)."
        ),
    ] = False,
) -> None:
    """Act on a running run: pause (attempts in flight finish, none starts), resume, cancel
    (resume it later with `run --resume`), requeue --errors, concurrency N, status."""
    request = guarded(ctx, _request, action, value, errors)
    run_dir = guarded(ctx, run_directory, run)
    reply = guarded(ctx, run_event_loop, ask(run_dir, request))
    if not reply.ok:
        fail(reply.message)
    console.print(Text(reply.message), soft_wrap=True)
    if reply.state is not None:
        console.print(Text(state_line(reply.state)), soft_wrap=True)


def run_directory(run: Path) -> Path:
    """The run directory `run` names: a folder, or a name under runs/.

    Raises: ConfigError when there is neither.
    """
    if run.is_dir():
        return run
    if run.is_absolute():
        raise ConfigError(f"no run directory {run}: give the folder the run writes")
    if (RUNS / run).is_dir():
        return RUNS / run
    raise ConfigError(f"no run directory {run} (nor {RUNS / run}): give the folder the run writes")


def state_line(state: RunState) -> str:
    """`running · 3 in flight · at most 4 at once · 12/40 attempts done`."""
    mode = "stopping" if state.stopping else "paused" if state.paused else "running"
    parts = [
        mode,
        f"{state.in_flight} in flight",
        f"at most {state.limit} at once",
        f"{state.done:,}/{state.total:,} attempts done",
    ]
    if state.requeued:
        parts.append(f"{state.requeued:,} requeued to play")
    return " · ".join(parts)


def _request(action: str, value: str | None, errors: bool) -> Request:
    """The request the arguments ask for. Raises: ConfigError naming what is wrong."""
    if action not in ACTIONS:
        raise ConfigError(f"no action {action!r}: give one of {', '.join(ACTIONS)}")
    if action == "concurrency":
        return Request(action="concurrency", limit=_limit(value))
    if value is not None:
        raise ConfigError(f"{action} takes no value (got {value!r}); concurrency alone takes N")
    if action == "requeue" and not errors:
        raise ConfigError("requeue plays errored attempts again: give it --errors")
    if errors and action != "requeue":
        raise ConfigError("--errors goes with requeue")
    return Request.model_validate({"action": action})


def _limit(value: str | None) -> int:
    """concurrency's N. Raises: ConfigError when it is not a whole number of 1 or more."""
    try:
        limit = int(value) if value is not None else 0
    except ValueError:
        limit = 0
    if limit < 1:
        raise ConfigError(f"concurrency takes a whole number of 1 or more, not {value!r}")
    return limit
