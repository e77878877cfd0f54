"""What a run's page shows from every attempt: the report's plots, as SVG documents an <img>
shows, and an unfinished run's headline; a big run's read in a process of its own."""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
from collections import OrderedDict
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_eval.errors import ConfigError
from agent_eval.report.html import Plot, plots
from agent_eval.report.runs import load_run
from agent_eval.results.files import SAMPLES, SUMMARY
from agent_eval.results.summary import read_summary
from agent_eval.rewards.processes import helper_died, retire
from agent_eval.view.catalog import KEPT, Stamp, stamp
from agent_eval.view.headline import headline
from agent_eval.view.runs import RunDir

logger = logging.getLogger(__name__)

SVG_NS = "http://www.w3.org/2000/svg"
PROCESS_BYTES = 16 << 20
"""A samples.jsonl bigger than this (some 20,000 attempts) is drawn in the process; a smaller
one in a thread, done before a process would have started."""


@dataclass(frozen=True)
class Drawn:
    """One read of every attempt: the plots that have a picture, by name, and the headline."""

    plots: dict[str, Plot]
    headline: dict[str, Any]


class Plots:
    """The plots of the runs looked at lately, each drawn once per version of its files (size
    and modification time); a big run's in one process beside the server: reading every
    attempt takes it seconds, and in a thread it would slow the server's answers meanwhile."""

    def __init__(self) -> None:
        self._drawn: OrderedDict[Path, tuple[Stamp, asyncio.Future[Drawn]]] = OrderedDict()
        self._pool: ProcessPoolExecutor | None = None

    def start(self, run: RunDir) -> None:
        """Begin drawing the run's plots, unless drawn for its files now or being drawn."""
        self._drawing(run)

    async def of(self, run: RunDir) -> Drawn:
        """The run's plots and headline. A ConfigError if the run is unreadable (no attempts
        yet, a corrupt line)."""
        # Shielded: a page that goes away must not cancel what the next one waits on.
        return await asyncio.shield(self._drawing(run))

    def _drawing(self, run: RunDir) -> asyncio.Future[Drawn]:
        now = stamp(run.path / SAMPLES, run.path / SUMMARY)
        kept = self._drawn.pop(run.path, None)
        # A running run changes every second: one drawing at a time, the next from what the
        # files hold once it is done.
        if kept is None or (kept[0] != now and kept[1].done()):
            size = now[0][1] if now[0] else 0
            kept = (now, asyncio.ensure_future(self._draw(run.path, size > PROCESS_BYTES)))
            # Retrieved here: a run read before it was readable must not log an error.
            kept[1].add_done_callback(lambda done: done.cancelled() or done.exception())
        self._drawn[run.path] = kept
        while len(self._drawn) > KEPT:
            self._drawn.popitem(last=False)
        return kept[1]

    async def _draw(self, path: Path, big: bool) -> Drawn:
        loop = asyncio.get_running_loop()
        # A process takes a second or two to start: worth it for a big run only.
        if big:
            try:
                return await loop.run_in_executor(self._ready_pool(), drawn, path)
            except Exception as exc:
                if not (isinstance(exc, BrokenProcessPool) or helper_died(exc)):
                    raise
                # A helper multiprocessing needs died (fork server, resource tracker): the
                # page still gets its plots, a little slower, and the next big run a new pool.
                logger.warning("the view's drawing process broke (%s): drawing in a thread", exc)
                await self.close()
        return await loop.run_in_executor(None, drawn, path)

    def _ready_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # forkserver: a fork of the server would copy its threads' locks in any state.
            context = multiprocessing.get_context("forkserver")
            self._pool = ProcessPoolExecutor(1, mp_context=context)
        return self._pool

    async def close(self) -> None:
        """Stop drawing: the process is ended, whatever it was doing."""
        if self._pool is not None:
            await retire(self._pool, 0.0, cancel_pending=True)
            self._pool = None


def drawn(path: Path) -> Drawn:
    """The run's plots and headline (in the drawing process); a finished run's from its
    summary.json, as the report's table shows it."""
    report = load_run(path, as_written=True)
    pictures = {plot.name: plot for plot in plots(report) if plot.svg is not None}
    source = SUMMARY if read_summary(path / SUMMARY) is not None else SAMPLES
    return Drawn(pictures, headline(report.summary, source, report.notes))


async def run_headline(plots: Plots, run: RunDir) -> dict[str, Any]:
    """The headline's sections, caption and source: summary.json once finished, else rebuilt
    from the attempts with the plots; a run without attempts yet has none."""
    summary = read_summary(run.path / SUMMARY)
    if summary is not None:
        return headline(summary, SUMMARY, [])
    try:
        return (await plots.of(run)).headline
    except ConfigError as exc:
        return {"source": SAMPLES, "caption": "", "sections": [], "notes": [str(exc)]}


def standalone(svg: str) -> str:
    """One of the report's inline SVGs made a document of its own, as an <img> loads it."""
    # Inline in HTML an SVG needs no namespace and takes its font from the page's CSS; loaded
    # alone it is not drawn without the namespace, and an <img> takes no CSS from the page.
    attributes = f'xmlns="{SVG_NS}" font-family="system-ui, sans-serif" font-size="11"'
    return svg.replace("<svg ", f"<svg {attributes} ", 1)
