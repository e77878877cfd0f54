"""One finished attempt, its trajectory left out: the fields every reader of a run shares.

The record (results/record.py) adds the trajectory and is one samples.jsonl line; the metrics'
AttemptScore adds what they count of the trajectory's model calls. This module sits below both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent_eval.failures import FailureClass, recorded_class

SCHEMA = 3
"""The version of the samples.jsonl line; a line without one predates it and is version 1.

2: an unscored attempt's score fields are null; 1 wrote them as a wrong answer's (0.0, false).
3: the trajectory's earlier plays of an attempt are its `replays`; 1 and 2 named them `retries`,
the word the proxy's re-sends of one request keep. Lines of 1 and 2 read as 3 writes them.
"""
SCORE_FIELDS = ("reward", "correct", "turn_rewards")
"""What only a scored attempt has: null on an unscored attempt's line, read as null from any."""


# Neither frozen nor slots: orjson writes a record with a __dict__ about 2.5x faster, and a
# frozen __init__ is about 9x slower; both per attempt.
@dataclass
class Attempt:
    """One attempt at one sample: which, what it answered and scored, what it cost, how it ended."""

    # First on the line, so a reader sees the version before the (long) trajectory. A factory,
    # not a default: __init__ then sets it on the instance, whose __dict__ is what orjson writes.
    schema: int = field(default_factory=lambda: SCHEMA, init=False)
    sample_id: str
    attempt: int
    seed: int
    session_id: str
    reward: float | None
    """None, as `correct` and `turn_rewards` are, when the attempt is unscored."""
    correct: bool | None
    answer: str | None
    turn_rewards: list[float] | None
    """A session's reward per turn; None for a sample."""
    turn_answers: list[str | None] | None
    """A session's parsed answer per turn; None for a sample."""
    challenge_turns: list[int] | None
    """Indices of a session's challenge turns ("Are you sure?"), which expect no change."""
    latency_s: float
    prompt_tokens: int
    completion_tokens: int
    model_calls: int
    tool_calls: int
    tool_errors: int
    error: dict[str, Any] | None
    """The trajectory's error, repeated at the top level for readers of the file."""
    variant_of: str | None = None
    """The original sample's id when this one is a perturbed variant of it."""
    perturbation: str | None = None
    """The kind of that perturbation (numbers, names, distractor, a plug-in's)."""
    benchmark: dict[str, Any] | None = None
    """What a benchmark's checker found beyond the verdict (e.g. AgentDojo's suite, task,
    injection, attack and whether the injected goal was reached); None for other rewards."""

    def __post_init__(self) -> None:
        # Whoever builds the attempt (the engine, rescore, a line of any version), an unscored
        # one never carries a score that a reader could count as wrong.
        if not self.scored:
            for name in SCORE_FIELDS:
                setattr(self, name, None)

    @property
    def scored(self) -> bool:
        """Whether the attempt says something about the model: not stopped by the infrastructure."""
        return not self.error or recorded_class(self.error) is FailureClass.MODEL

    @property
    def error_kind(self) -> str | None:
        """Why the attempt stopped short (timeout, runner_error, ...); None when it finished."""
        return self.error["kind"] if self.error else None
