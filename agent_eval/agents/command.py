"""command: any agent program, unmodified, one process per attempt, pointed at the proxy.

The program gets a fresh working directory (a copy of the sample's files), the proxy in its
environment (OPENAI_BASE_URL, ANTHROPIC_BASE_URL, their keys), and the sample as JSON on stdin,
in a file and as fields of its command. Its answer is the last line of its stdout or a file it
writes; a check command run after it may score its working directory instead.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_eval.agents.base import RunContext
from agent_eval.agents.program_env import (
    anchored,
    attempt_endpoint,
    check_template,
    program_environment,
    render,
    secrets,
    shown,
    without_keys,
)
from agent_eval.agents.program_outcome import file_answer, program_failure, stdout_answer
from agent_eval.agents.trajectory import ProgramRecord, Trajectory, TrajectoryError
from agent_eval.agents.workdir import (
    KEPT,
    AttemptSpace,
    inside,
    make_space,
    remove_space,
    workdir_diff,
)
from agent_eval.data import Sample
from agent_eval.errors import ConfigError
from agent_eval.rewards.check import run_check
from agent_eval.system.programs import GRACE_S, Finished, Program, run_program

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 300.0
"""The program's wall time when neither the option nor the engine's attempt limit is set."""
_MARGIN_S = GRACE_S + 5.0
"""What the engine's attempt limit keeps beyond the program's: time to stop it and record it."""


class CommandOptions(BaseModel):
    """The `command` runner's options (agent.options.*), checked; their defaults are
    CommandAgent's, the one source a saved config reads them from."""

    model_config = ConfigDict(extra="forbid")

    cmd: str | list[str] = Field(min_length=1)
    answer: Literal["stdout", "file"]
    answer_file: str = Field(min_length=1)
    timeout_s: float | None = Field(gt=0)
    memory_mb: int | None = Field(ge=16)
    env: dict[str, str]
    check: str | None = Field(min_length=1)
    check_timeout_s: float = Field(gt=0)
    keep_workdir: bool
    stdin: bool


class CommandAgent:
    """Runs `cmd` once per attempt; see docs/extending.md, "Evaluating any agent program"."""

    uses_attempt_keys = True
    """Each attempt's program gets a key of its own: its calls are recorded as its trajectory."""

    def __init__(
        self,
        cmd: str | list[str],
        answer: Literal["stdout", "file"] = "stdout",
        answer_file: str = "answer.txt",
        timeout_s: float | None = None,
        memory_mb: int | None = None,
        env: dict[str, str] | None = None,
        check: str | None = None,
        check_timeout_s: float = 60.0,
        keep_workdir: bool = False,
        stdin: bool = True,
    ) -> None:
        """Every option is checked here, template fields included: a mistake costs no launch."""
        given = {
            "cmd": cmd, "answer": answer, "answer_file": answer_file, "timeout_s": timeout_s,
            "memory_mb": memory_mb, "env": env or {}, "check": check,
            "check_timeout_s": check_timeout_s, "keep_workdir": keep_workdir, "stdin": stdin,
        }  # fmt: skip
        try:
            self.options = CommandOptions.model_validate(given)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"])
            raise ConfigError(f"agent 'command': option {where}: {error['msg']}") from None
        check_template(self.options.cmd, "cmd")
        if self.options.check is not None:
            check_template(self.options.check, "check")
        here = Path.cwd()
        self._cmd = anchored(self.options.cmd, here)
        self._check_cmd = None if check is None else str(anchored(check, here))

    async def run(self, sample: Any, ctx: RunContext) -> Trajectory:
        if not isinstance(sample, Sample):
            raise TypeError("the command agent plays single-turn samples, not sessions")
        trajectory = ctx.trajectory
        keep = self.options.keep_workdir
        kept_in = ctx.run_dir / KEPT if keep and ctx.run_dir is not None else None
        try:
            space = await asyncio.to_thread(make_space, sample, ctx.session_id, kept_in)
        except (OSError, ValueError) as exc:
            message = f"the attempt's working directory could not be made: {exc}; check the disk"
            trajectory.error = TrajectoryError("runner_error", message)
            return trajectory
        try:
            await self._play(sample, ctx, space)
        finally:
            if keep:
                log.info("kept the working directory of %s in %s", ctx.session_id, space.root)
            else:
                await asyncio.shield(asyncio.to_thread(remove_space, space))
        return trajectory

    async def _play(self, sample: Sample, ctx: RunContext, space: AttemptSpace) -> None:
        options, trajectory = self.options, ctx.trajectory
        endpoint = attempt_endpoint(ctx)
        values = self._values(sample, ctx, space)
        env = program_environment(endpoint, ctx.model, values, options.env)
        command = render(self._cmd, values)
        hidden = secrets(endpoint)
        recorded = shown(command, hidden)
        source = "stdout" if options.answer == "stdout" else options.answer_file
        stdin = space.sample_file if options.stdin else None
        limit = self._time_limit(ctx, sample)
        program = Program(command, space.workdir, env, limit, stdin, options.memory_mb)
        try:
            finished = await run_program(program)
        except OSError as exc:
            trajectory.program = ProgramRecord(recorded, None, None, "", "", 0.0, source)
            trajectory.error = TrajectoryError(
                "runner_error",
                f"the agent command {recorded!r} could not start: {exc}; check that the program "
                "exists and is executable (agent.options.cmd)",
            )
            return
        answer = await asyncio.to_thread(self._answer, finished, values["answer_file"])
        diff = await asyncio.to_thread(workdir_diff, space.workdir, sample.files or {})
        trajectory.program = ProgramRecord(
            recorded, finished.exit_code, finished.signal, shown(finished.stdout_tail, hidden),
            shown(finished.stderr_tail, hidden), finished.duration_s, source, shown(diff, hidden),
        )  # fmt: skip
        failure = program_failure(finished, answer, recorded, options.memory_mb)
        trajectory.error = failure
        trajectory.final_output = None if failure is not None else answer
        check = sample.check or self._check_cmd
        if failure is None and check is not None:
            await self._check(check, values, env, space, hidden, trajectory)

    async def _check(
        self,
        check: str,
        values: dict[str, str],
        env: dict[str, str],
        space: AttemptSpace,
        hidden: list[str],
        trajectory: Trajectory,
    ) -> None:
        """Run the check in the working directory; one that fails itself is the harness's."""
        check_template(check, "check")
        command = str(render(check, values))
        timeout = self.options.check_timeout_s
        record = await run_check(
            command, space.workdir, without_keys(env), timeout, shown(command, hidden)
        )
        assert trajectory.program is not None
        trajectory.program.check = record
        if record.error is not None:
            message = f"the check command {record.command!r} failed: {record.error}"
            trajectory.error = TrajectoryError("scorer_error", message)

    def _values(self, sample: Sample, ctx: RunContext, space: AttemptSpace) -> dict[str, str]:
        """The template fields, which are also the paths the environment names."""
        return {
            "question": sample.question or "",
            "id": sample.id,
            "workdir": str(space.workdir),
            "sample_file": str(space.sample_file),
            "answer_file": str(inside(space.workdir, self.options.answer_file)),
            "model": ctx.model,
        }

    def _answer(self, finished: Finished, answer_file: str) -> str | None:
        if self.options.answer == "stdout":
            return stdout_answer(finished.stdout_tail)
        return file_answer(Path(answer_file))

    def _time_limit(self, ctx: RunContext, sample: Sample) -> float:
        """The option's limit, within what the engine allows the attempt: the runner, not the
        engine, stops the program, and records how it ended."""
        limit = self.options.timeout_s
        if ctx.time_limit is None:
            return limit or DEFAULT_TIMEOUT_S
        checking = self.options.check_timeout_s if (sample.check or self.options.check) else 0
        room = max(1.0, ctx.time_limit - _MARGIN_S - checking)
        return min(limit, room) if limit is not None else room
