"""Two runs side by side: each difference B - A, its 95% interval, whether it exceeds the noise.

Proportions (accuracy, pass@k, session success, error rate) use the metrics package's
`accuracy_difference`: Newcombe's interval built from each run's Wilson interval. pass@k and
session success are means over samples or sessions of values in [0, 1]; they are treated as
proportions over those units, which is conservative, since such a mean varies at most as much
as a proportion does. Latency and tokens are compared as means over attempts (Welch, normal).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from statistics import fmean, variance

from rich import box
from rich.table import Table
from rich.text import Text

from agent_eval.metrics import (
    DIRECTIONS,
    AttemptScore,
    Difference,
    Estimate,
    SecurityFigures,
    Summary,
    accuracy_difference,
    wilson_interval,
    z_score,
)
from agent_eval.report.runs import Run

HEADERS = ("metric", "A", "B", "B - A", "95% interval", "exceeds noise")
QUALITY, EFFICIENCY = DIRECTIONS["quality"], DIRECTIONS["efficiency"]
SECURITY, CONTINUITY = DIRECTIONS["security"], DIRECTIONS["continuity"]
PerAttempt = Callable[[AttemptScore], float]
Estimator = Callable[[Summary], Estimate]


@dataclass(frozen=True)
class Row:
    """One compared metric: each run's value, B - A with its interval, and its direction."""

    metric: str
    a: float
    b: float
    difference: Difference
    higher_is_better: bool
    spec: str = ".3f"

    def cells(self) -> tuple[str, ...]:
        """The row as text, in HEADERS order; n/a where a run has no data."""
        spec = self.spec
        a, b = _formatted(self.a, spec), _formatted(self.b, spec)
        return (self.metric, a, b, *difference_cells(self.difference, spec))

    @property
    def better(self) -> bool | None:
        """Whether B is better than A, when the difference exceeds the noise; else None."""
        if not self.difference.significant:
            return None
        return (self.difference.value > 0) == self.higher_is_better


def difference_cells(difference: Difference, spec: str = ".3f") -> tuple[str, str, str]:
    """B - A, its interval, and whether it exceeds the noise, as text; n/a without data."""
    d, signed = difference, "+" + spec
    interval = f"[{_formatted(d.low, signed)}, {_formatted(d.high, signed)}]"
    verdict = "n/a" if math.isnan(d.value) else "yes" if d.significant else "no"
    return _formatted(d.value, signed), interval, verdict


def proportion(value: float, n: int) -> Estimate:
    """A mean of [0, 1] values over n units as a Wilson estimate (conservative; see above)."""
    if n == 0 or math.isnan(value):
        return wilson_interval(0, 0)
    return dataclasses.replace(wilson_interval(round(value * n), n), value=value)


def pass_estimate(summary: Summary, k: int) -> Estimate:
    """pass@k with a Wilson interval over the run's samples."""
    return proportion(summary.pass_at_k[k], summary.samples)


def mean_difference(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> Difference:
    """mean(a) - mean(b) with a normal (Welch) interval; NaN with fewer than two values a side."""
    if len(a) < 2 or len(b) < 2:
        return Difference(math.nan, math.nan, math.nan, significant=False)
    value = fmean(a) - fmean(b)
    half = z_score(confidence) * math.sqrt(variance(a) / len(a) + variance(b) / len(b))
    return Difference(value, value - half, value + half, significant=abs(value) > half)


def attempt_tokens(score: AttemptScore) -> float:
    """Prompt plus completion tokens of one attempt."""
    return score.prompt_tokens + score.completion_tokens


def compare(a: Run, b: Run) -> list[Row]:
    """B against A on quality, security and drift (when both have them), errors, latency and
    tokens."""
    sa, sb = a.summary, b.summary
    shared_ks = [k for k in sa.pass_at_k if k in sb.pass_at_k]
    rates: list[tuple[str, Estimator, bool]] = [
        ("accuracy", _accuracy, QUALITY["accuracy"]),
        *((f"pass@{k}", partial(pass_estimate, k=k), QUALITY["pass_at_k"]) for k in shared_ks),
    ]
    if sa.sessions and sb.sessions:
        rates.append(("session success", _session_success, QUALITY["session_success"]))
    if sa.security() is not None and sb.security() is not None:
        rates += _security_rates()
    if sa.drift_rate is not None and sb.drift_rate is not None:
        rates.append(("drift rate", _drift_rate, CONTINUITY["drift_rate"]))
    rates.append(("error rate", _error_rate, EFFICIENCY["errors"]))
    rows = [_proportions(name, rate(sa), rate(sb), up) for name, rate, up in rates]
    rows.append(_means("latency mean (s)", a, b, _latency, EFFICIENCY["latency_s"], ".2f"))
    rows.append(_means("tokens/attempt", a, b, attempt_tokens, EFFICIENCY["tokens"], ",.0f"))
    return rows


def _security_rates() -> list[tuple[str, Estimator, bool]]:
    """Utility, utility under attack and attack success rate, for two runs that have them."""
    names = [figure.name for figure in dataclasses.fields(SecurityFigures)]
    return [(n.replace("_", " "), partial(_security, name=n), SECURITY[n]) for n in names]


def _security(summary: Summary, name: str) -> Estimate:
    figures = summary.security()
    assert figures is not None  # compared only when both runs have them
    estimate: Estimate = getattr(figures, name)
    return estimate


def comparison_notes(a: Run, b: Run) -> list[str]:
    """What a reader should know before trusting the differences, then each run's own notes."""
    ids_a = {score.sample_id for score in a.scores}
    ids_b = {score.sample_id for score in b.scores}
    shared = len(ids_a & ids_b)
    mixed = f"the runs cover different samples ({shared} shared): differences mix model and data"
    own = [f"{name}: {note}" for name, run in (("A", a), ("B", b)) for note in run.notes]
    return [mixed, *own] if ids_a != ids_b else own


def comparison_table(rows: Sequence[Row], a: Run, b: Run) -> Table:
    """The rows as a rich table; a difference beyond the noise is green if better, red if not."""
    caption = Text(f"A: {a.title} ({a.path})\nB: {b.title} ({b.path})")
    table = Table(title=Text("B compared with A"), caption=caption, box=box.SIMPLE)
    for index, header in enumerate(HEADERS):
        table.add_column(header, justify="left" if index == 0 else "right")
    for row in rows:
        table.add_row(*styled_cells(row))
    return table


def styled_cells(row: Row) -> list[str | Text]:
    """The row's cells; a difference beyond the noise is green if better, red if not."""
    cells = row.cells()
    style = {True: "green", False: "red", None: ""}[row.better]
    return [*cells[:3], Text(cells[3], style=style), *cells[4:]]


def _proportions(name: str, a: Estimate, b: Estimate, higher_is_better: bool) -> Row:
    # accuracy_difference works on whole counts; show the exact difference of the values.
    difference = dataclasses.replace(accuracy_difference(b, a), value=b.value - a.value)
    return Row(name, a.value, b.value, difference, higher_is_better)


def _means(name: str, a: Run, b: Run, value: PerAttempt, higher_is_better: bool, spec: str) -> Row:
    values_a, values_b = [value(s) for s in a.scores], [value(s) for s in b.scores]
    difference = mean_difference(values_b, values_a)
    return Row(name, fmean(values_a), fmean(values_b), difference, higher_is_better, spec)


def _accuracy(summary: Summary) -> Estimate:
    return summary.accuracy


def _drift_rate(summary: Summary) -> Estimate:
    assert summary.drift_rate is not None  # compared only when both runs have it
    return summary.drift_rate


def _session_success(summary: Summary) -> Estimate:
    return proportion(summary.session_success, summary.sessions)


def _error_rate(summary: Summary) -> Estimate:
    return proportion(summary.errors.rate, summary.attempts)


def _latency(score: AttemptScore) -> float:
    return score.latency_s


def _formatted(value: float, spec: str) -> str:
    return "n/a" if math.isnan(value) else format(value, spec)
