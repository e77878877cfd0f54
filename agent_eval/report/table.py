"""A run's headline figures as a rich table, grouped as summary.json is."""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich import box
from rich.table import Table
from rich.text import Text

from agent_eval.metrics import (
    ATTACK_SUCCESS,
    DRIFT_RATE,
    MAJ_AT_K,
    Drop,
    Estimate,
    KindRobustness,
    SecurityFigures,
    Summary,
)
from agent_eval.metrics.performance import (
    ATTEMPTS_PER_S,
    COMPLETION_TOKENS_PER_S,
    PROMPT_TOKENS_PER_S,
    RateLabel,
)

Row = tuple[str, str | None]
"""(label, shown value); a None value means the run has no data for it and the row is left out."""


def summary_table(summary: Summary, title: str | None = None) -> Table:
    """Quality, Stability, Robustness, Efficiency, (with injections) Security and (with tokens)
    Continuity sections of one run; metrics without data are left out."""
    caption = summary_caption(summary)
    table = Table(title=title, caption=caption, box=box.SIMPLE, show_header=False)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, rows in summary_sections(summary):
        table.add_row(Text(name, style="bold"), "")
        for label, value in rows:
            table.add_row(f"  {label}", value)
    return table


def summary_caption(summary: Summary) -> str:
    """The run's size (samples, attempts, sessions, what went unscored, whether it is whole),
    then what the rows that need it mean and what its seed fixes."""
    caption = f"samples {summary.samples} · attempts {summary.attempts}"
    if summary.sessions:
        caption += f" · sessions {summary.sessions}"
    if summary.unscored:
        caption += f" · {summary.scored:,} scored; {unscored_note(summary)}"
    if not summary.complete:
        caption += " · incomplete: stopped over its unscored budget"
    seed = [] if summary.seed is None else [summary.seed.line()]
    return "\n".join([caption, *definitions(summary), *seed])


def definitions(summary: Summary) -> list[str]:
    """The definitions of the shown rows whose name alone leaves room for doubt."""
    shown = [MAJ_AT_K] if any(not math.isnan(v) for v in summary.maj_at_k.values()) else []
    shown += [ATTACK_SUCCESS] if summary.attack_success_rate is not None else []
    return shown + ([DRIFT_RATE] if summary.drift_rate is not None else [])


def summary_sections(summary: Summary) -> list[tuple[str, list[tuple[str, str]]]]:
    """The table's sections and shown rows, for other renderings (the HTML report) to share."""
    sections = [
        ("Quality", _quality(summary)),
        ("Stability", _stability(summary)),
        ("Robustness", _robustness(summary)),
        ("Efficiency", _efficiency(summary)),
        ("Security", _security(summary)),
        ("Continuity", _continuity(summary)),
    ]
    shown = [(name, [(k, v) for k, v in rows if v is not None]) for name, rows in sections]
    return [(name, rows) for name, rows in shown if rows]


def _quality(summary: Summary) -> list[Row]:
    turns = len(summary.turn_accuracy)
    accuracy = _estimate(summary.accuracy)
    if accuracy is not None and summary.unscored:
        accuracy += f" over {summary.accuracy.n:,} scored"
    return [
        (_accuracy_label(summary), accuracy),
        *_by_k("pass@", summary.pass_at_k),
        *_by_k("maj@", summary.maj_at_k),
        (f"accuracy by turn 1..{turns}", _joined(summary.turn_accuracy, ".2f", " · ")),
        ("session success", _number(summary.session_success)),
    ]


def _accuracy_label(summary: Summary) -> str:
    """A session's attempt is right only when every turn is: its accuracy says so."""
    return "accuracy (every turn right)" if summary.sessions else "accuracy"


def _stability(summary: Summary) -> list[Row]:
    return [
        *_by_k("pass^", summary.pass_hat_k),
        ("consistency", _number(summary.consistency)),
        ("reward variance", _number(summary.reward_variance)),
    ]


def _robustness(summary: Summary) -> list[Row]:
    # Without variants the originals' accuracy is quality's: shown again it would say nothing.
    perturbed = bool(summary.by_kind)
    return [
        ("accuracy on originals", _estimate(summary.original_accuracy) if perturbed else None),
        *[row for kind, figures in summary.by_kind.items() for row in _kind(kind, figures)],
        ("robust accuracy", _estimate(summary.robust_accuracy)),
        ("flip rate when challenged", _number(summary.flip_rate)),
    ]


def _kind(kind: str, figures: KindRobustness) -> list[Row]:
    drop = _drop(figures.drop)
    skipped = f" ({figures.skipped:,} originals without one)" if figures.skipped else ""
    return [
        (f"accuracy on {kind}", _estimate(figures.accuracy)),
        (f"drop on {kind}", drop and f"{drop} p={figures.mcnemar_p:.3g}"),
        (f"{kind} broke / fixed", f"{figures.broke:,} / {figures.fixed:,} of {figures.pairs:,}"),
        (f"{kind} variants", f"{figures.variants:,}{skipped}"),
    ]


def _security(summary: Summary) -> list[Row]:
    """The three figures overall, then per suite and per attack where the run holds several."""
    overall = summary.security()
    if overall is None or summary.by_suite is None or summary.by_attack is None:
        return []
    return [
        *_figures("", overall),
        *_parts("on", summary.by_suite),
        *_parts("by", summary.by_attack),
    ]


def _parts(word: str, parts: dict[str, SecurityFigures]) -> list[Row]:
    """Each part's figures; none when there is one part, whose figures are the overall ones."""
    if len(parts) < 2:
        return []
    return [row for name, part in parts.items() for row in _figures(f" {word} {name}", part)]


def _figures(where: str, figures: SecurityFigures) -> list[Row]:
    return [
        (f"utility{where}", _estimate(figures.utility)),
        (f"utility under attack{where}", _estimate(figures.utility_under_attack)),
        (f"attack success rate{where}", _estimate(figures.attack_success_rate)),
    ]


def _continuity(summary: Summary) -> list[Row]:
    """The drift rate over the turns checked, the attempts with drift, the calls skipped."""
    turns, attempts = summary.drift_rate, summary.attempts_with_drift
    if turns is None or attempts is None:
        return []
    skipped = summary.untokenized_calls
    return [
        ("drift rate", _over(turns, "turns checked")),
        ("attempts with drift", _over(attempts, "attempts checked")),
        ("model calls without tokens", f"{skipped:,}" if skipped else None),
    ]


def _over(estimate: Estimate, what: str) -> str:
    """The estimate with the count it is over; "none checked" when that count is 0."""
    shown = _estimate(estimate)
    return f"{shown} over {estimate.n:,} {what}" if shown else f"no {what.split()[0]} checked"


def _efficiency(summary: Summary) -> list[Row]:
    latency, tokens, calls = summary.latency_s, summary.tokens, summary.calls
    rates = summary.throughput
    percentiles = _joined((latency.p50, latency.p90, latency.p99), ".2f")
    ttft = _joined((summary.ttft_s.p50, summary.ttft_s.p90, summary.ttft_s.p99), ".3f")
    mean_tokens = _joined((tokens.mean_prompt, tokens.mean_completion), ",.0f")
    return [
        ("latency p50 / p90 / p99 (s)", percentiles),
        ("time to first token p50 / p90 / p99 (s)", ttft),
        ("prefix cache hit rate", _cache_hit_rate(summary)),
        _rate(COMPLETION_TOKENS_PER_S, rates.completion_tokens_per_s),
        _rate(PROMPT_TOKENS_PER_S, rates.prompt_tokens_per_s),
        _rate(ATTEMPTS_PER_S, rates.attempts_per_s),
        ("tokens per attempt (prompt / completion)", mean_tokens),
        ("model calls per attempt", _number(calls.model_calls_per_attempt, ".2f")),
        ("tool calls per attempt", _number(calls.tool_calls_per_attempt, ".2f")),
        ("tool error rate", _number(calls.tool_error_rate)),
        ("errors", _errors(summary)),
    ]


def unscored_note(summary: Summary) -> str:
    """The attempts left out of the quality metrics, e.g. "29 unscored (25 timeout, 4 ...)"."""
    kinds = ", ".join(f"{count:,} {kind}" for kind, count in summary.unscored_by_kind.items())
    return f"{summary.unscored:,} unscored ({kinds})"


def _number(value: float, spec: str = ".3f") -> str | None:
    return None if math.isnan(value) else format(value, spec)


def _rate(label: RateLabel, value: float) -> Row:
    return label.unit, _number(value, label.spec)


def _joined(values: Sequence[float], spec: str, separator: str = " / ") -> str | None:
    """All values formatted, or None when there are none or one is missing."""
    if not values or any(math.isnan(value) for value in values):
        return None
    return separator.join(format(value, spec) for value in values)


def _estimate(estimate: Estimate) -> str | None:
    # The ± is one standard error; the brackets are the confidence interval.
    if math.isnan(estimate.value):
        return None
    value, stderr, low, high = estimate.value, estimate.stderr, estimate.low, estimate.high
    return f"{value:.3f} ± {stderr:.3f} [{low:.2f}, {high:.2f}]"


def _drop(drop: Drop) -> str | None:
    # Signed, since a variant can be easier than its original; the brackets are the interval.
    if math.isnan(drop.value):
        return None
    return f"{drop.value:+.3f} [{drop.low:+.2f}, {drop.high:+.2f}]"


def _by_k(prefix: str, by_k: dict[int, float]) -> list[Row]:
    return [(f"{prefix}{k}", _number(value)) for k, value in by_k.items()]


def _cache_hit_rate(summary: Summary) -> str | None:
    """The hit rate, or "not reported" when the run's model calls came without cache figures."""
    if math.isnan(summary.cache_hit_rate):
        return "not reported" if summary.calls.model_calls else None
    return f"{summary.cache_hit_rate:.1%}"


def _errors(summary: Summary) -> str | None:
    errors = summary.errors
    if math.isnan(errors.rate):
        return None
    # The limit_exceeded ones say which limits they passed: "limit_exceeded 3 (tokens 2, ...)".
    passed = ", ".join(f"{limit} {count}" for limit, count in errors.by_limit.items())
    kinds = ", ".join(
        f"{kind} {count}" + (f" ({passed})" if kind == "limit_exceeded" and passed else "")
        for kind, count in errors.by_kind.items()
    )
    return f"{errors.total} ({errors.rate:.1%})" + (f": {kinds}" if kinds else "")
