"""Anytime-valid comparison of two models on the same samples, one pair of outcomes at a time.

Each pair (a, b) of 0/1 outcomes on one sample gives d = a - b. The test keeps, for every
candidate mean difference m on a grid, the wealth of a bettor who wins when the mean is not m
(Waudby-Smith & Ramdas, "Estimating means of bounded random variables by betting", JRSS-B
2024: hedged capital, predictable plug-in bets). The m whose wealth stays below 1/alpha form a
confidence sequence: it holds at every step at once, so the comparison may stop whenever it
likes (as soon as the answer is clear, or when the samples run out) and the chance of a wrong
"better" or "worse" stays at most alpha. The grid holds 0, so "better" means the wealth
against "no difference" reached 1/alpha on the side of a positive difference. A comparison
that knows its last pair (a horizon of FINAL_LOOK_PAIRS or more) gives the sequence half of
alpha and the other half to one fixed-sample look there (a group-sequential design's last
look): a wrong verdict needs one of the two to err, so it stays at most alpha.

Hand-written rather than the `confseq` package: that one builds C++ and pulls matplotlib,
pandas and pytest in at run time; the procedure is forty lines of numpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Literal

import numpy as np

from agent_eval.errors import ConfigError

Array = Any  # a float or a numpy array of floats: the bets work on either
Verdict = Literal["better", "worse", "not yet known"]
GRID_POINTS = 401  # mean differences from -1 to 1 in steps of 0.005; 0 is one of them
MAX_BET = 0.5  # the c of the paper: no bet risks more than half the wealth
HEDGE = 0.5  # the weight of the bet on "higher" against the bet on "lower"
# The fewest pairs a fixed-sample look is taken at: its normal interval is a large-sample one.
FINAL_LOOK_PAIRS = 200


@dataclass(frozen=True)
class Comparison:
    """Where a sequential comparison stands: the verdict and the evidence behind it.

    `low`/`high`: the confidence sequence for the mean difference a - b at 1 - alpha;
    `evidence`: the wealth against "no difference" (an e-value; 1/alpha decides); `final`:
    the fixed-sample look at the horizon was taken (interval and verdict are its, where
    narrower)."""

    verdict: Verdict
    pairs: int
    difference: float
    low: float
    high: float
    evidence: float
    alpha: float
    final: bool = False

    def to_dict(self) -> dict[str, float | int | str]:
        """The comparison as JSON-able data."""
        return {
            "verdict": self.verdict,
            "pairs": self.pairs,
            "difference": self.difference,
            "low": self.low,
            "high": self.high,
            "evidence": self.evidence,
            "alpha": self.alpha,
            "final": self.final,
        }


class SequentialComparison:
    """Tests mean(a - b) = 0 over paired 0/1 outcomes, valid at whatever pair it stops.

    `horizon`: the most pairs it will take, when known. The bets stop shrinking there, and
    alpha is split: half for the confidence sequence at every pair, half for one fixed-sample
    look at the horizon (a normal interval, narrower than any sequence's there)."""

    def __init__(self, alpha: float = 0.05, horizon: int | None = None) -> None:
        if not 0 < alpha < 1:
            raise ConfigError(f"alpha {alpha} is not between 0 and 1: give e.g. 0.05")
        self.alpha = alpha
        self._horizon = horizon
        self._sequence_alpha = _sequence_alpha(alpha, horizon)
        # Bets are on x = (d + 1) / 2 in [0, 1]; the grid's means are in the same units.
        self._means = np.linspace(0.0, 1.0, GRID_POINTS)
        self._zero = GRID_POINTS // 2
        self._bettor = Bettor(np.zeros(GRID_POINTS), np.zeros(GRID_POINTS), horizon=horizon)

    def add(self, a: float, b: float) -> Comparison:
        """Take one pair of outcomes (each 0 or 1, or a reward in [0, 1]); where it stands now."""
        if not (0 <= a <= 1 and 0 <= b <= 1):
            raise ConfigError(f"outcomes ({a}, {b}) are not in [0, 1]")
        self._bettor.take((a - b + 1) / 2, self._means, self._sequence_alpha)
        return self.state()

    def state(self) -> Comparison:
        """The verdict and evidence after the pairs taken so far."""
        bettor, alpha = self._bettor, self._sequence_alpha
        wealth = np.maximum(HEDGE * np.exp(bettor.log_up), (1 - HEDGE) * np.exp(bettor.log_down))
        mean = bettor.total / bettor.pairs if bettor.pairs else 0.5
        kept = self._means[wealth < 1 / alpha]
        # The grid is coarse: where it keeps no mean, the interval narrows to the estimate.
        low, high = (kept[0], kept[-1]) if kept.size else (mean, mean)
        verdict = _verdict(bettor.log_up[self._zero], bettor.log_down[self._zero], alpha)
        final = bettor.pairs == self._horizon and alpha < self.alpha
        if final:
            looked_low, looked_high = _final_look(bettor, self.alpha - alpha)
            low, high = max(low, looked_low), min(high, looked_high)
            verdict = "better" if low > 0.5 else "worse" if high < 0.5 else verdict
        return Comparison(
            verdict=verdict,
            pairs=bettor.pairs,
            difference=2 * mean - 1,
            low=2 * float(low) - 1,
            high=2 * float(high) - 1,
            evidence=float(wealth[self._zero]),
            alpha=self.alpha,
            final=final,
        )


def first_verdicts(
    a: np.ndarray, b: np.ndarray, alpha: float, horizon: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Many comparisons at once (rows of paired outcomes), each stopped at its first verdict.

    Returns each row's verdict (+1 better, -1 worse, 0 not known after every pair) and the
    pairs it took. The same bets as SequentialComparison, at "no difference" only."""
    x = (np.asarray(a, float) - np.asarray(b, float) + 1) / 2
    runs, length = x.shape
    zeros = np.zeros(runs)
    bettor = Bettor(zeros, zeros, zeros, zeros, zeros, horizon)
    sequence_alpha = _sequence_alpha(alpha, horizon)
    verdicts, taken = np.zeros(runs, int), np.full(runs, length)
    for column in x.T:
        bettor.take(column, 0.5, sequence_alpha)
        now = np.where(HEDGE * np.exp(bettor.log_up) >= 1 / sequence_alpha, 1, 0)
        now = np.where((1 - HEDGE) * np.exp(bettor.log_down) >= 1 / sequence_alpha, -1, now)
        if bettor.pairs == horizon and sequence_alpha < alpha:
            low, high = _final_look(bettor, alpha - sequence_alpha)
            now = np.where(now == 0, np.where(low > 0.5, 1, np.where(high < 0.5, -1, 0)), now)
        fresh = (verdicts == 0) & (now != 0)
        verdicts[fresh], taken[fresh] = now[fresh], bettor.pairs
    return verdicts, taken


def _sequence_alpha(alpha: float, horizon: int | None) -> float:
    """The error left to the confidence sequence: half of alpha when there is a final look."""
    return alpha / 2 if horizon is not None and horizon >= FINAL_LOOK_PAIRS else alpha


def _final_look(bettor: Bettor, alpha: float) -> tuple[Array, Array]:
    """The fixed-sample look at the horizon: the normal interval at 1 - alpha, in the bets'
    units, around the mean of the pairs taken. One extra outcome of the largest variance (1/4)
    keeps a run of identical pairs from a zero width."""
    n = bettor.pairs
    mean, variance = bettor.total / n, (0.25 + bettor.deviations) / n
    half = NormalDist().inv_cdf(1 - alpha / 2) * np.sqrt(variance / n)
    return mean - half, mean + half


def _verdict(log_up: float, log_down: float, alpha: float) -> Verdict:
    if HEDGE * math.exp(log_up) >= 1 / alpha:
        return "better"
    if (1 - HEDGE) * math.exp(log_down) >= 1 / alpha:
        return "worse"
    return "not yet known"


@dataclass
class Bettor:
    """The two bettors' log wealth for each candidate mean (or each of many comparisons at one).

    Outcomes x are in [0, 1]; the arrays broadcast, so one code serves a grid of means and a
    batch of simulated comparisons."""

    log_up: Array
    log_down: Array
    total: Array = 0.0
    squares: Array = 0.0  # each outcome's squared distance to the running mean it ended
    deviations: Array = 0.0  # the outcomes' squared distances to their mean (Welford)
    horizon: int | None = None
    pairs: int = 0

    def take(self, x: Array, means: Array, alpha: float) -> None:
        """Settle the bets placed before `x` came, then update the running figures."""
        bet = self._bet_size(alpha)
        up = np.minimum(bet, MAX_BET / np.maximum(means, 1e-12))
        down = np.minimum(bet, MAX_BET / np.maximum(1 - means, 1e-12))
        self.log_up = self.log_up + np.log1p(up * (x - means))
        self.log_down = self.log_down + np.log1p(-down * (x - means))
        before = self.total / self.pairs if self.pairs else x
        self.pairs += 1
        self.total = self.total + x
        self.deviations = self.deviations + (x - before) * (x - self.total / self.pairs)
        self.squares = self.squares + (x - (0.5 + self.total) / (self.pairs + 1)) ** 2

    def _bet_size(self, alpha: float) -> Array:
        """The predictable plug-in bet: larger while the outcomes vary little. It shrinks as
        pairs come (the paper's t log(1 + t)) until the horizon, where it is sized for a
        confidence interval at exactly that many pairs (the paper's fixed-n bet)."""
        t = self.pairs + 1
        variance = (0.25 + self.squares) / t
        spent = t * math.log1p(t) if self.horizon is None else min(t * math.log1p(t), self.horizon)
        return np.sqrt(2 * math.log(2 / alpha) / (variance * spent))
