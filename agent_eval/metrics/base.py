"""Shared shapes: the attempt the metrics count, an estimate with its interval, a direction."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from agent_eval.metrics.attempt import Attempt
from agent_eval.metrics.continuity import ContinuityCounts

F = TypeVar("F", bound=Callable[..., Any])

NAN = math.nan
"""What a metric returns for empty input: undefined, never an exception (null in JSON)."""


@dataclass
class AttemptScore(Attempt):
    """One attempt as the metrics count it: the record without its trajectory, with what they
    count of the trajectory's model calls."""

    cached_tokens: int = 0
    """Prompt tokens served from a worker's prefix cache, over the calls whose worker said."""
    cache_prompt_tokens: int = 0
    """Prompt tokens of those same calls: what the cache hit rate divides by."""
    ttft_s: tuple[float, ...] = ()
    """Seconds to first token of each streamed model call."""
    continuity: ContinuityCounts = field(default_factory=ContinuityCounts)
    """Its model calls' tokens checked turn by turn (metrics/continuity.py)."""

    def verdict(self) -> tuple[float, bool]:
        """The reward and whether it is right, of a scored attempt; a ValueError for another."""
        if self.reward is None or self.correct is None:
            raise ValueError(f"attempt {self.attempt} at {self.sample_id!r} has no score")
        return self.reward, self.correct


@dataclass(frozen=True)
class Estimate:
    """A proportion, its standard error and confidence interval over n trials; NaN when n is 0."""

    value: float
    stderr: float
    low: float
    high: float
    n: int


def metric(*, higher_is_better: bool) -> Callable[[F], F]:
    """Declare a metric function's direction; read it back with `is_higher_better`."""

    def declare(fn: F) -> F:
        fn.higher_is_better = higher_is_better  # type: ignore[attr-defined]
        return fn

    return declare


def is_higher_better(fn: Callable[..., Any]) -> bool:
    """The direction `fn` declared with `@metric`."""
    direction = getattr(fn, "higher_is_better", None)
    if not isinstance(direction, bool):
        raise TypeError(f"{fn.__name__} declares no direction; decorate it with @metric(...)")
    return direction


def ratio(part: float, whole: float) -> float:
    """part / whole, or NaN when whole is not positive (the empty-input guard)."""
    return part / whole if whole > 0 else NAN


def normalize_answer(answer: str | None) -> str | None:
    """Case-folded with runs of whitespace collapsed; None or blank means no answer."""
    if answer is None:
        return None
    return " ".join(answer.split()).casefold() or None
