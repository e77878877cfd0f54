"""An attempt's outputs scored against its item's gold answers: the record's reward-derived fields.

The engine scores what a runner just returned; `agent-eval rescore` scores what a run stored.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_eval.agents.trajectory import TrajectoryError
from agent_eval.data import DataError, Item, Sample, Session
from agent_eval.data.records import place
from agent_eval.rewards import GoldCheck, RewardResult, RewardScorer, gsm8k_gold

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
    benchmark: dict[str, Any] | None = None
    """What a benchmark's checker found on the last output scored (RewardResult.benchmark)."""

    def fields(self) -> dict[str, Any]:
        """The attempt record's fields this score sets."""
        return {
            "reward": self.reward,
            "correct": self.correct,
            "answer": self.answer,
            "turn_rewards": self.turn_rewards,
            "turn_answers": self.turn_answers,
            "benchmark": self.benchmark,
        }


async def score_attempt(
    scorer: RewardScorer,
    item: Item,
    final_output: str | None,
    turn_outputs: Sequence[str | None],
) -> Scored:
    """Score a sample's final output, or a session's output per turn, one output at a time."""
    golds = item_golds(item)
    outputs = list(turn_outputs) if isinstance(item, Session) else [final_output]
    outputs += [None] * (len(golds) - len(outputs))  # turns never reached score 0
    pairs = zip(outputs, golds, strict=False)  # outputs past the last turn are not scored
    results = [await _score_one(scorer, output, gold) for output, gold in pairs]
    return _scored(item, results)


def checked(check: Mapping[str, Any], answer: str | None) -> Scored:
    """The score a check command gave (a recorded `CheckRecord`); a check that failed itself
    leaves the attempt unscored (`scorer_error`), never wrong."""
    error = check.get("error")
    score = check.get("score")
    failure = None
    if error is not None or score is None:
        failure = TrajectoryError("scorer_error", f"check {check.get('command')!r}: {error}")
    return Scored(
        reward=float(score or 0.0),
        correct=bool(check.get("correct")),
        answer=answer,
        turn_rewards=None,
        turn_answers=None,
        failure=failure,
    )


def item_golds(item: Item) -> list[str | None]:
    """What each scored output of `item` is scored against: a session's per turn, or one.

    Raises:
        ValueError: a GSM8K answer with nothing after its `####`.
    """
    if isinstance(item, Session):
        return item.expected_answers()
    return [gold_answer(item.answer)]


def gold_answer(answer: str | None) -> str | None:
    """The gold answer to score against: a GSM8K solution's final answer, else the text."""
    if answer is None:
        return None
    return gsm8k_gold(answer) if "####" in answer else answer.strip()


def with_readable_golds(items: Iterable[Item], check: GoldCheck | None) -> Iterator[Item]:
    """The items as they come; one that could only ever score 0 is a DataError naming its row.

    A gold is readable when there is one and `check` (the reward's reading, when known) finds
    no problem with it.
    """
    for item in items:
        _check_golds(item, check)
        yield item


def _check_golds(item: Item, check: GoldCheck | None) -> None:
    if isinstance(item, Sample) and item.answer is None:  # rows.py: it carries its own check
        return
    try:
        golds = item_golds(item)
    except ValueError as exc:  # a GSM8K answer with nothing after its `####`
        raise DataError(
            f"{place(item)}: field 'answer': {exc}; end it with '#### <final answer>'"
        ) from None
    for field, gold in zip(_gold_fields(item), golds, strict=True):
        if not gold:  # a plug-in perturbation's variant may come with an empty answer
            raise DataError(f"{place(item)}: field '{field}' gives no gold answer to score against")
        problem = check(gold) if check is not None else None
        if problem is not None:
            raise DataError(
                f"{place(item)}: the reward cannot read the gold answer {gold[:80]!r} of field "
                f"'{field}': {problem}"
            )


def _gold_fields(item: Item) -> list[str]:
    """The row field each of `item_golds` comes from, for messages."""
    if isinstance(item, Session):
        return [f"turns[{index}].expected" for index in range(len(item.turns))]
    return ["answer"]


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
        benchmark=results[-1].benchmark if results else None,
    )


def _failure(results: list[RewardResult]) -> TrajectoryError | None:
    for result in results:
        if result.status in _FAILED:
            return TrajectoryError(_FAILED[result.status], result.detail or result.status)
    return None
