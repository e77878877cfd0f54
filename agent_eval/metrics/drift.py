"""Drift over a run: the share of checked turns whose prompt does not continue the earlier call
of their conversation (metrics/continuity.py says which), and the attempts with any such turn.

Every attempt counts, scored or not and variants too: drift is the serving stack's (the chat
template, the tokenizer), not the model's answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_eval.metrics.accuracy import wilson_interval
from agent_eval.metrics.base import AttemptScore, Estimate, metric
from agent_eval.metrics.continuity import ContinuityCounts


@dataclass
class ContinuityTally:
    """The attempts' continuity counts added up while the records stream, and the attempts
    with a turn checked and with one that drifts."""

    tokenized: int = 0
    untokenized: int = 0
    checked: int = 0
    drifted: int = 0
    attempts_checked: int = 0
    attempts_drifted: int = 0

    def add(self, score: AttemptScore) -> None:
        counts: ContinuityCounts = score.continuity
        self.tokenized += counts.tokenized
        self.untokenized += counts.untokenized
        self.checked += counts.checked
        self.drifted += counts.drifted
        self.attempts_checked += counts.checked > 0
        self.attempts_drifted += counts.drifted > 0


@metric(higher_is_better=False)
def drift_rate(tally: ContinuityTally, confidence: float = 0.95) -> Estimate | None:
    """Share of the checked turns that drift; None when no model call had its tokens recorded."""
    return wilson_interval(tally.drifted, tally.checked, confidence) if tally.tokenized else None


@metric(higher_is_better=False)
def attempts_with_drift(tally: ContinuityTally, confidence: float = 0.95) -> Estimate | None:
    """Share of the attempts with a checked turn that have a turn that drifts."""
    if not tally.tokenized:
        return None
    return wilson_interval(tally.attempts_drifted, tally.attempts_checked, confidence)


@metric(higher_is_better=False)
def untokenized_calls(tally: ContinuityTally) -> int | None:
    """Model calls without their tokens, skipped by the checks (in a run where others have them)."""
    return tally.untokenized if tally.tokenized else None


DRIFT_RATE = (
    "share of the turns checked whose prompt ids do not begin with the prompt + completion ids "
    "of the earlier call of their conversation (the call sharing the longest prefix); lower is "
    "better"
)
