"""What `agent-eval ctl` and the view send a running run, and its answer: a JSON line each."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_eval.errors import AgentEvalError

SOCKET = "control.sock"
"""The run directory's control socket, there while the run plays."""

Action = Literal["status", "pause", "resume", "cancel", "requeue", "concurrency"]
ACTIONS: tuple[Action, ...] = ("status", "pause", "resume", "cancel", "requeue", "concurrency")


class ControlError(AgentEvalError):
    """A control request that cannot be carried out: no such run, not running, a bad value."""


class RunCancelled(AgentEvalError):
    """The run was cancelled by a control request: what it kept, and how to finish it."""

    exit_code = 130  # as Ctrl-C: stopped on purpose

    def __init__(self, run_dir: Path, kept: int) -> None:
        self.left = (
            f"{kept:,} finished attempts are kept in {run_dir}; workers and proxy stopped.\n"
            f"Resume with: agent-eval run --resume {run_dir}"
        )
        super().__init__(f"cancelled: {self.left}")


class Request(BaseModel):
    """One action; `limit` is concurrency's new value, and nothing else's."""

    model_config = ConfigDict(extra="forbid")

    action: Action
    limit: int | None = Field(default=None, ge=1)


class RunState(BaseModel):
    """A running run as control sees it."""

    in_flight: int
    limit: int
    paused: bool
    stopping: bool
    """No attempt starts any more: cancelled, or over eval.max_unscored."""
    done: int
    total: int
    requeued: int
    """Errored attempts requeued and not finished yet."""


class Reply(BaseModel):
    """The run's answer: what it did (or why not), and its state after."""

    ok: bool
    message: str
    state: RunState | None = None
