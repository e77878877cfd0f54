"""Metrics of an evaluation run: small pure functions that declare their direction.

Every metric returns NaN (null in JSON) for empty input instead of raising. `summarize` is the
one aggregation entry point; `accuracy_difference` compares two runs.
"""

from agent_eval.metrics.accuracy import (
    Difference,
    accuracy,
    accuracy_difference,
    mean_reward,
    wilson_interval,
    z_score,
)
from agent_eval.metrics.base import (
    AttemptScore,
    Estimate,
    is_higher_better,
    metric,
    normalize_answer,
)
from agent_eval.metrics.performance import (
    ErrorSummary,
    LatencySummary,
    Throughput,
    TokenSummary,
    error_summary,
    latency_summary,
    percentile,
    throughput,
    token_summary,
)
from agent_eval.metrics.sampling import (
    consistency,
    maj_at_k,
    majority_answer,
    mean_pass_at_k,
    mean_pass_hat_k,
    mean_turn_reward,
    pass_at_k,
    pass_hat_k,
    require_k,
    session_consistency,
)
from agent_eval.metrics.summary import DIRECTIONS, Summary, summarize, summarize_tally
from agent_eval.metrics.tally import RunTally, SampleTally, SessionTally

__all__ = [
    "DIRECTIONS",
    "AttemptScore",
    "Difference",
    "ErrorSummary",
    "Estimate",
    "LatencySummary",
    "RunTally",
    "SampleTally",
    "SessionTally",
    "Summary",
    "Throughput",
    "TokenSummary",
    "accuracy",
    "accuracy_difference",
    "consistency",
    "error_summary",
    "is_higher_better",
    "latency_summary",
    "maj_at_k",
    "majority_answer",
    "mean_pass_at_k",
    "mean_pass_hat_k",
    "mean_reward",
    "mean_turn_reward",
    "metric",
    "normalize_answer",
    "pass_at_k",
    "pass_hat_k",
    "percentile",
    "require_k",
    "session_consistency",
    "summarize",
    "summarize_tally",
    "throughput",
    "token_summary",
    "wilson_interval",
    "z_score",
]
