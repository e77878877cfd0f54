"""The report's plots of one run as SVG documents an <img> shows, and the report they come from."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from pathlib import Path

from agent_eval.report.html import Plot, plots
from agent_eval.report.runs import Run
from agent_eval.view.catalog import KEPT, Catalog
from agent_eval.view.runs import RunDir

SVG_NS = "http://www.w3.org/2000/svg"


class Plots:
    """The report's plots of the runs looked at lately, drawn once per version of each run."""

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog
        self._locks: dict[Path, asyncio.Lock] = {}
        self._plots: OrderedDict[Path, tuple[Run, dict[str, Plot]]] = OrderedDict()

    async def of(self, run: RunDir) -> dict[str, Plot]:
        """The run's plots that have a picture, by name; drawn again when its report is read
        again. A ConfigError if the run is unreadable (no attempts yet, a corrupt line)."""
        report = await self._catalog.report(run)
        async with self._locks.setdefault(run.path, asyncio.Lock()):
            kept = self._plots.pop(run.path, None)
            if kept is None or kept[0] is not report:
                drawn = await asyncio.to_thread(plots, report)
                kept = (report, {plot.name: plot for plot in drawn if plot.svg is not None})
            self._plots[run.path] = kept
            while len(self._plots) > KEPT:
                self._plots.popitem(last=False)
        return kept[1]


def standalone(svg: str) -> str:
    """One of the report's inline SVGs made a document of its own, as an <img> loads it."""
    # Inline in HTML an SVG needs no namespace and takes its font from the page's CSS; loaded
    # alone it is not drawn without the namespace, and an <img> takes no CSS from the page.
    attributes = f'xmlns="{SVG_NS}" font-family="system-ui, sans-serif" font-size="11"'
    return svg.replace("<svg ", f"<svg {attributes} ", 1)
