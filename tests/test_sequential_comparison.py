"""The sequential comparison: wrong verdicts at most alpha whenever it stops, and real
differences found; the batch form decides as the one-at-a-time form does."""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import pytest

from agent_eval.errors import ConfigError
from agent_eval.metrics.sequential import (
    FINAL_LOOK_PAIRS,
    SequentialComparison,
    first_verdicts,
)

ALPHA = 0.05
RUNS = 1_000
PAIRS = 400


def paired(rng: np.random.Generator, p_a: float, p_b: float, agree: float) -> np.ndarray:
    """RUNS x PAIRS outcomes of two models: with probability `agree` b repeats a's outcome
    where their means allow it (as two checkpoints share most answers), else draws its own."""
    a = rng.random((RUNS, PAIRS)) < p_a
    own = rng.random((RUNS, PAIRS)) < (p_b - agree * p_a) / (1 - agree)
    b = np.where(rng.random((RUNS, PAIRS)) < agree, a, own)
    return np.stack([a, b])


@pytest.mark.parametrize("horizon", [None, 50, PAIRS], ids=lambda h: f"horizon={h}")
@pytest.mark.parametrize(("p", "agree"), [(0.5, 0.0), (0.8, 0.9), (0.1, 0.5), (0.6, 0.97)], ids=str)
def test_no_difference_gives_a_verdict_at_most_alpha_of_the_time(
    p: float, agree: float, horizon: int | None
) -> None:
    """Stopping at the first verdict (the most a caller could peek) over 400 pairs, whatever
    horizon the bets are sized for (a horizon of 50 is passed by 350 pairs)."""
    a, b = paired(np.random.default_rng(7), p, p, agree)
    verdicts, _ = first_verdicts(a, b, ALPHA, horizon)
    assert np.mean(verdicts != 0) <= ALPHA


def test_the_simulation_catches_a_test_that_peeks() -> None:
    """A z-test at 0.05 checked after every pair (from the 10th) is wrong far more often than
    0.05 on the same data: the simulation above can tell a valid test from one that is not."""
    a, b = paired(np.random.default_rng(7), 0.5, 0.5, 0.0)
    d = a.astype(float) - b
    n = np.arange(1, PAIRS + 1)
    mean = np.cumsum(d, axis=1) / n
    spread = np.sqrt(np.maximum(np.cumsum(d * d, axis=1) / n - mean**2, 1e-12) / n)
    peeked = np.any((np.abs(mean) / spread > 1.96) & (n >= 10), axis=1)
    assert np.mean(peeked) > 4 * ALPHA


@pytest.mark.parametrize(("p_a", "p_b", "sign"), [(0.7, 0.5, 1), (0.4, 0.6, -1)])
def test_a_real_difference_is_found_and_signed(p_a: float, p_b: float, sign: int) -> None:
    a, b = paired(np.random.default_rng(3), p_a, p_b, 0.0)
    verdicts, taken = first_verdicts(a, b, ALPHA)
    assert np.mean(verdicts == sign) >= 0.9
    assert np.mean(verdicts == -sign) <= ALPHA
    # Clear differences stop early: the probe need not play every sample.
    assert np.median(taken[verdicts == sign]) < PAIRS / 2


@pytest.mark.parametrize(
    ("p_b", "horizon"), [(0.55, None), (0.68, PAIRS)], ids=["open-ended", "final look"]
)
def test_one_at_a_time_matches_the_batch_and_holds_the_difference(
    p_b: float, horizon: int | None
) -> None:
    """Including the verdicts the final look at the horizon gives (a difference of 0.07 is
    often found only there)."""
    a, b = paired(np.random.default_rng(11), 0.75, p_b, 0.3)
    verdicts, taken = first_verdicts(a[:20], b[:20], ALPHA, horizon)
    if horizon is not None:
        assert np.sum((verdicts != 0) & (taken == horizon)) >= 3
    for row in range(20):
        comparison = SequentialComparison(ALPHA, horizon)
        for pair in range(PAIRS):
            state = comparison.add(float(a[row, pair]), float(b[row, pair]))
            if state.verdict != "not yet known":
                break
        expected = {1: "better", -1: "worse", 0: "not yet known"}[int(verdicts[row])]
        assert (state.verdict, state.pairs) == (expected, int(taken[row]))
        assert state.low <= state.difference <= state.high
        if state.verdict == "better":
            assert state.low > 0 and (state.evidence >= 1 / ALPHA or state.final)


def test_the_interval_narrows_around_the_observed_difference() -> None:
    comparison = SequentialComparison(ALPHA)
    first = comparison.add(1, 0)
    assert (first.low, first.high) == (-1.0, 1.0)
    for index in range(300):
        state = comparison.add(1, index % 2)
    assert state.verdict == "better"
    assert state.difference == pytest.approx(0.5, abs=0.01)
    assert 0.3 < state.low < 0.5 < state.high < 0.7


def test_bets_sized_for_a_horizon_narrow_the_interval_there() -> None:
    """At the pair it was sized for, the interval is narrower than the anytime one (over 10
    comparisons), and both hold the difference."""
    a, b = paired(np.random.default_rng(5), 0.6, 0.55, 0.5)
    widths: dict[int | None, float] = {None: 0.0, PAIRS: 0.0}
    for row in range(10):
        for horizon in widths:
            comparison = SequentialComparison(ALPHA, horizon)
            for pair in range(PAIRS):
                state = comparison.add(float(a[row, pair]), float(b[row, pair]))
            assert state.low <= state.difference <= state.high
            widths[horizon] += state.high - state.low
    assert widths[PAIRS] < 0.93 * widths[None]


def test_at_its_horizon_the_interval_is_the_fixed_sample_one() -> None:
    """At the last pair, half the error buys a normal interval about the mean difference;
    one pair before, the sequence's interval (with the other half) is wider."""
    a, b = paired(np.random.default_rng(13), 0.6, 0.55, 0.5)
    d = a[0].astype(float) - b[0]
    comparison = SequentialComparison(ALPHA, PAIRS)
    states = [comparison.add(float(x), float(y)) for x, y in zip(a[0], b[0], strict=True)]
    before, last = states[-2], states[-1]
    x = (d + 1) / 2
    variance = (0.25 + np.sum((x - x.mean()) ** 2)) / PAIRS
    half = 2 * NormalDist().inv_cdf(1 - ALPHA / 4) * np.sqrt(variance / PAIRS)
    assert last.final and not before.final
    assert (last.low, last.high) == pytest.approx((d.mean() - half, d.mean() + half))
    assert last.high - last.low < 0.85 * (before.high - before.low)


def test_a_short_horizon_takes_no_final_look() -> None:
    """Under FINAL_LOOK_PAIRS pairs a normal interval is not trusted: the last pair's interval
    is the sequence's, wider than the fixed-sample one would be."""
    a, b = paired(np.random.default_rng(17), 0.6, 0.55, 0.5)
    short = FINAL_LOOK_PAIRS - 1
    comparison = SequentialComparison(ALPHA, short)
    for x, y in zip(a[0, :short], b[0, :short], strict=True):
        last = comparison.add(float(x), float(y))
    d = a[0, :short].astype(float) - b[0, :short]
    half = (
        2 * NormalDist().inv_cdf(1 - ALPHA / 4) * np.sqrt((0.25 + np.var(d / 2) * short) / short**2)
    )
    assert not last.final
    assert last.high - last.low > 1.1 * 2 * half


@pytest.mark.parametrize("alpha", [0, 1, 1.5])
def test_an_alpha_outside_zero_and_one_is_refused(alpha: float) -> None:
    with pytest.raises(ConfigError, match="between 0 and 1"):
        SequentialComparison(alpha)


def test_outcomes_outside_zero_and_one_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"not in \[0, 1\]"):
        SequentialComparison().add(2, 0)
