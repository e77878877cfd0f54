"""The report of a watch directory: every checkpoint's probe, decision and full-evaluation score."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from rich.table import Table

from agent_eval.errors import ConfigError
from agent_eval.report.html import figure, page
from agent_eval.report.svg import SERIES, Bar, Group, Point, Series, bar_chart, xy_chart
from agent_eval.results.files import DECISIONS

AGAINST = "against the last full evaluation"
FORECAST_CAPTION = (
    "Full evaluations and the learning curve forecast after the latest checkpoint, with its "
    "90% band: the bounded trigger checks early where the band reaches a change of delta"
)


@dataclass(frozen=True)
class Checkpointed:
    """One checkpoint's line of decisions.jsonl, as the report reads it.

    `change`: the threshold trigger's smoothed move; `compared`: the bounded trigger's verdict
    against the last full evaluation, with its interval; `forecast`: the bounded trigger's
    learning-curve forecast after this checkpoint (trigger/forecast.Forecast as a dict)."""

    step: int
    probe: Bar
    full: Bar | None
    reason: str
    change: float | None
    compared: str | None = None
    forecast: dict[str, Any] | None = None

    @classmethod
    def from_entry(cls, entry: dict[str, Any]) -> Checkpointed:
        full, probe = entry.get("full"), entry.get("probe")
        return cls(
            step=entry["step"],
            probe=_bar(probe) if probe else Bar(math.nan),
            full=_bar(full) if full else None,
            reason=entry["reason"],
            change=entry.get("change"),
            compared=_compared((entry.get("comparisons") or {}).get("reference")),
            forecast=entry.get("forecast"),
        )

    @property
    def against(self) -> str:
        """The move or verdict against the last full evaluation, as a cell shows it."""
        return self.compared if self.compared is not None else _number(self.change)


def load_watch(path: Path) -> list[Checkpointed]:
    """The checkpoints of a watch directory, by step; a corrupt line is named.

    A last line still being written (no newline yet) is left for the next read."""
    text = (path / DECISIONS).read_text()
    entries = []
    for number, line in enumerate(text[: text.rfind("\n") + 1].splitlines(), start=1):
        try:
            entries.append(Checkpointed.from_entry(json.loads(line)))
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"{path / DECISIONS} line {number} is not a decision ({exc})"
            ) from None
    return sorted(entries, key=lambda entry: entry.step)


def watch_table(entries: list[Checkpointed]) -> Table:
    """Step, probe score, change, decision and the full evaluation's accuracy."""
    table = Table(title="checkpoints", title_justify="left")
    for column in ("step", "probe", AGAINST, "decision", "full accuracy [95%]"):
        table.add_column(column, justify="right" if column in ("step", "probe") else "left")
    for entry in entries:
        full = entry.full
        table.add_row(
            str(entry.step),
            _number(entry.probe.value),
            entry.against,
            decision(entry),
            "" if full is None else f"{full.value:.3f} [{full.low:.2f}, {full.high:.2f}]",
        )
    return table


def decision(entry: Checkpointed) -> str:
    """Why the full evaluation ran, or "none (why not)"."""
    return entry.reason if entry.full is not None else f"none ({entry.reason})"


def watch_page(path: Path, entries: list[Checkpointed]) -> str:
    """The HTML page: the curve of scores over steps, then the decisions."""
    groups = [Group(f"step {e.step}", [e.probe, e.full or Bar(math.nan)]) for e in entries]
    curve = bar_chart(groups, "accuracy", top=1.0, legend=("probe", "full evaluation"))
    caption = "Probe score of every checkpoint and full-evaluation accuracy (95% interval)"
    rows = "".join(
        f"<tr><td>{e.step}</td><td>{_number(e.probe.value)}</td><td>{escape(e.against)}</td>"
        f"<td>{escape(e.reason)}</td><td>{_number(e.full.value if e.full else None)}</td></tr>"
        for e in entries
    )
    decisions = (
        f"<table><tr><th>step</th><th>probe</th><th>{AGAINST}</th><th>reason</th>"
        f"<th>full accuracy</th></tr>{rows}</table>"
    )
    title = f"agent-eval watch: {path.name}"
    parts = [f"<h1>{escape(title)}</h1>", figure("curve", curve, caption)]
    ahead = forecast_chart(entries)
    if ahead is not None:
        parts.append(figure("forecast", ahead, FORECAST_CAPTION + _levelling(entries)))
    return page(title, [*parts, decisions])


def forecast_chart(entries: list[Checkpointed]) -> str | None:
    """The full evaluations so far and the latest forecast with its 90% band; None before the
    trigger has made one."""
    latest = next((e.forecast for e in reversed(entries) if e.forecast), None)
    if latest is None:
        return None
    seen = [Point(e.step, e.full.value, f"step {e.step}: {e.full.value:.3f}")
            for e in entries if e.full is not None]  # fmt: skip
    steps = latest["steps"]

    def line(name: str, values: list[float], colour: str) -> Series:
        points = [Point(x, y, f"step {x}: {y:.3f}") for x, y in zip(steps, values, strict=True)]
        return Series(name, points, colour, marker="", joined=True)

    return xy_chart(
        [
            Series("full evaluations", seen, SERIES[0]),
            line(f"forecast ({latest['curve']})", latest["mean"], SERIES[1]),
            line("90% band", latest["low"], SERIES[2]),
            line("", latest["high"], SERIES[2]),
        ],
        ("training step", "accuracy"),
        whole_x=True,
    )


def _levelling(entries: list[Checkpointed]) -> str:
    """What the latest forecast says of a plateau, when its curve saturates."""
    latest = next(e.forecast for e in reversed(entries) if e.forecast)
    if latest["plateau"] is None:
        return ""
    settles = latest["settles_at"]
    when = "" if settles is None else f", settled by step {settles}"
    return f". Plateau forecast: {latest['plateau']:.3f}{when}"


def _compared(comparison: dict[str, Any] | None) -> str | None:
    """A verdict with its difference, interval and pairs: "better +0.120 [0.03, 0.21], 96"."""
    if comparison is None:
        return None
    return (
        f"{comparison['verdict']} {comparison['difference']:+.3f} "
        f"[{comparison['low']:.2f}, {comparison['high']:.2f}], {comparison['pairs']} pairs"
        + (", final look" if comparison.get("final") else "")
    )


def _bar(result: dict[str, Any]) -> Bar:
    accuracy = result["accuracy"]
    return Bar(_float(accuracy["value"]), _float(accuracy["low"]), _float(accuracy["high"]))


def _float(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _number(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.3f}"
