"""Check commands: a program run in an agent's working directory after it; its verdict scores.

Exit code 0 scores 1.0 and any other 0.0, unless the last line of its stdout is JSON
`{"score": x}` (x from 0 to 1, optionally with `"correct": true|false`): then that score.
A check that cannot start or runs out of time is the harness's failure, not the agent's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agent_eval.system.programs import Finished, Program, run_program


@dataclass
class CheckRecord:
    """What a check command did and the score it gave; `error` says why it gave none."""

    command: str
    exit_code: int | None
    score: float | None
    correct: bool | None
    stdout_tail: str
    stderr_tail: str
    error: str | None = None


async def run_check(
    command: str, cwd: Path, env: Mapping[str, str], timeout_s: float, shown: str
) -> CheckRecord:
    """Run a check command in `cwd` and score what it says; `shown` is the command as recorded."""
    try:
        finished = await run_program(Program(command, cwd, env, timeout_s))
    except OSError as exc:
        return CheckRecord(shown, None, None, None, "", "", f"the check could not start: {exc}")
    return _verdict(shown, finished, timeout_s)


def _verdict(shown: str, finished: Finished, timeout_s: float) -> CheckRecord:
    record = CheckRecord(
        shown, finished.exit_code, None, None, finished.stdout_tail, finished.stderr_tail
    )
    if finished.timed_out:
        record.error = f"the check ran past its {timeout_s:g} s limit"
    elif finished.exit_code is None:
        record.error = f"the check was killed by {finished.signal}"
    elif finished.exit_code in (126, 127):
        record.error = f"the shell could not run the check (exit {finished.exit_code})"
    else:
        record.score, record.correct, record.error = check_score(
            finished.exit_code, finished.stdout_tail
        )
    return record


def check_score(exit_code: int, stdout: str) -> tuple[float | None, bool | None, str | None]:
    """Score, correct and error from a check's exit code and stdout's last line."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    verdict = _json_line(lines[-1]) if lines else None
    if verdict is None:
        passed = exit_code == 0
        return float(passed), passed, None
    score = verdict.get("score")
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1:
        return None, None, f"the check printed score {score!r}; it must be a number from 0 to 1"
    correct = verdict.get("correct", score >= 1.0)
    if not isinstance(correct, bool):
        return None, None, f"the check printed correct {correct!r}; it must be true or false"
    return float(score), correct, None


def _json_line(line: str) -> dict[str, object] | None:
    """The line as a JSON object with a `score`; None for any other line."""
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) and "score" in value else None
