"""Figures as tables: the proxy benchmark's (what one run measured, and how it shows), and the
cells and console every bench's tables share."""

from __future__ import annotations

import math
import statistics
import sys
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from bench.parts.loadgen import LoadResult
from bench.parts.results_file import describe

MESSAGES_TARGET = "agent-eval messages"
"""The proxy's /v1/messages under the same load, translated to chat for the workers."""
TARGETS = ("direct", "agent-eval", "sglang-router", MESSAGES_TARGET)
WIDTH = 120
ADDED = "added p50 ms"
FIGURES: dict[str, Callable[[LoadResult], float]] = {
    "req/s": lambda r: r.rps,
    "p50 ms": lambda r: r.p50_ms,
    "p99 ms": lambda r: r.p99_ms,
}


@dataclass(frozen=True)
class Mode:
    """One kind of load: streamed or not, how many requests, how many at a time."""

    name: str
    stream: bool
    concurrency: int
    requests: int

    @property
    def figures(self) -> tuple[str, ...]:
        """The rows this mode shows: throughput under load, added latency one at a time."""
        if self.concurrency == 1:
            return ("p50 ms", "p99 ms", ADDED)
        return ("req/s", "p50 ms", "p99 ms")


@dataclass
class Run:
    """One measured (mode, target) pair, with the CPU each process spent on it."""

    mode: Mode
    target: str
    load: LoadResult
    sent: int  # warm-up included, as the CPU figures cover it
    worker_cpu: float
    router_cpu: float | None

    def cpu_us(self, seconds: float | None) -> float | None:
        """CPU microseconds per request sent."""
        return None if seconds is None else seconds / self.sent * 1e6

    def spent_us(self) -> list[float | None]:
        """CPU µs per request of the load generator, the workers and the router."""
        seconds = (self.load.cpu_seconds, self.worker_cpu, self.router_cpu)
        return [self.cpu_us(spent) for spent in seconds]

    def cores_busy(self) -> float:
        """Cores the load generator, workers and router kept busy together."""
        return sum(us for us in self.spent_us() if us is not None) * self.load.rps / 1e6


def _median_load(loads: list[LoadResult]) -> LoadResult:
    """Medians of rates and percentiles; sums of counts and times."""
    errors: Counter[str] = sum((Counter(load.errors) for load in loads), Counter())
    return LoadResult(
        requests=sum(load.requests for load in loads),
        failures=sum(load.failures for load in loads),
        seconds=sum(load.seconds for load in loads),
        cpu_seconds=sum(load.cpu_seconds for load in loads),
        rps=statistics.median(load.rps for load in loads),
        p50_ms=statistics.median(load.p50_ms for load in loads),
        p99_ms=statistics.median(load.p99_ms for load in loads),
        errors=dict(errors),
    )


def combine(runs: list[Run]) -> list[Run]:
    """One run per (mode, target) out of several rounds: median figures, summed CPU."""
    groups: dict[tuple[Mode, str], list[Run]] = {}
    for run in runs:
        groups.setdefault((run.mode, run.target), []).append(run)
    combined = []
    for same in groups.values():
        routers = [run.router_cpu for run in same if run.router_cpu is not None]
        combined.append(
            replace(
                same[0],
                load=_median_load([run.load for run in same]),
                sent=sum(run.sent for run in same),
                worker_cpu=sum(run.worker_cpu for run in same),
                router_cpu=sum(routers) if routers else None,
            )
        )
    return combined


def number(value: float | None, signed: bool = False) -> str:
    """A figure with as many decimals as its size deserves; a dash when missing."""
    if value is None:
        return "—"
    if math.isnan(value):
        return "n/a"
    digits = 0 if abs(value) >= 100 else 1 if abs(value) >= 10 else 2
    return f"{value:{'+' if signed else ''},.{digits}f}"


def ratio(ours: float | None, theirs: float | None) -> str:
    """Ours over theirs as `1.23x`; n/a when either is missing or theirs is not positive."""
    if ours is None or theirs is None or theirs <= 0 or math.isnan(ours / theirs):
        return "n/a"
    return f"{ours / theirs:.2f}x"


def _figure(name: str, by_target: dict[str, LoadResult], target: str) -> float | None:
    if target not in by_target:
        return None
    if name != ADDED:
        return FIGURES[name](by_target[target])
    if target == "direct":
        return None
    return by_target[target].p50_ms - by_target["direct"].p50_ms


def figures_table(runs: list[Run]) -> Table:
    """Rows per mode and figure, columns per target, agent-eval ÷ sglang-router, and the
    Messages route ÷ the chat route."""
    table = Table(box=box.SIMPLE_HEAD, title="proxy benchmark (latency to the last byte)")
    table.add_column("mode")
    table.add_column("figure")
    # Targets beyond the three (agent-eval with attempt keys) follow them.
    targets = [*TARGETS, *dict.fromkeys(r.target for r in runs if r.target not in TARGETS)]
    for target in targets:
        table.add_column(target, justify="right")
    table.add_column("agent-eval ÷ sglang", justify="right")
    table.add_column("messages ÷ chat", justify="right")
    modes = list(dict.fromkeys(run.mode for run in runs))
    for mode in modes:
        by_target = {run.target: run.load for run in runs if run.mode == mode}
        for row, name in enumerate(mode.figures):
            values = [_figure(name, by_target, target) for target in targets]
            cells = [number(v, signed=name == ADDED) for v in values]
            table.add_row(
                mode.name if row == 0 else "",
                name,
                *cells,
                ratio(values[1], values[2]),
                ratio(values[3], values[1]),
                end_section=row == len(mode.figures) - 1,
            )
    return table


def cpu_table(runs: list[Run]) -> Table:
    """CPU microseconds per request of each process; `cores busy` shows who saturates the box."""
    table = Table(
        box=box.SIMPLE_HEAD,
        title="CPU µs per request sent (warm-up included)",
        caption="at c1 every process idles between requests: waking up inflates its CPU figure",
    )
    for name in ("mode", "target", "req/s", "load gen", "workers", "router", "cores busy"):
        table.add_column(name, justify="left" if name in ("mode", "target") else "right")
    for run in runs:
        table.add_row(
            run.mode.name,
            run.target,
            number(run.load.rps),
            *map(number, run.spent_us()),
            number(run.cores_busy()),
        )
    return table


def wide_console(width: int = WIDTH) -> Console:
    """A console for a bench's tables: off a terminal `width` columns, as rich would fall back to
    80, too narrow for them."""
    return Console() if sys.stdout.isatty() else Console(width=width)


def render(runs: list[Run], machine: Mapping[str, Any], console: Console) -> None:
    """Print both tables, the failures and the one-line machine summary."""
    console.print(figures_table(runs))
    console.print(cpu_table(runs))
    failed = [run for run in runs if run.load.failures]
    for run in failed:
        console.print(
            f"[red]{run.target} {run.mode.name}: {run.load.failures} failures[/] {run.load.errors}"
        )
    if not failed:
        console.print("failures: none (every response 200, every stream ended whole)")
    console.print(describe(machine), highlight=False, soft_wrap=True)
