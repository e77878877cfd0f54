"""An attempt's outputs scored against its item's gold answers: the record's reward-derived fields.

The engine scores what a runner just returned; `agent-eval rescore` scores what a run stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent_eval.agents.trajectory import TrajectoryError
from agent_eval.data import Item, Session
from agent_eval.rewards import RewardResult, RewardScorer, gsm8k_gold

_FAILED = {"timeout": "scorer_timeout", "error": "scorer_error"}
"""The scorer's own failures as error kinds; a parse failure is the answer's, not the scorer's."""


@dataclass(frozen=True)
class Scored:
    """What the reward makes of one attempt's outputs."""

    reward: float
    correct: bool
    answer: str | None
    turn_rewards: list[float] | None
    """A session's reward per turn; None for a sample."""
    turn_answers: list[str | None] | None
    failure: TrajectoryError | None
    """The first output the scorer itself failed on (timeout, error); None when none did."""

    def fields(self) -> dict[str, Any]:
        """The attempt record's fields this score sets."""
        return {
            "reward": self.reward,
            "correct": self.correct,
            "answer": self.answer,
            "turn_rewards": self.turn_rewards,
            "turn_answers": self.turn_answers,
        }


async def score_attempt(
    scorer: RewardScorer,
    item: Item,
    final_output: str | None,
    turn_outputs: Sequence[str | None],
) -> Scored:
    """Score a sample's final output, or a session's output per turn, one output at a time."""
    if isinstance(item, Session):
        pairs = list(zip(turn_outputs, item.expected_answers(), strict=False))
        pairs += [(None, e) for e in item.expected_answers()[len(pairs) :]]
    else:
        pairs = [(final_output, gold_answer(item.answer))]
    results = [await _score_one(scorer, output, gold) for output, gold in pairs]
    return _scored(item, results)


def gold_answer(answer: str | None) -> str | None:
    """The gold answer to score against: a GSM8K solution's final answer, else the text."""
    if answer is None:
        return None
    return gsm8k_gold(answer) if "####" in answer else answer.strip()


async def _score_one(scorer: RewardScorer, output: str | None, gold: str | None) -> RewardResult:
    if output is None or gold is None:
        return RewardResult(reward=0.0, correct=False)
    return await scorer.score(output, gold)


def _scored(item: Item, results: list[RewardResult]) -> Scored:
    rewards = [result.reward for result in results]
    session = isinstance(item, Session)
    return Scored(
        reward=sum(rewards) / len(rewards) if rewards else 0.0,
        correct=bool(results) and all(result.correct for result in results),
        answer=results[-1].parsed if results else None,
        turn_rewards=rewards if session else None,
        turn_answers=[result.parsed for result in results] if session else None,
        failure=_failure(results),
    )


def _failure(results: list[RewardResult]) -> TrajectoryError | None:
    for result in results:
        if result.status in _FAILED:
            return TrajectoryError(_FAILED[result.status], result.detail or result.status)
    return None
