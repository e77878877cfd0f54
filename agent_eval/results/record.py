"""One finished attempt: what the engine records, and its line in samples.jsonl."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from operator import itemgetter
from typing import Any

import orjson

from agent_eval.errors import ConfigError
from agent_eval.failures import FailureClass, recorded_class
from agent_eval.metrics import AttemptScore

SCHEMA = 3
"""The version of the samples.jsonl line; a line without one predates it and is version 1.

2: an unscored attempt's score fields are null; 1 wrote them as a wrong answer's (0.0, false).
3: the trajectory's earlier plays of an attempt are its `replays`; 1 and 2 named them `retries`,
the word the proxy's re-sends of one request keep. Lines of 1 and 2 read as 3 writes them.
"""
SCORE_FIELDS = ("reward", "correct", "turn_rewards")
"""What only a scored attempt has: null on an unscored attempt's line, read as null from any."""


# Neither frozen nor slots: orjson writes a dataclass with a __dict__ about 2.5x faster,
# and a frozen __init__ is about 9x slower; both per attempt.
@dataclass
class AttemptRecord:
    """One scored attempt at one sample, with its trajectory (the runner's Trajectory.to_dict())."""

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
    challenge_turns: list[int] | None
    latency_s: float
    prompt_tokens: int
    completion_tokens: int
    model_calls: int
    tool_calls: int
    tool_errors: int
    error: dict[str, Any] | None
    """The trajectory's error, repeated at the top level for readers of the file."""
    trajectory: dict[str, Any]
    variant_of: str | None = None
    """The original sample's id when this one is a perturbed variant of it."""
    perturbation: str | None = None

    def __post_init__(self) -> None:
        # Whoever builds the record (the engine, rescore, a line of any version), an unscored
        # attempt never carries a score that a reader of the file could count as wrong.
        if not self.scored:
            for name in SCORE_FIELDS:
                setattr(self, name, None)

    def to_line(self) -> bytes:
        """The record as one samples.jsonl line, newline included."""
        # orjson writes a dataclass natively, in field order: no dict is built on the way.
        return orjson.dumps(self, option=orjson.OPT_APPEND_NEWLINE)

    @classmethod
    def from_line(cls, line: bytes, where: str) -> AttemptRecord:
        """Read one line back; a corrupt or newer one is a ConfigError that names `where`."""
        try:
            data = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise ConfigError(
                f"{where} is not valid JSON ({exc}); fix or delete that line"
            ) from None
        if not isinstance(data, dict):
            raise ConfigError(f"{where} is not an attempt record; was it written by agent-eval?")
        version = data.get("schema", 1)
        if not isinstance(version, int) or version > SCHEMA:
            raise ConfigError(
                f"{where} has record schema {version!r}, which this agent-eval cannot read (it "
                f"reads schema {SCHEMA} and older): upgrade agent-eval to the one that wrote it"
            )
        try:
            # Keys this version does not know are left out, as a reader by key would; keys
            # added since (with a default) may be missing from older lines.
            return cls(*_VALUES({**_ADDED, **_with_replays(data)}))
        except KeyError as exc:
            raise ConfigError(
                f"{where} is not an attempt record (it lacks {exc}); was it written by agent-eval?"
            ) from None

    @property
    def scored(self) -> bool:
        """Whether the attempt says something about the model: not stopped by the infrastructure."""
        return is_scored(self.error)

    @property
    def error_kind(self) -> str | None:
        """Why the attempt stopped short (timeout, runner_error, ...); None when it finished."""
        return self.error["kind"] if self.error else None

    def score(self) -> AttemptScore:
        """What the metrics count of this attempt."""
        return AttemptScore(
            sample_id=self.sample_id,
            attempt=self.attempt,
            reward=self.reward,
            correct=self.correct,
            answer=self.answer,
            error_kind=self.error_kind,
            latency_s=self.latency_s,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            turn_rewards=self.turn_rewards,
            turn_answers=self.turn_answers,
            challenge_turns=self.challenge_turns,
            model_calls=self.model_calls,
            tool_calls=self.tool_calls,
            tool_errors=self.tool_errors,
            scored=self.scored,
            variant_of=self.variant_of,
            perturbation=self.perturbation,
            **_call_telemetry(self.trajectory),
        )


def is_scored(error: Mapping[str, str] | None) -> bool:
    """Whether an attempt that ended with `error` (None: none) says something about the model."""
    return not error or recorded_class(error) is FailureClass.MODEL


def _with_replays(data: dict[str, Any]) -> dict[str, Any]:
    """A line's dict with its trajectory's earlier plays under `replays`, in place of the
    `retries` versions 1 and 2 wrote them under."""
    trajectory = data.get("trajectory")
    if not isinstance(trajectory, dict) or "retries" not in trajectory:
        return data
    renamed = {("replays" if key == "retries" else key): v for key, v in trajectory.items()}
    return {**data, "trajectory": renamed}


def _call_telemetry(trajectory: dict[str, Any]) -> dict[str, Any]:
    """The cache hits and times to first token of a trajectory's model calls, as AttemptScore
    counts them; calls recorded before these were kept count as not reported."""
    cached = prompt = 0
    ttft: list[float] = []
    for call in trajectory.get("model_calls") or ():
        if call.get("cached_tokens") is not None:
            cached += call["cached_tokens"]
            prompt += call.get("prompt_tokens", 0)
        if call.get("ttft_s") is not None:
            ttft.append(call["ttft_s"])
    return {"cached_tokens": cached, "cache_prompt_tokens": prompt, "ttft_s": tuple(ttft)}


# The line's values in the order __init__ takes them; a missing key is a KeyError naming it.
_VALUES = itemgetter(*(f.name for f in fields(AttemptRecord) if f.init))
_ADDED = {f.name: f.default for f in fields(AttemptRecord) if f.init and f.default is not MISSING}
