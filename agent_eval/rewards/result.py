"""What scoring one answer gives: a reward, whether it is correct, and why when it failed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

RewardStatus = Literal["ok", "parse_failed", "timeout", "error"]


@dataclass(frozen=True)
class RewardResult:
    """One scored answer; `parsed` is the prediction's answer as canonical text, for maj@k."""

    reward: float
    correct: bool
    parsed: str | None = None
    status: RewardStatus = "ok"
    detail: str | None = None
    benchmark: dict[str, Any] | None = None
    """What a benchmark's checker found beyond the verdict (JSON-able); None for other rewards."""

    @classmethod
    def failed(cls, status: RewardStatus, detail: str) -> RewardResult:
        """A zero score that says why."""
        return cls(reward=0.0, correct=False, parsed=None, status=status, detail=detail)


RewardFn = Callable[[str, str], RewardResult | float | bool]

GoldCheck = Callable[[str], str | None]
"""Why a reward cannot read a gold answer, or None when it can."""
