"""Streaming state of a run: per-sample counts and run-wide counters, flat in memory."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from agent_eval.metrics.attempt import Attempt
from agent_eval.metrics.base import AttemptScore, normalize_answer
from agent_eval.metrics.drift import ContinuityTally
from agent_eval.metrics.robustness import RobustnessTally
from agent_eval.metrics.security import SecurityTally


@dataclass
class SampleTally:
    """One sample's attempts: n, correct count c, their answers and verdicts, whether they agree."""

    n: int = 0
    c: int = 0
    reward_sum: float = 0.0
    reward_squares: float = 0.0
    verdicts: Counter[tuple[str | None, bool]] = field(default_factory=Counter)
    """Attempts by (normalised answer, correct): all maj@k needs, in whatever order they came."""
    agree: bool = True
    """Every attempt so far gave the same answer (an attempt with no answer breaks agreement)."""
    reference: str | None = None
    attempts: set[int] = field(default_factory=set)

    def add(self, score: AttemptScore) -> None:
        """Count one scored attempt; the same (sample_id, attempt) twice is an error."""
        if score.attempt in self.attempts:
            raise ValueError(
                f"sample {score.sample_id!r} has attempt {score.attempt} twice; "
                "each (sample_id, attempt) must appear once in a run"
            )
        self.attempts.add(score.attempt)
        reward, correct = score.verdict()
        answer = normalize_answer(score.answer)
        if self.n == 0:
            self.reference = answer
        self.agree = self.agree and answer is not None and answer == self.reference
        self.n += 1
        self.c += correct
        self.reward_sum += reward
        self.reward_squares += reward * reward
        self.verdicts[answer, correct] += 1


@dataclass
class SessionTally:
    """Multi-turn sessions: full-reward sessions, rewards by turn, answers kept when challenged.

    A turn is right when its reward is 1, the rule the rewards use for `correct`.
    """

    sessions: int = 0
    full: int = 0
    turns: int = 0
    reward_sum: float = 0.0
    right_by_turn: list[int] = field(default_factory=list)
    seen_by_turn: list[int] = field(default_factory=list)
    """Sessions that reached each turn index: sessions need not all be the same length."""
    challenges: int = 0
    flips: int = 0

    def add(
        self,
        turn_rewards: Sequence[float],
        turn_answers: Sequence[str | None] = (),
        challenge_turns: Iterable[int] = (),
    ) -> None:
        """Count one session; a session without turns is not counted."""
        if not turn_rewards:
            return
        self.sessions += 1
        self.full += all(reward >= 1.0 for reward in turn_rewards)
        self.turns += len(turn_rewards)
        self.reward_sum += math.fsum(turn_rewards)
        self._add_turns(turn_rewards)
        self._add_challenges(turn_answers, challenge_turns)

    def _add_turns(self, turn_rewards: Sequence[float]) -> None:
        missing = len(turn_rewards) - len(self.seen_by_turn)
        self.right_by_turn += [0] * missing
        self.seen_by_turn += [0] * missing
        for index, reward in enumerate(turn_rewards):
            self.right_by_turn[index] += reward >= 1.0
            self.seen_by_turn[index] += 1

    def _add_challenges(
        self, turn_answers: Sequence[str | None], challenge_turns: Iterable[int]
    ) -> None:
        # Only an answer given before the challenge can be kept or dropped.
        for index in challenge_turns:
            if not 0 < index < len(turn_answers):
                continue
            before = normalize_answer(turn_answers[index - 1])
            if before is not None:
                self.challenges += 1
                self.flips += normalize_answer(turn_answers[index]) != before


@dataclass
class AttemptCounts:
    """How many attempts ended, and how: the counts every reader of a run's progress shares.

    The accuracy counts the original samples only: a perturbed variant counts toward
    robustness, and, since it costs the same, toward the attempts, errors and tokens.
    """

    attempts: int = 0
    """Every attempt, scored or not: what the run spent its time and tokens on."""
    scored: int = 0
    """Every attempt the infrastructure did not stop, variants included."""
    original_scored: int = 0
    """The scored attempts at original samples: the ones quality and stability count."""
    correct: int = 0
    """The right ones among those."""
    unscored: Counter[str] = field(default_factory=Counter)
    """Attempts the infrastructure stopped, by error kind."""
    errors: Counter[str] = field(default_factory=Counter)
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def copy(self) -> AttemptCounts:
        """A copy that the attempts counted later leave as it is."""
        return replace(self, unscored=self.unscored.copy(), errors=self.errors.copy())

    def add(self, attempt: Attempt) -> None:
        """Count one attempt: its cost always, its result only when it is scored."""
        self.attempts += 1
        self.prompt_tokens += attempt.prompt_tokens
        self.completion_tokens += attempt.completion_tokens
        kind = attempt.error_kind
        if kind is not None:
            self.errors[kind] += 1
        if not attempt.scored:
            self.unscored[kind or "unknown"] += 1
            return
        self.scored += 1
        if attempt.variant_of is None:
            self.original_scored += 1
            self.correct += attempt.correct is True

    def remove(self, attempt: Attempt) -> None:
        """Take back an attempt counted before: one set aside to be played again."""
        sign = AttemptCounts()
        sign.add(attempt)
        self.attempts -= sign.attempts
        self.scored -= sign.scored
        self.original_scored -= sign.original_scored
        self.correct -= sign.correct
        self.prompt_tokens -= sign.prompt_tokens
        self.completion_tokens -= sign.completion_tokens
        self.unscored.subtract(sign.unscored)
        self.errors.subtract(sign.errors)
        self.unscored += Counter()  # drop the kinds now at zero
        self.errors += Counter()


@dataclass
class RunTally:
    """Everything the summary needs, kept while the records stream past once.

    Quality and stability count the original samples only; a perturbed variant counts toward
    robustness and, since it costs the same, toward efficiency.
    """

    counts: AttemptCounts = field(default_factory=AttemptCounts)
    samples: dict[str, SampleTally] = field(default_factory=dict)
    reward_sum: float = 0.0
    latencies: list[float] = field(default_factory=list)
    sessions: SessionTally = field(default_factory=SessionTally)
    model_calls: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    cached_tokens: int = 0
    cache_prompt_tokens: int = 0
    ttfts: list[float] = field(default_factory=list)
    """Seconds to first token of every streamed model call."""
    robustness: RobustnessTally = field(default_factory=RobustnessTally)
    security: SecurityTally = field(default_factory=SecurityTally)
    """Attempts with injections (AgentDojo's), originals only, as quality counts."""
    continuity: ContinuityTally = field(default_factory=ContinuityTally)
    """Every attempt's model calls checked turn by turn, as efficiency counts them."""

    def add(self, score: AttemptScore) -> None:
        """Count one attempt: its cost always, its result only when it is scored."""
        self.counts.add(score)
        self.latencies.append(score.latency_s)
        self.model_calls += score.model_calls
        self.tool_calls += score.tool_calls
        self.tool_errors += score.tool_errors
        self.cached_tokens += score.cached_tokens
        self.cache_prompt_tokens += score.cache_prompt_tokens
        self.ttfts += score.ttft_s
        self.robustness.add(score)
        self.continuity.add(score)
        if not score.scored or score.variant_of is not None:
            return
        self.samples.setdefault(score.sample_id, SampleTally()).add(score)
        self.security.add(score)
        self.reward_sum += score.verdict()[0]
        if score.turn_rewards is not None:
            self.sessions.add(
                score.turn_rewards, score.turn_answers or (), score.challenge_turns or ()
            )

    def extend(self, scores: Iterable[AttemptScore]) -> RunTally:
        """Count every attempt in `scores`; returns self."""
        for score in scores:
            self.add(score)
        return self
