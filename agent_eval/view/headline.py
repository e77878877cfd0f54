"""A run's headline by dimension: the report's table of its summary, and the mean reward."""

from __future__ import annotations

import math
from typing import Any

from agent_eval.metrics import Summary
from agent_eval.report.table import summary_caption, summary_sections


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
