"""Metrics over several attempts or turns: pass@k, pass^k, maj@k, agreement, variance, sessions."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from fractions import Fraction
from statistics import fmean

from agent_eval.metrics.base import NAN, metric, ratio
from agent_eval.metrics.tally import SampleTally, SessionTally
from agent_eval.metrics.voting import majority_share


def _check_counts(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")


def require_k(k: int, ns: Iterable[int]) -> None:
    """Raise a ValueError naming k and the smallest n unless 1 <= k <= n for every sample."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got k={k}")
    smallest = min(ns, default=k)
    if k > smallest:
        raise ValueError(
            f"k={k} needs at least {k} attempts per sample, but the smallest sample has "
            f"n={smallest}; use k <= {smallest} or run more attempts per sample"
        )


@metric(higher_is_better=True)
def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one sample, 1 - C(n-c, k)/C(n, k) (Chen et al. 2021)."""
    _check_counts(n, c, k)
    # Exact, then rounded once: pass@1 is c/n to the last bit, as maj@1 is.
    return float(1 - Fraction(math.comb(n - c, k), math.comb(n, k)))


@metric(higher_is_better=True)
def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k of one sample (tau-bench): chance that k i.i.d. attempts all pass, C(c, k)/C(n, k)."""
    _check_counts(n, c, k)
    return math.prod((c - i) / (n - i) for i in range(k))


@metric(higher_is_better=True)
def mean_pass_at_k(counts: Sequence[tuple[int, int]], k: int) -> float:
    """pass@k averaged over samples given as (n, c); NaN without samples."""
    if not counts:
        return NAN
    require_k(k, (n for n, _ in counts))
    return fmean(pass_at_k(n, c, k) for n, c in counts)


@metric(higher_is_better=True)
def mean_pass_hat_k(counts: Sequence[tuple[int, int]], k: int) -> float:
    """pass^k averaged over samples given as (n, c); NaN without samples."""
    if not counts:
        return NAN
    require_k(k, (n for n, _ in counts))
    return fmean(pass_hat_k(n, c, k) for n, c in counts)


@metric(higher_is_better=True)
def maj_at_k(samples: Sequence[SampleTally], k: int) -> float:
    """Share of samples whose most frequent answer among k attempts is right (`MAJ_AT_K`).

    Averaged exactly over every k of each sample's n attempts, as pass@k is: maj@1 is pass@1.
    """
    if not samples:
        return NAN
    require_k(k, (sample.n for sample in samples))
    return fmean(float(majority_share(sample.verdicts, k)) for sample in samples)


@metric(higher_is_better=True)
def consistency(samples: Iterable[SampleTally]) -> float:
    """Fraction of samples with 2+ attempts whose attempts all gave the same answer; else NaN."""
    agreements = [sample.agree for sample in samples if sample.n >= 2]
    return fmean(agreements) if agreements else NAN


@metric(higher_is_better=False)
def reward_variance(samples: Iterable[SampleTally]) -> float:
    """Mean over samples with 2+ attempts of their rewards' population variance; else NaN.

    0 means each sample's attempts earned equal rewards; 0.25 is the most rewards in [0, 1] allow.
    """
    variances = [_variance(sample) for sample in samples if sample.n >= 2]
    return fmean(variances) if variances else NAN


def _variance(sample: SampleTally) -> float:
    mean = sample.reward_sum / sample.n
    # Rounding can leave a tiny negative where the rewards are all equal.
    return max(0.0, sample.reward_squares / sample.n - mean * mean)


@metric(higher_is_better=True)
def session_success(sessions: SessionTally) -> float:
    """Fraction of multi-turn sessions where every turn's reward is 1; NaN without sessions."""
    return ratio(sessions.full, sessions.sessions)


@metric(higher_is_better=True)
def mean_turn_reward(sessions: SessionTally) -> float:
    """Mean reward over all turns of all sessions (pooled); NaN without turns."""
    return ratio(sessions.reward_sum, sessions.turns)


@metric(higher_is_better=True)
def turn_accuracy(sessions: SessionTally) -> list[float]:
    """Fraction of sessions right at each turn, turn 1 first, over the sessions that reached it."""
    return [ratio(r, n) for r, n in zip(sessions.right_by_turn, sessions.seen_by_turn, strict=True)]


@metric(higher_is_better=False)
def flip_rate(sessions: SessionTally) -> float:
    """Fraction of challenge turns whose answer differs from the turn before's; NaN without any.

    Only challenges after a turn with a parsed answer count; no answer on the challenge is a flip.
    """
    return ratio(sessions.flips, sessions.challenges)
