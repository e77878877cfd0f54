"""The report's plots of a run as SVG documents an <img> shows, drawn in a process of their own."""

from __future__ import annotations

import asyncio
import multiprocessing
from collections import OrderedDict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from agent_eval.report.html import Plot, plots
from agent_eval.report.runs import load_run
from agent_eval.results.files import SAMPLES, SUMMARY
from agent_eval.rewards.processes import retire
from agent_eval.view.catalog import KEPT, Stamp, stamp
from agent_eval.view.runs import RunDir

SVG_NS = "http://www.w3.org/2000/svg"
PROCESS_BYTES = 16 << 20
"""A samples.jsonl bigger than this (some 20,000 attempts) is drawn in the process; a smaller
one in a thread, done before a process would have started."""


class Plots:
    """The plots of the runs looked at lately, each drawn once per version of its files (size
    and modification time); a big run's in one process beside the server: reading every
    attempt takes it seconds, and in a thread it would slow the server's answers meanwhile."""

    def __init__(self) -> None:
        self._drawn: OrderedDict[Path, tuple[Stamp, asyncio.Future[dict[str, Plot]]]] = (
            OrderedDict()
        )
        self._pool: ProcessPoolExecutor | None = None

    def start(self, run: RunDir) -> None:
        """Begin drawing the run's plots, unless drawn for its files now or being drawn."""
        self._drawing(run)

    async def of(self, run: RunDir) -> dict[str, Plot]:
        """The run's plots that have a picture, by name. A ConfigError if the run is unreadable
        (no attempts yet, a corrupt line)."""
        # Shielded: a page that goes away must not cancel what the next one waits on.
        return await asyncio.shield(self._drawing(run))

    def _drawing(self, run: RunDir) -> asyncio.Future[dict[str, Plot]]:
        now = stamp(run.path / SAMPLES, run.path / SUMMARY)
        kept = self._drawn.pop(run.path, None)
        # A running run changes every second: one drawing at a time, the next from what the
        # files hold once it is done.
        if kept is None or (kept[0] != now and kept[1].done()):
            size = now[0][1] if now[0] else 0
            # A process takes a second or two to start: worth it for a big run only.
            executor = self._ready_pool() if size > PROCESS_BYTES else None
            kept = (now, asyncio.get_running_loop().run_in_executor(executor, pictures, run.path))
            # Retrieved here: a run read before it was readable must not log an error.
            kept[1].add_done_callback(lambda done: done.cancelled() or done.exception())
        self._drawn[run.path] = kept
        while len(self._drawn) > KEPT:
            self._drawn.popitem(last=False)
        return kept[1]

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


def pictures(path: Path) -> dict[str, Plot]:
    """The run's report plots that have a picture, by name (in the drawing process)."""
    return {plot.name: plot for plot in plots(load_run(path)) if plot.svg is not None}


def standalone(svg: str) -> str:
    """One of the report's inline SVGs made a document of its own, as an <img> loads it."""
    # Inline in HTML an SVG needs no namespace and takes its font from the page's CSS; loaded
    # alone it is not drawn without the namespace, and an <img> takes no CSS from the page.
    attributes = f'xmlns="{SVG_NS}" font-family="system-ui, sans-serif" font-size="11"'
    return svg.replace("<svg ", f"<svg {attributes} ", 1)
