"""The command runner's attempts in the report: how many ran a program and how many went wrong,
and the first that went wrong, each with its program beside its tool calls and workers.

Gathered in the pass that reads the run's scores; only the attempts shown are kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape

from agent_eval.results.program import Program, diff_lines, program_of
from agent_eval.results.record import AttemptRecord

MAX_PROGRAMS = 20


@dataclass(frozen=True)
class ProgramAttempt:
    """One attempt's program, with what the report shows beside it."""

    sample_id: str
    attempt: int
    correct: bool | None
    program: Program
    workers: list[str]
    """The worker of each model call, in order."""
    tools: list[str]
    """Each tool call as `name(arguments) -> result`."""


@dataclass
class Programs:
    """The run's attempts that ran a program: counts, and the first ones that went wrong."""

    ran: int = 0
    went_wrong: int = 0
    shown: list[ProgramAttempt] = field(default_factory=list)

    def add(self, record: AttemptRecord) -> None:
        """Count `record` if it ran a program; keep it to show if it went wrong."""
        program = program_of(record.trajectory)
        if program is None:
            return
        self.ran += 1
        if not (program.failed or record.correct is not True):
            return
        self.went_wrong += 1
        if len(self.shown) < MAX_PROGRAMS:
            self.shown.append(_shown(record, program))


def _shown(record: AttemptRecord, program: Program) -> ProgramAttempt:
    trajectory = record.trajectory
    calls = trajectory.get("model_calls") or ()
    tools = trajectory.get("tool_calls") or ()
    return ProgramAttempt(
        record.sample_id,
        record.attempt,
        record.correct,
        program,
        [str(call.get("worker") or "unknown") for call in calls if isinstance(call, dict)],
        [
            f"{tool.get('name')}({tool.get('arguments')}) -> {tool.get('result')}"
            for tool in tools
            if isinstance(tool, dict)
        ],
    )


def programs_section(programs: Programs) -> str:
    """The section; nothing for a run whose attempts ran no program."""
    if not programs.ran:
        return ""
    heading = (
        f"<h2>Programs: {programs.went_wrong} of {programs.ran} attempts went wrong (a non-zero "
        "exit, a signal, a check short of full marks, or a wrong or unscored answer)</h2>"
    )
    more = programs.went_wrong - len(programs.shown)
    note = f'<p class="empty">and {more} more</p>' if more > 0 else ""
    attempts = "".join(_attempt(shown) for shown in programs.shown)
    return f'<section id="programs">{heading}{attempts}{note}</section>'


def _attempt(shown: ProgramAttempt) -> str:
    program = shown.program
    duration = "" if program.duration_s is None else f" · {program.duration_s:.2f} s"
    verdict = {True: "right", False: "wrong", None: "unscored"}[shown.correct]
    summary = f"{shown.sample_id}#{shown.attempt}: {program.ending}{duration} · {verdict}"
    rows = [
        ("command", program.command),
        ("ended", program.ending),
        ("answer from", program.answer_source or ""),
        ("check", _check(program)),
        ("workers", ", ".join(shown.workers) or "no model call"),
        ("tool calls", "; ".join(shown.tools) or "none"),
    ]
    table = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in rows)
    tails = [("stdout", program.stdout_tail), ("stderr", program.stderr_tail)]
    if program.check is not None:
        tails += [("check stdout", program.check.stdout_tail)]
        tails += [("check stderr", program.check.stderr_tail)]
    blocks = "".join(
        f'<h4>{escape(name)} (last lines)</h4><pre class="tail">{escape(text)}</pre>'
        for name, text in tails
        if text
    )
    return (
        f'<details class="program" open><summary>{escape(summary)}</summary>'
        f'<table class="program-fields">{table}</table>{blocks}{_diff(program.diff)}</details>'
    )


def _check(program: Program) -> str:
    check = program.check
    if check is None:
        return "none"
    ended = "no exit code" if check.exit_code is None else f"exit {check.exit_code}"
    score = "no score" if check.score is None else f"score {check.score:.2f}"
    return f"{check.command} · {ended} · {score}"


def _diff(diff: str | None) -> str:
    """The diff, each line in a span of its kind, so added and removed lines are coloured."""
    if not diff:
        return '<p class="empty">no changes in its working directory</p>'
    lines = "".join(
        f'<span class="diff-{kind}">{escape(line)}</span>' for kind, line in diff_lines(diff)
    )
    return f'<h4>changes (diff)</h4><pre class="diff">{lines}</pre>'
