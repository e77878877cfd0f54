"""Attempts whose model calls carry their token ids (ModelCallRecord.tokens), as a run with
eval.tokens records them, built with the engine's own record builder and written as a run."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_eval.agents.trajectory import (
    CallTokens,
    ModelCallRecord,
    ModelSetup,
    ToolCallRecord,
    ToolDefinition,
    Trajectory,
    TrajectoryError,
)
from agent_eval.data import Sample, Session, Turn
from agent_eval.results.files import SAMPLES
from agent_eval.results.record import AttemptRecord
from agent_eval.run.engine import attempt_record
from agent_eval.run.scoring import Scored

SYSTEM = "Use the tools."
MULTIPLY = ToolDefinition(
    "multiply",
    "a times b",
    {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
)
ARGUMENTS = '{"a": 6, "b": 7}'
TOOL_CALLED: list[dict[str, Any]] = [
    {"role": "user", "content": "6*7?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "multiply", "arguments": ARGUMENTS},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "42.0"},
    {"role": "assistant", "content": "42"},
]
"""A calculator attempt in the chat-completions shape: two model calls."""
CHALLENGED: list[dict[str, Any]] = [
    {"role": "user", "content": "6*7?"},
    {"role": "assistant", "content": "42"},
    {"role": "user", "content": "Are you sure?"},
    {"role": "assistant", "content": "Yes: 42."},
]
"""A session of two turns, the second a challenge: one model call each."""


def logprobs(ids: list[int]) -> list[float]:
    """A made-up log probability per id, each different, so a test sees which went where."""
    return [-(token % 97) / 100 for token in ids]


def continuing(
    prompt: list[int], completions: list[list[int]], given: list[int]
) -> list[CallTokens]:
    """Calls whose prompts each hold the one before, its completion, then `given` (a tool's
    output in tokens, made distinct per call by adding the call's index)."""
    calls: list[CallTokens] = []
    for index, completion in enumerate(completions):
        if calls:
            before = calls[-1]
            added = [token + index for token in given]
            prompt = before.prompt_ids + before.completion_ids + added
        calls.append(CallTokens(prompt, completion, logprobs(completion)))
    return calls


def calculator_attempt(
    sample_id: str,
    attempt: int,
    tokens: Sequence[CallTokens | None],
    correct: bool = True,
    error: TrajectoryError | None = None,
) -> AttemptRecord:
    """A calculator attempt (a multiply call, then the answer) with these calls' tokens."""
    trajectory = _trajectory(TOOL_CALLED, tokens, error)
    trajectory.tool_calls = [ToolCallRecord("multiply", ARGUMENTS, "42.0")]
    scored = Scored(float(correct), correct, "42" if correct else "41", None, None, failure=None)
    sample = Sample(sample_id, "6*7?", "42")
    return attempt_record(sample, attempt, 7, f"{sample_id}-{attempt}", trajectory, scored, 1.0)


def session_attempt(sample_id: str, tokens: Sequence[CallTokens | None]) -> AttemptRecord:
    """A two-turn session, right then wrong, with these calls' tokens."""
    session = Session(sample_id, [Turn("6*7?", "42"), Turn("Are you sure?", challenge=True)])
    scored = Scored(0.5, False, "42", [1.0, 0.0], ["42", "42"], failure=None)
    trajectory = _trajectory(CHALLENGED, tokens, None)
    return attempt_record(session, 0, 7, f"{sample_id}-0", trajectory, scored, 1.0)


def _trajectory(
    messages: list[dict[str, Any]],
    tokens: Sequence[CallTokens | None],
    error: TrajectoryError | None,
) -> Trajectory:
    trajectory = Trajectory(final_output="42", messages=messages, error=error)
    setup = trajectory.setup_index(ModelSetup(SYSTEM, [MULTIPLY]))
    trajectory.model_calls = [_call(t, setup) for t in tokens]
    return trajectory


def _call(tokens: CallTokens | None, setup: int) -> ModelCallRecord:
    if tokens is None:
        return ModelCallRecord(0.1, 10, 2, worker="w0", setup=setup)
    return ModelCallRecord(
        0.1,
        len(tokens.prompt_ids),
        len(tokens.completion_ids),
        worker="w0",
        setup=setup,
        tokens=tokens,
    )


def write_run(path: Path, records: list[AttemptRecord]) -> Path:
    """A run directory holding these attempts' samples.jsonl."""
    path.mkdir(parents=True, exist_ok=True)
    (path / SAMPLES).write_bytes(b"".join(record.to_line() for record in records))
    return path
