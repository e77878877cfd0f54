"""What a JSONL export (sft, rl) makes of an attempt, and which attempts it takes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent_eval.results.record import AttemptRecord

UNSCORED = "unscored (stopped by the infrastructure, so they say nothing of the model)"


@dataclass
class Converted:
    """An attempt's lines (none when it is left out), and notes on it for the export's tally:
    why it was left out, or what was done to it."""

    lines: list[dict[str, Any]]
    notes: tuple[str, ...] = field(default=())

    @classmethod
    def left_out(cls, why: str) -> Converted:
        """No line, for the reason `why` (read after "N attempts": "without token ids ...")."""
        return cls([], (why,))


@dataclass(frozen=True)
class Selection:
    """The scored attempts an export takes: those of at least `min_reward`, the correct ones
    alone when `correct_only`."""

    min_reward: float | None = None
    correct_only: bool = False

    @property
    def chooses(self) -> bool:
        """Whether it asks more than that an attempt be scored."""
        return self.min_reward is not None or self.correct_only

    def why_not(self, record: AttemptRecord) -> str | None:
        """Why the attempt is left out, in words read after "N attempts"; None: it is taken."""
        if not record.scored:
            return UNSCORED
        if self.correct_only and not record.correct:
            return "not correct (--correct-only)"
        if self.min_reward is not None and (
            record.reward is None or record.reward < self.min_reward
        ):
            return f"with a reward below {self.min_reward:g} (--min-reward)"
        return None
