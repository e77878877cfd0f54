"""What an agent program's end means: its answer, and whose failure it is when it failed.

The program is the model's agent: its crashes, its time and memory limits count against the
model. The harness's part (a command that is not there, a proxy that had no worker for it) is
infrastructure, replayed and never counted as a wrong answer: the engine finds the proxy's
failures in the attempt's record (run/capture.py).
"""

from __future__ import annotations

import re
from pathlib import Path

from agent_eval.agents.trajectory import TrajectoryError
from agent_eval.failures import FailureClass
from agent_eval.system.programs import Finished

ANSWER_BYTES = 65536
"""The most of an answer file read."""
_TAIL_SHOWN = 600
"""Characters of stderr's end a failure's message quotes."""
_OUT_OF_MEMORY = re.compile(
    r"MemoryError|Cannot allocate memory|std::bad_alloc|out of memory", re.I
)
_NOT_RUN = {126: "is not executable", 127: "was not found"}
"""The shell's exit codes for a command it could not run."""


def stdout_answer(stdout: str) -> str | None:
    """The last non-empty line of the program's stdout, stripped."""
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    return lines[-1] if lines else None


def file_answer(path: Path) -> str | None:
    """The answer file's text, stripped; None when it is missing, empty or not text."""
    try:
        with path.open("rb") as file:
            data = file.read(ANSWER_BYTES)
        text = data.decode("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text or None


def program_failure(
    finished: Finished, answer: str | None, command: str, memory_mb: int | None
) -> TrajectoryError | None:
    """Why the attempt failed, or None: an answer counts even from a noisy or crashing program."""
    if finished.timed_out:
        return TrajectoryError(
            "timeout",
            f"the agent program ran for {finished.duration_s:.0f} s, past its time limit "
            "(agent.options.timeout_s), and was stopped",
            FailureClass.MODEL,
        )
    if finished.exit_code in _NOT_RUN and answer is None:
        return TrajectoryError(
            "runner_error",
            f"the shell reports that the agent command {command!r} "
            f"{_NOT_RUN[finished.exit_code]} (exit {finished.exit_code}): check "
            f"agent.options.cmd and the program's PATH. {_stderr(finished)}",
        )
    if finished.exit_code == 0 or answer is not None:
        return None
    return _crash(finished, memory_mb)


def _crash(finished: Finished, memory_mb: int | None) -> TrajectoryError:
    """A program that ended badly without an answer: out of memory or its own error. (A call
    the proxy failed before makes it infrastructure's: the engine reads that in its record.)"""
    ended = (
        f"was killed by {finished.signal}"
        if finished.exit_code is None
        else f"exited with code {finished.exit_code}"
    )
    stderr = _stderr(finished)
    if memory_mb is not None and _OUT_OF_MEMORY.search(finished.stderr_tail):
        return TrajectoryError(
            "limit_exceeded",
            f"the agent program ran out of its {memory_mb} MB (agent.options.memory_mb) and "
            f"{ended}. {stderr}",
        )
    return TrajectoryError("agent_error", f"the agent program {ended} without an answer. {stderr}")


def _stderr(finished: Finished) -> str:
    tail = finished.stderr_tail.strip()
    return f"Its stderr ends: {tail[-_TAIL_SHOWN:]}" if tail else "It wrote nothing to stderr."
