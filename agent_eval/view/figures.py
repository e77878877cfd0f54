"""The report's plots of one run as SVG documents an <img> shows, and the report they come from."""

from __future__ import annotations

from pathlib import Path

from agent_eval.report.html import Plot, plots
from agent_eval.report.runs import Run
from agent_eval.view.catalog import Catalog
from agent_eval.view.derived import Derived
from agent_eval.view.runs import RunDir

SVG_NS = "http://www.w3.org/2000/svg"


class Plots:
    """The report's plots of the runs looked at lately, drawn once per version of each run."""

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog
        self._drawn: Derived[Path, dict[str, Plot]] = Derived()

    async def of(self, run: RunDir) -> dict[str, Plot]:
        """The run's plots that have a picture, by name; drawn again when its report is read
        again. A ConfigError if the run is unreadable (no attempts yet, a corrupt line)."""

        async def report() -> tuple[Run]:
            return (await self._catalog.report(run),)

        return await self._drawn.get(run.path, report, _pictures)


def _pictures(path: Path, report: Run) -> dict[str, Plot]:
    """The report's plots that have a picture, by name."""
    return {plot.name: plot for plot in plots(report) if plot.svg is not None}


def standalone(svg: str) -> str:
    """One of the report's inline SVGs made a document of its own, as an <img> loads it."""
    # Inline in HTML an SVG needs no namespace and takes its font from the page's CSS; loaded
    # alone it is not drawn without the namespace, and an <img> takes no CSS from the page.
    attributes = f'xmlns="{SVG_NS}" font-family="system-ui, sans-serif" font-size="11"'
    return svg.replace("<svg ", f"<svg {attributes} ", 1)
