"""The one aggregation entry point: a run's records in, a JSON-ready summary out."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from agent_eval.metrics.accuracy import accuracy, mean_reward
from agent_eval.metrics.base import AttemptScore, Estimate, is_higher_better
from agent_eval.metrics.performance import (
    ErrorSummary,
    LatencySummary,
    Throughput,
    TokenSummary,
    error_summary,
    latency_summary,
    throughput,
    token_summary,
)
from agent_eval.metrics.sampling import (
    consistency,
    maj_at_k,
    mean_pass_at_k,
    mean_pass_hat_k,
    mean_turn_reward,
    session_consistency,
)
from agent_eval.metrics.tally import RunTally


@dataclass(frozen=True)
class Summary:
    """Every metric of one run; NaN marks a metric the run has no data for."""

    samples: int
    attempts: int
    accuracy: Estimate
    mean_reward: float
    pass_at_k: dict[int, float]
    pass_hat_k: dict[int, float]
    maj_at_k: dict[int, float]
    consistency: float
    sessions: int
    session_consistency: float
    mean_turn_reward: float
    latency_s: LatencySummary
    tokens: TokenSummary
    throughput: Throughput
    errors: ErrorSummary

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: NaN becomes None, k keys become strings, plus each metric's direction."""
        data = _json_ready(dataclasses.asdict(self))
        data["higher_is_better"] = dict(DIRECTIONS)
        return data


DIRECTIONS: dict[str, bool] = {
    "accuracy": is_higher_better(accuracy),
    "mean_reward": is_higher_better(mean_reward),
    "pass_at_k": is_higher_better(mean_pass_at_k),
    "pass_hat_k": is_higher_better(mean_pass_hat_k),
    "maj_at_k": is_higher_better(maj_at_k),
    "consistency": is_higher_better(consistency),
    "session_consistency": is_higher_better(session_consistency),
    "mean_turn_reward": is_higher_better(mean_turn_reward),
    "latency_s": is_higher_better(latency_summary),
    "tokens": is_higher_better(token_summary),
    "throughput": is_higher_better(throughput),
    "errors": is_higher_better(error_summary),
}
"""Summary field -> whether higher is better, as the metric functions declare it."""


def summarize(
    scores: Iterable[AttemptScore],
    wall_time_s: float,
    ks: Sequence[int] = (1,),
    confidence: float = 0.95,
) -> Summary:
    """Summarise a run in one pass over its records; k > the smallest n is a ValueError."""
    _check_ks(ks)
    tally = RunTally(keep=max(ks, default=1)).extend(scores)
    return summarize_tally(tally, wall_time_s, ks, confidence)


def summarize_tally(
    tally: RunTally, wall_time_s: float, ks: Sequence[int] = (1,), confidence: float = 0.95
) -> Summary:
    """The summary of records already counted (e.g. a live view's running tally)."""
    _check_ks(ks)
    samples = list(tally.samples.values())
    counts = [(sample.n, sample.c) for sample in samples]
    tokens = token_summary(tally.prompt_tokens, tally.completion_tokens, tally.attempts)
    return Summary(
        samples=len(samples),
        attempts=tally.attempts,
        accuracy=accuracy(tally.correct, tally.attempts, confidence),
        mean_reward=mean_reward(tally.reward_sum, tally.attempts),
        pass_at_k={k: mean_pass_at_k(counts, k) for k in ks},
        pass_hat_k={k: mean_pass_hat_k(counts, k) for k in ks},
        maj_at_k={k: maj_at_k(samples, k) for k in ks},
        consistency=consistency(samples),
        sessions=tally.sessions.sessions,
        session_consistency=session_consistency(tally.sessions),
        mean_turn_reward=mean_turn_reward(tally.sessions),
        latency_s=latency_summary(tally.latencies),
        tokens=tokens,
        throughput=throughput(tally.attempts, tokens, wall_time_s),
        errors=error_summary(tally.errors, tally.attempts),
    )


def _check_ks(ks: Sequence[int]) -> None:
    bad = [k for k in ks if isinstance(k, bool) or not isinstance(k, int) or k < 1]
    if bad:
        raise ValueError(f"every k must be a positive integer, got {bad}")


def _json_ready(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(key): _json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
