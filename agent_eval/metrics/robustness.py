"""Robustness: accuracy on perturbed variants of each sample, paired with their originals.

A variant is played with the same attempt indices as its original, so attempt a of a variant
pairs with attempt a of its original. Each sample keeps two bit masks (attempts scored, attempts
right), so the tally stays one small entry per sample however many attempts stream past.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from agent_eval.metrics.accuracy import accuracy
from agent_eval.metrics.base import NAN, AttemptScore, Estimate, metric
from agent_eval.metrics.paired import RESAMPLES, Pair, paired_differences


@dataclass
class Outcomes:
    """One sample's attempts as bit masks: bit a is set when attempt a was scored, or right."""

    scored: int = 0
    right: int = 0

    def add(self, score: AttemptScore) -> None:
        if score.scored:
            bit = 1 << score.attempt
            self.scored |= bit
            self.right |= bit if score.correct else 0


@dataclass
class VariantOutcomes(Outcomes):
    """A variant's attempts, with the original it perturbs and the kind of perturbation."""

    original: str = ""
    kind: str = ""


@dataclass
class RobustnessTally:
    """Every sample's outcomes, originals and variants apart, kept while the records stream."""

    originals: dict[str, Outcomes] = field(default_factory=dict)
    variants: dict[str, VariantOutcomes] = field(default_factory=dict)

    def add(self, score: AttemptScore) -> None:
        """Count one attempt; an unscored one only says that its sample was played."""
        if score.variant_of is None:
            self.originals.setdefault(score.sample_id, Outcomes()).add(score)
            return
        kind = score.perturbation or "unknown"
        variant = VariantOutcomes(original=score.variant_of, kind=kind)
        self.variants.setdefault(score.sample_id, variant).add(score)


@dataclass(frozen=True)
class Drop:
    """Original minus variant accuracy over the pairs, with its interval: positive is worse."""

    value: float
    low: float
    high: float


@dataclass(frozen=True)
class KindRobustness:
    """One perturbation kind: its accuracy, and how its variants fared against their originals."""

    accuracy: Estimate
    variants: int
    """Variant samples played."""
    skipped: int
    """Originals with no variant of this kind (its perturbation could not make one)."""
    pairs: int
    """(original, variant) attempt pairs at the same attempt index, both scored."""
    broke: int
    """Pairs right on the original and wrong on the variant."""
    fixed: int
    """Pairs wrong on the original and right on the variant."""
    drop: Drop
    mcnemar_p: float


@metric(higher_is_better=True)
def original_accuracy(tally: RobustnessTally, confidence: float = 0.95) -> Estimate:
    """Accuracy over the originals' scored attempts."""
    outcomes = tally.originals.values()
    right = sum(sample.right.bit_count() for sample in outcomes)
    return accuracy(right, sum(sample.scored.bit_count() for sample in outcomes), confidence)


@metric(higher_is_better=True)
def robust_accuracy(tally: RobustnessTally, confidence: float = 0.95) -> Estimate:
    """Share of (original, attempt) units right on the original and on every variant it has.

    A unit counts where the original and all its variants scored that attempt: one left
    unscored leaves the unit undecided, not wrong.
    """
    right = units = 0
    originals: defaultdict[str, list[VariantOutcomes]] = defaultdict(list)
    for variant in tally.variants.values():
        originals[variant.original].append(variant)
    for original, variants in originals.items():
        found = tally.originals.get(original)
        if found is None:
            continue
        scored, correct = found.scored, found.right
        for variant in variants:
            scored &= variant.scored
            correct &= variant.right
        units += scored.bit_count()
        right += (scored & correct).bit_count()
    return accuracy(right, units, confidence)


@metric(higher_is_better=True)
def by_kind(
    tally: RobustnessTally, confidence: float = 0.95, resamples: int = RESAMPLES
) -> dict[str, KindRobustness]:
    """Each perturbation kind's figures, by kind name in sorted order.

    `resamples=0` leaves out the drop's bootstrap interval (its bounds are NaN): a live view
    that asks every second cannot pay for it."""
    kinds: defaultdict[str, list[VariantOutcomes]] = defaultdict(list)
    for variant in tally.variants.values():
        kinds[variant.kind].append(variant)
    return {kind: _kind(tally, kinds[kind], confidence, resamples) for kind in sorted(kinds)}


def _kind(
    tally: RobustnessTally, variants: list[VariantOutcomes], confidence: float, resamples: int
) -> KindRobustness:
    right = sum(variant.right.bit_count() for variant in variants)
    scored = sum(variant.scored.bit_count() for variant in variants)
    perturbed = {variant.original for variant in variants}
    # The variant as A and its original as B: paired_differences' B - A is then the drop.
    groups = [_pairs(tally.originals.get(v.original, Outcomes()), v) for v in variants]
    paired = paired_differences(groups, resamples, confidence)
    return KindRobustness(
        accuracy=accuracy(right, scored, confidence),
        variants=len(variants),
        skipped=sum(original not in perturbed for original in tally.originals),
        pairs=paired.pairs,
        broke=paired.b_only,
        fixed=paired.a_only,
        drop=Drop(paired.accuracy.value, paired.accuracy.low, paired.accuracy.high),
        mcnemar_p=paired.mcnemar_p if paired.pairs else NAN,
    )


_PAIRS = {
    (variant, original): Pair(variant, original, float(variant), float(original))
    for variant in (False, True)
    for original in (False, True)
}
"""The four pairs there are, shared: a big run's pair lists then hold only references."""


def _pairs(original: Outcomes, variant: VariantOutcomes) -> list[Pair]:
    """The pairs of a variant's attempts with its original's at the same index, both scored."""
    both = original.scored & variant.scored
    return [
        _PAIRS[bool(variant.right >> a & 1), bool(original.right >> a & 1)]
        for a in range(both.bit_length())
        if both >> a & 1
    ]
