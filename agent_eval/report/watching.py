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
from agent_eval.report.svg import Bar, Group, bar_chart
from agent_eval.results.files import DECISIONS


@dataclass(frozen=True)
class Checkpointed:
    """One checkpoint's line of decisions.jsonl, as the report reads it."""

    step: int
    probe: Bar
    full: Bar | None
    reason: str
    change: float | None

    @classmethod
    def from_entry(cls, entry: dict[str, Any]) -> Checkpointed:
        full = entry.get("full")
        return cls(
            step=entry["step"],
            probe=_bar(entry["probe"]),
            full=_bar(full) if full else None,
            reason=entry["reason"],
            change=entry.get("change"),
        )


def is_watch_directory(path: Path) -> bool:
    """Whether `path` is the output of `agent-eval watch`."""
    return (path / DECISIONS).is_file()


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
    for column in ("step", "probe", "change", "decision", "full accuracy [95%]"):
        table.add_column(column, justify="left" if column == "decision" else "right")
    for entry in entries:
        full = entry.full
        table.add_row(
            str(entry.step),
            _number(entry.probe.value),
            _number(entry.change),
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
        f"<tr><td>{e.step}</td><td>{_number(e.probe.value)}</td><td>{_number(e.change)}</td>"
        f"<td>{escape(e.reason)}</td><td>{_number(e.full.value if e.full else None)}</td></tr>"
        for e in entries
    )
    decisions = (
        "<table><tr><th>step</th><th>probe</th><th>change</th><th>reason</th>"
        f"<th>full accuracy</th></tr>{rows}</table>"
    )
    title = f"agent-eval watch: {path.name}"
    return page(title, [f"<h1>{escape(title)}</h1>", figure("curve", curve, caption), decisions])


def _bar(result: dict[str, Any]) -> Bar:
    accuracy = result["accuracy"]
    return Bar(_float(accuracy["value"]), _float(accuracy["low"]), _float(accuracy["high"]))


def _float(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _number(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.3f}"
