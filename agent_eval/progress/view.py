"""RunView: a rich live screen on a terminal, plain progress lines anywhere else."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as Bar
from rich.spinner import Spinner
from rich.text import Text

from agent_eval.metrics.performance import Throughput
from agent_eval.metrics.tally import AttemptCounts
from agent_eval.progress.stats import RunStats, Snapshot, duration_text, stats_parts
from agent_eval.progress.workers import WorkerPoller, WorkerStatus, worker_table
from agent_eval.proxy.admin_client import WorkerLoad
from agent_eval.system.lifecycle import logs_through

if TYPE_CHECKING:
    from agent_eval.run.engine import Progress
    from agent_eval.run.gate import GateView


HEARTBEAT_INTERVALS = 6
FRAME_INTERVAL = 0.25
NO_ATTEMPT_YET = "no attempt finished yet"


@dataclass(frozen=True)
class _Wait:
    reason: str
    since: float = field(default_factory=time.monotonic)
    spinner: Spinner = field(default_factory=lambda: Spinner("dots", style="cyan"))


class RunView:
    """The terminal view of a run: `async with RunView(console, title) as view: ...`.

    `live=None` draws a live screen when `console` is a terminal, else prints plain lines.
    `total` attempts shows from the start, with what a resumed run `kept` from before;
    the ETA waits for as many attempts to end as are played `at_once`.
    """

    def __init__(
        self,
        console: Console,
        title: str,
        proxy_url: str | None = None,
        live: bool | None = None,
        plain_interval: float = 5.0,
        poll_interval: float = 1.0,
        api_key: str | None = None,
        total: int = 0,
        kept: AttemptCounts | None = None,
        at_once: int = 1,
    ) -> None:
        self.console, self.title = console, title
        self.live = console.is_terminal if live is None else live
        self.plain_interval = plain_interval
        self._stats = RunStats(total, kept, at_once)
        self._poller = WorkerPoller(proxy_url, poll_interval, api_key)
        self._ready = proxy_url is not None  # the proxy serves: attempts are under way
        self._wait: _Wait | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._screen: Live | None = None
        self._logs = contextlib.ExitStack()
        self._bar = _progress_bar(console, title)
        self._gate: GateView | None = None
        self._first_limit = 0

    @property
    def workers(self) -> WorkerStatus | None:
        """The latest poll of the proxy's workers; None before the first one."""
        return self._poller.status

    def on_progress(self, progress: Progress) -> None:
        """The engine's callback after each attempt: store the numbers; drawing happens apart."""
        self._stats.update(progress)
        if progress.gate is not None and self._gate is None:
            self._gate, self._first_limit = progress.gate, progress.gate.limit
        self._wait = None  # attempts are finishing, so whatever we waited for has come
        if progress.total and progress.done >= progress.total:
            self._poller.refresh()  # else the last frame shows a poll from before the end

    def waiting(self, reason: str | None) -> None:
        """Show what a long wait waits for (None: the wait is over); fits `on_wait` callbacks."""
        if reason is None:
            self._wait = None
        elif self._wait is None or self._wait.reason != reason:
            self._wait = _Wait(reason)
            if not self.live:
                self.console.out(reason, highlight=False)

    def set_proxy(
        self, url: str | None, api_key: str | None = None, since: WorkerLoad | None = None
    ) -> None:
        """Show this proxy's workers (their load `since`, if given); `url` may end in /v1.
        None: it stops; keep the last view.

        A proxy is given once it is ready: the wait ends and the rates' wall time starts.
        """
        self._poller.set_proxy(url, api_key, since)
        self._ready = url is not None
        if url is not None:
            self._wait = None
            self._stats.start()

    def finish(self, throughput: Throughput) -> None:
        """The run's summary rates, for the last frame: the same figures as the summary's."""
        self._stats.finish(throughput)

    async def __aenter__(self) -> RunView:
        self._tasks.append(asyncio.create_task(self._poller.run()))
        if self.live:
            self._screen = Live(
                console=self.console, auto_refresh=False, get_renderable=self._render
            )
            self._screen.start(refresh=True)  # a line printed next finds a frame to go above
            self._logs.enter_context(logs_through(self.console))
            self._tasks.append(asyncio.create_task(self._draw_every(self._screen)))
        else:
            self.console.out(self.title, highlight=False)
            self._tasks.append(asyncio.create_task(self._print_every()))
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await _cancel(self._tasks)
        finally:
            self._tasks = []
            if self._screen is not None:
                self._screen.stop()  # draws the last frame and gives the cursor back
                self._screen = None
                self._logs.close()
            elif self._stats.started:
                self._print_line()

    async def _draw_every(self, screen: Live) -> None:
        # Frames are drawn here, on the event loop, not by a thread of Live's own: a line
        # printed above the view (a log line) can then never be cut by a frame drawn while it
        # is, which would leave a stale copy of the frame on the screen.
        while True:
            await asyncio.sleep(FRAME_INTERVAL)
            screen.refresh()

    def _render(self) -> RenderableType:
        """The live frame, drawn about 4 times a second."""
        snapshot = self._stats.snapshot()
        self._bar.update(
            self._bar.task_ids[0],
            completed=snapshot.done,
            total=snapshot.total or None,
            eta=duration_text(snapshot.eta_s),
        )
        rows: list[RenderableType] = []
        if (wait := self._wait) is not None:
            waited = duration_text(time.monotonic() - wait.since)
            wait.spinner.update(text=Text(f"{wait.reason} ({waited})"))
            rows.append(wait.spinner)
        status = self._poller.status
        parts = _live_parts(snapshot, status, self._stats.started) + self._gate_parts()
        rows += [self._bar, Text(" · ".join(parts))]
        if status is not None:
            rows.append(worker_table(status))
        return Group(*rows)

    async def _print_every(self) -> None:
        # A line when attempts finished since the last one; else a heartbeat every few
        # intervals, so a log shows the run is alive without repeating itself.
        printed_done, quiet = -1, 0
        while True:
            await asyncio.sleep(self.plain_interval)
            if not (self._stats.started or self._ready) or self._wait is not None:
                continue
            done = self._stats.snapshot().done
            quiet += 1
            if done != printed_done or quiet >= HEARTBEAT_INTERVALS:
                self._print_line()
                printed_done, quiet = done, 0

    def _print_line(self) -> None:
        line = plain_line(self._stats.snapshot(), self._poller.status, self._stats.started)
        self.console.out(" | ".join([line, *self._gate_parts()]), highlight=False)

    def _gate_parts(self) -> list[str]:
        """`paused, 3 in flight finishing` and the limit once `agent-eval ctl` changed it."""
        if self._gate is None:
            return []
        state, parts = self._gate.state, []
        if state.paused:
            parts.append(f"paused, {state.in_flight} in flight finishing")
        if state.limit != self._first_limit:
            parts.append(f"at most {state.limit} at once")
        return parts


def _live_parts(snapshot: Snapshot, workers: WorkerStatus | None, started: bool) -> list[str]:
    """The live line under the bar: the stats, or the model calls before any attempt ends."""
    if started:
        return stats_parts(snapshot)
    if workers is None or workers.error is not None:
        return [NO_ATTEMPT_YET]
    return [NO_ATTEMPT_YET, f"{workers.served} model calls answered, {workers.in_flight} in flight"]


def plain_line(snapshot: Snapshot, workers: WorkerStatus | None, started: bool = True) -> str:
    """`[  40/100  40%] acc 0.625 [0.47, 0.76] | 3.10 attempts/s | ... | eta 19s`."""
    parts = stats_parts(snapshot) if started else [NO_ATTEMPT_YET]
    if not started and workers is not None and workers.error is None:
        parts.append(f"{workers.served} model calls answered")
    if workers is not None:
        parts.append(workers.summary())
    parts.append(f"eta {duration_text(snapshot.eta_s)}")
    return f"{_count_text(snapshot)} " + " | ".join(parts)


def _count_text(snapshot: Snapshot) -> str:
    if not snapshot.total:
        return f"[{snapshot.done}]"
    width = len(str(snapshot.total))
    share = snapshot.done / snapshot.total
    return f"[{snapshot.done:>{width}}/{snapshot.total} {share:4.0%}]"


def _progress_bar(console: Console, title: str) -> Bar:
    """A bar driven by hand from the view's numbers; its ETA is ours, from this process only."""
    bar = Bar(
        TextColumn("{task.description}", style="bold", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        TextColumn("eta {task.fields[eta]}"),
        console=console,
    )
    bar.add_task(title, total=None, eta="-")
    return bar


async def _cancel(tasks: list[asyncio.Task[None]]) -> None:
    """Cancel and await background tasks; a crashed one re-raises, so a bug is not hidden."""
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks)
    for task in tasks:
        if not task.cancelled() and (error := task.exception()) is not None:
            raise error
