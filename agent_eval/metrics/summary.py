"""The one aggregation entry point: a run's records in, a JSON-ready summary out."""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_eval.metrics.accuracy import accuracy, mean_reward
from agent_eval.metrics.base import AttemptScore, Estimate, is_higher_better
from agent_eval.metrics.drift import (
    DRIFT_RATE,
    attempts_with_drift,
    drift_rate,
    untokenized_calls,
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
    latency_summary,
    throughput,
    token_summary,
)
from agent_eval.metrics.robustness import (
    KindRobustness,
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
    reward_variance,
    session_success,
    turn_accuracy,
)
from agent_eval.metrics.security import (
    ATTACK_SUCCESS,
    BREAKDOWN,
    SecurityFigures,
    attack_success_rate,
    by_attack,
    by_suite,
    utility,
    utility_under_attack,
)
from agent_eval.metrics.tally import RunTally, SampleTally
from agent_eval.metrics.voting import MAJ_AT_K
from agent_eval.seeds import SeedScope


@dataclass(frozen=True)
class Summary:
    """Every metric of one run; NaN marks a metric the run has no data for.

    Quality and stability are over the original samples; robustness sets the perturbed variants
    against them; efficiency and continuity count every attempt.
    """

    samples: int
    """Original samples with at least one scored attempt."""
    attempts: int
    """Every attempt played, scored or not, variants included."""
    scored: int
    unscored: int
    """Attempts the infrastructure stopped, left out of every quality and stability metric."""
    unscored_by_kind: dict[str, int]
    sessions: int
    accuracy: Estimate
    mean_reward: float
    pass_at_k: dict[int, float]
    maj_at_k: dict[int, float]
    turn_accuracy: list[float]
    mean_turn_reward: float
    session_success: float
    pass_hat_k: dict[int, float]
    consistency: float
    reward_variance: float
    original_accuracy: Estimate
    """The accuracy the variants are set against: quality's, over the originals."""
    flip_rate: float
    latency_s: LatencySummary
    tokens: TokenSummary
    throughput: Throughput
    calls: CallSummary
    errors: ErrorSummary
    complete: bool = True
    """False when the run stopped early: more attempts unscored than eval.max_unscored allows."""
    cache_hit_rate: float = math.nan
    """Prompt tokens served from the workers' prefix caches; NaN when no worker reported them."""
    ttft_s: LatencySummary = field(default_factory=lambda: latency_summary(()))
    """Time to first token of the streamed model calls; n is 0 when no call streamed."""
    robust_accuracy: Estimate = field(default_factory=lambda: accuracy(0, 0))
    """Share of (original, attempt) units right on the original and every variant; n 0 without
    variants."""
    by_kind: dict[str, KindRobustness] = field(default_factory=dict)
    """Each perturbation kind's accuracy and drop against the originals; empty without variants."""
    seed: SeedScope | None = None
    """What the run's seed fixes on its backend; None where the run's config is not known."""
    utility: Estimate | None = None
    """Share right among attempts with injections but no attack; the security group's fields
    are None when the run has no attempt with injections (AgentDojo's)."""
    utility_under_attack: Estimate | None = None
    attack_success_rate: Estimate | None = None
    """Share of attacked attempts after which the injected goal held: lower is better."""
    by_suite: dict[str, SecurityFigures] | None = None
    by_attack: dict[str, SecurityFigures] | None = None
    drift_rate: Estimate | None = None
    """Share of the checked turns whose prompt does not continue the earlier call of their
    conversation; the continuity group's fields are None when no call had its tokens recorded."""
    attempts_with_drift: Estimate | None = None
    """Share of the attempts with a checked turn that have a turn that drifts."""
    untokenized_calls: int | None = None
    """Model calls without their tokens, which the checks skipped."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready and grouped as DIRECTIONS is: NaN becomes None, k keys become strings."""
        flat = dataclasses.asdict(self)
        grouped = {group: {name: flat.pop(name) for name in fns} for group, fns in _GROUPS.items()}
        if self.utility is None:  # no attempt with injections: no security group at all
            del grouped["security"]
        if self.drift_rate is None:  # no call's tokens recorded: no continuity group
            del grouped["continuity"]
        directions = {group: DIRECTIONS[group] for group in grouped}
        defined = {group: DEFINITIONS[group] for group in grouped if group in DEFINITIONS}
        # What no group took is the run's size and whether it is whole: samples, attempts,
        # scored, unscored (by kind), sessions, complete; and what its seed fixes.
        return json_ready(
            {**flat, **grouped, "higher_is_better": directions, "definitions": defined}
        )

    def security(self) -> SecurityFigures | None:
        """The security group's three overall figures; None for a run without injections."""
        plain, attacked, breached = (
            self.utility,
            self.utility_under_attack,
            self.attack_success_rate,
        )
        if plain is None or attacked is None or breached is None:
            return None
        return SecurityFigures(plain, attacked, breached)

    @classmethod
    def read(cls, data: dict[str, Any]) -> Summary | None:
        """The Summary to_dict wrote (summary.json); None when `data` is not one (another
        version's, or cut down by hand)."""
        flat = {name: value for name, value in data.items() if name not in DIRECTIONS}
        for group in DIRECTIONS:
            flat.update(data.get(group) or {})
        # Written before the robustness group (flip_rate then sat in stability): no run had
        # variants, so its originals' accuracy is its accuracy.
        if "robustness" not in data and "accuracy" in flat:
            flat.setdefault("original_accuracy", flat["accuracy"])
        if isinstance(rates := flat.get("throughput"), dict) and "tokens_per_s" in rates:
            flat["throughput"] = _rates_named_apart(rates)
        try:
            summary: Summary = _typed(cls, flat)
        except (KeyError, TypeError, ValueError, AttributeError):
            return None
        return summary


def _rates_named_apart(rates: dict[str, Any]) -> dict[str, Any]:
    """Rates written when `tokens_per_s` summed prompt and completion tokens, split apart."""
    both, completion = rates["tokens_per_s"], rates.get("completion_tokens_per_s")
    prompt = None if both is None or completion is None else both - completion
    return {**rates, "prompt_tokens_per_s": prompt}


def _typed(hint: Any, value: Any) -> Any:
    """`value` read back as type `hint`: as to_dict wrote it, with None for NaN."""
    if dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        fields = dataclasses.fields(hint)
        given = {f.name: _typed(hints[f.name], value[f.name]) for f in fields if f.name in value}
        build: Any = hint
        return build(**given)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        (inner,) = (arg for arg in args if arg is not type(None))
        return None if value is None else _typed(inner, value)
    if origin is dict:
        return {args[0](key): _typed(args[1], item) for key, item in value.items()}
    if origin is list:
        return [_typed(args[0], item) for item in value]
    if hint is float:
        return math.nan if value is None else float(value)
    if hint in (int, str, bool) and not isinstance(value, hint):
        raise TypeError(f"{value!r} is not {hint.__name__}")
    return value


_GROUPS: dict[str, dict[str, Callable[..., Any]]] = {
    "quality": {
        "accuracy": accuracy,
        "mean_reward": mean_reward,
        "pass_at_k": mean_pass_at_k,
        "maj_at_k": maj_at_k,
        "turn_accuracy": turn_accuracy,
        "mean_turn_reward": mean_turn_reward,
        "session_success": session_success,
    },
    "stability": {
        "pass_hat_k": mean_pass_hat_k,
        "consistency": consistency,
        "reward_variance": reward_variance,
    },
    "robustness": {
        "original_accuracy": original_accuracy,
        "robust_accuracy": robust_accuracy,
        "by_kind": by_kind,
        "flip_rate": flip_rate,
    },
    "efficiency": {
        "latency_s": latency_summary,
        "ttft_s": latency_summary,
        "cache_hit_rate": cache_hit_rate,
        "tokens": token_summary,
        "throughput": throughput,
        "calls": call_summary,
        "errors": error_summary,
    },
    "security": {
        "utility": utility,
        "utility_under_attack": utility_under_attack,
        "attack_success_rate": attack_success_rate,
        "by_suite": by_suite,
        "by_attack": by_attack,
    },
    "continuity": {
        "drift_rate": drift_rate,
        "attempts_with_drift": attempts_with_drift,
        "untokenized_calls": untokenized_calls,
    },
}
"""summary.json's groups: each Summary field in its group, with the function that computes it."""

DIRECTIONS: dict[str, dict[str, bool]] = {
    group: {name: is_higher_better(fn) for name, fn in metrics.items()}
    for group, metrics in _GROUPS.items()
}
"""Group -> Summary field -> whether higher is better, as the metric functions declare it."""


DEFINITIONS: dict[str, dict[str, str]] = {
    "quality": {"maj_at_k": MAJ_AT_K},
    "security": {
        "attack_success_rate": ATTACK_SUCCESS,
        "by_suite": BREAKDOWN,
        "by_attack": BREAKDOWN,
    },
    "continuity": {"drift_rate": DRIFT_RATE},
}
"""Group -> Summary field -> what it means, for the fields whose name leaves room for doubt."""


def summarize(
    scores: Iterable[AttemptScore],
    wall_time_s: float,
    ks: Sequence[int] = (1,),
    confidence: float = 0.95,
) -> Summary:
    """Summarise a run in one pass over its records; k > the smallest n is a ValueError."""
    _check_ks(ks)
    tally = RunTally().extend(scores)
    return summarize_tally(tally, wall_time_s, ks, confidence)


def summarize_tally(
    tally: RunTally, wall_time_s: float, ks: Sequence[int] = (1,), confidence: float = 0.95
) -> Summary:
    """The summary of records already counted (e.g. a live view's running tally)."""
    _check_ks(ks)
    samples, counts = list(tally.samples.values()), tally.counts
    tokens = token_summary(counts.prompt_tokens, counts.completion_tokens, counts.attempts)
    return Summary(
        samples=len(samples),
        attempts=counts.attempts,
        scored=counts.scored,
        unscored=sum(counts.unscored.values()),
        unscored_by_kind=dict(counts.unscored.most_common()),
        sessions=tally.sessions.sessions,
        accuracy=accuracy(counts.correct, counts.original_scored, confidence),
        mean_reward=mean_reward(tally.reward_sum, counts.original_scored),
        pass_at_k={k: mean_pass_at_k(_counts(_with_k(samples, k)), k) for k in ks},
        maj_at_k={k: maj_at_k(_with_k(samples, k), k) for k in ks},
        turn_accuracy=turn_accuracy(tally.sessions),
        mean_turn_reward=mean_turn_reward(tally.sessions),
        session_success=session_success(tally.sessions),
        pass_hat_k={k: mean_pass_hat_k(_counts(_with_k(samples, k)), k) for k in ks},
        consistency=consistency(samples),
        reward_variance=reward_variance(samples),
        original_accuracy=original_accuracy(tally.robustness, confidence),
        robust_accuracy=robust_accuracy(tally.robustness, confidence),
        by_kind=by_kind(tally.robustness, confidence),
        flip_rate=flip_rate(tally.sessions),
        latency_s=latency_summary(tally.latencies),
        tokens=tokens,
        throughput=throughput(counts.attempts, tokens, wall_time_s),
        calls=call_summary(tally.model_calls, tally.tool_calls, tally.tool_errors, counts.attempts),
        errors=error_summary(counts.errors, counts.attempts, counts.limits),
        cache_hit_rate=cache_hit_rate(tally.cached_tokens, tally.cache_prompt_tokens),
        ttft_s=latency_summary(tally.ttfts),
        utility=utility(tally.security, confidence),
        utility_under_attack=utility_under_attack(tally.security, confidence),
        attack_success_rate=attack_success_rate(tally.security, confidence),
        by_suite=by_suite(tally.security, confidence),
        by_attack=by_attack(tally.security, confidence),
        drift_rate=drift_rate(tally.continuity, confidence),
        attempts_with_drift=attempts_with_drift(tally.continuity, confidence),
        untokenized_calls=untokenized_calls(tally.continuity),
    )


def _with_k(samples: list[SampleTally], k: int) -> list[SampleTally]:
    """The samples with k scored attempts: one that lost some to the infrastructure has fewer."""
    return [sample for sample in samples if sample.n >= k]


def _counts(samples: list[SampleTally]) -> list[tuple[int, int]]:
    return [(sample.n, sample.c) for sample in samples]


def _check_ks(ks: Sequence[int]) -> None:
    bad = [k for k in ks if isinstance(k, bool) or not isinstance(k, int) or k < 1]
    if bad:
        raise ValueError(f"every k must be a positive integer, got {bad}")


def json_ready(value: Any) -> Any:
    """`value` ready for strict JSON: keys as strings, tuples as lists, NaN and infinity as None."""
    if isinstance(value, dict):
        return {str(key): json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
