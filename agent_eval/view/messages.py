"""A record's trajectory as the sample page draws it: its messages in one shape
(results/messages.py), a command runner's program read defensively (results/program.py), its
diff split into lines of each kind, and its model calls' continuity in place of their tokens."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from agent_eval.results.messages import messages
from agent_eval.results.program import diff_lines, program_of
from agent_eval.view.tokens import marked_calls


def drawable(record: dict[str, Any]) -> dict[str, Any]:
    """A samples.jsonl line's dict with its trajectory's messages in the page's one shape and
    its program (None when it ran none) and model calls (tokens left for their own request) in
    the page's shape."""
    trajectory = record.get("trajectory") or {}
    shaped = [asdict(message) for message in messages(trajectory.get("messages") or ())]
    return {
        **record,
        "trajectory": {
            **trajectory,
            "messages": shaped,
            "program": _program(trajectory),
            "model_calls": marked_calls(trajectory),
        },
    }


def _program(trajectory: dict[str, Any]) -> dict[str, Any] | None:
    program = program_of(trajectory)
    if program is None:
        return None
    return {**asdict(program), "ending": program.ending, "diff_lines": diff_lines(program.diff)}
