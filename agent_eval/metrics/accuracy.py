"""Accuracy with a Wilson interval, and whether two runs' accuracies really differ."""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from agent_eval.metrics.base import NAN, Estimate, metric, ratio


def z_score(confidence: float) -> float:
    """Two-sided standard normal quantile for `confidence` (1.96 for 0.95)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> Estimate:
    """Wilson score interval for `successes` out of `n`, and the standard error sqrt(p(1-p)/n)."""
    if not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    z = z_score(confidence)
    if n == 0:
        return Estimate(NAN, NAN, NAN, NAN, 0)
    p, z2 = successes / n, z * z
    center = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    stderr = math.sqrt(p * (1 - p) / n)
    # Clamped to [0, p] and [p, 1]: exact at p = 0 and p = 1, where rounding would leave dust.
    low, high = min(p, max(0.0, center - half)), max(p, min(1.0, center + half))
    return Estimate(p, stderr, low, high, n)


@metric(higher_is_better=True)
def accuracy(correct: int, attempts: int, confidence: float = 0.95) -> Estimate:
    """Fraction of attempts marked correct, with its Wilson interval.

    Attempts are taken as independent; several attempts at one sample are not, which narrows
    the interval somewhat.
    """
    return wilson_interval(correct, attempts, confidence)


@metric(higher_is_better=True)
def mean_reward(reward_sum: float, attempts: int) -> float:
    """Mean reward per attempt; NaN without attempts."""
    return ratio(reward_sum, attempts)


@dataclass(frozen=True)
class Difference:
    """Run A's accuracy minus run B's, its interval, and whether the interval excludes 0."""

    value: float
    low: float
    high: float
    significant: bool


@metric(higher_is_better=True)
def accuracy_difference(a: Estimate, b: Estimate, confidence: float = 0.95) -> Difference:
    """a - b with Newcombe's hybrid score interval (from each run's Wilson interval).

    `significant` means the difference exceeds the noise. The runs are treated as independent;
    for two runs over the same samples that is conservative (the interval is wider).
    """
    if a.n == 0 or b.n == 0:
        return Difference(NAN, NAN, NAN, significant=False)
    wa = wilson_interval(round(a.value * a.n), a.n, confidence)
    wb = wilson_interval(round(b.value * b.n), b.n, confidence)
    value = wa.value - wb.value
    low = value - math.hypot(wa.value - wa.low, wb.high - wb.value)
    high = value + math.hypot(wa.high - wa.value, wb.value - wb.low)
    return Difference(value, low, high, significant=low > 0 or high < 0)
