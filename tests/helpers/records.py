"""Attempts as the engine records them and as the metrics score them."""

from __future__ import annotations

from typing import Any

from agent_eval.agents.trajectory import (
    ModelCallRecord,
    ToolCallRecord,
    Trajectory,
    TrajectoryError,
)
from agent_eval.data import Session, Turn
from agent_eval.failures import FailureClass
from agent_eval.metrics import (
    AttemptScore,
)
from agent_eval.results.record import AttemptRecord
from agent_eval.run.engine import attempt_record
from agent_eval.run.scoring import Scored

OLD_LINE = (
    b'{"sample_id":"q1","attempt":0,"seed":7,"session_id":"q1-0","reward":1.0,"correct":true,'
    b'"answer":"42","turn_rewards":null,"turn_answers":null,"challenge_turns":null,'
    b'"latency_s":0.5,"prompt_tokens":100,"completion_tokens":20,"model_calls":2,'
    b'"tool_calls":1,"tool_errors":0,"error":{"kind":"timeout","message":"late"},'
    b'"trajectory":{"messages":[],"error":{"kind":"timeout","message":"late"}}}\n'
)


def session_record(error: TrajectoryError | None = None) -> AttemptRecord:
    """A two-turn session attempt (a tool call, a challenge) as the engine records it."""
    session = Session("s", [Turn("6*7?", "42"), Turn("Are you sure?", challenge=True)])
    trajectory = Trajectory(
        tool_calls=[ToolCallRecord("multiply", '{"a": 6, "b": 7}', "42.0")],
        model_calls=[ModelCallRecord(0.1), ModelCallRecord(0.1)],
        error=error,
    )
    scores = Scored(0.5, False, "41", [1.0, 0.0], ["42", "41"], failure=None)
    return attempt_record(session, 0, 1, "s-0", trajectory, scores, 0.5)


def attempt(
    sample_id: str,
    n: int,
    correct: bool = False,
    answer: str | None = None,
    error_kind: str | None = None,
    scored: bool = True,
    **kw: Any,
) -> AttemptScore:
    """An AttemptScore with dull defaults for the fields a test does not care about; its error
    of `error_kind` is the model's when `scored`, else the infrastructure's."""
    whose = FailureClass.MODEL if scored else FailureClass.INFRA
    fields: dict[str, Any] = {
        "seed": 0,
        "session_id": f"{sample_id}-{n}",
        "reward": float(correct),
        "turn_rewards": None,
        "turn_answers": None,
        "challenge_turns": None,
        "latency_s": 1.0,
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "model_calls": 0,
        "tool_calls": 0,
        "tool_errors": 0,
        "error": None if error_kind is None and scored else {"kind": error_kind, "class": whose},
    }
    fields.update(kw)
    return AttemptScore(sample_id=sample_id, attempt=n, correct=correct, answer=answer, **fields)


def kinds(messages: list[dict[str, Any]]) -> list[str]:
    """Each message's role, or its item type when it has no role (tool calls and outputs)."""
    return [message.get("role") or message["type"] for message in messages]
