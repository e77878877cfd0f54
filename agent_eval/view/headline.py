"""A run's headline by dimension: summary.json once finished, else rebuilt from its attempts."""

from __future__ import annotations

import math
from typing import Any

from agent_eval.errors import ConfigError
from agent_eval.metrics import Summary
from agent_eval.report.table import summary_caption, summary_sections
from agent_eval.results.files import SAMPLES, SUMMARY
from agent_eval.results.summary import read_summary
from agent_eval.view.catalog import Catalog
from agent_eval.view.runs import RunDir


async def run_headline(catalog: Catalog, run: RunDir) -> dict[str, Any]:
    """The headline's sections, caption and source; a run without attempts yet has none."""
    summary = read_summary(run.path / SUMMARY)
    if summary is not None:
        return headline(summary, SUMMARY, [])
    try:
        report = await catalog.report(run)
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
