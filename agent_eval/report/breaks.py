"""The attempts a perturbation broke: right on the original, wrong on its variant."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from agent_eval.agents.trajectory import question
from agent_eval.metrics import AttemptScore
from agent_eval.results.files import RunDirectory

Key = tuple[str, int]
"""(sample id, attempt)."""


@dataclass(frozen=True)
class Break:
    """One attempt index at which the original was answered right and its variant wrong."""

    original: AttemptScore
    variant: AttemptScore


def breaks(scores: Iterable[AttemptScore]) -> list[Break]:
    """Every break among `scores`, in the order the variants' attempts come; unscored left out."""
    scored = [score for score in scores if score.scored]
    right = {
        (score.sample_id, score.attempt): score
        for score in scored
        if score.variant_of is None and score.correct
    }
    return [
        Break(original, variant)
        for variant in scored
        if variant.variant_of is not None and not variant.correct
        if (original := right.get((variant.variant_of, variant.attempt))) is not None
    ]


def questions(run_dir: Path, wanted: set[Key]) -> dict[Key, str]:
    """The question each wanted attempt was asked, from its recorded trajectory."""
    found: dict[Key, str] = {}
    for record in RunDirectory(run_dir).records():
        key = (record.sample_id, record.attempt)
        if key in wanted:
            found[key] = question(record.trajectory)
            if len(found) == len(wanted):
                break
    return found
