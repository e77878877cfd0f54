"""Cost and speed of a run: latency percentiles, tokens, throughput, calls, errors by kind."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import fmean

from agent_eval.metrics.base import NAN, metric, ratio


def percentile(ordered: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) of sorted values by linear interpolation between closest ranks.

    Same as numpy's default and statistics.quantiles(method="inclusive"); NaN when empty.
    """
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must lie in [0, 1], got {q}")
    if not ordered:
        return NAN
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


@dataclass(frozen=True)
class LatencySummary:
    """Seconds, of attempts (errored ones included) or to first tokens; percentiles interpolate
    linearly."""

    n: int
    mean: float
    p50: float
    p90: float
    p99: float
    max: float


@metric(higher_is_better=False)
def latency_summary(latencies: Iterable[float]) -> LatencySummary:
    """Mean, p50, p90, p99 and max of per-attempt latencies; NaN throughout when empty."""
    ordered = sorted(latencies)
    if not ordered:
        return LatencySummary(0, NAN, NAN, NAN, NAN, NAN)
    p50, p90, p99 = (percentile(ordered, q) for q in (0.5, 0.9, 0.99))
    return LatencySummary(len(ordered), fmean(ordered), p50, p90, p99, ordered[-1])


@metric(higher_is_better=True)
def cache_hit_rate(cached_tokens: int, prompt_tokens: int) -> float:
    """The share of prompt tokens workers served from their prefix cache, over the model calls
    whose worker reported it; NaN when none did (not reported is not a miss)."""
    return ratio(cached_tokens, prompt_tokens)


@dataclass(frozen=True)
class TokenSummary:
    """Token totals of a run and means per attempt."""

    prompt: int
    completion: int
    total: int
    mean_prompt: float
    mean_completion: float


@metric(higher_is_better=False)
def token_summary(prompt_tokens: int, completion_tokens: int, attempts: int) -> TokenSummary:
    """Totals and per-attempt means (NaN without attempts); fewer tokens cost less."""
    return TokenSummary(
        prompt=prompt_tokens,
        completion=completion_tokens,
        total=prompt_tokens + completion_tokens,
        mean_prompt=ratio(prompt_tokens, attempts),
        mean_completion=ratio(completion_tokens, attempts),
    )


@dataclass(frozen=True)
class Throughput:
    """Attempts and tokens per second of wall time; completion tokens (generated) apart from
    prompt tokens (read, and many times more), since a sum of both would say neither.

    The wall time runs from the proxy being ready to the last attempt's end; the live view
    measures the same, so its figures and its ETA agree with the summary's.
    """

    wall_time_s: float
    attempts_per_s: float
    completion_tokens_per_s: float
    prompt_tokens_per_s: float


@metric(higher_is_better=True)
def throughput(attempts: int, tokens: TokenSummary, wall_time_s: float) -> Throughput:
    """Rates over the run's wall time; NaN when the wall time is not positive."""
    return Throughput(
        wall_time_s=wall_time_s,
        attempts_per_s=ratio(attempts, wall_time_s),
        completion_tokens_per_s=ratio(tokens.completion, wall_time_s),
        prompt_tokens_per_s=ratio(tokens.prompt, wall_time_s),
    )


@dataclass(frozen=True)
class RateLabel:
    """How a rate is named and printed, the same in the live view and in the summary table."""

    unit: str
    spec: str

    def text(self, value: float | None) -> str:
        """`2.38 attempts/s`, or `- attempts/s` while the rate is not measured yet."""
        return f"- {self.unit}" if value is None else f"{value:{self.spec}} {self.unit}"


# Attempts, not samples: with n attempts per sample a sample is counted n times.
ATTEMPTS_PER_S = RateLabel("attempts/s", ",.2f")
COMPLETION_TOKENS_PER_S = RateLabel("completion tokens/s", ",.1f")
PROMPT_TOKENS_PER_S = RateLabel("prompt tokens/s", ",.1f")


TOOL_ERROR_PREFIXES = ("error:", "an error occurred while running the tool")
"""How a tool result reads when the call failed: our tools' convention and the Agents SDK's."""


def is_tool_error(result: str) -> bool:
    """Whether a tool call's result, as the model saw it, reports a failure."""
    return result.lstrip().casefold().startswith(TOOL_ERROR_PREFIXES)


@dataclass(frozen=True)
class CallSummary:
    """Model and tool calls of a run, per attempt, and the share of tool calls that failed."""

    model_calls: int
    tool_calls: int
    tool_errors: int
    model_calls_per_attempt: float
    tool_calls_per_attempt: float
    tool_error_rate: float


@metric(higher_is_better=False)
def call_summary(model_calls: int, tool_calls: int, tool_errors: int, attempts: int) -> CallSummary:
    """Totals, means per attempt (NaN without attempts), error rate (NaN without tool calls)."""
    return CallSummary(
        model_calls=model_calls,
        tool_calls=tool_calls,
        tool_errors=tool_errors,
        model_calls_per_attempt=ratio(model_calls, attempts),
        tool_calls_per_attempt=ratio(tool_calls, attempts),
        tool_error_rate=ratio(tool_errors, tool_calls),
    )


@dataclass(frozen=True)
class ErrorSummary:
    """Failed attempts: how many, their share of attempts, and counts by kind (most first)."""

    total: int
    rate: float
    by_kind: dict[str, int]
    by_limit: dict[str, int] = field(default_factory=dict)
    """The limit_exceeded ones by the limit passed (tokens, wall_time, ...), most first."""


@metric(higher_is_better=False)
def error_summary(
    by_kind: Mapping[str, int], attempts: int, by_limit: Mapping[str, int] | None = None
) -> ErrorSummary:
    """Errors counted by kind (and limit_exceeded by limit) and their rate per attempt (NaN
    without attempts)."""
    ordered = _most_first(by_kind)
    total = sum(ordered.values())
    return ErrorSummary(total, ratio(total, attempts), ordered, _most_first(by_limit or {}))


def _most_first(counts: Mapping[str, int]) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
