"""The runs being served and a few of their indexes, kept warm and refreshed on every use."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from pathlib import Path

from agent_eval.report.runs import Run, load_run
from agent_eval.results.files import SAMPLES, SUMMARY
from agent_eval.view.index import RunIndex
from agent_eval.view.runs import RunDir, find_runs

Stamp = tuple[tuple[int, int] | None, ...]

KEPT = 4
"""Indexes kept in memory at once: the runs being looked at, not every run on disk."""


class Catalog:
    """Finds runs under the roots by id, and holds an index for each of the last few used."""

    def __init__(self, roots: list[Path]) -> None:
        self.roots = roots
        self._runs: dict[str, RunDir] = {}
        self._indexes: OrderedDict[Path, RunIndex] = OrderedDict()
        self._locks: dict[Path, asyncio.Lock] = {}
        self._reports: OrderedDict[Path, tuple[Stamp, Run]] = OrderedDict()
        self._report_locks: dict[Path, asyncio.Lock] = {}
        self._warming: set[asyncio.Task[RunIndex]] = set()

    async def runs(self) -> list[RunDir]:
        """Every run under the roots, found again (new runs appear), by id."""
        self._runs = await asyncio.to_thread(find_runs, self.roots)
        return sorted(self._runs.values(), key=lambda run: run.id)

    async def run(self, run_id: str) -> RunDir | None:
        """The run of this id, or None: only runs found under the roots can be named."""
        if run_id not in self._runs:
            await self.runs()
        return self._runs.get(run_id)

    async def index(self, run: RunDir) -> RunIndex:
        """The run's index with every complete line read; built or refreshed in a thread."""
        lock = self._locks.setdefault(run.path, asyncio.Lock())
        async with lock:  # one thread at a time touches an index's arrays
            index = self._indexes.pop(run.path, None)
            if index is None:
                index = await asyncio.to_thread(RunIndex, run.path)
            else:
                await asyncio.to_thread(index.refresh)
            self._indexes[run.path] = index
            while len(self._indexes) > KEPT:
                dropped, _ = self._indexes.popitem(last=False)
                self._locks.pop(dropped, None)
        return index

    def indexed(self, run: RunDir) -> bool:
        """Whether the run's index is built and kept (it may lag the file until refreshed)."""
        return run.path in self._indexes

    def warm(self, run: RunDir) -> None:
        """Build the run's index in the background, unless it is kept or being built."""
        lock = self._locks.get(run.path)
        if self.indexed(run) or (lock is not None and lock.locked()):
            return
        task = asyncio.create_task(self.index(run))
        self._warming.add(task)
        task.add_done_callback(self._warmed)

    def _warmed(self, task: asyncio.Task[RunIndex]) -> None:
        self._warming.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: a corrupt line is said by the next request instead

    async def report(self, run: RunDir) -> Run:
        """The run as `agent-eval report` reads it (every score, the summary rebuilt from them),
        read again only when samples.jsonl or summary.json changes; a ConfigError if unreadable."""
        # Requests for one run's report at once (a comparison of it with two others) share one read.
        async with self._report_locks.setdefault(run.path, asyncio.Lock()):
            now = stamp(run.path / SAMPLES, run.path / SUMMARY)
            kept = self._reports.pop(run.path, None)
            if kept is None or kept[0] != now:
                kept = (now, await asyncio.to_thread(load_run, run.path))
            self._reports[run.path] = kept
            while len(self._reports) > KEPT:
                dropped, _ = self._reports.popitem(last=False)
                self._report_locks.pop(dropped, None)
        return kept[1]


def stamp(*paths: Path) -> Stamp:
    """Each file's modification time and size, or None when it is missing."""
    stamps: list[tuple[int, int] | None] = []
    for path in paths:
        try:
            found = path.stat()
        except OSError:
            stamps.append(None)
        else:
            stamps.append((found.st_mtime_ns, found.st_size))
    return tuple(stamps)
