"""Two runs paired by (sample_id, attempt): what each got right that the other did not, and B - A.

Runs over the same samples are compared pair by pair (McNemar's exact test, a bootstrap over
samples), which takes the samples' own difficulty out of the noise. Runs that share no pair
scored on both sides fall back to unpaired intervals (Newcombe for accuracy, Welch for reward).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from agent_eval.metrics import (
    RESAMPLES,
    AttemptScore,
    Difference,
    Estimate,
    Pair,
    accuracy_difference,
    json_ready,
    paired_differences,
    wilson_interval,
)
from agent_eval.report.compare import HEADERS, QUALITY, Row, mean_difference, styled_cells
from agent_eval.report.runs import Run

Key = tuple[str, int]
PAIRED_HEADERS = (*HEADERS, "method")
HIGHER_IS_BETTER = {"accuracy": QUALITY["accuracy"], "mean reward": QUALITY["mean_reward"]}
SHOWN_FLIPS = 10  # per direction in the console; the page and --json list them all


@dataclass(frozen=True)
class Pairing:
    """Two runs' attempts matched by (sample_id, attempt), with each side's outcome."""

    samples: list[list[Pair]]
    """The pairs scored on both sides, grouped by sample."""
    a_only: list[Key]
    """Right in A, wrong in B."""
    b_only: list[Key]
    left_out_unscored: int
    """Pairs left out because one side or both were stopped by the infrastructure."""
    unmatched: int
    """Attempts that only one of the runs made."""

    @property
    def pairs(self) -> list[Pair]:
        return [pair for sample in self.samples for pair in sample]


@dataclass(frozen=True)
class PairedComparison:
    """B - A in accuracy and mean reward: paired when the runs share scored pairs, else not."""

    pairing: Pairing
    rows: list[Row]
    """Accuracy, then mean reward."""
    mcnemar_p: float | None
    """None when unpaired."""

    @property
    def paired(self) -> bool:
        return self.mcnemar_p is not None

    @property
    def methods(self) -> tuple[str, str]:
        """How the accuracy and the mean reward were compared."""
        if not self.paired:
            return "unpaired: Newcombe", "unpaired: Welch"
        return f"McNemar p={self.mcnemar_p:.3g}", "bootstrap"

    @property
    def note(self) -> str:
        """What was paired and what was left out, in a sentence."""
        p = self.pairing
        if self.paired:
            done = (
                f"{len(p.pairs)} attempts at {len(p.samples)} shared samples paired; intervals: "
                f"bootstrap over samples, {RESAMPLES:,} resamples"
            )
        else:
            done = "no attempt is scored in both runs: accuracy and reward compared unpaired"
        return f"{done}; {p.left_out_unscored} pairs left out as unscored, {p.unmatched} unmatched"


def pair_runs(a: Run, b: Run) -> Pairing:
    """Match the runs' attempts at original samples, as quality counts them; a pair counts only
    when both sides are scored."""
    scores_a, scores_b = _originals(a), _originals(b)
    by_key = {(s.sample_id, s.attempt): s for s in scores_b}
    samples: defaultdict[str, list[Pair]] = defaultdict(list)
    a_only: list[Key] = []
    b_only: list[Key] = []
    matched = unscored = 0
    for first in scores_a:
        key = (first.sample_id, first.attempt)
        second = by_key.get(key)
        if second is None:
            continue
        matched += 1
        if not (first.scored and second.scored):
            unscored += 1
            continue
        (reward_a, correct_a), (reward_b, correct_b) = first.verdict(), second.verdict()
        samples[first.sample_id].append(Pair(correct_a, correct_b, reward_a, reward_b))
        if correct_a != correct_b:
            (a_only if correct_a else b_only).append(key)
    unmatched = len(scores_a) + len(scores_b) - 2 * matched
    return Pairing(list(samples.values()), a_only, b_only, unscored, unmatched)


def paired_comparison(a: Run, b: Run) -> PairedComparison:
    """B - A paired when the runs share scored pairs; else the unpaired intervals."""
    pairing = pair_runs(a, b)
    pairs = pairing.pairs
    if not pairs:
        return _unpaired(a, b, pairing)
    stats = paired_differences(pairing.samples)
    correct_a, correct_b = [p.a_correct for p in pairs], [p.b_correct for p in pairs]
    rewards_a, rewards_b = [p.a_reward for p in pairs], [p.b_reward for p in pairs]
    rows = [
        _row("accuracy", correct_a, correct_b, stats.accuracy),
        _row("mean reward", rewards_a, rewards_b, stats.reward),
    ]
    return PairedComparison(pairing, rows, stats.mcnemar_p)


def paired_table(comparison: PairedComparison) -> Table:
    """Accuracy and mean reward, each with how it was compared."""
    title = "B - A paired by sample and attempt" if comparison.paired else "B - A unpaired"
    table = Table(title=Text(title), caption=Text(comparison.note), box=box.SIMPLE)
    for index, header in enumerate(PAIRED_HEADERS):
        table.add_column(header, justify="right" if 0 < index < len(HEADERS) else "left")
    for row, method in zip(comparison.rows, comparison.methods, strict=True):
        table.add_row(*styled_cells(row), method)
    return table


def flip_lines(pairing: Pairing) -> list[str]:
    """The attempts only one run got right, the first few of each, one line per run."""
    lines = []
    for name, keys in flips(pairing):
        shown = ", ".join(flip_label(key) for key in keys[:SHOWN_FLIPS])
        more = f" and {len(keys) - SHOWN_FLIPS} more" if len(keys) > SHOWN_FLIPS else ""
        lines.append(f"{name} ({len(keys)}): {shown}{more}")
    return lines


def flips(pairing: Pairing) -> list[tuple[str, list[Key]]]:
    """The attempts only A got right, then those only B got right, each with a name."""
    return [("right in A only", pairing.a_only), ("right in B only", pairing.b_only)]


def flip_label(key: Key) -> str:
    """An attempt as `sample_id#attempt`."""
    return f"{key[0]}#{key[1]}"


def comparison_json(
    rows: Sequence[Row], comparison: PairedComparison, notes: Sequence[str]
) -> dict[str, Any]:
    """The comparison for machines (--json): NaN is null."""
    pairing = comparison.pairing
    accuracy, reward = comparison.rows
    return json_ready(
        {
            "paired": comparison.paired,
            "method": dict(zip(("accuracy", "reward"), comparison.methods, strict=True)),
            "confidence": 0.95,
            "resamples": RESAMPLES if comparison.paired else None,
            "pairs": len(pairing.pairs),
            "shared_samples": len(pairing.samples),
            "a_only": [_key_json(key) for key in pairing.a_only],
            "b_only": [_key_json(key) for key in pairing.b_only],
            "mcnemar_p": comparison.mcnemar_p,
            "accuracy_diff": _difference_json(accuracy.difference),
            "reward_diff": _difference_json(reward.difference),
            "left_out_unscored": pairing.left_out_unscored,
            "unmatched": pairing.unmatched,
            "metrics": [_row_json(row) for row in rows],
            "notes": list(notes),
        }
    )


def _unpaired(a: Run, b: Run, pairing: Pairing) -> PairedComparison:
    """B - A over each run's scored attempts, as independent samples."""
    (rewards_a, correct_a), (rewards_b, correct_b) = _verdicts(a), _verdicts(b)
    accuracy = accuracy_difference(_accuracy(correct_b), _accuracy(correct_a))
    rows = [
        _row("accuracy", correct_a, correct_b, accuracy),
        _row("mean reward", rewards_a, rewards_b, mean_difference(rewards_b, rewards_a)),
    ]
    return PairedComparison(pairing, rows, None)


def _row(name: str, a: Sequence[float], b: Sequence[float], difference: Difference) -> Row:
    return Row(name, _mean(a), _mean(b), difference, HIGHER_IS_BETTER[name])


def _mean(values: Sequence[float]) -> float:
    return fmean(values) if values else float("nan")


def _verdicts(run: Run) -> tuple[list[float], list[bool]]:
    """The rewards and correctness of the run's scored attempts at original samples."""
    verdicts = [score.verdict() for score in _originals(run) if score.scored]
    return [reward for reward, _ in verdicts], [correct for _, correct in verdicts]


def _originals(run: Run) -> list[AttemptScore]:
    """The attempts at original samples: perturbed variants are robustness's, not quality's."""
    return [score for score in run.scores if score.variant_of is None]


def _accuracy(correct: Sequence[bool]) -> Estimate:
    return wilson_interval(sum(correct), len(correct))


def _difference_json(difference: Difference) -> dict[str, Any]:
    return {
        "value": difference.value,
        "low": difference.low,
        "high": difference.high,
        "significant": difference.significant,
    }


def _key_json(key: Key) -> dict[str, Any]:
    return {"sample_id": key[0], "attempt": key[1]}


def _row_json(row: Row) -> dict[str, Any]:
    return {"metric": row.metric, "a": row.a, "b": row.b, **_difference_json(row.difference)}
