"""What the soak phases share: the router, /proc sampling, the client process, the tables."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import aiohttp
import uvloop
from rich import box
from rich.table import Table

from bench.parts.fleet import BenchError, Fleet, Proc, start_agent_eval, start_sglang_router
from bench.parts.loadgen import percentile
from bench.parts.tables import number, ratio

TARGETS = ("agent-eval", "sglang-router")
SAMPLE_EVERY = 0.2  # seconds between /proc samples of the router and the worker
CHECK_TIMEOUT = 10.0  # seconds for each request of the survival check
PAGE = os.sysconf("SC_PAGE_SIZE")
JSON_HEADERS = {"Content-Type": "application/json"}

Value = int | float | str | None
Figures = dict[str, Value]
Job = Callable[[], Coroutine[Any, Any, Figures]]


@dataclass(frozen=True)
class Row:
    """One figure of a phase table; `ratio` says whether agent-eval ÷ sglang-router means much."""

    name: str
    ratio: bool = False


def start_router(
    fleet: Fleet, target: str, urls: list[str], extra: Sequence[str]
) -> tuple[Proc, str]:
    if target == "agent-eval":
        return start_agent_eval(fleet, urls, "round_robin", extra)
    return start_sglang_router(fleet, urls, "round_robin", extra)


# ---------------------------------------------------------------- /proc sampling


def open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_mb(pid: int) -> float:
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE / 1e6


@dataclass
class Watch:
    """Peaks of the router's open files and RSS and of the worker's open files."""

    router: Proc
    worker: Proc
    figures: Figures = field(default_factory=dict)
    peaks: dict[str, float] = field(default_factory=dict)

    def sample(self) -> None:
        """One sample; a process that has gone is skipped (the survival check reports it)."""
        try:
            self._peak("router fds peak", open_files(self.router.pid))
            self._peak("router RSS MB peak", rss_mb(self.router.pid))
            self._peak("worker fds peak", open_files(self.worker.pid))
        except (FileNotFoundError, ProcessLookupError):
            pass

    def _peak(self, name: str, value: float) -> None:
        self.peaks[name] = max(self.peaks.get(name, 0), value)

    def snapshot(self, when: str) -> None:
        """Record the router's open files and RSS now as `... before` or `... after`."""
        if self.router.popen.poll() is None:
            self.figures[f"router fds {when}"] = open_files(self.router.pid)
            self.figures[f"router RSS MB {when}"] = rss_mb(self.router.pid)

    def result(self) -> Figures:
        return {**self.figures, **self.peaks}


# ---------------------------------------------------------------- client process


def _child_main(job: Job, sender: Connection) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # on Ctrl-C the parent stops it
    sender.send(uvloop.run(job()))


def run_client(job: Job, timeout: float, tick: Callable[[], None]) -> Figures:
    """Run `job` in a forked process, calling `tick` every SAMPLE_EVERY s until it answers.

    Raises: BenchError when the client process dies or overruns `timeout`.
    """
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_child_main, args=(job, sender), daemon=True)
    child.start()
    sender.close()
    deadline = time.monotonic() + timeout
    try:
        while not receiver.poll(SAMPLE_EVERY):
            tick()
            if time.monotonic() > deadline:
                raise BenchError(f"the client process ran past {timeout:.0f} s")
        return receiver.recv()
    except EOFError:
        raise BenchError(f"the client process died (exit code {child.exitcode})") from None
    finally:
        if child.is_alive():
            child.kill()
        child.join()


def client_session(
    limit: int, seconds: float, force_close: bool = False, trace: aiohttp.TraceConfig | None = None
) -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(limit=limit, force_close=force_close)
    return aiohttp.ClientSession(
        connector=connector,
        timeout=aiohttp.ClientTimeout(total=seconds),
        headers=JSON_HEADERS,
        cookie_jar=aiohttp.DummyCookieJar(),
        trace_configs=[trace] if trace else None,
    )


def ms(seconds: list[float], q: float) -> float:
    return percentile(sorted(seconds), q) * 1000


def kinds(counts: Counter[str]) -> str | None:
    """`500: 3, ClientOSError: 1`, or None when there are none."""
    return ", ".join(f"{kind}: {n}" for kind, n in counts.most_common(4)) or None


def get(url: str, body: bytes | None = None) -> tuple[int, bytes]:
    """One request with urllib; the status and body, errors included."""
    request = urllib.request.Request(url, data=body, headers=JSON_HEADERS)
    try:
        with urllib.request.urlopen(request, timeout=CHECK_TIMEOUT) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _cell(value: Value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return f"{value:,}"
    return number(value)


def table(
    title: str, rows: Sequence[Row], notes: Sequence[str], figures: dict[str, Figures]
) -> Table:
    """The figures of one phase, the routers side by side, with their ratio where it means much."""
    shown = Table(box=box.SIMPLE_HEAD, title=title, caption="\n".join(notes))
    shown.add_column("figure")
    for target in TARGETS:
        shown.add_column(target, justify="right")
    shown.add_column("agent-eval ÷ sglang", justify="right")
    for row in rows:
        values = [figures[target].get(row.name) for target in TARGETS]
        numbers = [v if isinstance(v, int | float) else None for v in values]
        quotient = ratio(*numbers) if row.ratio else ""
        shown.add_row(row.name, *map(_cell, values), quotient)
    return shown
