"""Metrics of an evaluation run: small pure functions that declare their direction.

Every metric returns NaN (null in JSON) for empty input instead of raising. `summarize` is the
one aggregation entry point; `accuracy_difference` compares two runs, `paired_differences`
two runs over the same samples, attempt by attempt, and `by_kind` perturbed variants with
their originals.
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
from agent_eval.metrics.paired import (
    RESAMPLES,
    Pair,
    PairedDifferences,
    mcnemar_exact,
    paired_differences,
)
from agent_eval.metrics.performance import (
    CallSummary,
    ErrorSummary,
    LatencySummary,
    Throughput,
    TokenSummary,
    cache_hit_rate,
    call_summary,
    error_summary,
    is_tool_error,
    latency_summary,
    percentile,
    throughput,
    token_summary,
)
from agent_eval.metrics.robustness import (
    Drop,
    KindRobustness,
    RobustnessTally,
    by_kind,
    original_accuracy,
    robust_accuracy,
)
from agent_eval.metrics.sampling import (
    consistency,
    flip_rate,
    maj_at_k,
    mean_pass_at_k,
    mean_pass_hat_k,
    mean_turn_reward,
    pass_at_k,
    pass_hat_k,
    require_k,
    reward_variance,
    session_success,
    turn_accuracy,
)
from agent_eval.metrics.summary import (
    DIRECTIONS,
    Summary,
    json_ready,
    summarize,
    summarize_tally,
)
from agent_eval.metrics.tally import AttemptCounts, RunTally, SampleTally, SessionTally
from agent_eval.metrics.voting import MAJ_AT_K, majority_share, top_answers

__all__ = [
    "DIRECTIONS",
    "MAJ_AT_K",
    "RESAMPLES",
    "AttemptCounts",
    "AttemptScore",
    "CallSummary",
    "Difference",
    "Drop",
    "ErrorSummary",
    "Estimate",
    "KindRobustness",
    "LatencySummary",
    "Pair",
    "PairedDifferences",
    "RobustnessTally",
    "RunTally",
    "SampleTally",
    "SessionTally",
    "Summary",
    "Throughput",
    "TokenSummary",
    "accuracy",
    "accuracy_difference",
    "by_kind",
    "cache_hit_rate",
    "call_summary",
    "consistency",
    "error_summary",
    "flip_rate",
    "is_higher_better",
    "is_tool_error",
    "json_ready",
    "latency_summary",
    "maj_at_k",
    "majority_share",
    "mcnemar_exact",
    "mean_pass_at_k",
    "mean_pass_hat_k",
    "mean_reward",
    "mean_turn_reward",
    "metric",
    "normalize_answer",
    "original_accuracy",
    "paired_differences",
    "pass_at_k",
    "pass_hat_k",
    "percentile",
    "require_k",
    "reward_variance",
    "robust_accuracy",
    "session_success",
    "summarize",
    "summarize_tally",
    "throughput",
    "token_summary",
    "top_answers",
    "turn_accuracy",
    "wilson_interval",
    "z_score",
]
