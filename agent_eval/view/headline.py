"""A run's headline by dimension: summary.json once finished, else rebuilt from its attempts."""

from __future__ import annotations

import dataclasses
import math
import typing
from typing import Any

from agent_eval.errors import ConfigError
from agent_eval.metrics import Summary
from agent_eval.metrics.summary import DIRECTIONS
from agent_eval.report.table import summary_caption, summary_sections
from agent_eval.results import SAMPLES, SUMMARY
from agent_eval.view.figures import Reports
from agent_eval.view.runs import RunDir, read_summary


async def run_headline(reports: Reports, run: RunDir) -> dict[str, Any]:
    """The headline's sections, caption and source; a run without attempts yet has none."""
    written = read_summary(run)
    summary = summary_of(written) if written else None
    if summary is not None:
        return headline(summary, SUMMARY, [])
    try:
        report = await reports.run(run)
    except ConfigError as exc:
        return {"source": SAMPLES, "caption": "", "sections": [], "notes": [str(exc)]}
    return headline(report.summary, SAMPLES, report.notes)


def headline(summary: Summary, source: str, notes: list[str]) -> dict[str, Any]:
    """The report's table of the summary, one section per dimension, and the mean reward."""
    sections = []
    for title, rows in summary_sections(summary):
        shown = [[label, value] for label, value in rows]
        if title == "Quality" and math.isfinite(summary.mean_reward):
            # The report's table leaves the mean reward out; the page's quality section shows it.
            shown.append(["mean reward", f"{summary.mean_reward:.3f}"])
        sections.append({"dimension": title.lower(), "title": title, "rows": shown})
    return {
        "source": source,
        "caption": summary_caption(summary),
        "sections": sections,
        "notes": notes,
    }


def summary_of(data: dict[str, Any]) -> Summary | None:
    """The Summary summary.json holds; None when it is not one (another version's, a test's)."""
    flat = {name: value for name, value in data.items() if name not in DIRECTIONS}
    for group in DIRECTIONS:
        flat.update(data.get(group) or {})
    try:
        return _value(Summary, flat)  # type: ignore[no-any-return]
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _value(hint: Any, value: Any) -> Any:
    """`value` read back as type `hint`: as Summary.to_dict wrote it, with None for NaN."""
    if dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        fields = dataclasses.fields(hint)
        given = {f.name: _value(hints[f.name], value[f.name]) for f in fields if f.name in value}
        build: Any = hint
        return build(**given)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is dict:
        return {args[0](key): _value(args[1], item) for key, item in value.items()}
    if origin is list:
        return [_value(args[0], item) for item in value]
    if hint is float:
        return math.nan if value is None else float(value)
    if hint in (int, str, bool) and not isinstance(value, hint):
        raise TypeError(f"{value!r} is not {hint.__name__}")
    return value
