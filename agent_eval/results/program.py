"""The program a command-runner attempt ran, read from its trajectory's `program` defensively:
an older record has none, and any field may be missing or of another type."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

DiffKind = Literal["file", "hunk", "add", "del", "context"]


@dataclass(frozen=True)
class Check:
    """The check command run after the program, and what it scored."""

    command: str
    exit_code: int | None
    score: float | None
    stdout_tail: str
    stderr_tail: str


@dataclass(frozen=True)
class Program:
    """How the program ran: its command, how it ended, its output's tails, what it changed."""

    command: str
    exit_code: int | None
    signal: str | None
    stdout_tail: str
    stderr_tail: str
    duration_s: float | None
    answer_source: str | None
    diff: str | None
    check: Check | None

    @property
    def ending(self) -> str:
        """How it ended, in words: `exit 0`, `killed by SIGKILL`, or `no exit code`."""
        if self.signal:
            return f"killed by {self.signal}"
        return "no exit code" if self.exit_code is None else f"exit {self.exit_code}"

    @property
    def failed(self) -> bool:
        """Whether it exited non-zero, was killed, or its check scored below full marks."""
        check = self.check
        short = check is not None and check.score is not None and check.score < 1.0
        return self.exit_code != 0 or bool(self.signal) or short


def program_of(trajectory: Any) -> Program | None:
    """The attempt's program, or None when its record has none (another runner, an old line)."""
    given = trajectory.get("program") if isinstance(trajectory, dict) else None
    if not isinstance(given, dict):
        return None
    return Program(
        command=_text(given.get("command")),
        exit_code=_int(given.get("exit_code")),
        signal=_text(given.get("signal")) or None,
        stdout_tail=_text(given.get("stdout_tail")),
        stderr_tail=_text(given.get("stderr_tail")),
        duration_s=_number(given.get("duration_s")),
        answer_source=_text(given.get("answer_source")) or None,
        diff=_text(given.get("diff")) or None,
        check=_check(given.get("check")),
    )


def diff_lines(diff: str | None) -> list[tuple[DiffKind, str]]:
    """A unified diff's lines, each with what it is: a file's header, a hunk's, an added or a
    removed line, or context."""
    return [(_kind(line), line) for line in (diff or "").splitlines()]


def _kind(line: str) -> DiffKind:
    if line.startswith(("+++", "---", "diff ", "Binary files", "binary file")):
        return "file"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "add"
    return "del" if line.startswith("-") else "context"


def _check(given: Any) -> Check | None:
    if not isinstance(given, dict):
        return None
    return Check(
        command=_text(given.get("command")),
        exit_code=_int(given.get("exit_code")),
        score=_number(given.get("score")),
        stdout_tail=_text(given.get("stdout_tail")),
        stderr_tail=_text(given.get("stderr_tail")),
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(value: Any) -> float | None:
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if numeric else None
