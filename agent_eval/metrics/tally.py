"""Streaming state of a run: per-sample counts and run-wide counters, flat in memory."""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from agent_eval.metrics.base import AttemptScore, normalize_answer

Vote = tuple[int, str | None, bool]
"""(attempt, normalised answer, correct) of one attempt."""


@dataclass
class SampleTally:
    """One sample's attempts: n, correct count c, the first `keep` votes, whether answers agree."""

    n: int = 0
    c: int = 0
    keep: int = 1
    votes: list[Vote] = field(default_factory=list)
    """The `keep` lowest-numbered attempts, in attempt order, whatever order they arrived in."""
    agree: bool = True
    """Every attempt so far gave the same answer (an attempt with no answer breaks agreement)."""
    reference: str | None = None
    attempts: set[int] = field(default_factory=set)

    def add(self, score: AttemptScore) -> None:
        """Count one attempt; the same (sample_id, attempt) twice is an error."""
        if score.attempt in self.attempts:
            raise ValueError(
                f"sample {score.sample_id!r} has attempt {score.attempt} twice; "
                "each (sample_id, attempt) must appear once in a run"
            )
        self.attempts.add(score.attempt)
        answer = normalize_answer(score.answer)
        if self.n == 0:
            self.reference = answer
        self.agree = self.agree and answer is not None and answer == self.reference
        self.n += 1
        self.c += bool(score.correct)
        bisect.insort(self.votes, (score.attempt, answer, bool(score.correct)), key=_attempt)
        del self.votes[self.keep :]


def _attempt(vote: Vote) -> int:
    return vote[0]


@dataclass
class SessionTally:
    """Multi-turn sessions: how many, how many with full reward on every turn, turn rewards."""

    sessions: int = 0
    full: int = 0
    turns: int = 0
    reward_sum: float = 0.0

    def add(self, turn_rewards: Sequence[float]) -> None:
        """Count one session; a session without turns is not counted."""
        if not turn_rewards:
            return
        self.sessions += 1
        self.full += all(reward >= 1.0 for reward in turn_rewards)
        self.turns += len(turn_rewards)
        self.reward_sum += math.fsum(turn_rewards)


@dataclass
class RunTally:
    """Everything the summary needs, kept while the records stream past once."""

    keep: int = 1
    samples: dict[str, SampleTally] = field(default_factory=dict)
    attempts: int = 0
    correct: int = 0
    reward_sum: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latencies: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    sessions: SessionTally = field(default_factory=SessionTally)

    def add(self, score: AttemptScore) -> None:
        """Count one attempt."""
        sample = self.samples.setdefault(score.sample_id, SampleTally(keep=self.keep))
        sample.add(score)
        self.attempts += 1
        self.correct += bool(score.correct)
        self.reward_sum += score.reward
        self.prompt_tokens += score.prompt_tokens
        self.completion_tokens += score.completion_tokens
        self.latencies.append(score.latency_s)
        if score.error_kind is not None:
            self.errors[score.error_kind] += 1
        if score.turn_rewards is not None:
            self.sessions.add(score.turn_rewards)

    def extend(self, scores: Iterable[AttemptScore]) -> RunTally:
        """Count every attempt in `scores`; returns self."""
        for score in scores:
            self.add(score)
        return self
