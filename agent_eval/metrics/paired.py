"""Two runs over the same samples, compared attempt by attempt: B - A with paired statistics.

Accuracy is tested with McNemar's exact test on the pairs the runs disagree on. Intervals come
from a bootstrap that resamples whole samples: attempts at one sample are correlated, so
resampling them one by one would make the interval too narrow.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from agent_eval.metrics.accuracy import Difference
from agent_eval.metrics.base import NAN

RESAMPLES = 10_000
DRAWN_AT_ONCE = 4_000_000


@dataclass(frozen=True)
class Pair:
    """One attempt at one sample, made by both runs: each side's correctness and reward."""

    a_correct: bool
    b_correct: bool
    a_reward: float
    b_reward: float


@dataclass(frozen=True)
class PairedDifferences:
    """B - A over paired attempts: accuracy with McNemar's p, reward, both with intervals."""

    pairs: int
    a_only: int
    """Pairs right in A and wrong in B."""
    b_only: int
    mcnemar_p: float
    accuracy: Difference
    reward: Difference
    resamples: int
    confidence: float


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p: min(1, 2 P(X <= min)) for X ~ Binomial(a_only + b_only, 1/2)."""
    if a_only < 0 or b_only < 0:
        raise ValueError(f"need counts >= 0, got {a_only} and {b_only}")
    n = a_only + b_only
    # C(n, i + 1) from C(n, i) by one multiply and one exact division: math.comb afresh for
    # each term costs quadratic time in the discordant pairs (minutes at 50,000).
    term = tail = 1
    for i in range(min(a_only, b_only)):
        term = term * (n - i) // (i + 1)
        tail += term
    # Dividing Python ints rounds correctly however large 2**n is; n = 0 gives 2 / 1, so p = 1.
    return min(1.0, 2 * tail / 2**n)


def paired_differences(
    samples: Sequence[Sequence[Pair]],
    resamples: int = RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> PairedDifferences:
    """B - A over the pairs, grouped by sample; the same seed gives the same intervals."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    pairs = [pair for sample in samples for pair in sample]
    a_only = sum(p.a_correct and not p.b_correct for p in pairs)
    b_only = sum(p.b_correct and not p.a_correct for p in pairs)
    totals = [_sample_totals(sample) for sample in samples if sample]
    means = _bootstrap(totals, resamples, np.random.default_rng(seed))
    accuracy, reward = (
        _percentile_interval(_mean(totals, column), [m[column] for m in means], confidence)
        for column in (0, 1)
    )
    return PairedDifferences(
        pairs=len(pairs),
        a_only=a_only,
        b_only=b_only,
        mcnemar_p=mcnemar_exact(a_only, b_only),
        accuracy=accuracy,
        reward=reward,
        resamples=resamples,
        confidence=confidence,
    )


def _sample_totals(sample: Sequence[Pair]) -> tuple[float, float, int]:
    """One sample's summed B - A in correctness and in reward, and its number of pairs."""
    correct = sum(int(p.b_correct) - int(p.a_correct) for p in sample)
    return float(correct), math.fsum(p.b_reward - p.a_reward for p in sample), len(sample)


def _mean(totals: Sequence[tuple[float, float, int]], column: int) -> float:
    count = sum(total[2] for total in totals)
    return math.fsum(total[column] for total in totals) / count if count else NAN


def _bootstrap(
    totals: Sequence[tuple[float, float, int]], resamples: int, rng: np.random.Generator
) -> list[tuple[float, float]]:
    """Mean accuracy and reward differences of `resamples` draws of as many samples, replaced."""
    if not totals:
        return []
    # One contiguous array per column: np.take from each is about 4x faster than indexing rows.
    correct, reward, count = np.asarray(totals, dtype=np.float64).T.copy()
    # Draws go in chunks of about DRAWN_AT_ONCE picks: 100,000 samples x 10,000 resamples
    # at once would be 8 GB of indices.
    chunk = max(1, DRAWN_AT_ONCE // len(totals))
    means: list[tuple[float, float]] = []
    for start in range(0, resamples, chunk):
        picks = rng.integers(0, len(totals), size=(min(chunk, resamples - start), len(totals)))
        counts = np.take(count, picks).sum(axis=1)
        correct_means = np.take(correct, picks).sum(axis=1) / counts
        reward_means = np.take(reward, picks).sum(axis=1) / counts
        means.extend(zip(correct_means.tolist(), reward_means.tolist(), strict=True))
    return means


def _percentile_interval(value: float, draws: list[float], confidence: float) -> Difference:
    """`value` with the draws' central `confidence` range; NaN bounds without draws."""
    if not draws or math.isnan(value):
        return Difference(value, NAN, NAN, significant=False)
    ordered, tail = sorted(draws), (1 - confidence) / 2
    low = ordered[math.floor(tail * (len(ordered) - 1))]
    high = ordered[math.ceil((1 - tail) * (len(ordered) - 1))]
    return Difference(value, low, high, significant=low > 0 or high < 0)
